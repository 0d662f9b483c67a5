"""Blocking on mid-frequency tokens (DWM42, Talburt et al. 2020) with a size cap.

Blocking tokens (DWM42 rules): ``2 ≤ freq ≤ beta``, ``len ≥ minBlkTokenLen``,
and not all digits when ``excludeNumericBlocks`` (washline: unless the
number has at least ``minNumBlkTokenLen`` digits). With ``blockByPairs`` a
block key is a sorted pair of blocking tokens of the same reference
(``"A B"`` with ``A < B``), otherwise the token itself; with
``rareTokenBlocks`` (washline) a blocking token rarer than ``√beta`` is also a
block key on its own (``rare_token_limit``); with ``frequentPairMaxBlock``
(washline) a rare pair of frequent word tokens is a block key too, with
``initialPairBlocks`` a word and an initial of one reference, and with
``numberPairBlocks`` a long number and a frequent word of one reference
(``frequent_pair_keys``).

Because a blocking token occurs at most ``beta`` times, DWM blocks are already
small – but with ``frequencyScaling`` beta grows with the input, so washline
enforces ``maxBlockSize`` (design: "no single task's group is unbounded"): a
block with ``size > maxBlockSize`` is split into ``ceil(size / maxBlockSize)``
sub-blocks, members dealt round-robin in ``xxhash64(record_id)`` order, and
pairs are only formed inside a sub-block; no collected group ever holds more
than ``maxBlockSize`` references (see ``build_blocks``). This bounds the pairs
of a block to about ``size × maxBlockSize / 2`` at the cost of the
cross-sub-block pairs (logged as ``oversize_blocks``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .config import LinkageProfile


@dataclass
class BlockingResult:
    """``pairs``: (``id1``, ``id2``) strings, ``id1 < id2``, distinct.
    ``members``: (``block_key``, ``sub_block`` int, ``record_id``, ``block_size`` long).
    ``groups``: (``block_key``, ``sub_block`` int, ``ids`` array<string>, ``block_size`` long),
    one row per (sub-)block of at least two references; ``members`` and ``pairs`` are made from it."""

    pairs: DataFrame
    members: DataFrame
    groups: DataFrame | None = None


def blocking_tokens(tokens: DataFrame, freq: DataFrame, profile: LinkageProfile) -> DataFrame:
    """(``record_id``, ``tokens``) + (``token``, ``freq``) → (``record_id``, ``token``, ``freq``) blocking tokens."""
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
    return ex.join(freq, "token").filter(cond).select("record_id", "token", "freq")


def _sorted_ids():
    """Aggregate: the group's record ids as structs sorted by (``xxhash64``, id)."""
    return F.array_sort(
        F.collect_list(F.struct(F.xxhash64("record_id").alias("h"), F.col("record_id").alias("r")))
    )


def _all_pairs(ids: str = "ids"):
    """Column array<struct<a, b>>: every pair ``(ids[i], ids[j])``, ``i < j``."""
    return F.expr(
        f"flatten(transform(sequence(0, size({ids}) - 2), i -> "
        f"transform(sequence(i + 1, size({ids}) - 1), j -> named_struct('a', {ids}[i], 'b', {ids}[j]))))"
    )


def rare_token_limit(profile: LinkageProfile) -> int:
    """Highest frequency of a blocking token that blocks on its own with ``rareTokenBlocks``.

    ``floor(sqrt(beta))`` of the effective profile (1k references: 4, 6k: 6,
    1M: 22). With ``blockByPairs`` a reference that shares only one rare
    token with its duplicate (a person who moved: the surname, or an SSN
    beside an unrelated address) is never a candidate. A block of a token of
    frequency ``f`` costs ``f(f−1)/2`` pairs, so tokens below √beta add at
    most ``beta/2`` pairs each: less than one pair block of two typical
    blocking tokens (washline).
    """
    return int(profile.beta ** 0.5)


