"""Whole DAG nights against a large entity registry, on PostgreSQL staging: cleanse to publish.

    .venv/bin/python benchmarks/registry_dag_night.py --history 3000000 --nights 2 --per-night 10000 \\
        [--seed 42] [--driver-memory 8g] [--work DIR] [--json OUT.json] [--keep-seed] [--keep-db]

``registry_scale.py`` times the link job alone against histories of different sizes. This times what
a data team runs each night once its registry is large: ``airflow dags test washline_nightly <ds>``
on ``dags/washline_nightly.py`` (real cleanse and link through ``spark-submit`` on ``local[2]``, real
staging on the local PostgreSQL service, real GX suites, the real publish transaction).

How the history is made (not what is timed):

1. ``benchmarks/synth.py`` (FEBRL-like, seed ``--seed``) makes ``history + nights x per-night``
   references with truth, shuffled with the seed so the persons of the nights are also in the history
   (cross-night duplicates). Its ids ``rec-<entity>-org|dup-<k>`` carry the truth as FEBRL's do, so
   every file is landed as the declared source ``febrl`` (``include/config/sources.yaml``; the
   generator's ``phone`` is left out and ``address_2`` is empty).
2. The first ``history`` references are landed for 2025-01-01 and cleansed by the product's own
   cleanse job (``spark_jobs/cleanse.py``, in this process), and registry version 2025-01-01 is written
   from that curated slice clustered by its truth (``registry_scale.seed_registry``), marked published.
   A batch link of millions takes hours on a 2-core box.
3. A scratch PostgreSQL database ``washline_dag_night_<pid>`` (127.0.0.1:5432, trust auth) is the
   staging connection ``washline_dag_night_pg`` (``AIRFLOW_CONN_*``), picked by the DAG's
   ``staging_conn_id`` Param. It holds no registry yet, so the first DAG night publishes the whole
   merged version (``publish_mode`` FULL: the night a team adopts a registry of this size); every later
   night is incremental. Dropped at the end unless ``--keep-db``.

Then ``--nights`` nights of ``--per-night`` references (2025-01-02, ...) each go through the DAG.
Printed and written to ``--json``, per night: the wall seconds of ``airflow dags test``, the run
summary's seconds per task, whether it published and how (full or incremental, from the load task's
log), the registry figures of the summary, the night's pairwise F1 and the registry's after the night
(the summary's ``pairwise`` and ``registry_pairwise``), and the load average. Exit status 1 when a night failed or did
not publish, or when the last (incremental) night took 10 minutes or more.

Spark's driver heap is ``--driver-memory`` (``WASHLINE_SPARK_DRIVER_MEMORY``, the product's setting
for local mode; 2g by default, too small for a history of millions: see ``docs/deploy.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))
sys.path.insert(0, str(REPO / "benchmarks"))

import registry_nights as rn  # noqa: E402  (standard library only at import)

FEBRL_COLUMNS = ("rec_id", "given_name", "surname", "street_number", "address_1", "address_2", "suburb",
                 "postcode", "state", "date_of_birth", "soc_sec_id")
TARGET_SECONDS = 600.0
CONN_ID = "washline_dag_night_pg"
PUBLISH_MODE = re.compile(r"staging for a (full|incremental) publish")


def land_csv(df, data: Path, ds: str) -> int:
    """Write the generator's rows ``df`` (pandas, ``record_id`` = ``rec-<entity>-...``) as
    ``landing/febrl/<ds>/part-0.csv`` with the source's declared columns; returns the row count."""
    out = df.rename(columns={"record_id": "rec_id"}).copy()
    out["address_2"] = None
    folder = data / "landing" / "febrl" / ds
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    out.loc[:, list(FEBRL_COLUMNS)].to_csv(folder / "part-0.csv", index=False)
    return len(out)


def stop_jvm(spark) -> None:
    """Stop ``spark`` and its JVM: ``SparkSession.stop`` leaves the driver JVM of a Python process
    running with its heap (8 GB at 3M), which the DAG's own Spark jobs then lack."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)
    if gateway is not None and proc is not None:
        gateway.shutdown()
        proc.terminate()
        proc.wait(60)
        SparkContext._gateway = SparkContext._jvm = None


def seed_history(data: Path, hist, ds: str, a, work: Path) -> dict:
    """Land, cleanse and seed registry version ``ds`` from ``hist``; copy a kept seed instead when
    ``--keep-seed`` kept one for the same size and seed. Returns the seed's counts and seconds."""
    reg = data / "lake" / "entities"
    kept = work / f"seed-dag-synth-{a.seed}-{a.history}"
    t0 = time.monotonic()
    if (kept / "_SEEDED.json").is_file():
        shutil.copytree(kept / "entities", reg)
        return {**json.loads((kept / "_SEEDED.json").read_text()), "copied": True,
                "seconds": round(time.monotonic() - t0, 1)}
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import cleanse
    from registry_scale import seed_registry

    from hdwm.spark import get_spark

    land_csv(hist, data, ds)
    spark = get_spark("registry-dag-night-seed", {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                                  "spark.driver.memory": a.driver_memory,
                                                  "spark.sql.session.timeZone": "UTC"})
    spark.sparkContext.setLogLevel("WARN")
    try:
        lake = data / "lake"
        rc = cleanse.main(["--landing", str(data / "landing"), "--ds", ds, "--curated", str(lake / "curated" / ds),
                           "--quarantine", str(lake / "quarantine" / ds),
                           "--metrics", str(lake / "curated" / f"{ds}.metrics.json")], spark=spark)
        if rc != 0:
            raise SystemExit(f"the cleanse job failed on the history (exit {rc})")
        t_seed = time.monotonic()
        counts = seed_registry(spark, reg, spark.read.parquet(str(lake / "curated" / ds)), ds, a.profile)
        counts["cleanse_seconds"] = round(t_seed - t0, 1)
    finally:
        stop_jvm(spark)
    if a.keep_seed:
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(reg, kept / "entities")
        (kept / "_SEEDED.json").write_text(json.dumps(counts))
    return {**counts, "copied": False, "seconds": round(time.monotonic() - t0, 1)}


