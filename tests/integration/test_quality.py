"""Real Great Expectations on real SQLite/PostgreSQL staging slices: a clean
slice passes; each injected fault is caught by the right expectation with the
right unexpected_count; an expectation that raises is ERROR."""

from __future__ import annotations

import json

import pytest

from staging_data import write_slice
from washline.quality import runner
from washline.staging.dialects import get_db_hook
from washline.staging.load import load_slice

DS = "2025-01-01"


def execute(conn_id, *statements):
    hook, _ = get_db_hook(conn_id)
    conn = hook.get_conn()
    cur = conn.cursor()
    for sql in statements:
        cur.execute(sql)
    conn.commit()
    conn.close()


def by_type(summary, expectation, column=None):
    hits = [e for e in summary["expectations"] if e["expectation"] == expectation
            and (column is None or e["column"] == column)]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.fixture
def loaded(staging_conn, tmp_path):
    load_slice(staging_conn, DS, write_slice(tmp_path, DS, n=10), "run-1")
    load_slice(staging_conn, "2025-01-02", write_slice(tmp_path, "2025-01-02", n=4), "run-2")
    return staging_conn


def test_clean_slice_passes_and_builds_data_docs(loaded, tmp_path):
    summary = runner.validate_slice(loaded, DS, 10, tmp_path / "docs")
    assert summary["status"] == "PASS", runner.format_table(summary)
    assert not summary["blocks_publish"]
    assert len(summary["expectations"]) >= 6
    html = open(summary["data_docs"]).read()
    assert "staging_records" in html


def test_row_count_reconciliation_uses_the_passed_count(loaded, tmp_path):
    summary = runner.validate_slice(loaded, DS, 11, tmp_path / "docs")
    row = by_type(summary, "expect_table_row_count_to_equal")
    assert row["status"] == "FAIL" and row["observed_value"] == 10
    assert summary["status"] == "FAIL" and summary["blocks_publish"]


def test_record_without_cluster_is_caught(loaded, tmp_path):
    execute(loaded, f"DELETE FROM staging_links WHERE ds = '{DS}' AND record_id IN ('rec-3', 'rec-7')")
    summary = runner.validate_slice(loaded, DS, 10, tmp_path / "docs")
    row = by_type(summary, "expect_column_values_to_not_be_null", "cluster_id")
    assert row["status"] == "FAIL" and row["unexpected_count"] == 2
    assert summary["blocks_publish"]


def test_bad_postcode_and_duplicate_key_are_counted(loaded, tmp_path):
    execute(
        loaded,
        f"UPDATE staging_records SET postcode = '20X0' WHERE ds = '{DS}' AND record_id IN ('rec-1', 'rec-2', 'rec-5')",
        f"INSERT INTO staging_records (ds, load_id, record_id, source, postcode) VALUES ('{DS}', 'run-1', 'rec-4', 'other', '2000')",
    )
    summary = runner.validate_slice(loaded, DS, 11, tmp_path / "docs")
    assert by_type(summary, "expect_column_values_to_match_regex", "postcode")["unexpected_count"] == 3
    dup = by_type(summary, "expect_compound_columns_to_be_unique")
    assert dup["status"] == "FAIL" and dup["unexpected_count"] == 2
    assert summary["status"] == "FAIL"


def test_warning_expectation_does_not_block(loaded, tmp_path):
    execute(loaded, f"UPDATE staging_records SET surname = NULL WHERE ds = '{DS}' AND record_id IN ('rec-1', 'rec-2')")
    summary = runner.validate_slice(loaded, DS, 10, tmp_path / "docs")
    row = by_type(summary, "expect_column_values_to_not_be_null", "surname")
    assert row["status"] == "FAIL" and row["severity"] == "warning" and row["unexpected_count"] == 2
    assert summary["status"] == "WARN" and not summary["blocks_publish"]


def test_expectation_that_raises_is_error(loaded, tmp_path):
    suites = tmp_path / "suites"
    suites.mkdir()
    spec = json.loads((runner.SUITES_DIR / "staging_records.json").read_text())
    spec["expectations"].append({"type": "expect_column_values_to_not_be_null",
                                 "kwargs": {"column": "no_such_column"}, "meta": {"severity": "warning"}})
    (suites / "broken.json").write_text(json.dumps(spec))
    summary = runner.validate_slice(loaded, DS, 10, tmp_path / "docs", suite_name="broken", suites_dir=suites)
    row = by_type(summary, "expect_column_values_to_not_be_null", "no_such_column")
    assert row["status"] == "ERROR" and row["exception"]
    assert summary["status"] == "ERROR" and summary["blocks_publish"]