def frequent_pair_keys(tokens: DataFrame, freq: DataFrame, profile: LinkageProfile) -> DataFrame:
    """Block keys made of a rare pair of frequent word tokens (washline).

    DWM blocks only on tokens of frequency ≤ beta. In person data the name
    of a common person is two tokens above beta (JOHN, SMITH at 100,000
    references: thousands and about a thousand), so a person who moved, with
    no identifier written twice, shares no block with their earlier
    references; the larger the input the more names are above beta (beta
    grows with √N, a name's count with N), which is why recall fell with size.
    The *pair* is still rare: a few dozen references hold both.

    A key here is a sorted pair ``"A B"`` of tokens of one reference that are
    both words (no digit), at least ``minBlkTokenLen`` long, of frequency
    ``2 ≤ freq < sigma`` (not stop tokens), at least one of them above beta
    (pairs of tokens ≤ beta are the ordinary keys), and held by at most
    ``frequentPairMaxBlock`` of the references in ``tokens``. A more common
    pair identifies nobody and is not a block: the cap is fixed, not scaled
    with the input, because a person has a handful of references at any size.

    Args:
        tokens: (``record_id``, ``tokens``); freq: (``token``, ``freq``) global.
    With ``initialPairBlocks`` a word token of that kind paired with a
    one-letter token of the same reference (``"ULLAH R"``, any frequency) is
    such a key too, under the same cap (``LinkageProfile.initialPairBlocks``).
    With ``numberPairBlocks`` a long number (all digits, at least
    ``max(minNumBlkTokenLen, minBlkTokenLen)`` of them, ``2 ≤ freq < sigma``:
    a date of birth, SSN, phone, zip) paired with a word token of that kind
    *above beta* (``"19800315 SMITH"``) is such a key too, under the same cap
    (``LinkageProfile.numberPairBlocks``): a person who moved keeps the name
    and the date of birth; when the date is held by more than ``√beta``
    references it does not block alone, the names above beta pair with
    nothing, and a common name pair is above the cap. A number and a word
    both ≤ beta are already an ordinary pair key. Off in ``default.yaml``:
    measured without an F1 gain (benchmarks/README.md, 2026-12-02, 4f2562a).

    Returns:
        (``record_id``, ``block_key``, ``ub``) with ``ub`` the key's exact
        number of references (≤ ``frequentPairMaxBlock``).
    Cost: one row per pair of such tokens of a reference (a few dozen) and one
    shuffle by key.
    """
    return frequent_pair_candidates(tokens, freq, profile).transform(cap_frequent_pairs(profile))


def cap_frequent_pairs(profile: LinkageProfile):
    """DataFrame transform: (``record_id``, ``block_key``) keys of
    ``frequent_pair_candidates`` → the same with ``ub`` (the key's number of
    rows, i.e. of references) and only keys held by at most
    ``frequentPairMaxBlock`` references."""
    def cap(keys: DataFrame) -> DataFrame:
        return (keys.withColumn("ub", F.count(F.lit(1)).over(Window.partitionBy("block_key")))
                .filter(F.col("ub") <= profile.frequentPairMaxBlock))
    return cap


