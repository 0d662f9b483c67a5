"""Load → publish on real SQLite and PostgreSQL: idempotent reruns, schema
drift refused, failures leave published tables untouched."""

from __future__ import annotations

import pytest

from staging_data import write_slice
from washline.staging.dialects import get_db_hook
from washline.staging.load import SchemaDriftError, load_slice
from washline.staging.publish import NothingToPublish, publish_slice

pytestmark = pytest.mark.postgres


def rows(conn_id, sql):
    hook, _ = get_db_hook(conn_id)
    return hook.get_records(sql)


def test_load_then_publish_replaces_only_that_date(staging_conn, tmp_path):
    day1 = write_slice(tmp_path, "2025-01-01", n=6)
    day2 = write_slice(tmp_path, "2025-01-02", n=4)
    assert load_slice(staging_conn, "2025-01-01", day1, "run-1")["rows"] == {
        "staging_records": 6, "staging_links": 6, "staging_clusters": 3}
    load_slice(staging_conn, "2025-01-02", day2, "run-2")
    publish_slice(staging_conn, "2025-01-01")
    publish_slice(staging_conn, "2025-01-02")
    # rerun day 1 with new data: only day 1 changes, no duplicates
    day1b = write_slice(tmp_path / "b", "2025-01-01", n=8)
    load_slice(staging_conn, "2025-01-01", day1b, "run-3")
    publish_slice(staging_conn, "2025-01-01")
    publish_slice(staging_conn, "2025-01-01")
    counts = dict(rows(staging_conn, "SELECT ds, COUNT(*) FROM published_records GROUP BY ds ORDER BY ds"))
    assert counts == {"2025-01-01": 8, "2025-01-02": 4}
    assert rows(staging_conn, "SELECT COUNT(DISTINCT load_id) FROM published_records WHERE ds = '2025-01-01'") == [(1,)]
    assert rows(staging_conn, "SELECT COUNT(*) FROM published_links")[0][0] == 12
    dob = rows(staging_conn, "SELECT date_of_birth FROM published_records WHERE record_id = 'rec-3' AND ds = '2025-01-02'")
    assert str(dob[0][0]) == "1980-01-04"


@pytest.mark.parametrize("drop,extra", [("postcode", None), (None, "nickname")])
def test_schema_drift_is_refused_and_previous_slice_kept(staging_conn, tmp_path, drop, extra):
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path, "2025-01-01"), "run-1")
    drifted = write_slice(tmp_path / "d", "2025-01-01", n=2, drop=drop, extra=extra)
    with pytest.raises(SchemaDriftError, match=f"staging_records.*{drop or extra}"):
        load_slice(staging_conn, "2025-01-01", drifted, "run-2")
    assert rows(staging_conn, "SELECT COUNT(*), MIN(load_id) FROM staging_records") == [(6, "run-1")]


def test_failed_publish_leaves_published_tables_untouched(staging_conn, tmp_path):
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path, "2025-01-01", n=6), "run-1")
    publish_slice(staging_conn, "2025-01-01")
    before = rows(staging_conn, "SELECT record_id, load_id FROM published_records ORDER BY record_id")
    # a new load whose clusters table violates the published primary key mid-publish
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path / "n", "2025-01-01", n=4), "run-2")
    hook, dialect = get_db_hook(staging_conn)
    conn = hook.get_conn()
    cur = conn.cursor()
    cur.execute("DROP TABLE published_clusters")
    cur.execute("CREATE TABLE published_clusters (ds TEXT, load_id TEXT, cluster_id TEXT, "
                "cluster_size INTEGER, quality REAL, iteration INTEGER CHECK (iteration < 0))")
    conn.commit()
    conn.close()
    with pytest.raises(Exception):
        publish_slice(staging_conn, "2025-01-01")
    assert rows(staging_conn, "SELECT record_id, load_id FROM published_records ORDER BY record_id") == before


def test_publishing_an_empty_slice_is_refused(staging_conn):
    with pytest.raises(NothingToPublish, match="2025-03-03"):
        publish_slice(staging_conn, "2025-03-03")


# ---------------------------------------------------------------------------
# Bad input: clear error naming table and column, previous slice kept, nothing published
# ---------------------------------------------------------------------------

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from washline.staging.dialects import StagingUnreachable
from washline.staging.load import NullKeyError, ValueTooLongError

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = ("published_records", "published_links", "published_clusters", "publish_log")


def _replace_column(day: dict, table: str, column: str, values: pa.Array) -> None:
    path = day[table] / "part-00000.parquet"
    data = pq.read_table(path)
    pq.write_table(data.set_column(data.schema.get_field_index(column), column, values), path)


