"""Faults during a run, each proven with the real DAG:
`airflow dags test washline_nightly <ds>`, real spark-submit, real PostgreSQL
staging, real GX.

One data root, one throwaway PostgreSQL database and one Airflow metadata DB
(a copy of the repo's, so the shared one is never written) serve the module;
the runs are, in order:

1. two dates at the same time (``DS_B`` ‖ ``DS_C``, each in its own
   AIRFLOW_HOME copy, so the two processes never contend for one SQLite
   metadata DB), disjoint 200-row FEBRL1 slices, one PostgreSQL staging DB;
2. ``DS_BAD``: a feed whose references never repeat (200 distinct people; a
   normal night, the singleton share is only a warning) and whose record ids
   carry a space, so the critical GX expectation on the record id fails:
   publish is skipped and the summary names the expectation;
3. ``DS_KILL``: the same input as ``DS_B``, but the link job's spark-submit
   JVM is SIGKILLed while it writes its output; Airflow's retry (``dags test``
   runs retries: ``DAG.test`` reschedules an ``up_for_retry`` task once its
   ``retry_delay`` has passed) reruns link, and the published result equals
   ``DS_B``'s uninterrupted one. Being a later date than the failed
   ``DS_BAD`` in the same metadata DB, it also shows a failed night does not
   block the next one.

Every run passes ``entity_registry: false`` in the DAG run conf (``airflow
dags test washline_nightly <ds> -c '{"entity_registry": false}'``): these
scenarios test that each date's slice is isolated from the others, and with
the entity registry the link job refuses by design a date whose
predecessor is still pending (two dates at once, a later date after a failed
one in flight). The registry's own ordering, reruns and refusals are covered by
tests/dags/test_registry_e2e.py. The tests also check that such runs leave no
``lake/entities`` version behind.

A fast test covers a product bug this work found (concurrent table creation
on a fresh PostgreSQL database), fixed with an advisory lock in ``ensure_schema``.

No credential anywhere: the staging connection carries a sentinel password
(the database belongs to a fresh role with that password; the local server
trusts 127.0.0.1, so the password is not *checked*, but it travels the real path,
Airflow connection URI → ``PostgresHook`` → psycopg, on every connect) and the
Spark connection's extra a sentinel token. After the runs above the tests grep
for both in every ``dags test`` output, every file under the two Airflow homes
(task logs, the metadata databases) and the data root (landing, Parquet, link
index, run summaries, GX Data Docs and validation results, reports), every
XCom value, and the argv of every process on the machine, sampled every 50 ms
from the first run's start to the last run's end (spark-submit, the JVMs, the
Python workers, task processes). The runs cover a published night, a failed
check and a killed, retried job.

Each Spark job runs on ``local[1]`` with 1 GB of driver memory: the inputs are
200 rows, and CI shares two cores.

The runs (and the database, dropped at the end of the session) start in the
background when the test session starts, in the order above; the module runs
late in the session and its fixtures hand the runs' results to the tests
(tests/early.py).
"""

from __future__ import annotations

import csv
import json
import os
import re
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import early  # tests/early.py
import pytest

pytestmark = [pytest.mark.postgres]
#: the marks of the tests that run the DAG (as tests/dags/test_nightly_e2e.py)
DAG_RUN = (pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow)


def dag_run(fn):
    for mark in DAG_RUN:
        fn = mark(fn)
    return fn

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DS_B, DS_C, DS_BAD, DS_KILL = "2025-03-10", "2025-03-11", "2025-03-12", "2025-03-13"
F1_FLOOR = 0.85
RUN_TIMEOUT = 1200
#: the DAG run conf of every run here: per-date slices linked in isolation (see the module docstring)
RUN_CONF = json.dumps({"entity_registry": False})
PG_HOST, PG_PORT, PG_USER = "127.0.0.1", 5432, "postgres"  # as in tests/conftest.py


