"""The integrity sweep DAG: shape, parse-time behaviour, plan logic, and a real
``airflow dags test`` over a clean and a corrupt SQLite database."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from washline.integrity import sweep

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "washline_integrity.py"))
    assert not bag.import_errors, bag.import_errors
    return bag.dags["washline_integrity"]


def test_shape(dag):
    assert set(dag.task_ids) == {"plan", "check_database", "report"}
    check = dag.get_task("check_database")
    assert check.task_type == "DatabaseIntegrityCheckOperator"
    assert check.upstream_task_ids == {"plan"} and dag.get_task("report").trigger_rule == "all_done"
    assert dag.catchup is False and dag.schedule == "30 3 * * *"
    assert dag.params["conn_ids"] == [] and dag.params["full_day"] == "sunday"


def test_mode_follows_the_weekday():
    sunday, monday = dt.date(2025, 1, 5), dt.date(2025, 1, 6)
    assert sweep.mode_for(sunday) == "full" and sweep.mode_for(monday) == "physical_only"
    assert sweep.mode_for(monday, "monday") == "full"
    assert sweep.mode_for(sunday, override="physical_only") == "physical_only"
    with pytest.raises(ValueError):
        sweep.mode_for(sunday, "someday")


def test_connections_param_then_variable_then_default():
    assert sweep.resolve_connections([], None) == ["washline_staging"]
    assert sweep.resolve_connections([], '["a", "b", "a"]') == ["a", "b"]
    assert sweep.resolve_connections([], "a, c") == ["a", "c"]
    assert sweep.resolve_connections(["x"], "a") == ["x"]
    with pytest.raises(ValueError):
        sweep.resolve_connections(["bad id; rm"], None)
    now = dt.datetime(2025, 1, 6, 3, 30, tzinfo=dt.timezone.utc)
    items = sweep.plan({"conn_ids": ["x"], "time_limit_minutes": 2, "mode": "full"}, now.date(), None, now)
    assert items == [{"conn_id": "x", "mode": "full", "not_after": "2025-01-06T03:32:00+00:00"}]


def test_summary_table_marks_missing_reports_not_run():
    rows = sweep.summarise([{"conn_id": "a", "mode": "full"}, {"conn_id": "b", "mode": "full"}],
                           [{"verdict": "PASS", "engine": "sqlite", "findings": [], "duration_s": 0.1}, None])
    text = sweep.render_table(rows)
    assert "NOT RUN" in text and text.splitlines()[0].startswith("connection")


def _make_db(path: Path, corrupt: bool) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.execute("CREATE INDEX ix_t_v ON t (v)")
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(f"value-{i:06d}",) for i in range(3000)])
    conn.commit()
    if corrupt:  # the index no longer matches the table
        conn.execute("PRAGMA writable_schema = ON")
        (sql, root) = conn.execute("SELECT sql, rootpage FROM sqlite_master WHERE name = 'ix_t_v'").fetchone()
        conn.execute("DELETE FROM sqlite_master WHERE name = 'ix_t_v'")
        conn.commit()
        conn.close()
        conn = sqlite3.connect(path)
        conn.execute("UPDATE t SET v = 'changed' WHERE id % 5 = 0")
        conn.commit()
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES ('index', 'ix_t_v', 't', ?, ?)",
                     (root, sql))
        conn.commit()
    conn.close()


@pytest.mark.airflow
def test_sweep_runs_every_database_and_summarises(tmp_path, tmp_path_factory):
    import early  # tests/early.py

    env = dict(os.environ)
    env.update({
        # a private copy of the migrated metadata DB (skips when the shared one is missing), so the run
        # never writes the shared .airflow/airflow.db that other tests (and other xdist workers) read
        **early.airflow_db_env(early.airflow_home_copy(tmp_path_factory, "airflow-sweep")),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SWEEP_CLEAN": json.dumps({"conn_type": "sqlite", "host": str(tmp_path / "clean.db")}),
        "AIRFLOW_CONN_SWEEP_CORRUPT": json.dumps({"conn_type": "sqlite", "host": str(tmp_path / "corrupt.db")}),
    })
    _make_db(tmp_path / "clean.db", corrupt=False)
    _make_db(tmp_path / "corrupt.db", corrupt=True)
    conf = {"conn_ids": ["sweep_clean", "sweep_corrupt"], "mode": "full"}
    proc = subprocess.run([str(BIN / "airflow"), "dags", "test", "washline_integrity", "2025-01-06",
                           "-c", json.dumps(conf)], env=env, capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    (tmp_path / "dags-test.log").write_text(log)
    summary = log[log.index("integrity sweep summary"):] if "integrity sweep summary" in log else ""
    assert summary, log[-5000:]
    lines = summary.splitlines()
    clean = next(line for line in lines if line.startswith("sweep_clean "))
    corrupt = next(line for line in lines if line.startswith("sweep_corrupt "))
    assert " PASS " in clean and "full" in clean
    assert " FAIL " in corrupt
    assert "1 database(s) not clean: sweep_corrupt" in log
    # the clean database got its history row; the damaged SQLite file was not written to
    with sqlite3.connect(tmp_path / "clean.db") as c:
        assert c.execute("SELECT verdict, check_mode FROM washline_integrity_log").fetchall() == [("PASS", "full")]
    with sqlite3.connect(tmp_path / "corrupt.db") as c:
        assert not c.execute("SELECT 1 FROM sqlite_master WHERE name = 'washline_integrity_log'").fetchall()
