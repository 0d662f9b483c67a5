"""washline HDWM on a Spark standalone cluster against ``local[2]``: the same clusters, and what crosses the network.

    benchmarks/.venv/bin/python benchmarks/cluster.py --size 1000000 --local-links DIR
    benchmarks/.venv/bin/python benchmarks/cluster.py --size 100000            # runs local[2] first itself

Starts a Spark standalone master and ``--workers`` workers (``--cores`` cores
and ``--worker-memory`` each, loopback only, from the product venv's pyspark,
as ``tests/dags/test_nightly_e2e.py`` does), then runs ``python -m hdwm
--format csv --out DIR`` on the cached ``benchmarks/synth.py`` file of
``--size`` references (seed 42, ``scale.synth``) against that master in client
mode: one executor per worker (``--executor-memory``), the engine shipped
with ``--py-files`` in the zip the Airflow operator ships
(``jobcontract.pyfiles_zip``: ``hdwm`` and ``jobcontract``), the driver heap
``$HDWM_DRIVER_MEMORY`` (default here 2g: in client mode the driver runs no
task). The cluster is stopped afterwards, also on errors.

The ``local[2]`` links to compare with come from ``--local-links`` (the
``links/`` folder of an earlier ``python -m hdwm --out`` or ``scale.py
--keep-links`` run on the same file and code) or, without it, from a
``local[2]`` run made first by this script.

Printed: wall seconds of each run, peak RSS (GiB: the sum over the driver's
process tree plus, for the cluster, the master's and the workers' trees, so
the executor JVMs and their Python workers count), F1, the stage profile
from the event log (``scale.print_stage_profile``) with the shuffle bytes
that were fetched from another executor (``remote``, with ``spark.shuffle.readHostLocalDisk=false``: what would cross the
network between machines), and whether the partitions are identical: every
``links`` column (``record_id, cluster_id, iteration, mu, quality,
cluster_size``) row for row. Exit status 1 when they differ.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402  (same folder)

sys.path.insert(0, str(scale.REPO / "spark_jobs"))
from jobcontract import pyfiles_zip  # noqa: E402  (standard library only; the operator's zip builder)

REPO = scale.REPO
PRODUCT_PY = scale.PRODUCT_PY


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _master_status(ui: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as resp:
        return json.load(resp)


class Cluster:
    """A standalone master + workers on 127.0.0.1 (context manager; stops them on exit)."""

    def __init__(self, work: Path, workers: int, cores: int, memory: str):
        self.work, self.n, self.cores, self.memory = work, workers, cores, memory
        self.procs: list[subprocess.Popen] = []
        self.port, self.ui = _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def __enter__(self) -> "Cluster":
        found = subprocess.run([PRODUCT_PY, "-c", "import pyspark,os;print(os.path.dirname(pyspark.__file__))"],
                               check=True, capture_output=True, text=True).stdout.strip()
        spark_class = Path(found) / "bin" / "spark-class"
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
                   PATH=f"{Path(PRODUCT_PY).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        self.procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(self.port), "--webui-port", str(self.ui)],
            env=env, stdout=(self.work / "master.log").open("w"), stderr=subprocess.STDOUT, start_new_session=True))
        for k in range(1, self.n + 1):
            self.procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                 "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(_free_port()),
                 "--work-dir", str(self.work / f"work-{k}")],
                env=env, stdout=(self.work / f"worker-{k}.log").open("w"), stderr=subprocess.STDOUT,
                start_new_session=True))
        deadline = time.monotonic() + 240
        try:
            while True:
                try:
                    if _master_status(self.ui).get("aliveworkers", 0) >= self.n:
                        return self
                except (OSError, ValueError):  # not listening yet, or a page that is not JSON yet
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError((self.work / "master.log").read_text()[-3000:])
                time.sleep(2)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            try:
                os.killpg(proc.pid, 15)
            except ProcessLookupError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]


def _links(folder: Path) -> pd.DataFrame:
    df = pd.read_parquet(folder)
    return df[["record_id", "cluster_id", "iteration", "mu", "quality", "cluster_size"]].sort_values(
        "record_id", kind="mergesort").reset_index(drop=True)


def _run(label: str, cmd: list[str], roots: list[int], env: dict, log: Path) -> dict:
    w, pk, stdout = scale.measure(cmd + ["--event-log", str(log)], REPO / "spark_jobs", env, extra_roots=roots)
    m = json.loads(stdout[stdout.index("{\n"):])
    f1 = (m.get("pairwise") or {}).get("f1")
    print(f"[cluster] {label}: {w:.1f}s peak {pk:.2f} GiB f1={f1} load={os.getloadavg()[0]:.1f}",
          file=sys.stderr, flush=True)
    prof = scale.event_log_profile(log)
    scale.print_stage_profile(label, w, m.get("stages", {}), prof)
    return {"wall": w, "peak": pk, "f1": f1, "profile": prof, "metrics": m}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="HDWM on a Spark standalone cluster against local[2]")
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cores", type=int, default=1, help="cores per worker (one executor per worker)")
    ap.add_argument("--worker-memory", default="3g")
    ap.add_argument("--executor-memory", default="2g")
    ap.add_argument("--local-links", help="links/ folder of a local[2] run on the same file (else run one)")
    ap.add_argument("--work", help="folder for outputs and logs (default: a new temp folder)")
    a = ap.parse_args(argv)
    work = Path(a.work or tempfile.mkdtemp(prefix="hdwm-cluster-"))
    work.mkdir(parents=True, exist_ok=True)
    data = scale.synth(a.size)
    base = [PRODUCT_PY, "-m", "hdwm", "--input", str(data), "--format", "csv"]
    results = {}
    local_links = Path(a.local_links) if a.local_links else None
    if local_links is None:
        env = dict(os.environ, WASHLINE_SPARK_MASTER="local[2]")
        results["local[2]"] = _run("local[2]", base + ["--out", str(work / "local")], [], env, work / "log-local")
        local_links = work / "local" / "links"
    # the engine for the executors: the zip the Airflow operator ships (hdwm and jobcontract)
    pyz = pyfiles_zip(work / "_build")
    with Cluster(work, a.workers, a.cores, a.worker_memory) as cl:
        # readHostLocalDisk off: on one host Spark would read the other executor's shuffle files from
        # disk and count them as local; through the block transfer service they count as remote, the
        # bytes that would cross the network between machines
        submit = (f"--conf spark.executor.memory={a.executor_memory} --conf spark.executor.cores={a.cores} "
                  "--conf spark.shuffle.readHostLocalDisk=false "
                  f"--conf spark.cores.max={a.workers * a.cores} --py-files {pyz} pyspark-shell")
        env = dict(os.environ, WASHLINE_SPARK_MASTER=cl.url, SPARK_LOCAL_IP="127.0.0.1",
                   HDWM_DRIVER_MEMORY=os.environ.get("HDWM_DRIVER_MEMORY", "2g"), PYSPARK_SUBMIT_ARGS=submit)
        label = f"standalone {a.workers} workers x {a.cores} core(s), executors {a.executor_memory}"
        results["cluster"] = _run(label, base + ["--out", str(work / "cluster")], cl.pids(), env,
                                  work / "log-cluster")
    mine, theirs = _links(work / "cluster" / "links"), _links(local_links)
    same = mine.equals(theirs)
    diff = None
    if not same and len(mine) == len(theirs):
        diff = int((mine["cluster_id"] != theirs["cluster_id"]).sum())
    remote = sum(p.get("shuffle_remote", 0) for p in results["cluster"]["profile"].values())
    total = sum(p.get("shuffle_read", 0) for p in results["cluster"]["profile"].values())
    print(f"\nsynth {a.size:,}: cluster partition identical to local[2] ({local_links}): **{same}**"
          + (f" ({diff} references with another cluster_id)" if diff is not None else ""))
    print(f"cluster shuffle read {total / 2**20:.1f} MB, of which fetched from the other executor "
          f"{remote / 2**20:.1f} MB")
    for k, r in results.items():
        print(f"{k}: wall {r['wall']:.1f} s, peak RSS {r['peak']:.2f} GiB, F1 {r['f1']}")
    print(f"outputs and logs: {work}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
