"""Tokenising references into bags of upper-case tokens (DWM14, Talburt et al. 2020).

Input DataFrame columns: ``record_id`` (string), ``text`` (string, the whole
reference; may be null). Output: ``record_id`` (string), ``tokens``
(array<string>, in reference order; never null, possibly empty).

Tokeniser types (DWM ``tokenizerType``):

* ``Splitter`` – every run of non-word characters (anything but a Unicode
  letter or digit; ``_`` counts as a separator too) splits tokens.
* ``CompressNbr`` – as Splitter, but punctuation other than a comma *between
  two digits* is dropped first, so ``010-52-5974`` → ``010525974`` and ``(501)555-1234`` →
  ``501`` + ``5551234`` (DWM v2.30 ``CompressNbr``). With ``canonicalNumbers``
  (washline) an SSN written ``053 90 3228`` and a phone ``(217) 454-4412`` become
  one digit run first, and a ZIP+4 ``72205-1234`` stays two tokens, ``72205`` and
  ``1234`` (not a 9-digit number of an SSN's shape).
* ``Compress`` – tokens are whitespace/comma separated and all other
  punctuation is removed inside a token (``O'NEIL`` → ``ONEIL``).

With ``removeDuplicateTokens`` only the first occurrence of a token in a
reference is kept (DWM55 applies it before comparison; we apply it once here
so that frequencies, blocking, comparison and entropy all see the same bag).
Everything is Spark SQL (no Python UDF).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .config import LinkageProfile

_SEP = r"[^\p{L}\p{N}]+"


def _valid_date(y, m, d):
    """Column boolean: y/m/d (string Columns of digits) form a date with year 1800–2099."""
    yi, mi, di = y.cast("int"), m.cast("int"), d.cast("int")
    return yi.between(1800, 2099) & mi.between(1, 12) & di.between(1, 31)


def canonical_date(t):
    """Column: an all-digit token that reads as a full date becomes ``YYYYMMDD``.

    Readings tried in order (first valid wins): ``YYYYMMDD`` (kept),
    ``MMDDYYYY``, ``DDMMYYYY`` (8 digits), then ``MDDYYYY`` and ``DMMYYYY``
    (7 digits: a leading zero lost to ``stripLeadingZeros`` or never written).
    Every other token is returned unchanged. So 1980-03-15, 03/15/1980 and
    3/15/1980 are one token, ``19800315`` (washline; US month-first order
    before day-first).
    """
    s = F.substring
    is8 = t.rlike(r"^[0-9]{8}$")
    is7 = t.rlike(r"^[0-9]{7}$")
    return (
        F.when(is8 & _valid_date(s(t, 1, 4), s(t, 5, 2), s(t, 7, 2)), t)
        .when(is8 & _valid_date(s(t, 5, 4), s(t, 1, 2), s(t, 3, 2)), F.concat(s(t, 5, 4), s(t, 1, 2), s(t, 3, 2)))
        .when(is8 & _valid_date(s(t, 5, 4), s(t, 3, 2), s(t, 1, 2)), F.concat(s(t, 5, 4), s(t, 3, 2), s(t, 1, 2)))
        .when(is7 & _valid_date(s(t, 4, 4), s(t, 1, 1), s(t, 2, 2)),
              F.concat(s(t, 4, 4), F.lit("0"), s(t, 1, 1), s(t, 2, 2)))
        .when(is7 & _valid_date(s(t, 4, 4), s(t, 2, 2), s(t, 1, 1)),
              F.concat(s(t, 4, 4), s(t, 2, 2), F.lit("0"), s(t, 1, 1)))
        .otherwise(t)
    )


def tokens_column(
    text_col,
    tokenizer_type: str = "Splitter",
    remove_duplicates: bool = False,
    strip_zeros: bool = False,
    fold_aliases: bool = False,
    canonical_numbers: bool = False,
):
    """Return a Column expression array<string> of tokens for ``text_col``.

    ``strip_zeros``: all-digit tokens lose their leading zeros ("010" → "10",
    "000" → "0"). ``fold_aliases``: street suffixes and state names become
    their standard abbreviation (``hdwm.aliases``: ``AVENUE``/``AVNUE`` → ``AVE``).

    Raises:
        ValueError: unknown tokenizer_type.
    """
    u = F.upper(F.coalesce(text_col, F.lit("")))
    if canonical_numbers:
        # washline: one spelling per number before splitting – "053 90 3228"
        # (an SSN written with spaces) and "(217) 454-4412" (a phone with its
        # area code in brackets) become one digit run
        u = F.regexp_replace(u, r"(?<![\p{N}])(\d{3})[ ]+(\d{2})[ ]+(\d{4})(?![\p{N}])", "$1$2$3")
        u = F.regexp_replace(u, r"\((\d{3})\)[ ]*(\d{3})(?=[-. ]?\d{4}(?![\p{N}]))", "$1$2")
        # a ZIP+4 ("72205-1234", USPS Publication 28) stays a 5-digit zip and its 4-digit add-on:
        # joined, it would be a 9-digit number of an SSN's shape, an identifier that every
        # member of the household holds (it lifts the given-name veto between them and
        # conflicts with a real SSN of the same shape)
        u = F.regexp_replace(u, r"(?<![\p{N}-])(\d{5})-(\d{4})(?![\p{N}-])", "$1 $2")
    if tokenizer_type == "Splitter":
        pass
    elif tokenizer_type == "CompressNbr":
        # commas stay separators: DWM sample files are comma separated, and
        # "93755,010-52-5974" is a zip followed by an SSN, not one number
        u = F.regexp_replace(u, r"(?<=\p{N})[^\p{L}\p{N}\s,]+(?=\p{N})", "")
    elif tokenizer_type == "Compress":
        u = F.regexp_replace(u, r"[^\p{L}\p{N}\s,]+", "")
        u = F.regexp_replace(u, r"[\s,]+", " ")
    else:
        raise ValueError(f"unknown tokenizerType {tokenizer_type!r}")
    sep = r"[\s,]+" if tokenizer_type == "Compress" else _SEP
    arr = F.filter(F.split(F.trim(F.regexp_replace(u, sep, " ")), " "), lambda t: F.length(t) > 0)
    if strip_zeros:
        arr = F.transform(
            arr,
            lambda t: F.when(
                t.rlike(r"^[0-9]+$"), F.coalesce(F.nullif(F.regexp_replace(t, r"^0+", ""), F.lit("")), F.lit("0"))
            ).otherwise(t),
        )
    if canonical_numbers:
        arr = F.transform(arr, canonical_date)
    if fold_aliases:
        from .aliases import fold_column

        arr = fold_column(arr)
    if remove_duplicates:
        arr = F.array_distinct(arr)
    return arr


def tokenize(refs: DataFrame, profile: LinkageProfile) -> DataFrame:
    """Tokenise ``refs`` (``record_id``, ``text``) → (``record_id``, ``tokens``)."""
    return refs.select(
        F.col("record_id").cast("string").alias("record_id"),
        tokens_column(
            F.col("text"), profile.tokenizerType, profile.removeDuplicateTokens, profile.stripLeadingZeros,
            profile.foldAbbreviations, profile.canonicalNumbers,
        ).alias("tokens"),
    )


def tokens_fingerprint(profile: LinkageProfile) -> str:
    """A 16-hex-digit fingerprint of what ``tokenize`` makes of a text under
    ``profile``: sha1 of this module's and ``hdwm.aliases``' source code and
    the profile's tokeniser settings (``tokenizerType``,
    ``removeDuplicateTokens``, ``stripLeadingZeros``, ``foldAbbreviations``,
    ``canonicalNumbers``).

    The entity registry keeps each reference's tokens with a version
    (``hdwm.registry``, part ``tokens/``) under this fingerprint, so a night
    does not tokenise the whole history again; a stored token list is used
    only when its fingerprint equals the night's – another profile or
    another tokeniser code means the texts are tokenised again.
    """
    import hashlib
    import json
    from pathlib import Path

    here = Path(__file__).resolve().parent
    h = hashlib.sha1()
    for name in ("tokenizer.py", "aliases.py"):
        h.update((here / name).read_bytes())
    h.update(json.dumps([profile.tokenizerType, profile.removeDuplicateTokens, profile.stripLeadingZeros,
                         profile.foldAbbreviations, profile.canonicalNumbers]).encode())
    return h.hexdigest()[:16]