def frequent_pair_candidates(tokens: DataFrame, freq: DataFrame, profile: LinkageProfile) -> DataFrame:
    """Every key of ``frequent_pair_keys`` a reference holds, before the cap:
    (``record_id``, ``block_key``), one row per reference and key. A key
    depends only on the two tokens (each one's frequency, length and kind), so
    the keys made of tokens of a set S are the same whether a reference's
    token list is whole or cut to S (``hdwm.incremental`` counts the
    registry's holders of a night's keys that way). Arguments as ``frequent_pair_keys``."""
    ex = tokens.select("record_id", F.explode(F.array_distinct("tokens")).alias("token"))
    words = ex.join(freq, "token").filter(
        (F.col("freq") >= 2) & (F.col("freq") < profile.sigma)
        & (F.length("token") >= profile.minBlkTokenLen) & ~F.col("token").rlike(r"\d")
    )
    a = words.select("record_id", F.col("token").alias("t1"), F.col("freq").alias("f1"))
    b = words.select("record_id", F.col("token").alias("t2"), F.col("freq").alias("f2"))
    keys = (
        a.join(b, "record_id")
        .filter((F.col("t1") < F.col("t2")) & (F.greatest("f1", "f2") > profile.beta))
        .select("record_id", F.concat_ws(" ", "t1", "t2").alias("block_key"))
    )
    if profile.initialPairBlocks:
        # a word and an initial of one reference ("ULLAH R"): see LinkageProfile.initialPairBlocks
        initials = ex.filter(F.col("token").rlike(r"^[A-Z]$")).select("record_id", F.col("token").alias("t2"))
        keys = keys.unionByName(
            a.join(initials, "record_id").select("record_id", F.concat_ws(" ", "t1", "t2").alias("block_key")))
    if profile.numberPairBlocks:
        # a long number and a frequent word of one reference ("19800315 SMITH"): see
        # LinkageProfile.numberPairBlocks; digits sort before letters, so the key is sorted too
        min_digits = max(profile.minNumBlkTokenLen, profile.minBlkTokenLen)
        numbers = ex.join(freq, "token").filter(
            (F.col("freq") >= 2) & (F.col("freq") < profile.sigma)
            & (F.length("token") >= min_digits) & F.col("token").rlike(r"^\d+$")
        ).select("record_id", F.col("token").alias("t1"))
        frequent = b.filter(F.col("f2") > profile.beta).select("record_id", "t2")
        keys = keys.unionByName(
            numbers.join(frequent, "record_id").select("record_id", F.concat_ws(" ", "t1", "t2").alias("block_key")))
    return keys


def build_blocks(tokens: DataFrame, freq: DataFrame, profile: LinkageProfile) -> BlockingResult:
    """Blocks and distinct candidate pairs for the references in ``tokens``.

    Args:
        tokens: (``record_id``, ``tokens``) of the references still unassigned.
        freq: global (``token``, ``freq``) table (DWM keeps frequencies global
            across iterations).
        profile: beta, blockByPairs, minBlkTokenLen, excludeNumericBlocks,
            minNumBlkTokenLen, maxBlockSize (use the *effective* profile, see
            ``LinkageProfile.effective``).

    Size cap (design: "no single task's group is unbounded"): every group that
    is collected into one row (and so into one pandas batch row downstream)
    holds at most ``maxBlockSize`` references. A block's size is bounded in
    advance by ``ub`` = the smallest global frequency of its key's tokens
    (a block of key ``"A B"`` only holds references carrying both tokens).

    * ``ub ≤ maxBlockSize`` (every block when ``beta ≤ maxBlockSize``): one
      ``groupBy(block_key)`` collects the members, sorted by
      ``(xxhash64(record_id), record_id)``.
    * ``ub > maxBlockSize``: the block's exact size ``s`` and each member's
      rank in that order come from a window (a sort that spills to disk, never
      an in-memory group); member ``rn`` goes to sub-block ``rn mod n_sub``
      with ``n_sub = ceil(s / maxBlockSize)``, and ``groupBy(block_key,
      sub_block)`` then collects at most ``ceil(s / n_sub) ≤ maxBlockSize``
      members. Pairs are only formed inside a sub-block.

    Returns:
        ``BlockingResult``; ``members.block_size`` is the block's size before splitting.
    """
    cap = profile.maxBlockSize
    bt = blocking_tokens(tokens, freq, profile)
    if profile.blockByPairs:
        a = bt.select("record_id", F.col("token").alias("t1"), F.col("freq").alias("f1"))
        b = bt.select("record_id", F.col("token").alias("t2"), F.col("freq").alias("f2"))
        keys = (
            a.join(b, "record_id")
            .filter(F.col("t1") < F.col("t2"))
            .select("record_id", F.concat_ws(" ", "t1", "t2").alias("block_key"), F.least("f1", "f2").alias("ub"))
        )
        if profile.rareTokenBlocks:
            # washline: a token rarer than sqrt(beta) also blocks on its own (see rare_token_limit)
            keys = keys.unionByName(
                bt.filter(F.col("freq") <= rare_token_limit(profile))
                .select("record_id", F.col("token").alias("block_key"), F.col("freq").alias("ub"))
            )
        if profile.frequentPairMaxBlock > 0:
            keys = keys.unionByName(frequent_pair_keys(tokens, freq, profile))
    else:
        keys = bt.select("record_id", F.col("token").alias("block_key"), F.col("freq").alias("ub"))
    # no keys.distinct(): a (reference, key) row comes from one rule only (the rules' keys differ in
    # shape: one token, two tokens of blocking frequency, one above beta, an initial), so duplicates
    # are rare; the group-by removes any (array_distinct) instead of a shuffle of every key row

    def small_blocks(k: DataFrame) -> DataFrame:
        return (
            k.groupBy("block_key")
            .agg(F.array_distinct(_sorted_ids()).alias("m"))
            .select("block_key", F.lit(0).alias("sub_block"), F.transform("m", lambda x: x["r"]).alias("ids"))
            .withColumn("block_size", F.size("ids").cast("long"))
        )

    if profile.beta <= cap:
        # every block is bounded by beta ≤ cap: a single group-by, no window
        groups = small_blocks(keys)
    else:
        keys = keys.localCheckpoint(eager=False)
        w = Window.partitionBy("block_key")
        big = (
            keys.filter(F.col("ub") > cap)
            .select("record_id", "block_key", "ub").distinct()  # the window counts each member once
            .withColumn("h", F.xxhash64("record_id"))
            .withColumn("block_size", F.count(F.lit(1)).over(w).cast("long"))
            .withColumn("rn", F.row_number().over(w.orderBy("h", "record_id")) - 1)
            .withColumn("n_sub", F.ceil(F.col("block_size") / F.lit(cap)).cast("int"))
            .withColumn("sub_block", (F.col("rn") % F.col("n_sub")).cast("int"))
            .groupBy("block_key", "sub_block")
            .agg(F.first("block_size").alias("block_size"), F.array_sort(F.collect_list(F.struct("rn", "record_id"))).alias("m"))
            .select("block_key", "sub_block", F.transform("m", lambda x: x["record_id"]).alias("ids"), "block_size")
        )
        groups = small_blocks(keys.filter(F.col("ub") <= cap)).unionByName(big)
    groups = groups.filter(F.col("block_size") >= 2).localCheckpoint(eager=False)
    members = groups.select(
        "block_key", "sub_block", F.explode("ids").alias("record_id"), "block_size"
    ).select("block_key", F.col("sub_block").cast("int").alias("sub_block"), "record_id", "block_size")
    pairs = (
        groups.select(F.explode(_all_pairs("ids")).alias("p"))
        .select(F.least("p.a", "p.b").alias("id1"), F.greatest("p.a", "p.b").alias("id2"))
        .distinct()
    )
    return BlockingResult(pairs=pairs, members=members, groups=groups)


