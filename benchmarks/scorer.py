"""The pair scorer alone: per pair (``score_with_profile``) against batched (``score_many``).

    PYSPARK_PYTHON=.venv/bin/python PYTHONPATH=spark_jobs .venv/bin/python benchmarks/scorer.py \\
        --input /tmp/messy6k_s1.txt --input /tmp/synth20k.csv:csv [--rounds 3] [--max-pairs 60000]

Each input (``PATH`` in the DWM layout, or ``PATH:csv`` for a CSV of
``hdwm.readers.read_csv_refs``) is linked once with the default profile, its
iterations on the driver (``localMaxReferences`` = the input's size), and
the candidate pairs the engine scores are recorded with their comparison
features (the features frame ``hdwm.local`` receives). Then, in this one
process, the same pairs are scored ``--rounds`` times each way, the two
ways alternating: one ``score_with_profile`` call per pair (how the UDF scored
before ``score_many``), and ``score_many`` over batches of 10,000 pairs (one
Arrow batch of the UDF, ``hdwm.spark.ARROW_MAX_RECORDS_PER_BATCH``).

Printed per input: pairs, the median CPU microseconds per pair of each way
(``time.process_time``: this process's CPU, less sensitive to a shared box
than wall time), their ratio, and whether every score is equal bit for bit.
Exit status 1 when a score differs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))

BATCH = 10_000


def capture(spark, path: str, fmt: str):
    """Link the input once; return (features DataFrame, profile, [(id1, id2), ...]) the driver loop scored."""
    import hdwm.local as local
    from hdwm.config import load_profile
    from hdwm.pipeline import link_references
    from hdwm.readers import read_csv_refs, read_dwm

    pdf = (read_csv_refs(path) if fmt == "csv" else read_dwm(path))[["record_id", "text"]]
    seen: dict = {"pairs": []}
    original = local.pair_scorer

    def recording(features, profile):
        seen["features"], seen["profile"] = features, profile
        inner = original(features, profile)

        def score(pairs):
            seen["pairs"].extend(pairs)
            return inner(pairs)

        return score

    local.pair_scorer = recording
    try:
        profile = load_profile("default").model_copy(update={"localMaxReferences": max(1, len(pdf))})
        link_references(spark, spark.createDataFrame(pdf), profile).links.count()
    finally:
        local.pair_scorer = original
    return seen["features"], seen["profile"], seen["pairs"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", action="append", required=True, metavar="PATH[:csv]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=60_000, help="score at most this many of the recorded pairs")
    a = ap.parse_args(argv)

    import numpy as np

    from hdwm.compare import score_many, score_with_profile
    from hdwm.spark import get_spark

    spark = get_spark("washline-scorer-bench")
    spark.sparkContext.setLogLevel("ERROR")
    differ = 0
    for spec in a.input:
        path, _, fmt = spec.partition(":")
        features, profile, pairs = capture(spark, path, fmt)
        pairs = pairs[: a.max_pairs]
        pos = {str(r): i for i, r in enumerate(features["record_id"].tolist())}
        t, w = features["ctokens"].tolist(), features["cweights"].tolist()
        ev = list(zip(features["lead"].tolist(), features["nums"].tolist(), features["shared"].tolist(),
                      features["gstd"].tolist(), features["street"].tolist()))
        ii = [pos[x] for x, _ in pairs]
        jj = [pos[y] for _, y in pairs]

        def per_pair():
            return np.array([score_with_profile(t[i], w[i], t[j], w[j], profile, ev[i], ev[j]) for i, j in zip(ii, jj)])

        def batched():
            out = []
            for s in range(0, len(ii), BATCH):
                bi, bj = ii[s: s + BATCH], jj[s: s + BATCH]
                out.append(score_many([t[i] for i in bi], [w[i] for i in bi], [t[j] for j in bj],
                                      [w[j] for j in bj], profile, [ev[i] for i in bi], [ev[j] for j in bj]))
            return np.concatenate(out) if out else np.zeros(0)

        cpu = {"per pair": [], "batched": []}
        results = {}
        for r in range(a.rounds):
            order = [("per pair", per_pair), ("batched", batched)]
            for name, fn in (order if r % 2 == 0 else order[::-1]):
                c = time.process_time()
                results[name] = fn()
                cpu[name].append((time.process_time() - c) / max(len(ii), 1) * 1e6)
        same = bool(np.array_equal(results["per pair"], results["batched"]))
        differ += not same
        p, b = statistics.median(cpu["per pair"]), statistics.median(cpu["batched"])
        print(f"{Path(path).name}: {len(ii)} pairs | per pair {p:.1f} µs CPU, batched {b:.1f} µs CPU: "
              f"{p / b:.2f}× | scores identical={same} | rounds per pair "
              f"{', '.join(f'{x:.1f}' for x in cpu['per pair'])}; batched {', '.join(f'{x:.1f}' for x in cpu['batched'])}")
    spark.stop()
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
