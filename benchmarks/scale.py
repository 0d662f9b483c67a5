"""Speed and memory of washline HDWM against Splink on DuckDB and on Spark, on the same files in the same run.

    benchmarks/.venv/bin/python benchmarks/scale.py --sizes 100000,1000000 [--repeat 3] [--skip-splink]
    benchmarks/.venv/bin/python benchmarks/scale.py --sizes 100000 --peers duckdb,spark
    benchmarks/.venv/bin/python benchmarks/scale.py --febrl3 --repeat 3
    benchmarks/.venv/bin/python benchmarks/scale.py --sizes 100000 --set iterationShortcut=false

Peers (``--peers``, a comma list; default ``duckdb``, ``--skip-splink`` runs none), each once per
input, after washline, as a subprocess timed whole:

* ``duckdb``: Splink 5 on DuckDB in this venv (``linkage_quality.run_splink``).
* ``spark``: Splink 5 on Spark, ``benchmarks/splink_spark.py`` in its own venv
  (``make -C benchmarks splink-spark-venv`` builds ``benchmarks/.venv-splink-spark`` from
  ``benchmarks/requirements-splink-spark.txt``; ``$WASHLINE_SPLINK_SPARK_PYTHON`` overrides the
  interpreter), on ``local[2]`` as washline. It runs on **PySpark 4.2.0, washline's own Spark**:
  Splink 5.0.0 ships its similarity jar for Spark 4 (Scala 2.13) beside the Spark 3 one and picks
  it by pyspark's major version, so Spark 4 loads it and the peer keeps every string comparison
  (Jaro-Winkler, Damerau-Levenshtein from the jar). The same model as the DuckDB peer (same
  comparisons, blocking rules and training), only the backend differs; Spark set up as Splink's
  documentation recommends (jar on ``spark.jars``, parallelism and shuffle partitions 5× the
  cores, a checkpoint folder with Parquet lineage breaking; ``splink_spark.spark_conf``).

For each size: ``benchmarks/synth.py --records N --seed 42`` (cached in the
temp folder; ``--generator messy`` uses ``benchmarks/messy.py`` instead),
then washline ``python -m hdwm --format csv`` in the product venv on
``local[2]`` as a subprocess, ``--repeat`` times, then Splink on DuckDB once
on the same file (a subprocess of this script: ``linkage_quality.run_splink``,
clusters at p ≥ 0.9, no oracle threshold scan), then each other peer. ``--febrl3`` instead times
the Airflow link job itself (``spark-submit spark_jobs/link.py`` on a curated
Parquet folder of FEBRL3, JVM start included) and Splink on the FEBRL3 CSV.

Reported per input: median wall seconds of each whole process (JVM or
Python start-up included), **the ratio washline / peer** beside each peer's
time (the figure that counts on a shared machine), peak resident memory of the process tree (JVM
+ Python driver + Python workers: the sum of RSS over the tree, sampled every
0.5 s), pairwise F1 of washline and of each peer against the truth, and the load average
(1 minute) at washline's start and end and after each peer (``ratio_table``).

Stage profile of each washline run: the engine's stages (start-up, read,
tokens+frequencies, correction, collect (an input iterating on the driver,
``hdwm.local``: collecting it and handing its result back), blocking, scoring,
components, quality, summary, write) with their driver wall seconds (``metrics["stages"]``), and
from Spark's event log the Spark jobs run, their seconds, shuffle bytes
written and read, and bytes spilled to disk. Each Spark job carries its stage
in the local property ``washline.stage`` (``hdwm.pipeline.StageClock``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
PRODUCT_PY = os.environ.get("WASHLINE_PYTHON", str(REPO / ".venv" / "bin" / "python"))
STAGE_PROPERTY = "washline.stage"  # hdwm.pipeline.STAGE_PROPERTY (this venv has no pyspark)
SPLINK_SPARK_PY = os.environ.get("WASHLINE_SPLINK_SPARK_PYTHON",
                                 str(REPO / "benchmarks" / ".venv-splink-spark" / "bin" / "python"))
#: ``--peers`` names and their column labels, in table order.
PEERS = {"duckdb": "Splink-DuckDB", "spark": "Splink-Spark"}
STAGE_ORDER = ["start-up", "read", "tokens+frequencies", "correction", "collect", "blocking", "scoring",
               "components", "quality", "summary", "write"]


def measure(cmd: list[str], cwd: Path | None = None, env: dict | None = None,
            extra_roots: list[int] = ()) -> tuple[float, float, str]:
    """Run ``cmd``; return (wall seconds, peak RSS in GiB of its process tree plus the trees of the
    ``extra_roots`` pids, e.g. a standalone cluster's master and workers, sampled every 0.5 s, stdout)."""
    t0 = time.time()
    proc = psutil.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    roots = [proc] + [psutil.Process(p) for p in extra_roots]
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            rss = 0
            for r in roots:
                try:
                    for p in [r] + r.children(recursive=True):
                        try:
                            rss += p.memory_info().rss
                        except psutil.Error:
                            pass
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], rss)
            done.wait(0.5)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = proc.communicate()
    done.set()
    th.join()
    for line in err.splitlines():  # the engine's per-iteration progress lines go to stderr
        if line.startswith(("[hdwm]", "[link]")):
            print(line, file=sys.stderr)
    if proc.returncode != 0:
        print(err[-3000:], file=sys.stderr)
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}")
    return time.time() - t0, peak[0] / 2**30, out


