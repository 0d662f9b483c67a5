"""Cleanse rules (spark_jobs/cleansing): pure functions and agreement
of the Spark twins with the pure functions (the sources.yaml declarations are
tests/unit/test_sourcecontract.py's)."""

from __future__ import annotations

from datetime import date

import pytest

import cleansing as C

# ---------------------------------------------------------------------------
# Whitespace and case
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("  mary   ann ", "MARY ANN"),
        ("tab\tand\nnewline", "TAB AND NEWLINE"),
        ("nbsp\u00a0space", "NBSP SPACE"),
        ("o'brien-smith", "O'BRIEN-SMITH"),
        ("straße", "STRASSE"),
        ("   ", None),
        ("", None),
        (None, None),
    ],
)
def test_normalise_text_trims_collapses_and_upper_cases(raw, expected):
    assert C.normalise_text(raw) == expected


def test_normalise_whitespace_keeps_case():
    assert C.normalise_whitespace("  rec-1-Org  ") == "rec-1-Org"
    assert C.normalise_whitespace("\t\n") is None


# ---------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("19081209", date(1908, 12, 9)),
        ("2001-02-03", date(2001, 2, 3)),
        ("2001-2-3", date(2001, 2, 3)),
        ("03/04/1990", date(1990, 4, 3)),  # day first (AU)
        (" 2024-02-29 ", date(2024, 2, 29)),  # leap day
        ("20240230", None),  # Feb 30
        ("2023-02-29", None),  # not a leap year
        ("1900-02-29", None),  # 1900 is not a leap year
        ("19371233", None),  # day 33 (a real FEBRL value)
        ("19729518", None),  # month 95 (a real FEBRL value)
        ("31/02/2000", None),
        ("00000101", None),  # year 0
        ("2001/02/03", None),  # format not listed by default
        ("1999", None),
        ("yesterday", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_date(raw, expected):
    assert C.parse_date(raw) == expected


def test_parse_date_honours_the_listed_formats():
    assert C.parse_date("2001/02/03", ["yyyy/MM/dd"]) == date(2001, 2, 3)
    assert C.parse_date("03.04.1990", ["dd.MM.yyyy"]) == date(1990, 4, 3)
    assert C.parse_date("19900403", ["dd/MM/yyyy"]) is None


# ---------------------------------------------------------------------------
# Postcodes and phones
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, digits, expected",
    [
        ("4011", 4, "4011"),
        (" 0800 ", 4, "0800"),  # NT: leading zero kept
        ("40 11", 4, "4011"),
        ("40-11", 4, "4011"),
        ("800", 4, None),
        ("40110", 4, None),
        ("60x0", 4, None),
        ("4011.0", 4, None),
        ("", 4, None),
        (None, 4, None),
        ("12345", None, "12345"),
        ("12", None, None),
    ],
)
def test_normalise_postcode(raw, digits, expected):
    assert C.normalise_postcode(raw, digits) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("+61 2 9876 5432", "+61298765432"),
        ("(02) 9876-5432", "0298765432"),
        ("02.9876.5432", "0298765432"),
        ("0412 345 678", "0412345678"),
        (" +1 (555) 010-9999 ", "+15550109999"),
        ("12345", None),  # too short
        ("1234567890123456", None),  # 16 digits: longer than E.164
        ("0412 345 678 ext 9", None),
        ("61+2 9876", None),  # + only allowed in front
        ("++61298765432", None),
        ("", None),
        (None, None),
    ],
)
def test_normalise_phone(raw, expected):
    assert C.normalise_phone(raw) == expected


@pytest.mark.parametrize(
    "record_id, pattern, expected",
    [
        ("rec-223-org", r"^rec-(\d+)-", "223"),
        ("rec-10-dup-0", r"^rec-(\d+)-", "10"),
        ("x-10", r"^rec-(\d+)-", None),
        ("rec-10-org", None, None),
        (None, r"^rec-(\d+)-", None),
    ],
)
def test_truth_entity(record_id, pattern, expected):
    assert C.truth_entity(record_id, pattern) == expected


# ---------------------------------------------------------------------------
# The Spark twins agree with the pure functions
# ---------------------------------------------------------------------------

TEXT_CASES = ["  mary   ann ", "tab\tand\nnewline", "nbsp\u00a0space", "straße", "   ", "", None, "rec-1-Org"]
DATE_CASES = ["19081209", "2001-02-03", "2001-2-3", "03/04/1990", " 2024-02-29 ", "20240230", "2023-02-29",
              "1900-02-29", "19371233", "31/02/2000", "00000101", "0000-01-01", "2001/02/03", "yesterday", "", None]
POSTCODE_CASES = ["4011", " 0800 ", "40 11", "40-11", "800", "40110", "60x0", "4011.0", "", None]
PHONE_CASES = ["+61 2 9876 5432", "(02) 9876-5432", "02.9876.5432", " +1 (555) 010-9999 ", "12345",
               "1234567890123456", "0412 345 678 ext 9", "61+2 9876", "++61298765432", "", None]


def _spark_apply(spark, values, build):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i INT, v STRING")
    rows = df.select("i", build(F.col("v")).alias("out")).orderBy("i").collect()
    return [r["out"] for r in rows]


@pytest.mark.spark
def test_spark_rules_agree_with_python(spark):
    assert _spark_apply(spark, TEXT_CASES, C.text_col) == [C.normalise_text(v) for v in TEXT_CASES]
    assert _spark_apply(spark, TEXT_CASES, C.whitespace_col) == [C.normalise_whitespace(v) for v in TEXT_CASES]
    assert _spark_apply(spark, DATE_CASES, C.date_col) == [C.parse_date(v) for v in DATE_CASES]
    assert _spark_apply(spark, POSTCODE_CASES, C.postcode_col) == [C.normalise_postcode(v) for v in POSTCODE_CASES]
    assert _spark_apply(spark, PHONE_CASES, C.phone_col) == [C.normalise_phone(v) for v in PHONE_CASES]
    ids = ["rec-223-org", "rec-10-dup-0", "x-10", None]
    assert _spark_apply(spark, ids, lambda c: C.truth_entity_col(c, r"^rec-(\d+)-")) == [
        C.truth_entity(v, r"^rec-(\d+)-") for v in ids
    ]


@pytest.mark.spark
def test_clean_column_flags_count_only_real_fixes(spark):
    from pyspark.sql import functions as F

    spec = C.ColumnSpec(name="d", type="date")
    df = spark.createDataFrame([("20240230",), ("20240229",), ("",), (None,)], "d STRING")
    value, fixes = C.clean_column(F.col("d"), spec)
    rows = df.select(value.alias("v"), fixes["bad_date"].alias("bad")).collect()
    assert [r["bad"] for r in rows] == [True, False, False, False]
    assert rows[1]["v"] == date(2024, 2, 29)
