"""Normalised-entropy cluster quality and pairwise metrics on hand examples."""

from __future__ import annotations

import math

import pytest

from hdwm.metrics import metrics_from_counts, pairwise_metrics
from hdwm.quality import cluster_quality

pytestmark = pytest.mark.spark


def test_entropy_worked_example(spark):
    assign = spark.createDataFrame(
        [("r1", "k1"), ("r2", "k1"), ("r3", "k2"), ("r4", "k2"), ("r5", "k2"), ("r6", "k3"),
         ("r7", "k4"), ("r8", "k4")],
        "record_id string, cluster_id string",
    )
    tokens = spark.createDataFrame(
        [("r1", ["A", "B"]), ("r2", ["A", "C"]),
         ("r3", ["X", "Y"]), ("r4", ["X", "Y"]), ("r5", ["X", "Z"]),
         ("r6", ["Q"]), ("r7", ["P", "P"]), ("r8", ["P"])],
        "record_id string, tokens array<string>",
    )
    q = {r.cluster_id: (r.cluster_size, r.quality) for r in cluster_quality(assign, tokens).collect()}
    # k1: c_A=2, c_B=c_C=1, n=2 -> H=1, H_base=4/2*1=2 -> 0.5
    assert q["k1"] == (2, pytest.approx(0.5))
    # k2: c_X=3, c_Y=2, c_Z=1, n=3
    h = -(2 / 3) * math.log2(2 / 3) - (1 / 3) * math.log2(1 / 3)
    assert q["k2"] == (3, pytest.approx(1 - h / (6 / 3 * math.log2(3))))
    assert q["k3"] == (1, 1.0)  # singleton
    assert q["k4"] == (2, pytest.approx(1.0))  # identical bags


def test_pairwise_hand_example(spark):
    # clusters {a,b,c} {d,e} {f}; truth {a,b} {c,d,e} {f}; g has no truth
    df = spark.createDataFrame(
        [("a", "C1", "T1"), ("b", "C1", "T1"), ("c", "C1", "T2"), ("d", "C2", "T2"),
         ("e", "C2", "T2"), ("f", "C3", "T3"), ("g", "C1", None)],
        "record_id string, cluster_id string, truth_entity string",
    )
    m = pairwise_metrics(df)
    assert m == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "tp": 2, "predicted_pairs": 4, "true_pairs": 4}


def test_pairwise_none_without_truth(spark):
    df = spark.createDataFrame([("a", "C1", None)], "record_id string, cluster_id string, truth_entity string")
    assert pairwise_metrics(df) is None


def test_metrics_from_counts_zero_safe():
    assert metrics_from_counts(0, 0, 0)["f1"] == 0.0
    assert metrics_from_counts(3, 4, 6)["f1"] == pytest.approx(round(2 * 0.75 * 0.5 / 1.25, 4))


def test_quality_does_not_depend_on_partitioning(spark):
    """The entropy sum runs in sorted order, so the same clusters give bit-identical
    quality however the rows are partitioned (a rerun publishes identical rows)."""
    import random

    rnd = random.Random(7)
    words = [f"T{i}" for i in range(60)]
    rows, tokens = [], []
    for c in range(40):
        for r in range(rnd.randint(2, 9)):
            rid = f"c{c}r{r}"
            rows.append((rid, f"c{c}"))
            tokens.append((rid, rnd.sample(words, rnd.randint(3, 15))))
    results = []
    for parts in (1, 3, 8):
        assign = spark.createDataFrame(rows, "record_id string, cluster_id string").repartition(parts)
        toks = spark.createDataFrame(list(reversed(tokens)), "record_id string, tokens array<string>").repartition(parts)
        results.append({r.cluster_id: r.quality for r in cluster_quality(assign, toks).collect()})
    assert results[0] == results[1] == results[2]  # exact, not approx
    assert len(results[0]) == 40 and all(0.0 <= q <= 1.0 for q in results[0].values())