# --------------------------------------------------------------------------
# set-up: data root, PostgreSQL staging, metadata DB copies, landed slices
# --------------------------------------------------------------------------

def entity(rec_id: str) -> int:
    return int(rec_id.split("-")[1])


def land_slice(env: dict, data: Path, ds: str, keep, rename=lambda rec_id: rec_id) -> set[str]:
    """Land FEBRL1 for ``ds`` the product's way, then keep only the rows
    whose ``rec_id`` passes ``keep`` (renamed by ``rename``); returns the kept record ids."""
    subprocess.run([sys.executable, "-m", "washline.demo", "land", "--dataset", "febrl1", "--ds", ds],
                   env=env, check=True, capture_output=True, text=True)
    kept: set[str] = set()
    for path in sorted((data / "landing" / "febrl" / ds).glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        body = [[rename(r[0]), *r[1:]] for r in rows[1:] if keep(r[0])]
        kept.update(r[0] for r in body)
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([rows[0], *body])
        os.replace(tmp, path)
    return kept


def _staging_db(ctx):
    """A PostgreSQL database of its own on the local service, owned by a role of its own whose
    password is a sentinel; both dropped at the end of the session. The integrity check's amcheck
    needs a superuser to install and its functions granted (what a DBA grants a least-privilege
    staging role)."""
    import psycopg

    try:
        admin = psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres",
                                autocommit=True, connect_timeout=3)
    except Exception as exc:  # a laptop without PostgreSQL: skip, CI has it
        pytest.skip(f"PostgreSQL not reachable on {PG_HOST}:{PG_PORT}: {exc}")
    name = f"washline_faults_{os.getpid()}"
    password = f"S3ntinel-{secrets.token_hex(8)}"
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.execute(f'DROP ROLE IF EXISTS "{name}"')
    admin.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")
    admin.execute(f'CREATE DATABASE "{name}" OWNER "{name}"')
    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=name, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        db.execute(f'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO "{name}"')

    def drop():
        try:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{name}"')
        finally:
            admin.close()

    ctx.finalizer(drop)
    return {"schema": name, "role": name, "password": password,
            # URI form, as a secrets backend or .env would hand it over; the password is the sentinel
            # made above at run time, never a committed credential
            "uri": f"postgres://{name}:{password}@{PG_HOST}:{PG_PORT}/{name}"}  # secret-scan: allow