def group_stats(groups: DataFrame, profile: LinkageProfile) -> dict:
    """``block_stats`` of ``BlockingResult.groups``, without a shuffle: every
    block has a sub-block 0 (a split block deals its first member there), so
    the rows of sub-block 0 are the blocks, one each. At a million references
    the members are about ten rows per reference, and the distinct that
    ``block_stats`` needs over them is a shuffle of all of them."""
    return _size_stats(groups.filter(F.col("sub_block") == 0), profile)


def block_stats(members: DataFrame, profile: LinkageProfile) -> dict:
    """Small summary (one aggregate row): ``blocks`` (size ≥ 2), ``largest_block``
    (references, before splitting), ``oversize_blocks`` (size > maxBlockSize)."""
    return _size_stats(members.select("block_key", "block_size").distinct(), profile)


def _size_stats(blocks: DataFrame, profile: LinkageProfile) -> dict:
    """The ``block_stats`` dict of ``blocks``, one row per block with its ``block_size``."""
    row = blocks.agg(
        F.count(F.lit(1)).alias("blocks"),
        F.max("block_size").alias("largest_block"),
        F.sum(F.when(F.col("block_size") > profile.maxBlockSize, 1).otherwise(0)).alias("oversize"),
    ).first()
    return {
        "blocks": int(row["blocks"] or 0),
        "largest_block": int(row["largest_block"] or 0),
        "oversize_blocks": int(row["oversize"] or 0),
    }
