"""Pairwise precision / recall / F1 of a clustering against a truth labelling.

A pair is two records in the same cluster (Christen 2012; DWM99 ERmetrics).
With ``n`` records in a group, the group holds ``n(n−1)/2`` pairs:

* predicted_pairs = Σ over predicted clusters of n(n−1)/2
* true_pairs      = Σ over truth entities of n(n−1)/2
* tp              = Σ over (cluster, entity) intersections of n(n−1)/2

precision = tp / predicted_pairs, recall = tp / true_pairs, F1 their harmonic
mean (0 when undefined). Only records with a non-null truth label count.
All sums are Spark aggregations; one small row reaches the driver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def _pairs(df: DataFrame, keys: list[str]):
    n = F.col("n").cast("long")
    return df.groupBy(*keys).agg(F.count(F.lit(1)).alias("n")).agg(
        F.coalesce(F.sum(n * (n - 1) / 2), F.lit(0)).cast("long").alias("p")
    )


def pairwise_metrics(df: DataFrame, cluster_col: str = "cluster_id", truth_col: str = "truth_entity") -> dict | None:
    """Pairwise metrics.

    Args:
        df: one row per record with ``cluster_col`` and ``truth_col``.

    Returns:
        dict with ``precision``, ``recall``, ``f1`` (floats, 4 decimals) and
        ``tp``, ``predicted_pairs``, ``true_pairs`` (ints); ``None`` when no
        record carries a truth label.
    """
    lab = df.filter(F.col(truth_col).isNotNull()).select(cluster_col, truth_col)
    pred = _pairs(lab, [cluster_col]).withColumnRenamed("p", "pred")
    true = _pairs(lab, [truth_col]).withColumnRenamed("p", "true")
    tp = _pairs(lab, [cluster_col, truth_col]).withColumnRenamed("p", "tp")
    cnt = lab.agg(F.count(F.lit(1)).alias("labelled"))
    row = pred.crossJoin(true).crossJoin(tp).crossJoin(cnt).first()
    if not row["labelled"]:
        return None
    return metrics_from_counts(int(row["tp"]), int(row["pred"]), int(row["true"]))


def metrics_from_counts(tp: int, predicted: int, true: int) -> dict:
    """Precision/recall/F1 from pair counts (0.0 where a denominator is 0)."""
    p = tp / predicted if predicted else 0.0
    r = tp / true if true else 0.0
    f = 2 * p * r / (p + r) if (p + r) else 0.0
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(f, 4),
        "tp": tp,
        "predicted_pairs": predicted,
        "true_pairs": true,
    }
