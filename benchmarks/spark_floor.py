"""The least a DWM-style linker on Spark does, timed against Splink-DuckDB in the same run.

    benchmarks/.venv/bin/python benchmarks/spark_floor.py --sizes 100000[,1000000] [--repeat 1]

The HDWM speed target asks for washline within 2.5x (100k) and 2x (1M) of Splink on DuckDB.
This script measures how close *any* engine built the way washline must be
built (a PySpark job on ``local[2]``, pairwise comparison in a pandas UDF over
Arrow; see the project brief and ``docs/design``) can get on this machine. It
runs a skeleton of one HDWM pass with none of washline's rules:

1. start a Spark session with washline's settings (``hdwm.spark.get_spark``,
   ``tune_for_input``) - JVM start included, as in every washline figure;
2. read the CSV with Spark and join every column but the id and the truth
   into one text;
3. tokens: upper case, split on anything not a letter or digit, distinct per
   reference (DWM's tokenizer without corrections);
4. token frequencies (one group-by);
5. blocking: every token held by at most sqrt(``beta``) references is a block
   key on its own (the rare-token keys of washline's blocking, a subset of
   its keys: no token-pair keys, no frequent pairs, no block splitting);
   candidate pairs = distinct (id1 < id2) of the self-join on the key;
6. pairwise comparison: Jaccard of the two token sets, in a pandas UDF over
   Arrow (``--score pandas``, the way washline's scorer is called, with the
   cheapest score there is) or in Spark SQL with no Python at all
   (``--score sql``: ``array_intersect`` / ``array_union``, the JVM's cheapest);
7. links = pairs scoring >= 0.5; connected components on the driver
   (networkx; the links are collected: no Spark closure rounds);
8. write (record_id, cluster_id) as Parquet.

No global correction, no pair keys, no iterations, no entropy quality, no
evidence rules: every one of those costs more, never less. The skeleton's F1
is printed so nobody takes it for a linker. Splink 5 on DuckDB runs on the
same file after it (``scale.run_splink``: EM-trained, clusters at p >= 0.9).
The figure that counts is the ratio skeleton / Splink: if it is already above
the issue's bound, no washline change inside this architecture meets it on
this machine.

Output: one line per run on stderr and a Markdown table on stdout (wall
seconds of whole processes, peak RSS GiB of the process tree, the ratio, F1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd  # module level: the pandas UDF's type hints are resolved from here

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def skeleton(path: str, beta: int, out: str, score: str = "pandas") -> dict:
    """Run the skeleton on the synth CSV ``path`` (columns ``rec_id``,
    ``truth_entity`` and attribute columns); write Parquet (``record_id``,
    ``cluster_id``) to ``out``; ``score`` is ``pandas`` or ``sql`` (step 6). Returns stage seconds, counts and pairwise
    precision / recall / F1 against ``truth_entity``."""
    t0 = time.time()
    secs = {}

    def lap(name):
        nonlocal t0
        now = time.time()
        secs[name] = round(now - t0, 2)
        t0 = now

    from hdwm.spark import get_spark, tune_for_input
    from pyspark.sql import functions as F

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers need this venv's pandas, as python -m hdwm
    spark = get_spark("washline-spark-floor")  # the active session if there is one (tests)
    lap("start-up")
    raw = spark.read.csv(path, header=True, inferSchema=False)
    attrs = [c for c in raw.columns if c not in ("rec_id", "truth_entity")]
    refs = raw.select(F.col("rec_id").alias("record_id"), "truth_entity",
                      F.concat_ws(" ", *[F.coalesce(F.col(c), F.lit("")) for c in attrs]).alias("text"))
    refs = refs.localCheckpoint()
    n = refs.count()
    tune_for_input(spark, n)
    lap("read")
    tokens = refs.select("record_id", F.array_distinct(F.filter(
        F.split(F.upper("text"), "[^A-Z0-9]+"), lambda t: F.length(t) > 0)).alias("tokens")).localCheckpoint()
    exploded = tokens.select("record_id", F.explode("tokens").alias("token"))
    freq = exploded.groupBy("token").count().localCheckpoint()
    n_tokens = freq.count()
    lap("tokens+frequencies")
    rare = int(beta ** 0.5)  # washline's rare-token keys: held by at most sqrt(beta) references
    keys = exploded.join(freq.where(F.col("count") <= rare).select("token"), "token")
    pairs = (keys.alias("a").join(keys.alias("b"), "token")
             .where(F.col("a.record_id") < F.col("b.record_id"))
             .select(F.col("a.record_id").alias("id1"), F.col("b.record_id").alias("id2")).distinct())
    pairs = pairs.localCheckpoint()
    n_pairs = pairs.count()
    lap("blocking")

    @F.pandas_udf("double")
    def jaccard(a: pd.Series, b: pd.Series) -> pd.Series:
        out = []
        for x, y in zip(a, b):
            sx, sy = set(x), set(y)
            out.append(len(sx & sy) / len(sx | sy) if sx or sy else 0.0)
        return pd.Series(out)

    t = tokens.select(F.col("record_id").alias("rid"), "tokens")
    scored = (pairs.join(t.withColumnRenamed("rid", "id1").withColumnRenamed("tokens", "ta"), "id1")
              .join(t.withColumnRenamed("rid", "id2").withColumnRenamed("tokens", "tb"), "id2")
              .select("id1", "id2", (jaccard("ta", "tb") if score == "pandas" else
                                     F.size(F.array_intersect("ta", "tb")) / F.size(F.array_union("ta", "tb"))
                                     ).alias("score")))
    links = scored.where(F.col("score") >= 0.5).select("id1", "id2").toPandas()
    lap("scoring")
    import networkx as nx  # connected components of the links (a well-kept library; no Spark rounds)

    g = nx.Graph()
    g.add_edges_from(zip(links["id1"], links["id2"]))
    cid = {r: min(comp) for comp in nx.connected_components(g) for r in comp}
    clusters = pd.DataFrame({"record_id": list(cid), "cluster_id": list(cid.values())})
    lap("components")
    cdf = spark.createDataFrame(clusters) if len(clusters) else None
    ids = refs.select("record_id", "truth_entity")
    assigned = (ids.join(cdf, "record_id", "left") if cdf is not None else ids.withColumn("cluster_id", F.lit(None)))
    assigned = assigned.withColumn("cluster_id", F.coalesce("cluster_id", "record_id"))
    assigned.select("record_id", "cluster_id").write.mode("overwrite").parquet(out)
    lap("write")
    got = assigned.select("cluster_id", "truth_entity").toPandas()
    tp = int(got.groupby(["cluster_id", "truth_entity"]).size().map(lambda k: k * (k - 1) // 2).sum())
    pred = int(got.groupby("cluster_id").size().map(lambda k: k * (k - 1) // 2).sum())
    true = int(got.groupby("truth_entity").size().map(lambda k: k * (k - 1) // 2).sum())
    p = tp / pred if pred else 0.0
    r = tp / true if true else 0.0
    return {"stages": secs, "references": n, "distinct_tokens": n_tokens, "pairs": n_pairs,
            "links": len(links), "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _sizes(text: str) -> list[int]:
    """``--sizes``: a comma list of reference counts, each a multiple of 1,000 (``scale.synth`` caches its
    files by thousands: ``synth_100k.csv``)."""
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of integers: {text!r}") from None
    if not sizes or min(sizes) < 1000:
        raise argparse.ArgumentTypeError(f"every size must be at least 1,000 references: {text!r}")
    if any(n % 1000 for n in sizes):
        raise argparse.ArgumentTypeError(f"every size must be a multiple of 1,000 references: {text!r}")
    return sizes


def _positive(text: str) -> int:
    """``--repeat``: a whole number of runs, at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Spark skeleton of one DWM pass against Splink-DuckDB, same run")
    ap.add_argument("--sizes", default="100000", type=_sizes, help="comma list of reference counts (multiples of 1,000)")
    ap.add_argument("--repeat", type=_positive, default=1, help="runs of each variant per size (median reported)")
    ap.add_argument("--skip-splink", action="store_true")
    ap.add_argument("--score", default="pandas,sql", help="comma list of pandas | sql (step 6), each run in turn")
    ap.add_argument("--child", nargs=4, metavar=("CSV", "BETA", "OUT", "SCORE"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:  # the skeleton itself, in the product venv
        info = skeleton(a.child[0], int(a.child[1]), a.child[2], a.child[3])
        print(json.dumps(info))
        return 0
    variants = [v for v in a.score.split(",") if v]
    bad = set(variants) - {"pandas", "sql"}
    if not variants:
        ap.error("--score: give pandas and/or sql")
    if bad:
        ap.error(f"--score: unknown variant(s) {sorted(bad)}; use pandas and/or sql")
    sys.path.insert(0, str(HERE))
    import scale  # same folder: measure(), synth(), run_splink(), PRODUCT_PY

    env = dict(os.environ, WASHLINE_SPARK_MASTER="local[2]",
               PYTHONPATH=os.pathsep.join([str(REPO / "spark_jobs"), os.environ.get("PYTHONPATH", "")]))
    rows = []
    for n in a.sizes:
        path = scale.synth(n)
        # washline's effective beta for this size (default profile: 16 at 1,000 references, sqrt scaling)
        beta = int(round(16 * (n / 1000) ** 0.5))
        runs = {}
        for k in range(a.repeat):
            for v in variants:  # alternate the variants, so load drifts hit both
                out = tempfile.mkdtemp(prefix="spark-floor-")
                w, pk, stdout = scale.measure([scale.PRODUCT_PY, str(Path(__file__).resolve()), "--child",
                                               str(path), str(beta), out, v], env=env)
                info = json.loads(stdout.strip().splitlines()[-1])
                runs.setdefault(v, []).append((w, pk, info))
                print(f"[floor] {n:,} {v} run {k + 1}: {w:.1f}s peak {pk:.2f} GiB {info} "
                      f"load={os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        sp = None if a.skip_splink else scale.run_splink(path)
        if sp:
            print(f"[floor] {n:,} Splink-DuckDB: {sp[0]:.1f}s peak {sp[1]:.2f} GiB f1={sp[2]:.4f}",
                  file=sys.stderr, flush=True)
        for v, rs in runs.items():
            walls = [r[0] for r in rs]
            rows.append((n, v, statistics.median(walls), walls, max(r[1] for r in rs), rs[-1][2], sp))
    print("\n| references | scoring | skeleton median wall s (runs) | its stages s (last run) | pairs | "
          "Splink-DuckDB wall s | **skeleton / Splink** | skeleton peak GiB | skeleton F1 | Splink F1 |")
    print("|---:|---|---|---|---:|---:|---:|---:|---:|---:|")
    for n, v, w, walls, pk, info, sp in rows:
        stages = ", ".join(f"{k} {x}" for k, x in info["stages"].items())
        runs_s = ", ".join(f"{x:.1f}" for x in walls)
        spw, ratio, spf = (f"{sp[0]:.1f}", f"**{w / sp[0]:.2f}×**", f"{sp[2]:.4f}") if sp else ("–", "–", "–")
        print(f"| {n:,} | {v} | {w:.1f} ({runs_s}) | {stages} | {info['pairs']:,} | {spw} | {ratio} | {pk:.2f} | "
              f"{info['f1']:.4f} | {spf} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