def proc_cmdlines():
    """(pid, argv as /proc gives it: NUL-separated bytes) of every process with an argv right now."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes()
        except OSError:  # the process ended meanwhile
            continue
        if argv:
            yield int(proc.name), argv


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
            self.seen.update(argv for _, argv in proc_cmdlines())
            self.samples += 1
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)


def _world(ctx):
    tmp_path_factory, staging_db = ctx.tmp, ctx["staging_db"]
    data = tmp_path_factory.mktemp("data")
    env = dict(os.environ)
    token = f"S3ntinel-tok-{secrets.token_hex(6)}"
    env.update({
        "WASHLINE_DATA": str(data),
        "WASHLINE_SPARK_DRIVER_MEMORY": "1g",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
            {"conn_type": "spark", "host": "local[1]", "extra": {"deploy-mode": "client", "token": token}}),
        "AIRFLOW_CONN_WASHLINE_STAGING": staging_db["uri"],
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    })
    homes = {name: early.airflow_home_copy(tmp_path_factory, f"airflow-{name}") for name in ("main", "second")}
    ids = {
        DS_B: land_slice(env, data, DS_B, lambda r: entity(r) < 100),
        DS_C: land_slice(env, data, DS_C, lambda r: 100 <= entity(r) < 200),
        # 200 different people, no duplicates (the linker has nothing to link: a
        # normal night), whose ids carry a space (the critical record_id check fails)
        DS_BAD: land_slice(env, data, DS_BAD, lambda r: 200 <= entity(r) < 400 and r.endswith("-org"),
                           rename=lambda r: r.replace("-org", " org")),
        DS_KILL: land_slice(env, data, DS_KILL, lambda r: entity(r) < 100),
    }
    assert len(ids[DS_B]) == len(ids[DS_C]) == len(ids[DS_BAD]) == 200
    return {"env": env, "data": data, "homes": homes, "ids": ids, "db": staging_db["schema"],
            "sentinels": [staging_db["password"].encode(), token.encode()], "argv": ArgvRecorder()}


def dags_test(world: dict, ds: str, home: str) -> subprocess.Popen:
    """Start `airflow dags test washline_nightly <ds>` in AIRFLOW_HOME ``home``."""
    path = world["homes"][home]
    env = dict(world["env"], AIRFLOW_HOME=str(path),
               AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{path / 'airflow.db'}")
    log_path = world["data"] / f"dags-test-{ds}.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([str(BIN / "airflow"), "dags", "test", "washline_nightly", ds, "-c", RUN_CONF],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.ds, proc.log_path, proc.started = ds, log_path, time.monotonic()  # type: ignore[attr-defined]
    return proc


def finish(world: dict, proc: subprocess.Popen) -> dict:
    """Wait for a run; returns its run summary, return code, log text and seconds."""
    try:
        proc.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"dags test {proc.ds} hung (a blocked run?): "  # type: ignore[attr-defined]
                             + proc.log_path.read_text()[-4000:])  # type: ignore[attr-defined]
    seconds = round(time.monotonic() - proc.started, 1)  # type: ignore[attr-defined]
    text = proc.log_path.read_text()  # type: ignore[attr-defined]
    summary_path = world["data"] / "lake" / "reports" / proc.ds / "run_summary.json"  # type: ignore[attr-defined]
    assert summary_path.exists(), text[-6000:]
    return {"rc": proc.returncode, "summary": json.loads(summary_path.read_text()), "log": text,
            "seconds": seconds}


def task_window(log: str) -> tuple[str, str]:
    """ISO timestamps of the start of ``cleanse`` and the end of ``publish`` in a `dags test` log."""
    start = end = None
    for line in log.splitlines():
        if "[DAG TEST] running task <TaskInstance: washline_nightly.cleanse " in line and start is None:
            start = line.split()[0]
        if "[DAG TEST] end task task_id=publish " in line:
            end = line.split()[0]
    assert start and end, "cleanse start or publish end missing from the log"
    return start, end


def pg(world: dict):
    import psycopg

    return psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=world["db"])


def published(world: dict, ds: str) -> dict:
    """The published slice of ``ds``: record ids, (record_id, cluster_id) links,
    clusters, and the row counts before de-duplication."""
    with pg(world) as conn:
        recs = [r[0] for r in conn.execute("SELECT record_id FROM published_records WHERE ds = %s", (ds,))]
        links = conn.execute("SELECT record_id, cluster_id FROM published_links WHERE ds = %s", (ds,)).fetchall()
        clusters = conn.execute("SELECT cluster_id, cluster_size FROM published_clusters WHERE ds = %s",
                                (ds,)).fetchall()
    return {"records": recs, "links": links, "clusters": clusters}


def snapshot(world: dict) -> dict:
    """Every row of every published table (all dates), for before/after equality."""
    with pg(world) as conn:
        return {t: sorted(map(tuple, conn.execute(f"SELECT * FROM {t}").fetchall()), key=repr)
                for t in ("published_records", "published_links", "published_clusters")}


def partition(links) -> set[frozenset]:
    groups: dict[str, set] = {}
    for rec, cluster in links:
        groups.setdefault(cluster, set()).add(rec)
    return {frozenset(g) for g in groups.values()}


def assert_clean_slice(world: dict, ds: str, summary: dict) -> dict:
    """The date's published slice holds exactly its own landed records, once
    each, every one in exactly one cluster of its own date."""
    ids = world["ids"][ds]
    pub = published(world, ds)
    assert summary["published"] is True, summary
    assert summary["rows"]["in"] == len(ids) and summary["rows"]["quarantined"] == 0, summary["rows"]
    assert len(pub["records"]) == len(set(pub["records"])) == len(ids), "duplicates or lost rows"
    assert set(pub["records"]) == ids, "rows of another date, or missing rows"
    assert len(pub["links"]) == len(ids) and {r for r, _ in pub["links"]} == ids
    assert {c for _, c in pub["links"]} == {c for c, _ in pub["clusters"]} <= ids
    assert sum(size for _, size in pub["clusters"]) == len(ids)
    return pub


# --------------------------------------------------------------------------
# 1. two dates at the same time
# --------------------------------------------------------------------------

def _concurrent_runs(ctx):
    world = ctx["world"]
    world["argv"].start()  # the process sampler runs until the last run ends (argv_seen)
    procs = [dags_test(world, DS_B, "main"), dags_test(world, DS_C, "second")]
    runs = {p.ds: finish(world, p) for p in procs}  # type: ignore[attr-defined]
    return runs


@dag_run
def test_two_dates_run_concurrently_without_interference(world, concurrent_runs):
    for ds, run in concurrent_runs.items():
        assert run["rc"] == 0, run["log"][-6000:]
        assert_clean_slice(world, ds, run["summary"])
        assert run["summary"]["pairwise"]["f1"] >= F1_FLOOR, run["summary"]["pairwise"]
    # the two pipelines really overlapped: each one's cleanse started before the other's publish ended
    (b_start, b_end), (c_start, c_end) = (task_window(concurrent_runs[ds]["log"]) for ds in (DS_B, DS_C))
    assert b_start < c_end and c_start < b_end, (b_start, b_end, c_start, c_end)
    # entity_registry=false: linked in isolation, no registry version, no entity tables in the summary
    assert not (world["data"] / "lake" / "entities").exists()
    assert all(run["summary"]["registry"] is None for run in concurrent_runs.values())


# --------------------------------------------------------------------------
# 2. a check fails: publish skipped, the summary says why
# --------------------------------------------------------------------------

def _failed_run(ctx):
    world = ctx["world"]
    before = snapshot(world)
    run = finish(world, dags_test(world, DS_BAD, "main"))
    run["published_before"], run["published_after"] = before, snapshot(world)
    return run


@dag_run
def test_failed_quality_check_skips_publish_and_says_why(world, failed_run):
    summary = failed_run["summary"]
    assert failed_run["rc"] != 0, "a night that published nothing must fail the run"
    assert summary["published"] is False
    assert summary["rows"]["loaded"] == 200, summary["rows"]  # staged, then held back
    assert summary["checks"]["quality"] == "FAIL", summary["checks"]
    because = " ".join(summary["not_published_because"])
    assert "check_quality status FAIL" in because and "expect_column_values_to_match_regex(record_id)" in because, \
        summary["not_published_because"]
    # nobody repeats: the singleton share is out of its band, reported as a warning, never the reason
    assert "singleton" not in because, summary["not_published_because"]
    assert failed_run["published_after"] == failed_run["published_before"], "published tables changed"
    assert published(world, DS_BAD)["records"] == []
    assert not (world["data"] / "lake" / "entities").exists(), "entity_registry=false must leave no registry version or marker"
    # the night's HTML report is written on a failed run too, and says why
    page = (world["data"] / "lake" / "reports" / DS_BAD / "report.html").read_text()
    assert "Not published" in page and "expect_column_values_to_match_regex" in page
    # every chart is drawn, but the pair scores: nobody repeats, so that one is drawn only when some
    # pair came within the close-call band below mu; otherwise the page says why it is missing
    for chart in ("rows", "sizes", "seconds", "trend"):
        assert re.search(rf'<figure class="chart" data-chart="{chart}"><svg', page), chart
    assert re.search(r'<figure class="chart" data-chart="scores"><svg', page) or \
        re.search(r'data-chart="scores" data-missing="true">[^<]*not available \(no scored pairs\)', page)


# --------------------------------------------------------------------------
# 3. spark-submit killed mid-link; the retry reruns it; same result
# --------------------------------------------------------------------------

def link_jvms(linked_dir: Path) -> list[int]:
    """PIDs of spark-submit JVMs running link.py for exactly this output folder."""
    pids = []
    for pid, argv in proc_cmdlines():
        args = [a.decode(errors="replace") for a in argv.split(b"\0") if a]
        if (args and args[0].endswith("java") and "org.apache.spark.deploy.SparkSubmit" in args
                and any(a.endswith("spark_jobs/link.py") for a in args) and str(linked_dir) in args):
            pids.append(pid)
    return pids


class LinkKiller(threading.Thread):
    """SIGKILL the link job's spark-submit JVM once, as soon as the first of
    its two output folders is complete (``<linked>/links/_SUCCESS`` appears):
    the most damaging moment, a result half written (``links/`` of this
    attempt, ``clusters/`` missing or partial, no ``metrics.json``). A retry
    that appended to, or read, what the killed attempt left would publish
    duplicates or a mismatched link index."""

    def __init__(self, linked_dir: Path, checkpoints: Path, deadline: float):
        super().__init__(daemon=True)
        self.linked_dir, self.checkpoints, self.deadline = linked_dir, checkpoints, deadline
        self.killed: int | None = None
        self.state_at_kill: dict = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            if (self.linked_dir / "links" / "_SUCCESS").exists():
                for pid in link_jvms(self.linked_dir):
                    os.kill(pid, signal.SIGKILL)
                    self.killed = pid
                if self.killed:
                    self.state_at_kill = {
                        "links": sorted(p.name for p in (self.linked_dir / "links").iterdir()),
                        "clusters_complete": (self.linked_dir / "clusters" / "_SUCCESS").exists(),
                        "metrics": (self.linked_dir / "metrics.json").exists(),
                        "checkpoint_entries": sum(1 for _ in self.checkpoints.rglob("*")),
                    }
                    return
            time.sleep(0.02)


def link_attempts(world: dict, run_id: str) -> tuple[tuple, list[tuple]]:
    """(try_number, state) of the link task instance, and its earlier tries
    from ``task_instance_history``, read from the run's metadata DB."""
    conn = sqlite3.connect(world["homes"]["main"] / "airflow.db")
    try:
        now = conn.execute("SELECT try_number, state FROM task_instance WHERE dag_id = 'washline_nightly' "
                           "AND task_id = 'link' AND run_id = ?", (run_id,)).fetchone()
        history = conn.execute("SELECT try_number, state FROM task_instance_history WHERE "
                               "dag_id = 'washline_nightly' AND task_id = 'link' AND run_id = ? "
                               "ORDER BY try_number", (run_id,)).fetchall()
    finally:
        conn.close()
    return now, history