def _events(files: list[str]):
    """The JSON events of the event log ``files``, in order."""
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:  # the half-written last line of a running application
                    break
                yield ev


def event_log_profile(log_dir: str | Path) -> dict[str, dict]:
    """Per stage (the ``washline.stage`` local property of each Spark job;
    ``other`` without one): ``jobs``, ``job_seconds`` (submission to end,
    summed; jobs may overlap), ``tasks``, ``cpu`` (executor JVM CPU seconds of
    the tasks: the work done, which a busy shared machine does not inflate the
    way it inflates wall time), ``python`` (seconds the Python workers spent
    executing UDF code, Spark's ``time to execute Python code``; wall time of
    those processes), ``shuffle_write`` / ``shuffle_read`` / ``spill`` (bytes;
    ``shuffle_remote`` the part of ``shuffle_read`` fetched from another
    executor, which crosses the network on a cluster), read from the
    uncompressed event log (all its rolled files) in ``log_dir``."""
    # Spark 4 writes a folder eventlog_v2_<app>/events_<n>_<app> (rolling); older ones one file
    files = sorted((f for f in glob.glob(os.path.join(str(log_dir), "**", "*"), recursive=True)
                    if os.path.isfile(f) and not os.path.basename(f).startswith((".", "appstatus"))),
                   key=lambda f: (os.path.dirname(f), int(os.path.basename(f).split("_")[1])
                                  if os.path.basename(f).startswith("events_") else 0))
    if not files:
        raise RuntimeError(f"no event log in {log_dir}")
    prof: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "job_seconds": 0.0, "tasks": 0, "shuffle_write": 0,
                                                 "shuffle_read": 0, "shuffle_remote": 0, "spill": 0,
                                                 "cpu": 0.0, "python": 0.0})
    job_stage, job_start, stage_of = {}, {}, {}
    for ev in _events(files):
        kind = ev.get("Event")
        if kind == "SparkListenerJobStart":
            label = (ev.get("Properties") or {}).get(STAGE_PROPERTY) or "other"
            job_stage[ev["Job ID"]] = label
            job_start[ev["Job ID"]] = ev.get("Submission Time", 0)
            prof[label]["jobs"] += 1
        elif kind == "SparkListenerJobEnd":
            label = job_stage.get(ev["Job ID"], "other")
            prof[label]["job_seconds"] += (ev.get("Completion Time", 0) - job_start.get(ev["Job ID"], 0)) / 1000
        elif kind == "SparkListenerStageSubmitted":
            stage_of[ev["Stage Info"]["Stage ID"]] = (ev.get("Properties") or {}).get(STAGE_PROPERTY) or "other"
        elif kind == "SparkListenerStageCompleted":
            info = ev["Stage Info"]
            for acc in info.get("Accumulables") or []:
                if acc.get("Name") == "time to execute Python code":  # a timing metric: milliseconds
                    prof[stage_of.get(info["Stage ID"], "other")]["python"] += int(acc.get("Value") or 0) / 1000
        elif kind == "SparkListenerTaskEnd":
            label = stage_of.get(ev.get("Stage ID"), "other")
            tm = ev.get("Task Metrics") or {}
            sw, sr = tm.get("Shuffle Write Metrics") or {}, tm.get("Shuffle Read Metrics") or {}
            p = prof[label]
            p["tasks"] += 1
            p["shuffle_write"] += int(sw.get("Shuffle Bytes Written", 0))
            p["shuffle_read"] += int(sr.get("Remote Bytes Read", 0)) + int(sr.get("Local Bytes Read", 0))
            p["shuffle_remote"] += int(sr.get("Remote Bytes Read", 0))
            p["spill"] += int(tm.get("Disk Bytes Spilled", 0))
            p["cpu"] += int(tm.get("Executor CPU Time", 0)) / 1e9  # nanoseconds
    return dict(prof)