def night_record(label: str, ds: str, res: dict, references: int) -> dict:
    """The figures of one ``dags_test`` result."""
    s = res["summary"] or {}
    reg = s.get("registry") or {}
    mode = PUBLISH_MODE.search(res["log"])  # the load task logs the mode it stages for
    rec = {"night": label, "ds": ds, "references": references, "rc": res["rc"], "wall_s": round(res["seconds"], 1),
           "published": s.get("published"), "not_published_because": s.get("not_published_because"),
           "task_seconds": s.get("seconds"), "publish_mode": mode.group(1) if mode else None,
           "night_f1": (s.get("pairwise") or {}).get("f1"), "registry_f1": (s.get("registry_pairwise") or {}).get("f1"),
           "load_1min": round(os.getloadavg()[0], 1), **{k: reg.get(k) for k in rn.REGISTRY_KEYS}}
    print(f"[dag-night] {json.dumps(rec)}", file=sys.stderr, flush=True)
    if res["rc"] != 0 or not s.get("published"):
        print(res["log"][-8000:], file=sys.stderr, flush=True)
    return rec


def table(history: int, rows: list[dict]) -> str:
    """The Markdown table of the nights' records."""
    order = ("cleanse", "link", "load_staging", "check_integrity", "check_quality", "publish")
    tasks = sorted({t for r in rows for t in (r["task_seconds"] or {})},
                   key=lambda t: (order.index(t) if t in order else len(order), t))
    head = ["night", "references", "publish", "wall s", *tasks, "night F1", "registry F1", "load"]
    lines = [f"history {history:,}", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ts = r["task_seconds"] or {}
        cells = [r["night"], f"{r['references']:,}", str(r["publish_mode"]), f"{r['wall_s']:.1f}",
                 *(f"{ts[t]:.1f}" if isinstance(ts.get(t), (int, float)) else "–" for t in tasks),
                 *("–" if r[k] is None else f"{r[k]:.4f}" for k in ("night_f1", "registry_f1")), str(r["load_1min"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--history", type=int, default=3_000_000, help="references in the seeded registry")
    ap.add_argument("--nights", type=int, default=2, help="DAG nights after the seed (the first publishes in full)")
    ap.add_argument("--per-night", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--profile", default="default")
    ap.add_argument("--driver-memory", default="8g", help="WASHLINE_SPARK_DRIVER_MEMORY for every Spark job")
    ap.add_argument("--work", default=None, help="working folder (default: a new temp folder)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep-seed", action="store_true",
                    help="keep the seeded registry under --work and copy it on a later run with the same size and seed")
    ap.add_argument("--keep-db", action="store_true", help="keep the scratch database")
    a = ap.parse_args(argv)
    if a.history < 1000 or a.nights < 1 or a.per_night < 100:
        ap.error("--history must be at least 1000, --nights at least 1, --per-night at least 100")
    import incremental

    work = Path(a.work or tempfile.mkdtemp(prefix="registry-dag-night-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)  # an earlier run's nights: the seed is copied or made again
    data.mkdir(parents=True)
    start = date(2025, 1, 1)
    t0 = time.monotonic()
    df = incremental.gen_synth(a.history + a.nights * a.per_night, a.seed, work)
    order = df.drop(columns=["truth_entity", "phone"]).sample(frac=1.0, random_state=a.seed).reset_index(drop=True)
    print(f"[dag-night] {len(order):,} references generated in {time.monotonic() - t0:.1f}s; work={work}",
          file=sys.stderr, flush=True)
    result: dict = {"history": a.history, "per_night": a.per_night, "seed": a.seed, "driver_memory": a.driver_memory,
                    "load_start": [round(x, 1) for x in os.getloadavg()], "nights": []}
    result["seed_registry"] = seed_history(data, order.iloc[:a.history], start.isoformat(), a, work)
    print(f"[dag-night] registry seeded: {json.dumps(result['seed_registry'])}", file=sys.stderr, flush=True)
    with contextlib.ExitStack() as stack:
        dbname = stack.enter_context(rn.scratch_postgres("washline_dag_night", keep=a.keep_db))
        result["database"] = dbname
        env = rn.airflow_env(data, staging={CONN_ID: rn.postgres_conn(dbname)})
        env["WASHLINE_SPARK_DRIVER_MEMORY"] = a.driver_memory
        for i in range(a.nights):
            ds = (start + timedelta(days=i + 1)).isoformat()
            lo = a.history + i * a.per_night
            n = land_csv(order.iloc[lo:lo + a.per_night], data, ds)
            res = rn.dags_test(env, data, ds, "1", {"staging_conn_id": CONN_ID}, timeout=7200)
            rec = night_record(f"night {i + 1}", ds, res, n)
            result["nights"].append(rec)
            if a.json:
                Path(a.json).write_text(json.dumps(result, indent=2))
            if res["rc"] != 0 or not rec["published"]:
                result["failed"] = rec["night"]
                break
    result["load_end"] = [round(x, 1) for x in os.getloadavg()]
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))
    print(table(a.history, result["nights"]))
    last = result["nights"][-1]
    ok = "failed" not in result and last["wall_s"] < TARGET_SECONDS
    print(f"\nlast night: {last['wall_s']:.1f} s wall (target < {TARGET_SECONDS:.0f} s) "
          f"{'met' if ok else 'NOT met'}; work={work}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