def _killed_run(ctx):
    world = ctx["world"]
    lake = world["data"] / "lake"
    killer = LinkKiller(lake / "linked" / DS_KILL, lake / "_checkpoints" / DS_KILL, time.monotonic() + RUN_TIMEOUT)
    killer.start()
    try:
        run = finish(world, dags_test(world, DS_KILL, "main"))
    finally:
        killer.stop.set()
        killer.join()
    run["killer"] = killer
    return run


def _argv_seen(ctx):
    """Stop the process sampler after the last run: the distinct argv it saw, and its sample count."""
    recorder = ctx["world"]["argv"]
    if recorder.is_alive():
        recorder.stop()
    return {"argv": recorder.seen, "samples": recorder.samples}


#: the module's DAG runs, in the order above, start in the background when the session starts
#: (tests/early.py); the fixtures below hand their results to the tests
EARLY = early.Chain(2, [
    early.Step("staging_db", _staging_db),
    early.Step("world", _world, needs=("staging_db",)),
    early.Step("concurrent_runs", _concurrent_runs, needs=("world",)),
    early.Step("failed_run", _failed_run, needs=("world", "concurrent_runs")),
    early.Step("killed_run", _killed_run, needs=("world", "concurrent_runs", "failed_run")),
    early.Step("argv_seen", _argv_seen, needs=("world", "concurrent_runs", "failed_run", "killed_run")),
])