def snapshot(conn_id: str) -> dict[str, list]:
    """Every row of every published table, as sorted tuples of strings."""
    return {t: sorted(tuple(map(str, r)) for r in rows(conn_id, f"SELECT * FROM {t}")) for t in PUBLISHED}


BAD_INPUTS = {
    "type_change": ("staging_records", "postcode", lambda n: pa.array(list(range(n)), pa.int64()),
                    SchemaDriftError, r"staging_records.*column postcode has type int64.*expects str\(16\)"),
    "too_long": ("staging_records", "surname", lambda n: pa.array(["X" * 201] + ["SMITH"] * (n - 1)),
                 ValueTooLongError, r"staging_records\.surname: 201 characters, the column holds 200.*record_id='rec-0'"),
    "null_key": ("staging_links", "cluster_id", lambda n: pa.array([None, *[f"rec-{i}" for i in range(1, n)]], pa.string()),
                 NullKeyError, r"NULL in NOT NULL column staging_links\.cluster_id"),
    "null_record_id": ("staging_records", "record_id", lambda n: pa.array([*[f"rec-{i}" for i in range(n - 1)], None], pa.string()),
                       NullKeyError, r"staging_records\.record_id \(part of the primary key\)"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_refused_naming_table_and_column(staging_conn, tmp_path, case, caplog):
    table, column, values, error, message = BAD_INPUTS[case]
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path, "2025-01-01", n=6), "run-1")
    publish_slice(staging_conn, "2025-01-01")
    before = snapshot(staging_conn)
    bad = write_slice(tmp_path / "bad", "2025-01-01", n=4)
    n = pq.read_metadata(bad[table] / "part-00000.parquet").num_rows
    _replace_column(bad, table, column, values(n))
    with caplog.at_level("ERROR"), pytest.raises(error, match=message) as err:
        load_slice(staging_conn, "2025-01-01", bad, "run-2")
    assert (err.value.table, err.value.column) == (table, column)
    assert "left exactly as it was before this load, for inspection; nothing was published" in caplog.text
    assert rows(staging_conn, "SELECT COUNT(*), MIN(load_id), MAX(load_id) FROM staging_records") == [(6, "run-1", "run-1")]
    assert snapshot(staging_conn) == before


def test_unreachable_database_retries_then_fails_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_DOWN", json.dumps(
        {"conn_type": "postgres", "host": "127.0.0.1", "port": 1, "login": "postgres", "schema": "nowhere",
         "extra": {"connect_timeout": 2}}))
    monkeypatch.setenv("WASHLINE_STAGING_CONNECT_DELAY", "0.05")
    started = time.monotonic()
    with pytest.raises(StagingUnreachable, match=r"'down' \(postgres at 127.0.0.1:1\) unreachable after 3 attempt"):
        load_slice("down", "2025-01-01", write_slice(tmp_path, "2025-01-01"), "run-1")
    assert time.monotonic() - started < 30


def test_postgres_schema_option_and_password_never_logged(staging_conn, tmp_path, monkeypatch, caplog):
    conn = json.loads(os.environ["AIRFLOW_CONN_TEST_STAGING"])
    if conn["conn_type"] != "postgres":
        pytest.skip("schemas and passwords are a server feature")
    secret = "Pw-never-in-logs-7781"
    conn["password"] = secret  # trust auth ignores it; it still travels through hook and driver
    monkeypatch.setenv("AIRFLOW_CONN_TEST_STAGING", json.dumps(conn))
    with caplog.at_level("DEBUG"):
        loaded = load_slice(staging_conn, "2025-01-01", write_slice(tmp_path, "2025-01-01", n=6), "run-1",
                            schema="wl_stage")
        published = publish_slice(staging_conn, "2025-01-01", schema="wl_stage")
    assert published["rows"]["published_records"] == 6
    assert rows(staging_conn, 'SELECT COUNT(*) FROM "wl_stage".published_links') == [(6,)]
    assert rows(staging_conn, "SELECT to_regclass('public.published_links') IS NULL") == [(True,)]
    assert secret not in caplog.text and secret not in json.dumps(loaded) + json.dumps(published)
    with pytest.raises(ValueError, match="not allowed"):
        publish_slice(staging_conn, "2025-01-01", schema='wl_stage"; DROP SCHEMA public --')
    hook, _ = get_db_hook(staging_conn)
    hook.run('DROP SCHEMA "wl_stage" CASCADE', autocommit=True)


# ---------------------------------------------------------------------------
# Kill -9 in the middle of a publish
# ---------------------------------------------------------------------------

