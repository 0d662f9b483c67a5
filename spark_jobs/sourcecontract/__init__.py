"""What a landing source declares: ``include/config/sources.yaml``, read and checked in one place.

What it owns, and nothing else:

* the file's pydantic models (``SourcesFile`` -> ``SourceSpec`` -> ``ColumnSpec``,
  ``CsvOptions``) and the rules a declaration follows: column types and their
  options, the record id, the truth pattern, the CSV options, ``column_map`` and
  ``ignore_columns`` (the file's own comments describe them for its editors);
* reading it: ``load_sources(path)`` / ``parse_sources(doc)`` return
  ``{source name: SourceSpec}``; ``source_names(path)`` the sorted names. Any
  problem raises ``SourceConfigError``, one ``; ``-separated line per problem
  naming the source, the column and the key;
* how one CSV file's header line relates to a declaration (``compare_header``,
  ``HeaderCheck``): the schema-drift rule of the cleanse job;
* the vocabulary both need: ``COLUMN_TYPES``, ``DATE_FORMATS`` (format name ->
  shape), the phone digit bounds, ``RESERVED_COLUMNS``.

Who reads it: the cleanse job (``spark_jobs/cleanse.py``; its cleaning rules
are ``cleansing``) and the GX runner (``washline.quality``), which takes
the source names allowed in ``staging_records.source`` from the same file. It
sits on neither side of the import line (``tests/unit/test_import_rules.py``):
standard library, PyYAML and pydantic only. Executors never need it (the
cleanse job runs no Python UDF), so it is not in the ``--py-files`` zip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator, model_validator

__all__ = [
    "COLUMN_TYPES", "ColumnSpec", "CsvOptions", "DATE_FORMATS", "DEFAULT_DATE_FORMATS", "HeaderCheck",
    "PHONE_MAX_DIGITS", "PHONE_MIN_DIGITS", "RESERVED_COLUMNS", "SourceConfigError", "SourceSpec", "SourcesFile",
    "compare_header", "header_name", "load_sources", "parse_sources", "source_names",
]

#: Column types a source may declare.
COLUMN_TYPES = ("id", "text", "string", "date", "postcode", "phone")

#: Date formats a column may accept: name -> (shape regex, group order).
#: Separated formats accept one- or two-digit day and month. The regexes use
#: explicit ASCII classes, so Python ``re`` and Java regex read them alike.
DATE_FORMATS: dict[str, tuple[str, str]] = {
    "yyyyMMdd": (r"^([0-9]{4})([0-9]{2})([0-9]{2})$", "ymd"),
    "yyyy-MM-dd": (r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})$", "ymd"),
    "yyyy/MM/dd": (r"^([0-9]{4})/([0-9]{1,2})/([0-9]{1,2})$", "ymd"),
    "dd/MM/yyyy": (r"^([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})$", "dmy"),
    "dd-MM-yyyy": (r"^([0-9]{1,2})-([0-9]{1,2})-([0-9]{4})$", "dmy"),
    "dd.MM.yyyy": (r"^([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{4})$", "dmy"),
}
DEFAULT_DATE_FORMATS = ("yyyyMMdd", "yyyy-MM-dd", "dd/MM/yyyy")

#: Digits a phone number may have by default (E.164 allows 15).
PHONE_MIN_DIGITS, PHONE_MAX_DIGITS = 6, 15

#: Output columns the cleanse job adds; attribute names must not collide with them.
RESERVED_COLUMNS = ("record_id", "source", "truth_entity", "ds", "source_file", "line_number")

#: A source or column name: an identifier (a source name is also a landing folder name).
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

_DECLARATION = ConfigDict(extra="forbid", frozen=True)


class SourceConfigError(ValueError):
    """``sources.yaml`` is missing, unreadable or declares something invalid."""


def header_name(value: Any) -> str:
    """A header name as compared: trimmed and lower-case."""
    return str(value).strip().lower()


# ---------------------------------------------------------------------------
# The models
# ---------------------------------------------------------------------------


class ColumnSpec(BaseModel):
    """One declared input column: its name, type and type options.

    Written in the file as ``{name, type, formats, digits, min_digits,
    max_digits, description}`` or as a bare name (type ``text``).
    """

    model_config = _DECLARATION

    name: str
    type: str = "text"
    formats: tuple[str, ...] = DEFAULT_DATE_FORMATS  # date
    digits: int | None = 4  # postcode: exact digit count; null = any 3 to 10
    min_digits: int = PHONE_MIN_DIGITS  # phone
    max_digits: int = PHONE_MAX_DIGITS  # phone
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, raw: Any) -> Any:
        return {"name": raw} if isinstance(raw, str) else raw

    @field_validator("name")
    @classmethod
    def _identifier(cls, name: str) -> str:
        if not NAME.match(name):
            raise ValueError(f"column name {name!r} is not an identifier")
        return name

    @field_validator("type")
    @classmethod
    def _known_type(cls, ctype: str) -> str:
        if ctype not in COLUMN_TYPES:
            raise ValueError(f"unknown type {ctype!r}; known: {COLUMN_TYPES}")
        return ctype

    @field_validator("formats", mode="before")
    @classmethod
    def _default_formats(cls, formats: Any) -> Any:
        return formats or DEFAULT_DATE_FORMATS

    @field_validator("formats")
    @classmethod
    def _known_formats(cls, formats: tuple[str, ...]) -> tuple[str, ...]:
        bad = [f for f in formats if f not in DATE_FORMATS]
        if bad:
            raise ValueError(f"unknown date formats {bad}; known: {list(DATE_FORMATS)}")
        return formats

    @field_validator("digits")
    @classmethod
    def _digits(cls, digits: int | None) -> int | None:
        if digits is not None and not 1 <= digits <= 10:
            raise ValueError("digits must be an integer 1-10 or null")
        return digits

    @model_validator(mode="after")
    def _phone_bounds(self) -> "ColumnSpec":
        if not 1 <= self.min_digits <= self.max_digits <= 20:
            raise ValueError("need 1 <= min_digits <= max_digits <= 20")
        return self

    @property
    def spark_type(self) -> str:
        """The curated column's Spark SQL type: ``date`` for a date column, else ``string``."""
        return "date" if self.type == "date" else "string"