def print_stage_profile(label: str, wall: float, stages: dict[str, float], events: dict[str, dict]) -> None:
    """One Markdown table: a row per stage, then what no stage covers (interpreter and JVM start)."""
    mb = 2**20
    print(f"\nStage profile, {label} (process wall {wall:.1f} s):\n")
    remote = any(e.get("shuffle_remote", 0) for e in events.values())  # only on a cluster
    rh, rs = (" of which remote MB |", "---:|") if remote else ("", "")
    print(f"| stage | driver wall s | Spark jobs | job s | tasks | executor CPU s | Python UDF s | shuffle write MB | "
          f"shuffle read MB |{rh} spill MB |")
    print(f"|---|---:|---:|---:|---:|---:|---:|---:|---:|{rs}---:|")
    names = [s for s in STAGE_ORDER if s in stages or s in events] + sorted(
        (set(stages) | set(events)) - set(STAGE_ORDER))
    for s in names:
        e = events.get(s, {})
        rc = f" {e.get('shuffle_remote', 0) / mb:.1f} |" if remote else ""
        print(f"| {s} | {stages.get(s, 0.0):.1f} | {e.get('jobs', 0)} | {e.get('job_seconds', 0.0):.1f} | "
              f"{e.get('tasks', 0)} | {e.get('cpu', 0.0):.1f} | {e.get('python', 0.0):.1f} | "
              f"{e.get('shuffle_write', 0) / mb:.1f} | {e.get('shuffle_read', 0) / mb:.1f} |"
              f"{rc} {e.get('spill', 0) / mb:.1f} |")
    print(f"| outside the stages | {wall - sum(stages.values()):.1f} | | | | | | | |{' |' if remote else ''} |")
    tot = {k: sum(e.get(k, 0) for e in events.values())
           for k in ("jobs", "shuffle_write", "shuffle_read", "shuffle_remote", "spill", "cpu", "python")}
    rc = f" {tot['shuffle_remote'] / mb:.1f} |" if remote else ""
    print(f"| **all** | {wall:.1f} | {tot['jobs']} | | | {tot['cpu']:.1f} | {tot['python']:.1f} | "
          f"{tot['shuffle_write'] / mb:.1f} | "
          f"{tot['shuffle_read'] / mb:.1f} |{rc} {tot['spill'] / mb:.1f} |")


def synth(n: int, generator: str = "synth") -> Path:
    """The cached synthetic CSV of ``n`` references (seed 42) for ``generator``."""
    tmp = Path(tempfile.gettempdir())
    if generator == "synth":
        out = tmp / f"synth_{n // 1000}k.csv"
        if not out.exists():
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "synth.py"), "--records", str(n),
                            "--seed", "42", "--out", str(out)], check=True)
        return out
    raise SystemExit(f"unknown generator {generator!r}")


SPLINK_CHILD = """
import sys, json
sys.path.insert(0, {bench!r})
import linkage_quality as lq
lq.SCAN = (lq.THRESHOLD,)  # the figure that counts: clusters at p >= 0.9, no oracle scan
from pathlib import Path
print(json.dumps(lq.run_splink(Path({path!r}), 'csv', None)))
"""


def run_splink(path: Path) -> tuple[float, float, float]:
    """Splink on DuckDB on ``path`` in a subprocess: (wall s, peak GiB, F1)."""
    code = SPLINK_CHILD.format(bench=str(REPO / "benchmarks"), path=str(path))
    w, pk, out = measure([sys.executable, "-c", code])
    return w, pk, json.loads(out.strip().splitlines()[-1])["f1"]


def run_splink_spark(path: Path) -> tuple[float, float, float]:
    """Splink on Spark (``benchmarks/splink_spark.py`` in its venv, ``local[2]``) on the CSV ``path``:
    (wall s of the whole process, JVM start included; peak GiB of the tree, JVM included; F1)."""
    env = dict(os.environ, PYSPARK_PYTHON=SPLINK_SPARK_PY, PYSPARK_DRIVER_PYTHON=SPLINK_SPARK_PY)
    w, pk, out = measure([SPLINK_SPARK_PY, str(REPO / "benchmarks" / "splink_spark.py"), "--input", str(path),
                          "--cores", "2"], env=env)
    return w, pk, json.loads(out.strip().splitlines()[-1])["f1"]