KILLED_PUBLISH = """
import sys, time
from washline.staging import publish
real = publish._execute
def slow(cur, step, dialect, params):
    out = real(cur, step, dialect, params)
    if step.name == "insert:published_links":   # records and links already replaced in the open transaction
        open(sys.argv[1], "w").write("mid-publish")
        time.sleep(600)
    return out
publish._execute = slow
publish.publish_slice("test_staging", "2025-01-01")
print("PUBLISH COMPLETED")
"""


def test_publish_killed_mid_transaction_leaves_published_tables_exactly_as_before(staging_conn, tmp_path):
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path, "2025-01-01", n=6), "run-1")
    load_slice(staging_conn, "2025-01-02", write_slice(tmp_path, "2025-01-02", n=4), "run-1b")
    publish_slice(staging_conn, "2025-01-01")
    publish_slice(staging_conn, "2025-01-02")
    before = snapshot(staging_conn)
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path / "new", "2025-01-01", n=10, cluster_of=lambda i: i // 5), "run-2")

    marker = tmp_path / "mid-publish"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", KILLED_PUBLISH, str(marker)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "publish never reached the pause point"
            time.sleep(0.1)
        # mid-publish, a reader still sees the old published slice
        assert snapshot(staging_conn) == before
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert b"PUBLISH COMPLETED" not in proc.stdout.read()

    assert snapshot(staging_conn) == before  # not half-written: exactly as before
    assert rows(staging_conn, "SELECT COUNT(*), MIN(load_id) FROM staging_records WHERE ds = '2025-01-01'") == [(10, "run-2")]
    publish_slice(staging_conn, "2025-01-01")  # the next try publishes the whole slice
    assert rows(staging_conn, "SELECT COUNT(*) FROM published_records WHERE ds = '2025-01-01'") == [(10,)]
    assert rows(staging_conn, "SELECT COUNT(*) FROM published_clusters WHERE ds = '2025-01-01'") == [(2,)]
    assert snapshot(staging_conn)["published_records"] != before["published_records"]


# ---------------------------------------------------------------------------
# Staging database locked or unavailable, through the DAG's load_staging task
# ---------------------------------------------------------------------------

class _TI:
    def __init__(self):
        self.pushed = {}

    def xcom_push(self, key, value):
        self.pushed[key] = value

    def xcom_pull(self, task_ids, key="return_value"):
        return None  # no link XCom: a night without the entity registry


def _task_run(data_root: Path, ds: str, conn_id: str):
    """Land a day's Spark output where the task looks for it; return a task context."""
    import shutil

    day = write_slice(data_root / "spark", ds, n=8)
    lake = data_root / "lake"
    targets = {"staging_records": lake / "curated" / ds, "staging_links": lake / "linked" / ds / "links",
               "staging_clusters": lake / "linked" / ds / "clusters"}
    for table, target in targets.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(day[table], target)
    return {"params": {"staging_conn_id": conn_id, "input_folder": "landing"}, "ds": ds,
            "run_id": "scheduled__new", "ti": _TI()}


def _dag_retries(task_id: str) -> int:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "washline_nightly.py"))
    return bag.dags["washline_nightly"].get_task(task_id).retries


LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").write("locked")
time.sleep(float(sys.argv[3]))
conn.execute("COMMIT")
"""


@pytest.fixture
def published_sqlite(tmp_path, monkeypatch):
    """A SQLite staging database with 2025-01-01 published, and the task's data root."""
    db = tmp_path / "staging.db"
    monkeypatch.setenv("AIRFLOW_CONN_LOCKED_STAGING", json.dumps({"conn_type": "sqlite", "host": str(db)}))
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path / "data"))
    load_slice("locked_staging", "2025-01-01", write_slice(tmp_path / "old", "2025-01-01", n=6), "run-1")
    publish_slice("locked_staging", "2025-01-01")
    return db, snapshot("locked_staging")


def _hold_lock(db: Path, tmp_path: Path, seconds: float) -> subprocess.Popen:
    marker = tmp_path / f"locked-{seconds}"
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(db), str(marker), str(seconds)])
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "locker never took the lock"
        time.sleep(0.05)
    return proc


