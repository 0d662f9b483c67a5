"""Cluster quality by normalised entropy (DWM90/DWM95, Talburt et al. 2020).

For a cluster of ``n`` references, let ``c_t`` be the number of its
references holding token ``t`` and ``T = Σ_t c_t`` the cluster's token count
(tokens counted once per reference). Then

    H      = Σ_t −(c_t / n) · log2(c_t / n)
    H_base = T · (1/n) · log2(n)          (every token in only one reference)
    quality = 1 − H / H_base              (DWM, Talburt et al. 2020)

so identical references give 1.0 and references sharing no token give 0.0.
A singleton (``n = 1``) or a cluster without tokens has quality 1.0.
(The newer DWM95 also splits name/address tokens and mixes 0.76/0.24; we use
the plain, schema-agnostic form.)

Computed with two Spark aggregations, so a large cluster never has to fit in
one Python worker.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def cluster_quality(assign: DataFrame, tokens: DataFrame, token_col: str = "tokens") -> DataFrame:
    """Quality of each cluster.

    Args:
        assign: (``record_id``, ``cluster_id``).
        tokens: (``record_id``, ``token_col`` array<string>).

    Returns:
        DataFrame (``cluster_id`` string, ``cluster_size`` int, ``quality`` double).
    """
    sizes = assign.groupBy("cluster_id").agg(F.count(F.lit(1)).cast("int").alias("cluster_size"))
    ex = assign.join(tokens, "record_id").select(
        "cluster_id", "record_id", F.explode(F.array_distinct(F.col(token_col))).alias("token")
    )
    counts = ex.groupBy("cluster_id", "token").agg(F.count(F.lit(1)).alias("c"))
    # H is summed over the cluster's token counts in sorted order, not with
    # F.sum: a floating-point sum in shuffle order differs in the last bits
    # from run to run, and a rerun of a date must publish identical rows.
    ent = (
        counts.join(sizes, "cluster_id")
        .groupBy("cluster_id")
        .agg(F.array_sort(F.collect_list("c")).alias("cs"), F.first("cluster_size").alias("n"))
        .select(
            "cluster_id",
            "n",
            F.aggregate(
                "cs", F.lit(0.0),
                lambda acc, c: acc - (c / F.col("n")) * F.log2(c / F.col("n")),
            ).alias("H"),
            F.aggregate("cs", F.lit(0).cast("long"), lambda acc, c: acc + c).alias("T"),
        )
    )
    base = F.col("T") / F.col("n") * F.log2(F.col("n"))
    q = ent.select("cluster_id", F.when(base > 0, 1.0 - F.col("H") / base).otherwise(1.0).alias("quality"))
    return sizes.join(q, "cluster_id", "left").select(
        "cluster_id",
        "cluster_size",
        F.when(F.col("cluster_size") <= 1, F.lit(1.0))
        .otherwise(F.coalesce("quality", F.lit(1.0)))
        .cast("double")
        .alias("quality"),
    )
