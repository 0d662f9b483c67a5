"""Blocking on mid-frequency tokens (DWM42, Talburt et al. 2020) with a size cap.

Blocking tokens (DWM42 rules): ``2 ≤ freq ≤ beta``, ``len ≥ minBlkTokenLen``,
and not all digits when ``excludeNumericBlocks`` (washline: unless the
number has at least ``minNumBlkTokenLen`` digits). With ``blockByPairs`` a
block key is a sorted pair of blocking tokens of the same reference
(``"A B"`` with ``A < B``), otherwise the token itself.

Because a blocking token occurs at most ``beta`` times, DWM blocks are already
small; washline still enforces ``maxBlockSize`` (design: "no single task's
group is unbounded"): a block with ``size > maxBlockSize`` is split into
``ceil(size / maxBlockSize)`` sub-blocks, members dealt round-robin in
``xxhash64(record_id)`` order, and pairs are only formed inside a sub-block.
This bounds the pairs of a block to about ``size × maxBlockSize / 2`` at the
cost of the cross-sub-block pairs (logged as ``oversize_blocks``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .config import LinkageProfile


@dataclass
class BlockingResult:
    """``pairs``: (``id1``, ``id2``) strings, ``id1 < id2``, distinct.
    ``members``: (``block_key``, ``sub_block`` int, ``record_id``, ``block_size`` long)."""

    pairs: DataFrame
    members: DataFrame


def blocking_tokens(tokens: DataFrame, freq: DataFrame, profile: LinkageProfile) -> DataFrame:
    """(``record_id``, ``tokens``) + (``token``, ``freq``) → (``record_id``, ``token``) blocking tokens."""
    ex = tokens.select("record_id", F.explode(F.array_distinct("tokens")).alias("token"))
    cond = (F.col("freq") >= 2) & (F.col("freq") <= profile.beta) & (
        F.length("token") >= profile.minBlkTokenLen
    )
    if profile.excludeNumericBlocks:
        numeric = F.col("token").rlike(r"^\d+$")
        if profile.minNumBlkTokenLen > 0:
            # washline: long numbers (SSN, phone, DOB) still block
            numeric = numeric & (F.length("token") < profile.minNumBlkTokenLen)
        cond = cond & ~numeric
    return ex.join(freq, "token").filter(cond).select("record_id", "token")


def build_blocks(tokens: DataFrame, freq: DataFrame, profile: LinkageProfile) -> BlockingResult:
    """Blocks and distinct candidate pairs for the references in ``tokens``.

    Args:
        tokens: (``record_id``, ``tokens``) of the references still unassigned.
        freq: global (``token``, ``freq``) table (DWM keeps frequencies global
            across iterations).
        profile: beta, blockByPairs, minBlkTokenLen, excludeNumericBlocks, maxBlockSize.
    """
    bt = blocking_tokens(tokens, freq, profile)
    if profile.blockByPairs:
        a = bt.select("record_id", F.col("token").alias("t1"))
        b = bt.select("record_id", F.col("token").alias("t2"))
        keys = (
            a.join(b, "record_id")
            .filter(F.col("t1") < F.col("t2"))
            .select("record_id", F.concat_ws(" ", "t1", "t2").alias("block_key"))
        )
    else:
        keys = bt.select("record_id", F.col("token").alias("block_key"))
    keys = keys.distinct()
    cap = profile.maxBlockSize
    # One shuffle: each block's members as an array sorted by
    # (xxhash64(record_id), record_id); sub-blocks deal that order
    # round-robin. Members and pairs are both read off the array (no window
    # sort, no self-join); the grouped frame is checkpointed lazily so the two
    # outputs share one computation.
    grouped = (
        keys.groupBy("block_key")
        .agg(F.array_sort(F.collect_list(F.struct(F.xxhash64("record_id").alias("h"), F.col("record_id").alias("r")))).alias("m"))
        .select("block_key", F.transform("m", lambda x: x["r"]).alias("ids"))
        .withColumn("block_size", F.size("ids").cast("long"))
        .filter(F.col("block_size") >= 2)
        .withColumn("n_sub", F.ceil(F.col("block_size") / F.lit(cap)).cast("int"))
        .localCheckpoint(eager=False)
    )
    members = grouped.select(
        "block_key", "block_size", "n_sub", F.posexplode("ids").alias("rn", "record_id")
    ).select("block_key", (F.col("rn") % F.col("n_sub")).cast("int").alias("sub_block"), "record_id", "block_size")
    gen = F.expr(
        "flatten(transform(sequence(0, int(block_size) - 2), i -> "
        "transform(filter(sequence(i + 1, int(block_size) - 1), j -> j % n_sub = i % n_sub), "
        "j -> named_struct('a', ids[i], 'b', ids[j]))))"
    )
    pairs = (
        grouped.select(F.explode(gen).alias("p"))
        .select(F.least("p.a", "p.b").alias("id1"), F.greatest("p.a", "p.b").alias("id2"))
        .distinct()
    )
    return BlockingResult(pairs=pairs, members=members)


def block_stats(members: DataFrame, profile: LinkageProfile) -> dict:
    """Small summary (one aggregate row): ``blocks`` (size ≥ 2), ``largest_block``
    (references, before splitting), ``oversize_blocks`` (size > maxBlockSize)."""
    row = (
        members.select("block_key", "block_size")
        .distinct()
        .agg(
            F.count(F.lit(1)).alias("blocks"),
            F.max("block_size").alias("largest_block"),
            F.sum(F.when(F.col("block_size") > profile.maxBlockSize, 1).otherwise(0)).alias("oversize"),
        )
        .first()
    )
    return {
        "blocks": int(row["blocks"] or 0),
        "largest_block": int(row["largest_block"] or 0),
        "oversize_blocks": int(row["oversize"] or 0),
    }
