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
        "INSERT INTO staging_links (ds, load_id, source, record_id, cluster_id, iteration, mu, quality, "
        "cluster_size) VALUES ('2025-01-01', 'r', 's', ?, ?, 1, 0.6, 1.0, 2)",
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


# ------------------------------------------------------------------ operator, history, CLI


class _TI:
    """Records xcom_push calls the way the task runner's TaskInstance receives them."""

    def __init__(self):
        self.pushed = {}

    def xcom_push(self, key, value):
        json.dumps(value)  # XCom values must be JSON-serialisable
        self.pushed[key] = value


def _operator(**kw):
    from washline.integrity.operator import DatabaseIntegrityCheckOperator

    return DatabaseIntegrityCheckOperator(task_id="check_integrity", conn_id="checked", **kw)


def test_operator_passes_returns_report_and_writes_history(db):
    ti = _TI()
    out = _operator(mode="physical_only").execute({"ti": ti})
    assert out["verdict"] == "PASS" and ti.pushed["report"] == out
    assert {"verdict", "findings", "error", "duration_s"} <= set(out)
    rows = sqlite3.connect(db).execute(
        "SELECT engine, check_mode, command, verdict, consistency_errors, findings, start_time <= end_time "
        "FROM washline_integrity_log").fetchall()
    assert rows == [("sqlite", "physical_only", "PRAGMA quick_check(100)", "PASS", 0, 0, 1)]


def test_operator_fails_on_corruption_after_pushing_the_report(db):
    from airflow.sdk.exceptions import AirflowFailException

    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    ti = _TI()
    with pytest.raises(AirflowFailException, match="nothing will be published"):
        _operator().execute({"ti": ti})
    assert ti.pushed["report"]["verdict"] == "FAIL" and ti.pushed["report"]["findings"]
    assert "washline_integrity_log" not in db.read_bytes().decode("latin-1")  # damaged file not written to


def test_operator_error_is_retryable(tmp_path, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException

    from washline.integrity.operator import IntegrityCheckError

    monkeypatch.setenv("AIRFLOW_CONN_CHECKED", json.dumps({"conn_type": "sqlite", "host": str(tmp_path / "no" / "x.db")}))
    ti = _TI()
    with pytest.raises(IntegrityCheckError) as info:
        _operator().execute({"ti": ti})
    assert not isinstance(info.value, AirflowFailException)
    assert ti.pushed["report"]["verdict"] == "ERROR" and ti.pushed["report"]["error"]


def test_operator_refuses_bad_combinations_at_parse_time_and_templates_conn_id():
    from washline.integrity.operator import DatabaseIntegrityCheckOperator

    with pytest.raises(ValueError, match="PHYSICAL_ONLY cannot be combined with DATA_PURITY"):
        DatabaseIntegrityCheckOperator(task_id="t", conn_id="x", mode="physical_only", data_purity=True)
    assert "conn_id" in DatabaseIntegrityCheckOperator.template_fields


def test_operator_skips_after_not_after(db):
    from airflow.sdk.exceptions import AirflowSkipException

    with pytest.raises(AirflowSkipException, match="time limit"):
        _operator(not_after="2000-01-01T00:00:00+00:00").execute({"ti": _TI()})


def test_time_limit_interrupts_and_gives_error(db):
    from airflow.sdk import BaseHook

    from washline.integrity import sqlite as engine

    hook = BaseHook.get_connection("checked").get_hook()
    report = engine.check(hook, timeout_s=1e-6)
    assert report.verdict is Verdict.ERROR and "time limit" in report.error


@pytest.mark.parametrize("corrupt,code", [(False, 0), (True, 2)])
def test_cli_exit_codes(db, corrupt, code):
    import subprocess
    import sys

    if corrupt:
        data = bytearray(db.read_bytes())
        data[5 * 4096 + 8: 5 * 4096 + 40] = b"\xa5" * 32
        data[6 * 4096 - 600: 6 * 4096] = b"\x5a" * 600
        db.write_bytes(bytes(data))
    proc = subprocess.run([sys.executable, "-m", "washline.integrity", "--conn-uri", f"sqlite:///{db}", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["verdict"] == ("FAIL" if corrupt else "PASS")


def test_cli_error_and_usage_exit_1(tmp_path):
    import subprocess
    import sys

    missing = subprocess.run([sys.executable, "-m", "washline.integrity", "--conn-uri",
                              f"sqlite:///{tmp_path}/none/x.db"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1
    usage = subprocess.run([sys.executable, "-m", "washline.integrity"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 1


def test_uri_parsing_keeps_password_out_of_output():
    from washline.integrity.__main__ import connection_from_uri

    assert connection_from_uri("sqlite:////abs/p.db") == {"conn_type": "sqlite", "host": "/abs/p.db"}
    pg = connection_from_uri("postgresql://u:s%40cret@h:5433/db")
    assert pg == {"conn_type": "postgres", "host": "h", "login": "u", "password": "s@cret", "port": 5433, "schema": "db"}
    assert connection_from_uri("mssql+pymssql://u@h:1433/Staging")["conn_type"] == "mssql"
    assert connection_from_uri("oracle+oracledb://u@h:1521/?service_name=FREEPDB1")["extra"] == {"service_name": "FREEPDB1"}
    with pytest.raises(ValueError):
        connection_from_uri("sqlite:///relative.db")