def test_sqlite_locked_past_the_busy_timeout_fails_the_task_clearly(published_sqlite, tmp_path, monkeypatch, caplog):
    """Another process holds BEGIN EXCLUSIVE for longer than the busy timeout:
    load_staging waits that long, then fails with StagingLocked (a transient
    error: the DAG's bounded retries apply, it is not failed for good and not
    mistaken for corruption); staging and published rows are untouched."""
    from washline import tasks
    from washline.staging.dialects import StagingLocked

    db, before = published_sqlite
    staged_before = rows("locked_staging", "SELECT ds, COUNT(*), MIN(load_id) FROM staging_records GROUP BY ds")
    ctx = _task_run(tmp_path / "data", "2025-01-02", "locked_staging")
    monkeypatch.setenv("WASHLINE_STAGING_BUSY_TIMEOUT", "2")
    locker = _hold_lock(db, tmp_path, 120)
    try:
        started = time.monotonic()
        with caplog.at_level("ERROR"), pytest.raises(StagingLocked) as err:
            tasks.load_staging(ctx)
        waited = time.monotonic() - started
    finally:
        locker.kill()
        locker.wait(timeout=30)
    assert 1.8 <= waited < 20, waited  # bounded by the busy timeout, not forever
    message = str(err.value)
    assert f"staging database 'locked_staging' (sqlite at {db}:-) is locked by another connection" in message
    assert "the load of ds=2025-01-02 waited 2 s (busy timeout" in message and "retries will try again" in message
    assert ctx["ti"].pushed["error"].startswith("load_staging: StagingLocked: staging database 'locked_staging'")
    assert not tasks.is_permanent(err.value)  # Airflow retries it ...
    assert _dag_retries("load_staging") == 2  # ... a bounded number of times, then the run fails
    assert "integrity check" not in message  # a lock is not reported as a damaged file
    from washline.report import build_summary

    summary = build_summary("2025-01-02", "scheduled__new", {"cleanse": {}, "link": {}, "load_staging": None},
                            {"load_staging": ctx["ti"].pushed["error"]})
    assert "is locked by another connection" in summary["not_published_because"][0]
    assert snapshot("locked_staging") == before
    assert rows("locked_staging", "SELECT ds, COUNT(*), MIN(load_id) FROM staging_records GROUP BY ds") == staged_before


def test_sqlite_lock_released_within_the_busy_timeout_loads(published_sqlite, tmp_path, monkeypatch):
    """A lock that is released in time costs only the wait: the load succeeds."""
    from washline import tasks

    db, before = published_sqlite
    ctx = _task_run(tmp_path / "data", "2025-01-02", "locked_staging")
    monkeypatch.setenv("WASHLINE_STAGING_BUSY_TIMEOUT", "30")
    locker = _hold_lock(db, tmp_path, 1.5)
    try:
        started = time.monotonic()
        result = tasks.load_staging(ctx)
        waited = time.monotonic() - started
    finally:
        locker.wait(timeout=30)
    assert locker.returncode == 0 and waited >= 1.0
    assert result["rows"]["staging_records"] == 8 and "error" not in ctx["ti"].pushed
    assert snapshot("locked_staging") == before  # loading never touches published rows


@pytest.mark.parametrize("staging_conn", ["postgres"], indirect=True)
def test_postgres_down_fails_the_task_after_bounded_attempts_without_the_password(
        staging_conn, tmp_path, monkeypatch, caplog, capfd):
    """The staging server goes away (its connection now points at a closed
    port): load_staging makes 3 connection attempts, then fails with a message
    naming the connection, host and port and never the password; the
    published tables are as they were once the server is back."""
    import socket

    from washline import tasks

    conn = json.loads(os.environ["AIRFLOW_CONN_TEST_STAGING"])
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path / "old", "2025-01-01", n=6), "run-1")
    publish_slice(staging_conn, "2025-01-01")
    before = snapshot(staging_conn)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    secret = "S3ntinel-down-5521"
    down = dict(conn, port=closed, password=secret, extra={"connect_timeout": 2})
    monkeypatch.setenv("AIRFLOW_CONN_TEST_STAGING", json.dumps(down))
    monkeypatch.setenv("WASHLINE_STAGING_CONNECT_DELAY", "0.05")
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path / "data"))
    ctx = _task_run(tmp_path / "data", "2025-01-02", staging_conn)
    started = time.monotonic()
    with caplog.at_level("DEBUG"), pytest.raises(StagingUnreachable) as err:
        tasks.load_staging(ctx)
    assert time.monotonic() - started < 30
    message = str(err.value)
    assert f"staging database 'test_staging' (postgres at 127.0.0.1:{closed}) unreachable after 3 attempt(s)" in message
    out, errout = capfd.readouterr()
    logged = caplog.text + out + errout  # Airflow's structlog may write to the streams
    assert "attempt 1/3 failed" in logged and "attempt 2/3 failed" in logged
    assert not tasks.is_permanent(err.value)
    assert secret not in message + ctx["ti"].pushed["error"] + logged
    assert ctx["ti"].pushed["error"].startswith("load_staging: StagingUnreachable: staging database 'test_staging'")
    monkeypatch.setenv("AIRFLOW_CONN_TEST_STAGING", json.dumps(conn))  # the server is back
    assert snapshot(staging_conn) == before
