"""Distributed connected components by large-star / small-star (Kiveris et al. 2014).

"Connected Components in MapReduce and Beyond", SoCC 2014. Written with
DataFrame operations only: no GraphFrames, no collect of edges or nodes.
Node ids are strings and compared lexicographically, so every component
converges to a star around its smallest id – which is exactly washline's
``cluster_id`` rule (the smallest record_id of the cluster).

Edges are kept oriented ``(u, v)`` with ``u > v``.

* large-star: for each node ``u`` with neighbourhood ``N(u)`` and
  ``m(u) = min(N(u) ∪ {u})``, emit ``(v, m(u))`` for every ``v ∈ N(u)`` with
  ``v > u``.
* small-star: for each node ``u`` with smaller neighbours ``S(u)`` and
  ``m(u) = min(S(u) ∪ {u})``, emit ``(v, m(u))`` for ``v ∈ S(u) ∪ {u}``,
  ``v ≠ m(u)``.

Rounds (large-star then small-star) repeat until the edge set no longer
changes. That fixed point is exactly "every component is a star around its
minimum", which is tested with one aggregation per round (cheaper than
diffing edge sets). Each round's edges are materialised with a local
checkpoint, and every ``checkpoint_interval`` rounds with a reliable
``checkpoint`` (when the SparkContext has a checkpoint dir) to cut lineage.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .spark import freeze

log = logging.getLogger(__name__)


class ClosureDidNotConverge(RuntimeError):
    """Raised when large-star/small-star needs more than ``max_rounds`` rounds."""


def _orient(df: DataFrame, a: str, b: str) -> DataFrame:
    return (
        df.filter(F.col(a) != F.col(b))
        .select(F.greatest(a, b).alias("u"), F.least(a, b).alias("v"))
        .distinct()
    )


def _large_star(e: DataFrame) -> DataFrame:
    both = e.unionByName(e.select(F.col("v").alias("u"), F.col("u").alias("v")))
    mins = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
    emitted = both.filter(F.col("v") > F.col("u")).join(mins, "u").select(
        F.col("v").alias("a"), F.col("m").alias("b")
    )
    return _orient(emitted, "a", "b")


def _small_star(e: DataFrame) -> DataFrame:
    # e is oriented u > v: v ranges over the smaller neighbours of u
    mins = e.groupBy("u").agg(F.min("v").alias("m"))
    j = e.join(mins, "u")
    nbrs = j.select(F.col("v").alias("a"), F.col("m").alias("b"))
    selfs = mins.select(F.col("u").alias("a"), F.col("m").alias("b"))
    return _orient(nbrs.unionByName(selfs), "a", "b")


def _not_star_count(e: DataFrame) -> int:
    """Number of nodes that violate the fixed point of large/small-star.

    The rounds stop changing exactly when every component is a star around
    its minimum: each node has at most one smaller neighbour (out-degree ≤ 1
    in the ``u > v`` orientation) and no node is both a leaf (has a smaller
    neighbour) and a centre (has a larger one). One aggregation job.
    """
    deg = e.select(F.col("u").alias("n"), F.lit(1).alias("o"), F.lit(0).alias("i")).unionByName(
        e.select(F.col("v").alias("n"), F.lit(0).alias("o"), F.lit(1).alias("i"))
    )
    agg = deg.groupBy("n").agg(F.sum("o").alias("o"), F.sum("i").alias("i"))
    return agg.filter((F.col("o") > 1) | ((F.col("o") >= 1) & (F.col("i") >= 1))).count()


def connected_components(
    edges: DataFrame,
    src: str = "id1",
    dst: str = "id2",
    checkpoint_interval: int = 3,
    max_rounds: int = 50,
) -> tuple[DataFrame, int]:
    """Label every node that appears in ``edges`` with its component's smallest id.

    Args:
        edges: DataFrame with string columns ``src`` and ``dst`` (undirected;
            duplicates and self loops allowed).
        checkpoint_interval: checkpoint the edge set every this many rounds.
        max_rounds: safety limit on large-star/small-star rounds.

    Returns:
        (DataFrame(``record_id`` string, ``component`` string), rounds run).
        Nodes with only self loops are their own component.

    Raises:
        ClosureDidNotConverge: after ``max_rounds`` rounds without convergence.
    """
    nodes = (
        edges.select(F.col(src).alias("record_id"))
        .unionByName(edges.select(F.col(dst).alias("record_id")))
        .distinct()
    )
    e = freeze(_orient(edges, src, dst), reliable=False)
    rounds = 0
    while _not_star_count(e) > 0:
        rounds += 1
        if rounds > max_rounds:
            raise ClosureDidNotConverge(f"connected components did not converge in {max_rounds} rounds")
        e = freeze(_small_star(_large_star(e)), reliable=(rounds % checkpoint_interval == 0))
        log.debug("connected components round %d", rounds)
    labels = e.groupBy("u").agg(F.min("v").alias("component")).withColumnRenamed("u", "record_id")
    out = nodes.join(labels, "record_id", "left").select(
        "record_id", F.coalesce("component", "record_id").alias("component")
    )
    return out, rounds