@pytest.fixture(scope="module")
def staging_db():
    return EARLY.result("staging_db")


@pytest.fixture(scope="module")
def world(staging_db):
    return EARLY.result("world")


@pytest.fixture(scope="module")
def concurrent_runs(world):
    return EARLY.result("concurrent_runs")


@pytest.fixture(scope="module")
def failed_run(world, concurrent_runs):
    return EARLY.result("failed_run")


@pytest.fixture(scope="module")
def killed_run(world, concurrent_runs, failed_run):
    return EARLY.result("killed_run")


@pytest.fixture(scope="module")
def argv_seen(world, killed_run):
    return EARLY.result("argv_seen")


@dag_run
def test_link_killed_mid_write_is_retried_and_equals_uninterrupted_run(world, concurrent_runs, killed_run):
    killer, summary = killed_run["killer"], killed_run["summary"]
    assert killer.killed, "the link JVM was never seen writing its output, so nothing was killed"
    state = killer.state_at_kill
    # killed mid-link: links/ written, no completion marker, checkpoints on disk
    # (clusters/ is usually not complete yet either: state["clusters_complete"])
    assert "_SUCCESS" in state["links"] and not state["metrics"], state
    assert state["checkpoint_entries"] > 0, state
    print(f"link killed with {state}")
    assert "Error code is: -9" in killed_run["log"], "the first link attempt did not die of SIGKILL"
    now, history = link_attempts(world, summary["run_id"])
    assert now == (2, "success") and history and history[0][0] == 1, (now, history)
    assert killed_run["rc"] == 0, killed_run["log"][-6000:]

    pub = assert_clean_slice(world, DS_KILL, summary)
    reference = published(world, DS_B)  # same input, run without interruption
    assert sorted(pub["links"]) == sorted(reference["links"])  # same clusters, same cluster ids
    assert sorted(pub["clusters"]) == sorted(reference["clusters"])
    assert partition(pub["links"]) == partition(reference["links"])
    assert summary["pairwise"] == concurrent_runs[DS_B]["summary"]["pairwise"]
    # nothing of the killed attempt is left: no temp files, no checkpoints, no orphan JVM
    linked = world["data"] / "lake" / "linked" / DS_KILL
    import pyarrow.parquet as pq

    assert pq.read_table(linked / "links").num_rows == len(world["ids"][DS_KILL])  # rewritten, not appended
    assert not [p for p in linked.rglob("*") if p.name.startswith(("_temporary", ".")) and p.is_dir()]
    assert not (world["data"] / "lake" / "_checkpoints" / DS_KILL).exists()
    assert link_jvms(linked) == []