class CsvOptions(BaseModel):
    """A source's ``csv:`` options (defaults ``,`` ``"`` ``\\``, one record per line)."""

    model_config = _DECLARATION

    delimiter: str = ","
    quote: str = '"'
    escape: str = "\\"
    #: RFC 4180 records whose quoted fields hold line breaks are read as one
    #: record (numbered by its first line); default: one record per line.
    multiline: bool = False

    @field_validator("delimiter")
    @classmethod
    def _one_character(cls, delimiter: str) -> str:
        if len(delimiter) != 1:
            raise ValueError("must be one character")
        return delimiter

    @field_validator("multiline", mode="before")
    @classmethod
    def _a_boolean(cls, multiline: Any) -> Any:
        if not isinstance(multiline, bool):
            raise ValueError(f"must be true or false, got {multiline!r}")
        return multiline


class SourceSpec(BaseModel):
    """A declared source: the columns of its CSV files and how to clean them.

    ``name`` is the source's key in the file (its landing folder name).
    """

    model_config = _DECLARATION

    name: str
    columns: tuple[ColumnSpec, ...]
    record_id: str
    truth_pattern: str | None = None
    csv: CsvOptions = CsvOptions()
    #: Files must carry a header line (``header: false`` is refused).
    header: bool = True
    description: str = ""
    #: Header name in the files (lower-case) -> declared column it feeds (a rename the profile accepts).
    column_map: dict[str, str] = {}
    #: Header names (lower-case) of extra columns that are dropped on purpose.
    ignore_columns: tuple[str, ...] = ()

    @field_validator("columns", "csv", mode="before")
    @classmethod
    def _absent_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None:
            return value
        return {} if info.field_name == "csv" else ()

    @field_validator("truth_pattern")
    @classmethod
    def _one_group_regex(cls, pattern: str | None) -> str | None:
        if not pattern:
            return None
        try:
            groups = re.compile(pattern).groups
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regex: {exc}") from exc
        if groups < 1:
            raise ValueError(f"{pattern!r} needs a capturing group")
        return pattern

    @field_validator("header")
    @classmethod
    def _header_required(cls, header: bool) -> bool:
        if not header:
            raise ValueError("header: false is not supported (files must carry a header)")
        return header

    @field_validator("column_map", mode="before")
    @classmethod
    def _map_shape(cls, raw: Any) -> Any:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise ValueError("must be a mapping of file header name -> declared column")
        return {str(key): target for key, target in raw.items()}

    @field_validator("column_map")
    @classmethod
    def _map_targets(cls, raw: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        declared = {c.name.lower(): c.name for c in info.data.get("columns", ())}
        out: dict[str, str] = {}
        for key, target in raw.items():
            header = header_name(key)
            if not header:
                raise ValueError("has an empty header name")
            if header in declared:
                raise ValueError(f"key {key!r} is already a declared column; map only names the files use instead")
            if target.lower() not in declared:
                raise ValueError(f"{key!r} -> {target!r}: the target must be a declared column "
                                 f"({list(declared.values())})")
            if header in out:
                raise ValueError(f"names {key!r} twice (names compare case-insensitively)")
            out[header] = declared[target.lower()]
        return out

    @field_validator("ignore_columns", mode="before")
    @classmethod
    def _ignore_shape(cls, raw: Any) -> Any:
        if raw is None:
            return ()
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
            raise ValueError("must be a list of file header names")
        return tuple(str(item) for item in raw)

    @field_validator("ignore_columns")
    @classmethod
    def _ignore_names(cls, raw: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        declared = {c.name.lower() for c in info.data.get("columns", ())}
        mapped = info.data.get("column_map") or {}
        out: list[str] = []
        for item in raw:
            header = header_name(item)
            if not header:
                raise ValueError("has an empty name")
            if header in declared:
                raise ValueError(f"{item!r} is a declared column; remove it from one of them")
            if header in mapped:
                raise ValueError(f"{item!r} is both in column_map and in ignore_columns")
            if header not in out:
                out.append(header)
        return tuple(out)

    @model_validator(mode="after")
    def _record_id_and_names(self) -> "SourceSpec":
        names = self.column_names
        if not names:
            raise ValueError("declares no columns")
        if len(set(names)) != len(names):
            raise ValueError(f"declares a column twice: {names}")
        if self.record_id not in names:
            raise ValueError(f"record_id {self.record_id!r} is not one of its columns")
        clash = [n for n in names if n in RESERVED_COLUMNS and n != self.record_id]
        if clash:
            raise ValueError(f"columns {clash} clash with output columns {RESERVED_COLUMNS}")
        if next(c for c in self.columns if c.name == self.record_id).type != "id":
            raise ValueError(f"record_id column {self.record_id!r} must have type 'id'")
        return self

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def attributes(self) -> list[ColumnSpec]:
        """Every declared column except the record id, in declared order."""
        return [c for c in self.columns if c.name != self.record_id]

    @property
    def delimiter(self) -> str:
        return self.csv.delimiter

    @property
    def quote(self) -> str:
        return self.csv.quote

    @property
    def escape(self) -> str:
        return self.csv.escape

    @property
    def multiline(self) -> bool:
        return self.csv.multiline


class SourcesFile(BaseModel):
    """The whole file: ``version`` and a non-empty ``sources:`` mapping (name -> declaration)."""

    model_config = _DECLARATION

    version: int = 1
    sources: dict[str, SourceSpec]

    @model_validator(mode="before")
    @classmethod
    def _names_from_keys(cls, doc: Any) -> Any:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("sources"), Mapping) or not doc["sources"]:
            raise ValueError("sources.yaml must have a non-empty 'sources:' mapping")
        sources = {}
        for key, raw in doc["sources"].items():
            name = str(key)
            if not NAME.match(name):
                raise ValueError(f"source name {name!r} is not an identifier (it is a folder name)")
            if isinstance(raw, Mapping):
                if "name" in raw:
                    raise ValueError(f"source {name!r}: a source is named by its key; remove its 'name'")
                raw = {**raw, "name": name}
            sources[name] = raw
        return {**doc, "sources": sources}


# ---------------------------------------------------------------------------
# Reading the file
# ---------------------------------------------------------------------------


def _problems(exc: ValidationError, doc: Any) -> list[str]:
    """One line per pydantic error: ``source 's', column 'x': key: message``."""
    lines = []
    for err in exc.errors():
        loc, where = list(err["loc"]), []
        if loc[:1] == ["sources"] and len(loc) >= 2:
            source, loc = loc[1], loc[2:]
            where.append(f"source {source!r}")
            if loc[:1] == ["columns"] and len(loc) >= 2 and isinstance(loc[1], int):
                where.append(_column_label(doc, source, loc[1]))
                loc = loc[2:]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message, loc = f"unknown key {loc[-1]!r}", loc[:-1]
        elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
            message = "must be a mapping"
        parts = [", ".join(where)] if where else []
        if loc:
            parts.append(".".join(str(x) for x in loc))
        lines.append(": ".join([*parts, message]))
    return lines


def _column_label(doc: Any, source: Any, index: int) -> str:
    try:
        raw = doc["sources"][source]["columns"][index]
        name = raw if isinstance(raw, str) else raw["name"]
        return f"column {str(name)!r}"
    except (KeyError, IndexError, TypeError):
        return f"column {index + 1}"


def parse_sources(doc: Any) -> dict[str, SourceSpec]:
    """Validate a parsed ``sources.yaml`` document and return its sources, in file order.

    Raises:
        SourceConfigError: every invalid declaration, ``; ``-separated, each
            naming its source (and column, and key), e.g. ``source 'crm',
            column 'born': formats: unknown date formats ['MM/dd']; ...``.
    """
    try:
        return dict(SourcesFile.model_validate(doc).sources)
    except ValidationError as exc:
        raise SourceConfigError("; ".join(_problems(exc, doc))) from None


def load_sources(path: str | Path) -> dict[str, SourceSpec]:
    """Read and validate ``sources.yaml`` at ``path``.

    Raises:
        SourceConfigError: the file is missing, not YAML, or invalid; the
            message starts with the path.
    """
    import yaml

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SourceConfigError(f"cannot read source config {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise SourceConfigError(f"source config {path} is not valid YAML: {exc}") from exc
    try:
        return parse_sources(doc)
    except SourceConfigError as exc:
        raise SourceConfigError(f"{path}: {exc}") from None


def source_names(path: str | Path) -> list[str]:
    """The sorted source names of the ``sources.yaml`` at ``path`` (validated: see :func:`load_sources`)."""
    return sorted(load_sources(path))


# ---------------------------------------------------------------------------
# A file's header against its declaration
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HeaderCheck:
    """How one file's header line relates to its source's declared columns.

    ``is_header`` False: the line is not recognisable as a header at all (fewer
    than half of its fields are known names); ``layout`` is None and
    ``problems`` holds one line saying so (the file is quarantined as
    ``bad_header``). Otherwise ``problems`` lists every schema-drift finding
    (empty = the file is usable) and ``layout`` gives, per field position of the
    file, the declared column it feeds or None for an ignored column.
    """

    is_header: bool
    layout: tuple[str | None, ...] | None
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.is_header and not self.problems


def _clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (for messages)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compare_header(fields: list[str], spec: SourceSpec) -> HeaderCheck:
    """Compare a file's header fields with ``spec``'s declared columns.

    Names compare trimmed and case-insensitively (a leading UTF-8 BOM is
    ignored); ``spec.column_map`` renames file names to declared ones and
    ``spec.ignore_columns`` names extra columns to drop. Column order is free:
    each file is read by its own header. The line counts as a header when at
    least half of its fields are known names (declared, mapped or ignored);
    otherwise it is not a header (no header, or garbage).

    Returns:
        :class:`HeaderCheck`. Drift findings read e.g. ``unexpected column
        'email'``, ``missing column 'surname'``, ``column 3 is 'lastname',
        declared 'surname'`` (positions 1-based), ``column 'surname' appears
        twice (columns 3 and 4)``.
    """
    found = [header_name(f) for f in fields]
    if found:
        found[0] = found[0].lstrip("\ufeff").strip()
    declared = spec.column_names
    by_lower = {n.lower(): n for n in declared}
    known = set(by_lower) | set(spec.column_map) | set(spec.ignore_columns)
    hits = sum(1 for f in found if f in known)
    if not found or hits * 2 < len(found):
        shown = ", ".join(repr(_clip(f)) for f in found[:6]) + (", ..." if len(found) > 6 else "")
        hint = ""
        if spec.delimiter != "\t" and len(found) == 1 and "\t" in found[0]:
            hint = ' (it looks tab-separated: declare csv: {delimiter: "\\t"} for this source in sources.yaml)'
        elif spec.delimiter != ";" and len(found) == 1 and ";" in found[0]:
            hint = " (it looks semicolon-separated: declare csv: {delimiter: \";\"} for this source in sources.yaml)"
        return HeaderCheck(False, None, (
            f"first line is not a header ({hits} of {len(found)} field(s) are known column names: {shown}){hint}; "
            f"expected the declared columns {declared}",))
    layout: list[str | None] = []
    unknown: list[tuple[int, str]] = []
    for i, name in enumerate(found):
        if name in by_lower:
            layout.append(by_lower[name])
        elif name in spec.column_map:
            layout.append(spec.column_map[name])
        elif name in spec.ignore_columns:
            layout.append(None)
        else:
            layout.append(None)
            unknown.append((i, fields[i].strip().lstrip("\ufeff") if i < len(fields) else name))
    problems: list[str] = []
    present = [c for c in layout if c is not None]
    missing = [c for c in declared if c not in present]
    renamed: set[str] = set()
    for i, name in unknown:
        if i < len(declared) and declared[i] in missing and declared[i] not in renamed:
            problems.append(f"column {i + 1} is {name!r}, declared {declared[i]!r}")
            renamed.add(declared[i])
        else:
            problems.append(f"unexpected column {name!r}")
    for column in declared:
        positions = [i + 1 for i, c in enumerate(layout) if c == column]
        if len(positions) > 1:
            problems.append(f"column {column!r} appears {len(positions)} times "
                            f"(columns {', '.join(map(str, positions))})")
    problems.extend(f"missing column {c!r}" for c in missing if c not in renamed)
    return HeaderCheck(True, tuple(layout), tuple(problems))