PEER_RUNS = {"duckdb": run_splink, "spark": run_splink_spark}


def parse_peers(text: str) -> list[str]:
    """``--peers``: a comma list of ``PEERS`` names → the names in ``PEERS`` order, each once.

    Raises argparse.ArgumentTypeError on an empty list or an unknown name."""
    names = [x.strip().lower() for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one peer (duckdb, spark); --skip-splink runs none")
    unknown = sorted(set(names) - set(PEERS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown peer(s) {', '.join(unknown)}: choose from {', '.join(PEERS)}")
    return [p for p in PEERS if p in names]


def ratio_table(rows: list[dict], peers: list[str]) -> list[str]:
    """The Markdown summary: one line per input, the header and rule first.

    Each row: ``label``; ``wall`` (washline median s, None when washline did not run) and ``walls``
    (every run); ``peak`` (GiB or None); ``f1`` (or None); ``load0``/``load1`` (load average at
    washline's start and end); ``peers``: {peer name: (wall s, peak GiB, F1 or None, load average
    after it)} for the ``peers`` that ran. A peer's columns are its wall, **washline / peer** (the
    ratio of wall times, "–" when either side is missing or the peer took 0 s), peak and F1."""
    def num(x, fmt):
        return "–" if x is None else format(x, fmt)

    head = ["input", "washline median wall s (runs)"]
    for p in peers:
        head += [f"{PEERS[p]} wall s", f"**washline / {PEERS[p]}**"]
    head += ["washline peak RSS GiB"] + [f"{PEERS[p]} peak GiB" for p in peers]
    head += ["washline F1"] + [f"{PEERS[p]} F1" for p in peers]
    head += ["load avg (washline start→end" + "".join(f", after {PEERS[p]}" for p in peers) + ")"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        w = r.get("wall")
        hd = f"{w:.1f} ({', '.join(f'{x:.1f}' for x in r.get('walls', []))})" if w is not None else "–"
        cells = [r["label"], hd]
        done = r.get("peers", {})
        for p in peers:
            res = done.get(p)
            pw = res[0] if res else None
            cells += [num(pw, ".1f"), f"**{w / pw:.2f}×**" if w is not None and pw else "–"]
        cells += [num(r.get("peak"), ".2f")] + [num(done[p][1] if p in done else None, ".2f") for p in peers]
        cells += [num(r.get("f1"), ".4f")] + [num(done[p][2] if p in done else None, ".4f") for p in peers]
        cells += [f"{r['load0']:.1f}→{r['load1']:.1f}" + "".join(
            f", {done[p][3]:.1f}" if p in done else ", –" for p in peers)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def febrl3_job(env: dict) -> tuple[list[str], Path, Path]:
    """(spark-submit command of the link job on curated FEBRL3, its --out folder, the FEBRL3 CSV)."""
    from linkage_quality import ensure_input  # same folder

    csv_path, _, _ = ensure_input("febrl3")
    cur = Path(tempfile.mkdtemp(prefix="febrl3-curated-"))
    code = ("import pandas as pd,sys;df=pd.read_csv(sys.argv[1],dtype=str);"
            "df=df.rename(columns={'rec_id':'record_id'});df.insert(1,'source','febrl3');"
            "[df.__setitem__(c, df[c].str.upper()) for c in df.columns if c not in ('record_id','truth_entity','source')];"
            "df.to_parquet(sys.argv[2]+'/part-0.parquet',index=False)")
    subprocess.run([PRODUCT_PY, "-c", code, str(csv_path), str(cur)], check=True)
    submit = str(Path(PRODUCT_PY).parent / "spark-submit")
    # as Airflow's SparkSubmitOperator runs it: spark-submit --master local[2] (JVM start included);
    # Python workers must be the product venv's interpreter (pandas UDFs)
    env.update(PYSPARK_PYTHON=PRODUCT_PY, PYSPARK_DRIVER_PYTHON=PRODUCT_PY)
    out = cur / "out"
    cmd = [submit, "--master", "local[2]", "--conf", "spark.ui.showConsoleProgress=false",
           str(REPO / "spark_jobs" / "link.py"), "--curated", str(cur), "--out", str(out), "--ds", "2024-01-01"]
    return cmd, out, csv_path


def with_event_log(cmd: list[str], log_dir: Path, is_submit: bool) -> list[str]:
    """``cmd`` writing an uncompressed event log into ``log_dir``."""
    if not is_submit:
        return cmd + ["--event-log", str(log_dir)]
    return cmd[:1] + ["--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={log_dir}",
                      "--conf", "spark.eventLog.compress=false"] + cmd[1:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="washline HDWM against Splink peers (DuckDB, Spark), same files, same run")
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--generator", default="synth", choices=["synth"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--febrl3", action="store_true", help="time spark_jobs/link.py on FEBRL3 instead")
    ap.add_argument("--peers", type=parse_peers, default=["duckdb"], metavar="LIST",
                    help="comma list of Splink peers to time after washline: duckdb (this venv), spark "
                         "(benchmarks/.venv-splink-spark, make -C benchmarks splink-spark-venv); default duckdb")
    ap.add_argument("--skip-splink", action="store_true", help="run no peer")
    ap.add_argument("--skip-hdwm", action="store_true", help="time only the peers")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="profile override passed to python -m hdwm (synthetic sizes only)")
    ap.add_argument("--out", metavar="DIR", help="python -m hdwm --out DIR/<size>: keep links/ and clusters/ "
                    "(the write then counts in the wall time; benchmarks/cluster.py --local-links compares them)")
    a = ap.parse_args(argv)
    peers = [] if a.skip_splink else a.peers
    if "spark" in peers and not Path(SPLINK_SPARK_PY).exists():
        ap.error(f"the spark peer needs {SPLINK_SPARK_PY}: make -C benchmarks splink-spark-venv "
                 "(or set WASHLINE_SPLINK_SPARK_PYTHON)")
    env = dict(os.environ, WASHLINE_SPARK_MASTER="local[2]")
    runs = []  # (label, washline command, --out folder of a link job or None, file for Splink, is spark-submit)
    if a.febrl3:
        cmd, out, csv_path = febrl3_job(env)
        runs.append(("FEBRL3 link job (spark-submit)", cmd, out, csv_path, True))
    else:
        for n in (int(x) for x in a.sizes.split(",")):
            p = synth(n, a.generator)
            cmd = [PRODUCT_PY, "-m", "hdwm", "--input", str(p), "--format", "csv"]
            for kv in a.set:
                cmd += ["--set", kv]
            if a.out:
                cmd += ["--out", str(Path(a.out) / str(n))]
            runs.append((f"{a.generator} {n:,}", cmd, None, p, False))
    rows = []
    for label, cmd, out, path, is_submit in runs:
        walls, peaks, f1 = [], [], None
        load0 = os.getloadavg()[0]
        for k in range(0 if a.skip_hdwm else a.repeat):
            logs = Path(tempfile.mkdtemp(prefix="hdwm-eventlog-"))
            w, pk, stdout = measure(with_event_log(cmd, logs, is_submit), cwd=REPO / "spark_jobs", env=env)
            walls.append(w)
            peaks.append(pk)
            if out is not None:  # the link job writes metrics.json instead of printing it
                m = json.loads((out / "metrics.json").read_text())
            else:
                m = json.loads(stdout[stdout.index("{\n"):])
            f1 = (m.get("pairwise") or {}).get("f1")
            print(f"[scale] {label} run {k + 1}: {w:.1f}s peak {pk:.2f} GiB f1={f1} load={os.getloadavg()[0]:.1f}",
                  file=sys.stderr, flush=True)
            print_stage_profile(f"{label}, run {k + 1}", w, m.get("stages", {}), event_log_profile(logs))
        load1 = os.getloadavg()[0]
        done = {}
        for p in peers:
            pw, ppk, pf1 = PEER_RUNS[p](path)
            done[p] = (pw, ppk, pf1, os.getloadavg()[0])
            print(f"[scale] {label} {PEERS[p]}: {pw:.1f}s peak {ppk:.2f} GiB f1={pf1} load={done[p][3]:.1f}",
                  file=sys.stderr, flush=True)
        rows.append({"label": label, "wall": statistics.median(walls) if walls else None, "walls": walls,
                     "peak": max(peaks, default=None), "f1": f1, "load0": load0, "load1": load1, "peers": done})
    print()
    print("\n".join(ratio_table(rows, peers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