@dag_run
def test_failed_date_does_not_block_the_next(failed_run, killed_run):
    """DS_KILL is a later date than the failed DS_BAD, run in the same
    metadata DB: it publishes (no depends_on_past, no waiting on the failure)."""
    assert DS_KILL > DS_BAD and failed_run["rc"] != 0
    assert killed_run["rc"] == 0 and killed_run["summary"]["published"] is True


# --------------------------------------------------------------------------
# 4. the first load of two dates on a fresh PostgreSQL database
# --------------------------------------------------------------------------

def test_first_loads_of_two_dates_at_once_on_a_fresh_postgres_database(staging_db):
    """Two connections create the staging tables at the same instant (what
    two dates' first ``load_staging`` do on a new database): both must succeed."""
    import psycopg

    from washline.staging.load import ensure_schema

    errors: list[str] = []
    for _ in range(3):  # a fresh database each time: the race is only on creation
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True) as admin:
            name = f"{staging_db['schema']}_ddl"
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
            try:
                conns = [psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=name) for _ in range(2)]
                barrier = threading.Barrier(2)

                def create(conn):
                    barrier.wait()
                    try:
                        ensure_schema(conn, "postgres")
                    except Exception as exc:  # noqa: BLE001 - collected and asserted below
                        errors.append(f"{type(exc).__name__}: {exc}")

                threads = [threading.Thread(target=create, args=(c,)) for c in conns]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout=60)
                for c in conns:
                    c.close()
            finally:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert errors == []


