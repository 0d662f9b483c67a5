"""Pairwise precision / recall / F1 of a clustering against a truth labelling.

A pair is two records in the same cluster (Christen 2012; DWM99 ERmetrics).
With ``n`` records in a group, the group holds ``n(n−1)/2`` pairs:

* predicted_pairs = Σ over predicted clusters of n(n−1)/2
* true_pairs      = Σ over truth entities of n(n−1)/2
* tp              = Σ over (cluster, entity) intersections of n(n−1)/2

precision = tp / predicted_pairs, recall = tp / true_pairs, F1 their harmonic
mean. A ratio whose denominator is 0 is undefined and reported as ``None``
(JSON ``null``, "n/a" when printed), never 0.0: precision without predicted
pairs (every cluster a singleton), recall without true pairs (every truth
entity a single record), and F1 when either is undefined. F1 is 0.0 when both
are defined and 0 (pairs on both sides, none shared). Only records with a
non-null truth label count.
All sums are Spark aggregations; one small row reaches the driver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def pairwise_metrics(df: DataFrame, cluster_col: str = "cluster_id", truth_col: str = "truth_entity") -> dict | None:
    """Pairwise metrics.

    Args:
        df: one row per record with ``cluster_col`` and ``truth_col``.

    Returns:
        dict with ``precision``, ``recall``, ``f1`` (floats, 4 decimals, or
        None where undefined, see ``metrics_from_counts``) and ``tp``,
        ``predicted_pairs``, ``true_pairs`` (ints); ``None`` when no record
        carries a truth label.
    """
    lab = df.filter(F.col(truth_col).isNotNull()).select(cluster_col, truth_col)
    # one aggregation over three grouping sets (one shuffle, not three): the (cluster, entity)
    # intersections, the clusters and the entities; grouping_id tells them apart (bit 1: cluster
    # aggregated away, bit 0: entity aggregated away), so a null cluster id is still a group
    groups = lab.groupingSets([[cluster_col, truth_col], [cluster_col], [truth_col]], cluster_col, truth_col).agg(
        F.count(F.lit(1)).cast("long").alias("n"), F.grouping_id().alias("gid"))
    pairs = (F.col("n") * (F.col("n") - 1)).cast("long") / 2

    def total(gid: int, value):
        return F.coalesce(F.sum(F.when(F.col("gid") == gid, value)), F.lit(0)).cast("long")

    row = groups.agg(total(0, pairs).alias("tp"), total(1, pairs).alias("pred"), total(2, pairs).alias("true"),
                     total(0, F.col("n")).alias("labelled")).first()
    if not row["labelled"]:
        return None
    return metrics_from_counts(int(row["tp"]), int(row["pred"]), int(row["true"]))


def metrics_from_counts(tp: int, predicted: int, true: int) -> dict:
    """Precision/recall/F1 from pair counts.

    Returns:
        dict as ``pairwise_metrics``; ``precision`` is None when
        ``predicted`` is 0, ``recall`` None when ``true`` is 0, ``f1`` None
        when either is None (0.0 when both are 0.0).
    """
    p = tp / predicted if predicted else None
    r = tp / true if true else None
    if p is None or r is None:
        f = None
    else:
        f = 2 * p * r / (p + r) if (p + r) else 0.0
    return {
        "precision": None if p is None else round(p, 4),
        "recall": None if r is None else round(r, 4),
        "f1": None if f is None else round(f, 4),
        "tp": tp,
        "predicted_pairs": predicted,
        "true_pairs": true,
    }


def registry_pairwise(members: DataFrame, truth: DataFrame) -> dict | None:
    """Pairwise figures of the entity registry against a truth labelling.

    Every member of the registry that carries a truth label counts, whichever
    night it came in: a predicted pair is two labelled members of one entity,
    a true pair two labelled members of one truth entity (as
    ``pairwise_metrics``, with ``entity_id`` as the cluster). Members without
    a label (no truth row, or a null ``truth_entity``) are left out.

    Args:
        members: one row per registry member with ``source``, ``record_id``
            and ``entity_id`` (strings; other columns ignored), e.g.
            ``hdwm.registry.read_version(spark, root, ds).members``.
        truth: ``source``, ``record_id``, ``truth_entity`` (string, nullable),
            at most one row per (source, record_id); see
            ``hdwm.truth.history_truth``.

    Returns:
        ``pairwise_metrics``'s dict (``precision``, ``recall``, ``f1``: floats
        with 4 decimals or None where undefined; ``tp``, ``predicted_pairs``,
        ``true_pairs``) plus ``references`` (labelled members) and ``members``
        (all members); None when no member carries a label.

    Raises:
        ValueError: ``truth`` labels a (source, record_id) more than once.

    The registry's members are read twice without a shuffle: once counted, and
    once filtered against the truth's keys (broadcast when the truth holds at
    most ``hdwm.spark.BROADCAST_MAX_ROWS`` rows); only the labelled members
    are then grouped. A registry member is unique by (source, record_id), so a
    key held twice among the joined rows is a truth labelling it twice.
    """
    from .spark import broadcast_if_small, freeze

    keys = ["source", "record_id"]
    lab = truth.select(*keys, "truth_entity")
    total = members.count()
    joined = members.select(*keys, "entity_id").join(broadcast_if_small(lab, lab.count()), keys, "inner")
    joined = freeze(joined)  # the labelled members only, read by both aggregations
    row = joined.agg(F.count(F.lit(1)).alias("rows"), F.countDistinct(*keys).alias("members"),
                     F.count("truth_entity").alias("labelled")).first()
    if row["rows"] != row["members"]:
        raise ValueError(f"truth labels some references more than once: {row['rows']} rows for "
                         f"{row['members']} labelled registry members (one truth row per source and record_id)")
    if not row["labelled"]:
        return None
    pw = pairwise_metrics(joined, cluster_col="entity_id")
    return {**pw, "references": int(row["labelled"]), "members": int(total)}
