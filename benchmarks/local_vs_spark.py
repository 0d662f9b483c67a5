"""The driver-local iteration loop (``hdwm.local``) against the Spark loop, same
input, same Spark session: is the partition the same, and what does each take?

    PYSPARK_PYTHON=.venv/bin/python PYTHONPATH=spark_jobs .venv/bin/python benchmarks/local_vs_spark.py \\
        --input ../shared/data/dwm/S8P.txt --input /tmp/messy6k_s1.txt --input /tmp/febrl3.csv:csv \\
        [--set maxBlockSize=6 --set clusterConsistency=false]

Each input (``PATH`` in the DWM layout, or ``PATH:csv`` for a CSV of
``hdwm.readers.read_csv_refs``) is linked twice with the default profile plus
the ``--set`` overrides: ``localMaxReferences: 0`` (every iteration on Spark)
and ``localMaxReferences`` = the input's size (the iterations on the driver).
Printed per input: whether the partition (``record_id``, ``cluster_id``,
``iteration``, ``cluster_size``), the why-linked pairs (ids, score,
iteration, accepted, agreeing and conflicting tokens) and the iteration
records (but their seconds) are identical, the largest difference of a
cluster quality (the driver's log2 may differ in the last bit), and both
wall times in seconds (one warm session, so the JVM start is in neither).
Runs with the product venv (it needs pyspark); exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))


def _value(base, key, raw):
    cur = getattr(base, key)
    if isinstance(cur, bool):
        return raw.lower() in ("1", "true", "yes")
    return type(cur)(raw)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", action="append", required=True, metavar="PATH[:csv]")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args(argv)

    from hdwm.config import load_profile
    from hdwm.pipeline import link_references
    from hdwm.readers import read_csv_refs, read_dwm
    from hdwm.spark import get_spark

    spark = get_spark("washline-local-vs-spark")
    spark.sparkContext.setLogLevel("ERROR")
    base = load_profile("default")
    upd = {k: _value(base, k, v) for k, v in (kv.split("=", 1) for kv in a.set)}
    differ = 0
    for spec in a.input:
        path, _, fmt = spec.partition(":")
        pdf = (read_csv_refs(path) if fmt == "csv" else read_dwm(path))[["record_id", "text"]]
        refs = spark.createDataFrame(pdf)
        out = {}
        for local in (0, max(1, len(pdf))):
            profile = base.model_copy(update={**upd, "localMaxReferences": local})
            t = time.time()
            res = link_references(spark, refs, profile)
            links = res.links.toPandas().sort_values("record_id").reset_index(drop=True)
            pairs = res.pairs.toPandas().sort_values(["record_id_a", "record_id_b"]).reset_index(drop=True)
            out[local] = (links, pairs, res.metrics, time.time() - t)
        (l0, p0, m0, t0), (l1, p1, m1, t1) = out.values()
        keys = ["record_id", "cluster_id", "iteration", "cluster_size"]
        same_partition = l0[keys].equals(l1[keys]) and l0["mu"].fillna(-1).equals(l1["mu"].fillna(-1))
        pcols = ["record_id_a", "record_id_b", "score", "iteration", "accepted"]
        same_pairs = len(p0) == len(p1) and p0[pcols].equals(p1[pcols]) and all(
            list(x) == list(y) for c in ("agreeing", "conflicting") for x, y in zip(p0[c], p1[c]))
        strip = [[{k: v for k, v in r.items() if k != "seconds"} for r in m["iterations"]] for m in (m0, m1)]
        same_records = strip[0] == strip[1]
        qdiff = float((l0["quality"] - l1["quality"]).abs().max())
        ok = same_partition and same_pairs and same_records and qdiff < 1e-12
        differ += not ok
        print(f"{Path(path).name}: {len(pdf)} references, {m1['clusters']} clusters (largest {m1['largest_cluster']}), "
              f"{len(p1)} why-linked pairs | partition identical={same_partition} pairs identical={same_pairs} "
              f"records identical={same_records} quality max diff={qdiff:.1e} | Spark loop {t0:.1f}s, "
              f"driver loop {t1:.1f}s ({t0 / t1:.2f}x)", flush=True)
    print("all identical" if not differ else f"{differ} input(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