# --------------------------------------------------------------------------
# 5. no credential anywhere (the sentinels of the connections, see the module doc)
# --------------------------------------------------------------------------

def _files(folder: Path):
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def _hits(blob: bytes, sentinels: list[bytes]) -> list[str]:
    return [s.decode() for s in sentinels if s in blob]


@dag_run
def test_the_runs_used_the_sentinel_connection(world, concurrent_runs):
    assert concurrent_runs[DS_B]["rc"] == 0 and concurrent_runs[DS_B]["summary"]["published"] is True
    with pg(world) as conn:
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'published_records'").fetchone()[0]
    assert owner == world["db"]  # created through the sentinel connection's role
    # the grep can fail: the sentinels are in what the runs were given
    env = world["env"]
    given = (env["AIRFLOW_CONN_WASHLINE_STAGING"] + env["AIRFLOW_CONN_SPARK_DEFAULT"]).encode()
    assert _hits(given, world["sentinels"]) == [s.decode() for s in world["sentinels"]]


@dag_run
def test_no_sentinel_in_any_dags_test_output(world, concurrent_runs, failed_run, killed_run):
    runs = [*concurrent_runs.values(), failed_run, killed_run]
    assert len(runs) == 4
    for run in runs:
        assert not _hits(run["log"].encode(), world["sentinels"]), run["summary"]["ds"]


@dag_run
def test_no_sentinel_in_any_file_of_the_airflow_homes_or_the_data_root(world, killed_run):
    files = [f for home in world["homes"].values() for f in _files(home)] + _files(world["data"])
    leaks = {str(p): hits for p in files if (hits := _hits(p.read_bytes(), world["sentinels"]))}
    assert not leaks, leaks
    names = {p.name for p in files}
    # the artefacts were really there to be searched
    assert "airflow.db" in names and "run_summary.json" in names and "index.html" in names
    assert any(p.suffix == ".parquet" for p in files) and any(p.suffix == ".log" for p in files)


@dag_run
def test_no_sentinel_in_any_xcom_value(world, killed_run):
    tasks, leaks = set(), []
    for home in world["homes"].values():
        conn = sqlite3.connect(home / "airflow.db")
        try:
            values = conn.execute("SELECT task_id, key, value FROM xcom WHERE dag_id = 'washline_nightly'").fetchall()
        finally:
            conn.close()
        tasks |= {task for task, _, _ in values}
        leaks += [(task, key) for task, key, value in values
                  if _hits(value if isinstance(value, bytes) else str(value).encode(), world["sentinels"])]
    assert {"cleanse", "link", "load_staging", "check_integrity", "check_quality", "publish", "report"} <= tasks
    assert not leaks, leaks


@dag_run
def test_no_sentinel_in_any_process_argv(world, argv_seen):
    argv = argv_seen["argv"]
    assert argv_seen["samples"] > 20
    # the sampler saw the runs' processes: the task runner's spark-submit and its JVM
    assert any(b"spark-submit" in a or b"org.apache.spark.deploy.SparkSubmit" in a for a in argv)
    assert any(b"cleanse.py" in a for a in argv) and any(b"link.py" in a for a in argv)
    leaks = [a.replace(b"\0", b" ").decode(errors="replace") for a in argv if _hits(a, world["sentinels"])]
    assert not leaks, leaks
