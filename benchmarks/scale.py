"""Speed and memory of HDWM (and Splink on DuckDB) on growing synthetic inputs.

    benchmarks/.venv/bin/python benchmarks/scale.py --sizes 100000,1000000 --repeat 3 [--skip-splink]
    benchmarks/.venv/bin/python benchmarks/scale.py --febrl3 --repeat 3
    benchmarks/.venv/bin/python benchmarks/scale.py --sizes 100000,1000000 --skip-hdwm   # Splink only

For each size: ``benchmarks/synth.py --records N --seed 42`` (cached in the
temp folder), then ``python -m hdwm --format csv`` in the product venv on
``local[2]`` as a subprocess, ``--repeat`` times. ``--febrl3`` instead times the
Airflow link job itself (``spark_jobs/link.py`` on a curated Parquet folder of
FEBRL3, JVM start included).

Reported per size: median wall seconds of the whole process (Spark start-up
included), the peak resident memory of the process tree (JVM + Python
driver + Python workers: the sum of RSS over the tree, sampled every 0.5 s
with psutil), pairwise F1, and the ``uptime`` load average at start and end
(the machine is shared; a loaded machine inflates the times). Splink on
DuckDB runs once per size in a subprocess of this script, same measures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
PRODUCT_PY = os.environ.get("WASHLINE_PYTHON", str(REPO / ".venv" / "bin" / "python"))


def measure(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[float, float, str]:
    """Run ``cmd``; return (wall seconds, peak tree RSS in GiB, stdout)."""
    t0 = time.time()
    proc = psutil.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                procs = [proc] + proc.children(recursive=True)
                rss = 0
                for p in procs:
                    try:
                        rss += p.memory_info().rss
                    except psutil.Error:
                        pass
                peak[0] = max(peak[0], rss)
            except psutil.Error:
                pass
            done.wait(0.5)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = proc.communicate()
    done.set()
    th.join()
    for line in err.splitlines():  # the engine's per-stage progress lines go to stderr
        if line.startswith("[hdwm]"):
            print(line, file=sys.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}")
    return time.time() - t0, peak[0] / 2**30, out


def synth(n: int) -> Path:
    out = Path(tempfile.gettempdir()) / f"synth_{n // 1000}k.csv"
    if not out.exists():
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "synth.py"), "--records", str(n),
                        "--seed", "42", "--out", str(out)], check=True)
    return out


def hdwm_cmd(path: Path) -> list[str]:
    return [PRODUCT_PY, "-m", "hdwm", "--input", str(path), "--format", "csv"]


SPLINK_CHILD = """
import sys, json
sys.path.insert(0, {bench!r})
from linkage_quality import run_splink
from pathlib import Path
print(json.dumps(run_splink(Path({path!r}), 'csv', None)))
"""


def walls_ok(w: float | None) -> bool:
    return w is not None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="HDWM scale benchmark")
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--febrl3", action="store_true", help="time spark_jobs/link.py on FEBRL3 instead")
    ap.add_argument("--skip-splink", action="store_true")
    ap.add_argument("--skip-hdwm", action="store_true", help="time only Splink on DuckDB (synthetic sizes)")
    a = ap.parse_args(argv)
    env = dict(os.environ, WASHLINE_SPARK_MASTER="local[2]")
    rows = []
    if a.febrl3:
        from linkage_quality import ensure_input  # same folder

        csv_path, _, _ = ensure_input("febrl3")
        cur = Path(tempfile.mkdtemp(prefix="febrl3-curated-"))
        code = ("import pandas as pd,sys;df=pd.read_csv(sys.argv[1],dtype=str);"
                "df=df.rename(columns={'rec_id':'record_id'});"
                "[df.__setitem__(c, df[c].str.upper()) for c in df.columns if c not in ('record_id','truth_entity')];"
                "df.to_parquet(sys.argv[2]+'/part-0.parquet',index=False)")
        subprocess.run([PRODUCT_PY, "-c", code, str(csv_path), str(cur)], check=True)
        submit = str(Path(PRODUCT_PY).parent / "spark-submit")
        # as Airflow's SparkSubmitOperator runs it: spark-submit --master local[2] (JVM start included);
        # Python workers must be the product venv's interpreter (pandas UDFs)
        env.update(PYSPARK_PYTHON=PRODUCT_PY, PYSPARK_DRIVER_PYTHON=PRODUCT_PY)
        sizes = [("febrl3 link job (spark-submit)", [submit, "--master", "local[2]",
                                                     str(REPO / "spark_jobs" / "link.py"), "--curated", str(cur),
                                                     "--out", str(cur / "out"), "--ds", "2024-01-01"], None)]
    else:
        sizes = []
        for n in (int(x) for x in a.sizes.split(",")):
            p = synth(n)
            sizes.append((f"synth {n:,}", hdwm_cmd(p), p))
    for label, cmd, path in sizes:
        walls, peaks, f1 = [], [], None
        load0 = os.getloadavg()[0]
        for _ in range(0 if a.skip_hdwm and path is not None else a.repeat):
            w, pk, out = measure(cmd, cwd=REPO / "spark_jobs", env=env)
            walls.append(w)
            peaks.append(pk)
            if "{\n" in out:
                m = json.loads(out[out.index("{\n"):])
                f1 = (m.get("pairwise") or {}).get("f1")
            elif "--out" in cmd:  # the link job writes metrics.json instead of printing it
                m = json.loads((Path(cmd[cmd.index("--out") + 1]) / "metrics.json").read_text())
                f1 = (m.get("pairwise") or {}).get("f1")
            for line in out.splitlines():  # the engine's per-stage timings
                if line.startswith(("[hdwm]", "[link]")):
                    print(line, file=sys.stderr)
            print(f"[scale] {label}: {w:.1f}s peak {pk:.2f} GiB f1={f1}", file=sys.stderr, flush=True)
        load1 = os.getloadavg()[0]
        sp = None
        if path is not None and not a.skip_splink:
            code = SPLINK_CHILD.format(bench=str(REPO / "benchmarks"), path=str(path))
            w, pk, out = measure([sys.executable, "-c", code])
            sp = (w, pk, json.loads(out.strip().splitlines()[-1])["f1"])
        rows.append((label, statistics.median(walls) if walls else None, max(peaks, default=None), f1,
                     load0, load1, len(walls), sp))
    print("| input | HDWM median wall s | runs | HDWM peak RSS GiB | HDWM F1 | load avg start→end | "
          "Splink-DuckDB wall s | Splink peak GiB | Splink F1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, w, pk, f1, l0, l1, n, sp in rows:
        s = f"{sp[0]:.1f} | {sp[1]:.2f} | {sp[2]:.3f}" if sp else "– | – | –"
        hd = f"{w:.1f} | {n} | {pk:.2f} | {f1 if f1 is not None else '–'}" if walls_ok(w) else "– | 0 | – | –"
        print(f"| {label} | {hd} | {l0:.1f}→{l1:.1f} | {s} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
