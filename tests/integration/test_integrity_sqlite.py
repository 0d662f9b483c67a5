"""Real corruption in a real SQLite staging database must give FAIL (or ERROR),
never PASS."""

from __future__ import annotations

import json
import sqlite3

import pytest

from washline.integrity import Verdict, run_check
from washline.integrity.sqlite import parse_rows
from washline.staging.load import ensure_schema


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "staging.db"
    conn = sqlite3.connect(path)
    ensure_schema(conn, "sqlite")
    conn.executemany(
        "INSERT INTO staging_links (ds, load_id, record_id, cluster_id, iteration, mu, quality, cluster_size) "
        "VALUES ('2025-01-01', 'r', ?, ?, 1, 0.6, 1.0, 2)",
        [(f"rec-{i:05d}-{'x' * 40}", f"c-{i // 2:05d}") for i in range(4000)],
    )
    conn.commit()
    conn.close()
    monkeypatch.setenv("AIRFLOW_CONN_CHECKED", json.dumps({"conn_type": "sqlite", "host": str(path)}))
    return path


def test_clean_database_passes(db):
    report = run_check("checked")
    assert report.verdict is Verdict.PASS
    assert report.command == "PRAGMA integrity_check(100)"
    assert report.findings == [] and report.duration_s >= 0


def test_quick_check_states_what_it_skips(db):
    report = run_check("checked", mode="physical_only")
    assert report.verdict is Verdict.PASS and report.command.startswith("PRAGMA quick_check")
    assert any("index content" in c for c in report.coverage)


def test_index_disagreeing_with_table_fails(db):
    conn = sqlite3.connect(db)
    # Rebuild the table without its index maintained: drop the index from the
    # schema, change rows, then put the stale index definition back.
    (index_sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ix_staging_links_cluster'").fetchone()
    (rootpage,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'ix_staging_links_cluster'").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("DELETE FROM sqlite_master WHERE name = 'ix_staging_links_cluster'")
    conn.commit()
    conn.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE staging_links SET cluster_id = 'moved' WHERE rowid % 7 = 0")
    conn.commit()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES ('index', ?, 'staging_links', ?, ?)",
        ("ix_staging_links_cluster", rootpage, index_sql),
    )
    conn.commit()
    conn.close()
    report = run_check("checked")
    assert report.verdict is Verdict.FAIL
    assert report.consistency_errors == len(report.findings) > 0
    assert any("ix_staging_links_cluster" in f.message for f in report.findings)


def test_overwritten_btree_page_fails(db):
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 20 * page
    # Scribble over the cell content (end of page) and the cell pointer array
    # of a few b-tree pages; page n starts at byte (n - 1) * page_size.
    for n in (6, 9, 12):
        start = (n - 1) * page
        data[start + 8: start + 40] = b"\xa5" * 32
        data[start + page - 600: start + page] = b"\x5a" * 600
    db.write_bytes(bytes(data))
    report = run_check("checked")
    assert report.verdict in (Verdict.FAIL, Verdict.ERROR)
    assert report.verdict.blocks_publish
    assert report.findings


def test_truncated_file_does_not_pass(db):
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    report = run_check("checked")
    assert report.verdict in (Verdict.FAIL, Verdict.ERROR)
    assert report.verdict.blocks_publish


def test_one_row_with_several_findings_is_split():
    findings, truncated = parse_rows(["row 5 missing from index ix_a\nrow 9 missing from index ix_a", "x"], 100)
    assert [f.message for f in findings] == ["row 5 missing from index ix_a", "row 9 missing from index ix_a", "x"]
    assert findings[0].obj == "ix_a" and not truncated
    assert parse_rows(["a"] * 3, max_errors=3)[1] is True
    assert parse_rows(["ok"]) == ([], False)
