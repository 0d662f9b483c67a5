"""No credential anywhere: run ``airflow dags test washline_nightly`` with a
sentinel password in the staging connection (and a sentinel token in the Spark
connection's extra), then grep every artefact the run leaves for them.

Where the sentinels are looked for:

* the ``dags test`` output (stdout + stderr: task logs go there too),
* every file under the run's private ``AIRFLOW_HOME`` (task log files, the
  metadata database file itself, whatever else Airflow wrote),
* every file under the data root (landing, curated/quarantine Parquet, link
  index, run summary, GX Data Docs and validation results, build zip),
* every XCom value of the run, decoded from the metadata database,
* the argv of every process on the machine, sampled every 50 ms for the
  whole run (spark-submit, the JVM, the Python workers, task processes).

The staging database is a fresh PostgreSQL database owned by a fresh role
whose password is the sentinel. The local server trusts 127.0.0.1, so the
password is not *checked*, but it travels the real path (Airflow connection →
``PostgresHook`` → psycopg) on every connect; the test proves the run used
that connection by finding the published rows in that database.

The metadata database is a private copy of the migrated ``.airflow/airflow.db``,
so the XCom table and the log folder hold this run only.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.postgres, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DS = "2025-03-07"
#: records of FEBRL1 landed for the run (as the no-logical-date run of tests/dags/test_service.py)
ROWS = 200
PG_HOST, PG_PORT = "127.0.0.1", 5432


class ArgvRecorder(threading.Thread):
    """Sample ``/proc/*/cmdline`` until stopped; keep every distinct argv."""

    def __init__(self, interval: float = 0.05):
        super().__init__(daemon=True)
        self.interval = interval
        self.seen: set[bytes] = set()
        self.samples = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit():
                    continue
                try:
                    argv = (proc / "cmdline").read_bytes()
                except OSError:  # the process ended meanwhile
                    continue
                if argv:
                    self.seen.add(argv)
            self.samples += 1
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)


def _pg_admin():
    import psycopg

    return psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname="postgres",
                           autocommit=True, connect_timeout=3)


@pytest.fixture(scope="module")
def sentinel_db():
    """A role with the sentinel password and a database it owns; dropped after."""
    try:
        admin = _pg_admin()
    except Exception as exc:
        pytest.skip(f"PostgreSQL not reachable on {PG_HOST}:{PG_PORT}: {exc}")
    password = f"S3ntinel-{secrets.token_hex(8)}"
    name = f"wl_nocred_{os.getpid()}"
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.execute(f'DROP ROLE IF EXISTS "{name}"')
    admin.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")
    admin.execute(f'CREATE DATABASE "{name}" OWNER "{name}"')
    # The integrity check's amcheck needs a superuser to install and its functions
    # granted (what a DBA grants a least-privilege staging role).
    import psycopg

    with psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname=name, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        db.execute(f'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO "{name}"')
    try:
        yield {"role": name, "db": name, "password": password}
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{name}"')
        admin.close()


@pytest.fixture(scope="module")
def secret_run(tmp_path_factory, sentinel_db):
    shared_home = Path(os.environ.get("AIRFLOW_HOME", str(REPO / ".airflow")))
    if not (shared_home / "airflow.db").exists():
        pytest.skip("Airflow metadata DB missing: run the suite through `make test`")
    root = tmp_path_factory.mktemp("nocred")  # no "secret" in paths: the log masker would hide what follows
    home, data = root / "airflow", root / "data"
    home.mkdir()
    # A private, consistent copy of the migrated metadata DB (others may be writing the shared one).
    src, dst = sqlite3.connect(shared_home / "airflow.db"), sqlite3.connect(home / "airflow.db")
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    token = f"S3ntinel-tok-{secrets.token_hex(6)}"
    env = dict(os.environ)
    env.update({
        "WASHLINE_DATA": str(data),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
            {"conn_type": "spark", "host": "local[2]", "extra": {"deploy-mode": "client", "token": token}}),
        # URI form, as a secrets backend or .env would hand it over.
        "AIRFLOW_CONN_WASHLINE_STAGING": (f"postgres://{sentinel_db['role']}:{sentinel_db['password']}"
                                          f"@{PG_HOST}:{PG_PORT}/{sentinel_db['db']}"),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    subprocess.run([sys.executable, "-m", "washline.demo", "land", "--dataset", "febrl1", "--ds", DS],
                   env=env, check=True, capture_output=True, text=True)
    # the header and the first ROWS records of the feed: the grep needs every artefact of a published
    # night, not a big one (each Spark stage of the run costs less)
    landed = sorted((data / "landing" / "febrl" / DS).glob("*.csv"))
    lines = landed[0].read_text().splitlines(keepends=True)
    for extra in landed[1:]:
        extra.unlink()
    landed[0].write_text("".join(lines[:ROWS + 1]))
    recorder = ArgvRecorder()
    recorder.start()
    started = time.monotonic()
    try:
        proc = subprocess.run([str(BIN / "airflow"), "dags", "test", "washline_nightly", DS],
                              env=env, capture_output=True, timeout=1500)
    finally:
        recorder.stop()
    output = proc.stdout + proc.stderr
    (root / "dags-test.log").write_bytes(output)
    return {
        "env": env, "home": home, "data": data, "proc": proc, "output": output, "argv": recorder.seen,
        "samples": recorder.samples, "seconds": time.monotonic() - started,
        "sentinels": [sentinel_db["password"].encode(), token.encode()], "db": sentinel_db,
    }


def _files(folder: Path):
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def _hits(blob: bytes, sentinels: list[bytes]) -> list[str]:
    return [s.decode() for s in sentinels if s in blob]


def test_the_run_used_the_sentinel_connection_and_published(secret_run):
    proc, data = secret_run["proc"], secret_run["data"]
    assert proc.returncode == 0, secret_run["output"][-6000:].decode(errors="replace")
    summary = json.loads((data / "lake" / "reports" / DS / "run_summary.json").read_text())
    assert summary["published"] is True, summary
    import psycopg

    db = secret_run["db"]
    with psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname=db["db"]) as conn:
        published = conn.execute("SELECT COUNT(*) FROM published_records WHERE ds = %s", (DS,)).fetchone()[0]
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'published_records'").fetchone()[0]
    assert published == summary["rows"]["published"] == summary["rows"]["curated"] > 0
    assert summary["rows"]["in"] == ROWS
    assert owner == db["role"]  # created through the sentinel connection's role
    assert b"Spark-Submit cmd: spark-submit --master local[2]" in secret_run["output"]
    # the grep can fail: the sentinels are in what the run was given
    env = secret_run["env"]
    assert _hits((env["AIRFLOW_CONN_WASHLINE_STAGING"] + env["AIRFLOW_CONN_SPARK_DEFAULT"]).encode(),
                 secret_run["sentinels"]) == [s.decode() for s in secret_run["sentinels"]]


def test_no_sentinel_in_the_dags_test_output(secret_run):
    assert not _hits(secret_run["output"], secret_run["sentinels"])


def test_no_sentinel_in_any_file_of_airflow_home_or_the_data_root(secret_run):
    home, data = secret_run["home"], secret_run["data"]
    files = _files(home) + _files(data)
    leaks = {str(p): hits for p in files if (hits := _hits(p.read_bytes(), secret_run["sentinels"]))}
    assert not leaks, leaks
    names = {p.name for p in files}
    # the artefacts were really there to be searched
    assert "airflow.db" in names and "run_summary.json" in names and "index.html" in names
    assert any(p.suffix == ".parquet" for p in files)


def test_no_sentinel_in_any_xcom_value(secret_run):
    conn = sqlite3.connect(secret_run["home"] / "airflow.db")
    try:
        values = conn.execute(
            "SELECT task_id, key, value FROM xcom WHERE dag_id = 'washline_nightly'").fetchall()
    finally:
        conn.close()
    tasks = {task for task, _, _ in values}
    assert {"cleanse", "link", "load_staging", "check_integrity", "check_quality", "publish", "report"} <= tasks
    leaks = [(task, key) for task, key, value in values
             if _hits(value if isinstance(value, bytes) else str(value).encode(), secret_run["sentinels"])]
    assert not leaks, leaks


def test_no_sentinel_in_any_process_argv(secret_run):
    argv = secret_run["argv"]
    assert secret_run["samples"] > 20
    # the sampler saw the run's processes: the task runner's spark-submit and its JVM
    assert any(b"spark-submit" in a or b"org.apache.spark.deploy.SparkSubmit" in a for a in argv)
    assert any(b"cleanse.py" in a for a in argv) and any(b"link.py" in a for a in argv)
    leaks = [a.replace(b"\0", b" ").decode(errors="replace") for a in argv if _hits(a, secret_run["sentinels"])]
    assert not leaks, leaks
