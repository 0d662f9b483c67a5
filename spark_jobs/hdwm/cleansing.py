"""Cleanse rules for washline's ``cleanse`` job: pure functions and Spark columns.

Every rule exists twice with the same semantics:

* a pure Python function (``normalise_text``, ``parse_date``, ...) that is
  cheap to unit-test and documents the rule, and
* a Spark column builder (``text_col``, ``date_col``, ...) made only of
  built-in Spark SQL expressions, so the job runs no Python UDF and the
  executors never need this module at run time.

The unit tests check that both agree on a table of cases. To make agreement
exact, regular expressions use explicit ASCII character classes (``[0-9]``,
``WS_CLASS``) whose meaning is identical in Python ``re`` and Java regex.

Decisions (documented in the job too):

* Text is trimmed, internal whitespace runs (space, tab, CR, LF, VT, FF, NBSP)
  collapse to one space, and text is **upper-cased**. A value that is empty
  after trimming becomes null.
* ``id`` columns (the record id) are trimmed/collapsed but keep their case:
  an id is a key, not a name.
* Dates: a column lists the formats it accepts (``DATE_FORMATS``); the first
  format whose shape matches wins. Day-first for slashed dates (``dd/MM/yyyy``,
  the AU/UK reading). An impossible date (Feb 30, month 13, year 0000) or a
  value in no listed format becomes null: the row is kept and the fix is
  counted under rule ``bad_date``.
* Postcodes: spaces and hyphens are removed; the result must be all digits
  with the configured length (AU: 4, leading zero kept, e.g. ``0800``).
  Anything else becomes null and is counted under ``bad_postcode``.
* Phones: a generic normaliser keeps digits and one optional leading ``+``;
  spaces, ``-``, ``.``, ``/`` and parentheses are removed. Six to fifteen
  digits (E.164 allows 15) are valid; anything else becomes null and is
  counted under ``bad_phone``.
* Missing values (null or blank) are never counted as fixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable, Mapping

# ---------------------------------------------------------------------------
# Shared definitions
# ---------------------------------------------------------------------------

#: Whitespace characters that are collapsed: the same set in Python and Java.
WS_CLASS = r"[\t\n\x0b\f\r \u00a0]"
WS_RUN = WS_CLASS + "+"

#: Column types a source may declare in ``sources.yaml``.
COLUMN_TYPES = ("id", "text", "string", "date", "postcode", "phone")

#: Field-level fix rules, counted in the job's ``fixed_by_rule`` metrics.
#: ``whitespace`` counts values changed by trimming/collapsing (not a loss).
FIX_RULES = ("bad_date", "bad_postcode", "bad_phone", "whitespace")

#: Longest field a reference may carry (characters). Longer values are quarantined,
#: not truncated: a 1 MB "name" is a broken export, and it would dominate memory in
#: tokenisation and comparison.
MAX_FIELD_CHARS = 1_000

#: Row-level quarantine reasons (first match wins, in this order).
QUARANTINE_REASONS = (
    "bad_header",  # the file's first line is not a header at all (drift in a real header fails the job)
    "malformed",  # the line cannot be parsed as CSV (e.g. an unbalanced quote)
    "column_count",  # the line has more or fewer fields than declared
    "encoding",  # bytes that are not UTF-8 (decoded as U+FFFD): the text is not trustworthy
    "control_char",  # a NUL or other C0 control character (PostgreSQL text refuses NUL)
    "field_too_long",  # a field longer than MAX_FIELD_CHARS: not a person attribute
    "missing_record_id",  # the record id is null or blank
    "duplicate_record_id",  # a later copy of a record id already seen in the source
)

#: Date formats a column may accept: name -> (shape regex, group order).
#: Separated formats accept one- or two-digit day and month.
DATE_FORMATS: dict[str, tuple[str, str]] = {
    "yyyyMMdd": (r"^([0-9]{4})([0-9]{2})([0-9]{2})$", "ymd"),
    "yyyy-MM-dd": (r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})$", "ymd"),
    "yyyy/MM/dd": (r"^([0-9]{4})/([0-9]{1,2})/([0-9]{1,2})$", "ymd"),
    "dd/MM/yyyy": (r"^([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})$", "dmy"),
    "dd-MM-yyyy": (r"^([0-9]{1,2})-([0-9]{1,2})-([0-9]{4})$", "dmy"),
    "dd.MM.yyyy": (r"^([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{4})$", "dmy"),
}
DEFAULT_DATE_FORMATS = ("yyyyMMdd", "yyyy-MM-dd", "dd/MM/yyyy")

PHONE_STRIP_CLASS = r"[\t\n\x0b\f\r \u00a0().\-/]"
POSTCODE_STRIP_CLASS = r"[\t\n\x0b\f\r \u00a0\-]"
PHONE_MIN_DIGITS, PHONE_MAX_DIGITS = 6, 15

# ---------------------------------------------------------------------------
# Pure Python rules
# ---------------------------------------------------------------------------


def normalise_whitespace(value: str | None) -> str | None:
    """Trim and collapse whitespace runs to one space; blank -> None."""
    if value is None:
        return None
    cleaned = re.sub(WS_RUN, " ", value).strip(" ")
    return cleaned or None


def normalise_text(value: str | None) -> str | None:
    """Whitespace-normalise and upper-case; blank -> None."""
    cleaned = normalise_whitespace(value)
    return cleaned.upper() if cleaned is not None else None


def parse_date(value: str | None, formats: tuple[str, ...] | list[str] = DEFAULT_DATE_FORMATS) -> date | None:
    """Parse ``value`` with the first format in ``formats`` whose shape matches.

    Returns None for blank input, input in no listed format, and impossible
    calendar dates (``20240230``, month 13, year 0000).
    """
    cleaned = normalise_whitespace(value)
    if cleaned is None:
        return None
    for name in formats:
        pattern, order = DATE_FORMATS[name]
        match = re.match(pattern, cleaned)
        if not match:
            continue
        parts = dict(zip(order, match.groups()))
        try:
            return date(int(parts["y"]), int(parts["m"]), int(parts["d"]))
        except ValueError:
            return None
    return None


def normalise_postcode(value: str | None, digits: int | None = 4) -> str | None:
    """Digits-only postcode of exactly ``digits`` digits (any 3-10 if None)."""
    if value is None:
        return None
    cleaned = re.sub(POSTCODE_STRIP_CLASS, "", value)
    if not cleaned:
        return None
    shape = rf"[0-9]{{{digits}}}" if digits else r"[0-9]{3,10}"
    return cleaned if re.fullmatch(shape, cleaned) else None


def normalise_phone(
    value: str | None, min_digits: int = PHONE_MIN_DIGITS, max_digits: int = PHONE_MAX_DIGITS
) -> str | None:
    """Digits with an optional leading ``+``; separators removed; else None."""
    cleaned = normalise_whitespace(value)
    if cleaned is None:
        return None
    plus = cleaned.startswith("+")
    body = re.sub(PHONE_STRIP_CLASS, "", cleaned[1:] if plus else cleaned)
    if not re.fullmatch(rf"[0-9]{{{min_digits},{max_digits}}}", body):
        return None
    return ("+" if plus else "") + body


def truth_entity(record_id: str | None, pattern: str | None) -> str | None:
    """The first group of ``pattern`` searched in ``record_id``; None if no match."""
    if record_id is None or not pattern:
        return None
    match = re.search(pattern, record_id)
    return match.group(1) if match and match.group(1) else None


# ---------------------------------------------------------------------------
# Source configuration (include/config/sources.yaml)
# ---------------------------------------------------------------------------

#: Output columns the job adds; attribute names must not collide with them.
RESERVED_COLUMNS = ("record_id", "source", "truth_entity", "ds", "source_file", "line_number")


class SourceConfigError(ValueError):
    """``sources.yaml`` is missing, unreadable or declares something invalid."""


@dataclass(frozen=True)
class ColumnSpec:
    """One declared input column: its name, type and type options."""

    name: str
    type: str = "text"
    formats: tuple[str, ...] = DEFAULT_DATE_FORMATS  # date
    digits: int | None = 4  # postcode
    min_digits: int = PHONE_MIN_DIGITS  # phone
    max_digits: int = PHONE_MAX_DIGITS  # phone

    @property
    def spark_type(self) -> str:
        return "date" if self.type == "date" else "string"


@dataclass(frozen=True)
class SourceSpec:
    """A declared source: column order of its CSV files and how to clean them."""

    name: str
    columns: tuple[ColumnSpec, ...]
    record_id: str
    truth_pattern: str | None = None
    delimiter: str = ","
    quote: str = '"'
    escape: str = "\\"
    #: ``csv: {multiline: true}``: RFC 4180 records whose quoted fields hold line breaks
    #: are read as one record (numbered by its first line); default: one record per line.
    multiline: bool = False
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Header name in the files (lower-case) -> declared column it feeds (a rename the profile accepts).
    column_map: Mapping[str, str] = field(default_factory=dict)
    #: Header names (lower-case) of extra columns that are dropped on purpose.
    ignore_columns: tuple[str, ...] = ()

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def attributes(self) -> list[ColumnSpec]:
        """Every declared column except the record id, in declared order."""
        return [c for c in self.columns if c.name != self.record_id]


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _column(source: str, raw: Any) -> ColumnSpec:
    where = f"source {source!r}"
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, Mapping) or "name" not in raw:
        raise SourceConfigError(f"{where}: each column needs a name, got {raw!r}")
    name, ctype = str(raw["name"]), str(raw.get("type", "text"))
    if not _NAME.match(name):
        raise SourceConfigError(f"{where}: column name {name!r} is not an identifier")
    if ctype not in COLUMN_TYPES:
        raise SourceConfigError(f"{where}: column {name!r} has unknown type {ctype!r}; known: {COLUMN_TYPES}")
    unknown = set(raw) - {"name", "type", "formats", "digits", "min_digits", "max_digits", "description"}
    if unknown:
        raise SourceConfigError(f"{where}: column {name!r} has unknown keys {sorted(unknown)}")
    formats = tuple(raw.get("formats") or DEFAULT_DATE_FORMATS)
    bad = [f for f in formats if f not in DATE_FORMATS]
    if bad:
        raise SourceConfigError(f"{where}: column {name!r} has unknown date formats {bad}; known: {list(DATE_FORMATS)}")
    digits = raw.get("digits", 4)
    if digits is not None and (not isinstance(digits, int) or not 1 <= digits <= 10):
        raise SourceConfigError(f"{where}: column {name!r}: digits must be an integer 1-10 or null")
    lo, hi = int(raw.get("min_digits", PHONE_MIN_DIGITS)), int(raw.get("max_digits", PHONE_MAX_DIGITS))
    if not 1 <= lo <= hi <= 20:
        raise SourceConfigError(f"{where}: column {name!r}: need 1 <= min_digits <= max_digits <= 20")
    return ColumnSpec(name=name, type=ctype, formats=formats, digits=digits, min_digits=lo, max_digits=hi)


def parse_sources(doc: Mapping[str, Any]) -> dict[str, SourceSpec]:
    """Validate a parsed ``sources.yaml`` document and return its sources.

    Raises:
        SourceConfigError: on any invalid declaration, naming the source.
    """
    if not isinstance(doc, Mapping) or not isinstance(doc.get("sources"), Mapping) or not doc["sources"]:
        raise SourceConfigError("sources.yaml must have a non-empty 'sources:' mapping")
    out: dict[str, SourceSpec] = {}
    for name, raw in doc["sources"].items():
        name = str(name)
        if not _NAME.match(name):
            raise SourceConfigError(f"source name {name!r} is not an identifier (it is a folder name)")
        if not isinstance(raw, Mapping):
            raise SourceConfigError(f"source {name!r} must be a mapping")
        columns = tuple(_column(name, c) for c in raw.get("columns") or [])
        if not columns:
            raise SourceConfigError(f"source {name!r} declares no columns")
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise SourceConfigError(f"source {name!r} declares a column twice: {names}")
        record_id = str(raw.get("record_id") or "")
        if record_id not in names:
            raise SourceConfigError(f"source {name!r}: record_id {record_id!r} is not one of its columns")
        clash = [c.name for c in columns if c.name in RESERVED_COLUMNS and c.name != record_id]
        if clash:
            raise SourceConfigError(f"source {name!r}: columns {clash} clash with output columns {RESERVED_COLUMNS}")
        if next(c for c in columns if c.name == record_id).type != "id":
            raise SourceConfigError(f"source {name!r}: record_id column {record_id!r} must have type 'id'")
        pattern = raw.get("truth_pattern")
        if pattern:
            try:
                groups = re.compile(pattern).groups
            except re.error as exc:
                raise SourceConfigError(f"source {name!r}: truth_pattern {pattern!r} is not a regex: {exc}") from exc
            if groups < 1:
                raise SourceConfigError(f"source {name!r}: truth_pattern {pattern!r} needs a capturing group")
        csv_opts = raw.get("csv") or {}
        delimiter = str(csv_opts.get("delimiter", ","))
        if len(delimiter) != 1:
            raise SourceConfigError(f"source {name!r}: delimiter must be one character")
        multiline = csv_opts.get("multiline", False)
        if not isinstance(multiline, bool):
            raise SourceConfigError(f"source {name!r}: csv multiline must be true or false, got {multiline!r}")
        if not raw.get("header", True):
            raise SourceConfigError(f"source {name!r}: header: false is not supported (files must carry a header)")
        column_map, ignore_columns = _header_mapping(name, raw, names)
        out[name] = SourceSpec(
            name=name,
            columns=columns,
            record_id=record_id,
            truth_pattern=pattern or None,
            delimiter=delimiter,
            quote=str(csv_opts.get("quote", '"')),
            escape=str(csv_opts.get("escape", "\\")),
            multiline=multiline,
            description=str(raw.get("description", "")),
            column_map=column_map,
            ignore_columns=ignore_columns,
        )
    return out


def _header_name(value: Any) -> str:
    """A header name as compared: trimmed and lower-case."""
    return str(value).strip().lower()


def _header_mapping(source: str, raw: Mapping[str, Any], names: list[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """Validate a source's optional ``column_map`` and ``ignore_columns``.

    Raises:
        SourceConfigError: not a mapping / list, an empty name, a target that is
            not a declared column, a map key or ignored name that is itself a
            declared column, or a name both mapped and ignored.
    """
    where = f"source {source!r}"
    declared = {n.lower(): n for n in names}
    raw_map = raw.get("column_map") or {}
    if not isinstance(raw_map, Mapping):
        raise SourceConfigError(f"{where}: column_map must be a mapping of file header name -> declared column")
    column_map: dict[str, str] = {}
    for key, target in raw_map.items():
        header = _header_name(key)
        if not header:
            raise SourceConfigError(f"{where}: column_map has an empty header name")
        if header in declared:
            raise SourceConfigError(
                f"{where}: column_map key {key!r} is already a declared column; map only names the files use instead")
        if not isinstance(target, str) or target.lower() not in declared:
            raise SourceConfigError(
                f"{where}: column_map {key!r} -> {target!r}: the target must be a declared column ({names})")
        if header in column_map:
            raise SourceConfigError(f"{where}: column_map names {key!r} twice (names compare case-insensitively)")
        column_map[header] = declared[target.lower()]
    raw_ignore = raw.get("ignore_columns") or []
    if isinstance(raw_ignore, (str, bytes)) or not isinstance(raw_ignore, (list, tuple)):
        raise SourceConfigError(f"{where}: ignore_columns must be a list of file header names")
    ignore: list[str] = []
    for item in raw_ignore:
        header = _header_name(item)
        if not header:
            raise SourceConfigError(f"{where}: ignore_columns has an empty name")
        if header in declared:
            raise SourceConfigError(f"{where}: ignore_columns {item!r} is a declared column; remove it from one of them")
        if header in column_map:
            raise SourceConfigError(f"{where}: {item!r} is both in column_map and in ignore_columns")
        if header not in ignore:
            ignore.append(header)
    return column_map, tuple(ignore)


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


def compare_header(fields: list[str], spec: "SourceSpec") -> HeaderCheck:
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
    found = [_header_name(f) for f in fields]
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


def load_sources(path: str | Path) -> dict[str, SourceSpec]:
    """Read and validate ``sources.yaml``.

    Raises:
        SourceConfigError: the file is missing, not YAML, or invalid.
    """
    import yaml  # driver-only dependency

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
        raise SourceConfigError(f"{path}: {exc}") from exc


# ---------------------------------------------------------------------------
# Spark column expressions (built-in functions only; no Python UDFs)
# ---------------------------------------------------------------------------


def _F():
    from pyspark.sql import functions as F

    return F


def whitespace_col(col):
    """Spark twin of :func:`normalise_whitespace`."""
    F = _F()
    cleaned = F.trim(F.regexp_replace(col, WS_RUN, " "))
    return F.when(cleaned == "", F.lit(None).cast("string")).otherwise(cleaned)


def text_col(col):
    """Spark twin of :func:`normalise_text`."""
    return _F().upper(whitespace_col(col))


def date_col(col, formats=DEFAULT_DATE_FORMATS):
    """Spark twin of :func:`parse_date` (returns a DATE column).

    Each format's shape is matched with a regex, its parts are rebuilt as a
    canonical ``yyyy-MM-dd`` string, and ``try_to_date`` (strict resolver)
    turns impossible dates into null. The first matching shape decides.
    """
    F = _F()
    value = whitespace_col(col)
    result = F.lit(None).cast("date")
    for name in reversed(list(formats)):
        pattern, order = DATE_FORMATS[name]
        part = {key: F.regexp_extract(value, pattern, i + 1) for i, key in enumerate(order)}
        canonical = F.concat_ws("-", F.lpad(part["y"], 4, "0"), F.lpad(part["m"], 2, "0"), F.lpad(part["d"], 2, "0"))
        parsed = F.when(part["y"] == "0000", F.lit(None).cast("date")).otherwise(
            F.try_to_date(canonical, "yyyy-MM-dd")
        )
        result = F.when(value.rlike(pattern), parsed).otherwise(result)
    return result


def postcode_col(col, digits: int | None = 4):
    """Spark twin of :func:`normalise_postcode`."""
    F = _F()
    cleaned = F.regexp_replace(col, POSTCODE_STRIP_CLASS, "")
    shape = rf"^[0-9]{{{digits}}}$" if digits else r"^[0-9]{3,10}$"
    return F.when(cleaned.rlike(shape), cleaned).otherwise(F.lit(None).cast("string"))


def phone_col(col, min_digits: int = PHONE_MIN_DIGITS, max_digits: int = PHONE_MAX_DIGITS):
    """Spark twin of :func:`normalise_phone`."""
    F = _F()
    value = whitespace_col(col)
    plus = value.startswith("+")
    unsigned = F.when(plus, F.substring(value, 2, 1 << 30)).otherwise(value)
    body = F.regexp_replace(unsigned, PHONE_STRIP_CLASS, "")
    valid = body.rlike(rf"^[0-9]{{{min_digits},{max_digits}}}$")
    return F.when(valid, F.concat(F.when(plus, F.lit("+")).otherwise(F.lit("")), body)).otherwise(
        F.lit(None).cast("string")
    )


def truth_entity_col(record_id_col, pattern: str | None):
    """Spark twin of :func:`truth_entity` (null when no pattern or no match)."""
    F = _F()
    if not pattern:
        return F.lit(None).cast("string")
    captured = F.regexp_extract(record_id_col, pattern, 1)
    return F.when(captured == "", F.lit(None).cast("string")).otherwise(captured)


def is_blank_col(col):
    """True when ``col`` is null or only whitespace."""
    F = _F()
    return col.isNull() | (F.regexp_replace(col, WS_CLASS, "") == "")


def clean_column(col, spec: ColumnSpec):
    """Clean one raw string column by its declared type.

    Returns:
        ``(value, fixes)``: the cleaned (typed) column, and a dict from fix
        rule name (``FIX_RULES``) to a boolean column that is true when the
        rule changed or nulled a non-blank input value.
    """
    F = _F()
    present = ~is_blank_col(col)
    fixes: dict[str, Any] = {}
    if spec.type in ("id", "string", "text"):
        base = whitespace_col(col)
        value = text_col(col) if spec.type == "text" else base
        fixes["whitespace"] = present & (base != col)
    elif spec.type == "date":
        value = date_col(col, spec.formats)
        fixes["bad_date"] = present & value.isNull()
    elif spec.type == "postcode":
        value = postcode_col(col, spec.digits)
        fixes["bad_postcode"] = present & value.isNull()
    elif spec.type == "phone":
        value = phone_col(col, spec.min_digits, spec.max_digits)
        fixes["bad_phone"] = present & value.isNull()
    else:  # pragma: no cover - parse_sources refuses unknown types
        raise SourceConfigError(f"unknown column type {spec.type!r}")
    return value, {rule: F.coalesce(flag, F.lit(False)) for rule, flag in fixes.items()}


#: Pure-Python twin of :func:`clean_column`, for tests and small tools.
PY_RULES: dict[str, Callable[..., Any]] = {
    "id": normalise_whitespace,
    "string": normalise_whitespace,
    "text": normalise_text,
    "date": parse_date,
    "postcode": normalise_postcode,
    "phone": normalise_phone,
}
