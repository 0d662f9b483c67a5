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


def test_pairwise_counts_equal_every_pair_enumerated(spark):
    """Random clusterings (null cluster ids and unlabelled records included): the counts of the one
    grouping-sets aggregation equal those of enumerating every pair of labelled records."""
    import random
    from itertools import combinations

    rng = random.Random(7)
    for trial in range(4):
        rows = [(f"r{i}", rng.choice([None, *[f"C{k}" for k in range(rng.randint(1, 30))]]),
                 rng.choice([None, *[f"T{k}" for k in range(rng.randint(1, 30))]])) for i in range(300)]
        lab = [r for r in rows if r[2] is not None]
        tp = sum(1 for a, b in combinations(lab, 2) if a[1] == b[1] and a[2] == b[2])
        pred = sum(1 for a, b in combinations(lab, 2) if a[1] == b[1])
        true = sum(1 for a, b in combinations(lab, 2) if a[2] == b[2])
        got = pairwise_metrics(spark.createDataFrame(rows, "record_id string, cluster_id string, truth_entity string"))
        assert got == metrics_from_counts(tp, pred, true), trial


def test_pairwise_none_without_truth(spark):
    df = spark.createDataFrame([("a", "C1", None)], "record_id string, cluster_id string, truth_entity string")
    assert pairwise_metrics(df) is None


def test_metrics_from_counts_undefined_ratios_are_none():
    # no predicted and no true pairs: nothing is defined
    assert metrics_from_counts(0, 0, 0) == {"precision": None, "recall": None, "f1": None,
                                            "tp": 0, "predicted_pairs": 0, "true_pairs": 0}
    # no predicted pairs (all singletons) but true pairs exist: recall 0, precision undefined
    m = metrics_from_counts(0, 0, 5)
    assert m["precision"] is None and m["recall"] == 0.0 and m["f1"] is None
    # predicted pairs but no true pairs: precision 0, recall undefined
    m = metrics_from_counts(0, 3, 0)
    assert m["precision"] == 0.0 and m["recall"] is None and m["f1"] is None
    # both defined and 0 (no shared pair): F1 is 0, not undefined
    assert metrics_from_counts(0, 2, 2)["f1"] == 0.0
    assert metrics_from_counts(3, 4, 6)["f1"] == pytest.approx(round(2 * 0.75 * 0.5 / 1.25, 4))


def test_pairwise_all_singletons_has_no_precision(spark):
    # every record its own cluster: no predicted pair; truth has pairs {a,b} {c,d}
    df = spark.createDataFrame(
        [("a", "C1", "T1"), ("b", "C2", "T1"), ("c", "C3", "T2"), ("d", "C4", "T2")],
        "record_id string, cluster_id string, truth_entity string",
    )
    assert pairwise_metrics(df) == {"precision": None, "recall": 0.0, "f1": None,
                                    "tp": 0, "predicted_pairs": 0, "true_pairs": 2}


def test_pairwise_no_true_pairs_has_no_recall(spark):
    # every truth entity a single record; the clustering made one pair
    df = spark.createDataFrame(
        [("a", "C1", "T1"), ("b", "C1", "T2"), ("c", "C3", "T3")],
        "record_id string, cluster_id string, truth_entity string",
    )
    assert pairwise_metrics(df) == {"precision": 0.0, "recall": None, "f1": None,
                                    "tp": 0, "predicted_pairs": 1, "true_pairs": 0}


def test_cli_prints_null_for_undefined_metrics(tmp_path):
    """``python -m hdwm`` on four unrelated people, each their own truth entity:
    recall and F1 are JSON null in stdout and in metrics.json, never 0.0."""
    import json
    import os
    import subprocess
    import sys

    data = tmp_path / "refs.txt"
    data.write_text("RecID,Name,Address\n"
                    "A1,ann,lee,12,main,st,perth\nA2,bob,kay,9,oak,ave,hobart\n"
                    "A3,cy,ng,4,elm,rd,darwin\nA4,di,ox,77,pine,ct,albany\n")
    truth = tmp_path / "truth.txt"
    truth.write_text("RecID,IdTruth\nA1,1\nA2,2\nA3,3\nA4,4\n")
    out = tmp_path / "out"
    env = {**os.environ, "HDWM_DRIVER_MEMORY": "1g"}
    proc = subprocess.run([sys.executable, "-m", "hdwm", "--input", str(data), "--format", "dwm",
                           "--truth", str(truth), "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = json.loads(proc.stdout)
    written = json.loads((out / "metrics.json").read_text())
    for metrics in (printed, written):
        pw = metrics["pairwise"]
        assert pw["true_pairs"] == 0 and pw["recall"] is None and pw["f1"] is None
    assert '"recall": null' in proc.stdout


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
