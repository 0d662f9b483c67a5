"""Where the true pairs of a file stand before any score: block keys and identifying agreement.

    PYTHONPATH=spark_jobs .venv/bin/python benchmarks/recall_ceiling.py --input FILE --format dwm|csv \\
        --truth TRUTH [--links DIR] [--profile default]

Run it with the PRODUCT venv. It runs the engine's own first stages with the
profile (tokens, frequencies, global correction: ``hdwm.tokenizer``,
``hdwm.frequency``) and builds the iteration-1 block keys the way
``hdwm.blocking.build_blocks`` does (ordinary pair keys of tokens ≤ beta,
rare tokens alone, ``frequent_pair_keys`` under their cap), then classifies
every true pair (two references of one truth entity) once, by the first of:

* ``rare key``: they share a blocking token held by at most √beta references;
* ``pair key ≤ maxBlockSize``: they share an ordinary pair key whose block
  has at most ``maxBlockSize`` members (so the pair is surely compared);
* ``pair key, split block``: they share only pair keys of larger blocks,
  which ``build_blocks`` splits at random into sub-blocks (each such key
  gives the pair a chance of about 1 / sub-blocks of being compared);
* ``frequent-name key``: they share a ``frequent_pair_keys`` key only;
* ``no key``: none of these.

Each class is crossed with the *identifying agreement* of the pair: the IDF
weight Σ ln(N / freq) of the tokens they share exactly (frequency below sigma),
against ln N (``identifyingAgreementRule``, ``hdwm.compare``). A pair below
ln N on exact tokens can still reach it through fuzzy agreement (a typo in a
name), so the column is a floor of what the rule admits, not an exact copy.
With ``--links`` (the ``links`` folder of ``python -m hdwm --out DIR``) each
class also says how many of its pairs the engine put in one cluster.

The truth is read only to count: nothing is fitted and no parameter is chosen
here. Prints one Markdown table on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))

CLASSES = ("rare key", "pair key <= maxBlockSize", "pair key, split block", "frequent-name key", "no key")


def _say(msg: str) -> None:
    print(f"[recall_ceiling {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def classify(spark, pdf, prof, links=None, examples: int = 0):
    """Classify every true pair of ``pdf`` (pandas ``record_id``, ``text``, ``truth_entity``;
    references without a truth entity are in no pair) for the *effective* profile ``prof``.

    ``links``: an optional Spark DataFrame (``record_id``, ``cluster_id``) of an engine run.
    Returns (rows, examples): rows are Spark Rows (``kind`` = index into ``CLASSES``,
    ``identifying`` bool, ``n`` true pairs, ``linked`` of them in one cluster, None without
    ``links``); examples are up to ``examples`` identifying pairs of the class ``no key``
    (``a``, ``b``, ``ta``, ``tb`` token lists, ``shared`` sorted (freq, token) structs).
    """
    from pyspark.sql import functions as F

    from hdwm.blocking import blocking_tokens, frequent_pair_keys, rare_token_limit
    from hdwm.frequency import apply_corrections, correction_map, token_frequencies
    from hdwm.tokenizer import tokenize

    n = len(pdf)
    refs = spark.createDataFrame(pdf[["record_id", "text"]].astype(object))
    truth = spark.createDataFrame(pdf[["record_id", "truth_entity"]].dropna().astype(object))
    tokens = tokenize(refs, prof).localCheckpoint()
    freq = token_frequencies(tokens).localCheckpoint()
    if prof.runGlobalCorrection:
        cmap = correction_map(freq, prof).localCheckpoint()
        tokens = apply_corrections(tokens, cmap, prof.removeDuplicateTokens).localCheckpoint()
        freq = token_frequencies(tokens).localCheckpoint()
    _say("tokens and corrected frequencies ready")

    bt = blocking_tokens(tokens, freq, prof)
    t1 = bt.select("record_id", F.col("token").alias("t1"), F.col("freq").alias("f1"))
    t2 = bt.select("record_id", F.col("token").alias("t2"), F.col("freq").alias("f2"))
    pair_keys = (t1.join(t2, "record_id").filter(F.col("t1") < F.col("t2"))
                 .select("record_id", F.concat_ws(" ", "t1", "t2").alias("block_key")))
    sizes = pair_keys.groupBy("block_key").agg(F.count(F.lit(1)).alias("size"))
    keys = (pair_keys.join(sizes, "block_key")
            .select("record_id", "block_key",
                    F.when(F.col("size") <= prof.maxBlockSize, F.lit(1)).otherwise(F.lit(2)).alias("kind"))
            .unionByName(bt.filter(F.col("freq") <= rare_token_limit(prof))
                         .select("record_id", F.col("token").alias("block_key"), F.lit(0).alias("kind")))
            .unionByName(frequent_pair_keys(tokens, freq, prof)
                         .select("record_id", "block_key", F.lit(3).alias("kind")))
            .localCheckpoint())
    _say(f"{keys.count():,} (reference, key) rows")

    ta = truth.select(F.col("record_id").alias("a"), "truth_entity")
    tb = truth.select(F.col("record_id").alias("b"), "truth_entity")
    pairs = ta.join(tb, "truth_entity").filter(F.col("a") < F.col("b")).select("a", "b").localCheckpoint()
    ka = keys.select(F.col("record_id").alias("a"), "block_key", "kind")
    kb = keys.select(F.col("record_id").alias("b"), "block_key")
    best = (pairs.join(ka, "a").join(kb, ["b", "block_key"])
            .groupBy("a", "b").agg(F.min("kind").alias("kind")))
    tok = tokens.select("record_id", F.array_distinct("tokens").alias("tk"))
    both = (pairs.join(tok.select(F.col("record_id").alias("a"), F.col("tk").alias("ta")), "a")
            .join(tok.select(F.col("record_id").alias("b"), F.col("tk").alias("tb")), "b")
            .select("a", "b", F.explode(F.array_intersect("ta", "tb")).alias("token"))
            .join(freq, "token").filter(F.col("freq") < prof.sigma)
            .groupBy("a", "b").agg(F.sum(F.log(F.lit(float(n)) / F.col("freq"))).alias("idf")))
    out = (pairs.join(best, ["a", "b"], "left").join(both, ["a", "b"], "left")
           .select("a", "b", F.coalesce("kind", F.lit(4)).alias("kind"),
                   (F.coalesce("idf", F.lit(0.0)) >= math.log(n)).alias("identifying")))
    if links is not None:
        lk = links.select(F.col("record_id").cast("string"), F.col("cluster_id").cast("string"))
        out = (out.join(lk.select(F.col("record_id").alias("a"), F.col("cluster_id").alias("ca")), "a", "left")
               .join(lk.select(F.col("record_id").alias("b"), F.col("cluster_id").alias("cb")), "b", "left")
               .withColumn("linked", F.coalesce(F.col("ca") == F.col("cb"), F.lit(False))))
    else:
        out = out.withColumn("linked", F.lit(None).cast("boolean"))
    found = []
    if examples:
        ex = out.filter((F.col("kind") == 4) & F.col("identifying")).select("a", "b").limit(examples)
        shared = (ex.join(tok.select(F.col("record_id").alias("a"), F.col("tk").alias("ta")), "a")
                  .join(tok.select(F.col("record_id").alias("b"), F.col("tk").alias("tb")), "b")
                  .select("a", "b", "ta", "tb", F.explode(F.array_intersect("ta", "tb")).alias("token"))
                  .join(freq, "token")
                  .groupBy("a", "b", "ta", "tb")
                  .agg(F.sort_array(F.collect_list(F.struct("freq", "token"))).alias("shared")))
        found = shared.collect()
    rows = (out.groupBy("kind", "identifying")
            .agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("linked").cast("long")).alias("linked")).collect())
    return rows, found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--format", choices=("dwm", "csv"), required=True)
    ap.add_argument("--truth", required=True, help="RecID,IdTruth file (dwm) or the CSV's truth_entity column")
    ap.add_argument("--links", help="links folder of a python -m hdwm run on the same input (record_id, cluster_id)")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--examples", type=int, default=0, metavar="K",
                    help="also print K identifying true pairs of the class 'no key' with their shared tokens")
    a = ap.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from hdwm.blocking import rare_token_limit
    from hdwm.config import load_profile
    from hdwm.readers import read_csv_refs, read_dwm, read_truth
    from hdwm.spark import get_spark

    pdf = read_dwm(a.input) if a.format == "dwm" else read_csv_refs(a.input)
    if a.format == "dwm":
        pdf = pdf.merge(read_truth(a.truth), on="record_id", how="left")
    n = len(pdf)
    prof = load_profile(a.profile).effective(n)
    _say(f"{n:,} references; beta {prof.beta}, sigma {prof.sigma}, rare <= {rare_token_limit(prof)}, "
         f"maxBlockSize {prof.maxBlockSize}, frequentPairMaxBlock {prof.frequentPairMaxBlock}")
    spark = get_spark("hdwm-recall-ceiling", {"spark.ui.enabled": "false", "spark.driver.memory": "6g",
                                              "spark.sql.shuffle.partitions": "64",
                                              "spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    links = None
    if a.links:
        links = spark.read.parquet(a.links)
    rows, examples = classify(spark, pdf, prof, links=links, examples=a.examples)
    spark.stop()
    total = sum(r.n for r in rows)
    print(f"\n{a.input}: {n:,} references, {total:,} true pairs (beta {prof.beta}, sigma {prof.sigma})\n")
    print("| class | true pairs | share | identifying on exact tokens (≥ ln N) | engine linked |")
    print("|---|---:|---:|---:|---:|")
    for k, name in enumerate(CLASSES):
        sel = [r for r in rows if r.kind == k]
        cnt = sum(r.n for r in sel)
        ident = sum(r.n for r in sel if r.identifying)
        linked = sum(r.linked or 0 for r in sel) if a.links else None
        print(f"| {name} | {cnt:,} | {cnt / max(total, 1):.1%} | {ident:,} ({ident / max(cnt, 1):.0%}) | "
              f"{'–' if linked is None else f'{linked:,} ({linked / max(cnt, 1):.0%})'} |")
    ident = sum(r.n for r in rows if r.identifying)
    linked = sum(r.linked or 0 for r in rows) if a.links else None
    print(f"| all | {total:,} | 100% | {ident:,} ({ident / max(total, 1):.0%}) | "
          f"{'–' if linked is None else f'{linked:,} ({linked / max(total, 1):.0%})'} |")
    if examples:
        print(f"\nIdentifying true pairs with no key (shared token:frequency, rarest first; sigma {prof.sigma}):\n")
        for r in examples:
            print(f"- {r.a} / {r.b}: " + " ".join(f"{x.token}:{x.freq}" for x in r.shared))
            print(f"  {' '.join(r.ta)}  |  {' '.join(r.tb)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
