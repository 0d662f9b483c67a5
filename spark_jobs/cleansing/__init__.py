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

What a source may declare (column types and their options, the date format
names, the header rule) is ``sourcecontract``'s, which reads ``sources.yaml``;
this module only applies the declared types to values.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Callable

from sourcecontract import (
    DATE_FORMATS,
    DEFAULT_DATE_FORMATS,
    PHONE_MAX_DIGITS,
    PHONE_MIN_DIGITS,
    ColumnSpec,
    SourceConfigError,
)

# ---------------------------------------------------------------------------
# Shared definitions
# ---------------------------------------------------------------------------

#: Whitespace characters that are collapsed: the same set in Python and Java.
WS_CLASS = r"[\t\n\x0b\f\r \u00a0]"
WS_RUN = WS_CLASS + "+"

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

PHONE_STRIP_CLASS = r"[\t\n\x0b\f\r \u00a0().\-/]"
POSTCODE_STRIP_CLASS = r"[\t\n\x0b\f\r \u00a0\-]"

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
