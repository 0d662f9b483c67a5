"""Global token frequency table and global correction (DWM16, DWM25).

Frequency = number of occurrences of a token over all references (after
tokenising; with ``removeDuplicateTokens`` that is the number of references
holding it). Computed with one Spark aggregation; nothing reaches the driver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .config import LinkageProfile


def token_frequencies(tokens: DataFrame) -> DataFrame:
    """(``record_id``, ``tokens``) → (``token`` string, ``freq`` long, occurrences)."""
    return (
        tokens.select(F.explode("tokens").alias("token"))
        .groupBy("token")
        .agg(F.count(F.lit(1)).alias("freq"))
    )


def raw_frequencies(refs: DataFrame, profile: LinkageProfile) -> DataFrame:
    """(``record_id``, ``text``) → (``token``, ``freq``): the profile's tokens
    (``hdwm.tokenizer.tokenize``) counted before global correction – the counts
    an entity registry keeps and adds each night's counts to, and that
    ``hdwm.pipeline.link_references(frequencies=…)`` takes."""
    from .tokenizer import tokenize

    return token_frequencies(tokenize(refs, profile))


#: tokens of up to this many characters get their deletion keys from fixed expressions that Spark
#: compiles (whole-stage code generation); a longer token gets them from a lambda over its positions,
#: which Spark interprets row by row (the 6.0M keys of the 543,000 rare tokens of a 3M-reference
#: population: 6.0 s compiled, 7.5 s interpreted, ``local[2]``)
DELETION_KEYS_COMPILED = 24


def deletion_sequence(col: str):
    """Column array<string>: the token in ``col`` at index 0, then at index i
    (1-based) the token with its i-th character deleted; duplicates kept, so
    an element's index is its deletion's position. Tokens of up to
    ``DELETION_KEYS_COMPILED`` characters are padded with nulls to that many
    deletions (compiled expressions); a longer token's array is built by a
    lambda over its positions."""
    short = ", ".join(f"IF(length({col}) >= {i}, concat(substring({col}, 1, {i - 1}), substring({col}, {i + 1})), NULL)"
                      for i in range(1, DELETION_KEYS_COMPILED + 1))
    return F.expr(
        f"CASE WHEN length({col}) <= {DELETION_KEYS_COMPILED} THEN array({col}, {short}) "
        f"ELSE concat(array({col}), transform(sequence(1, length({col})), "
        f"i -> concat(substring({col}, 1, i - 1), substring({col}, i + 1)))) END"
    )


def correction_map(freq: DataFrame, profile: LinkageProfile) -> DataFrame:
    """Rare → standard token replacements (DWM25 global correction).

    A token with ``freq ≤ maxFreqErrToken`` is replaced by a standard token
    with ``freq ≥ minFreqStdToken`` and ``length ≥ minLenStdToken`` exactly one
    Damerau–Levenshtein edit away (optimal string alignment), found without
    computing a distance. Two tokens within one edit always share a deletion
    key (symmetric deletion neighbourhood, as in SymSpell), so a join on the
    keys finds every candidate. A candidate pair shares a deletion key
    (``deletion_sequence``) at positions i (rare) and j
    (standard), 0 for the token itself, and are one edit apart exactly when
    one of the two is 0 (an insertion or deletion), i = j (a substitution at
    i), or |i − j| = 1 with the same character deleted from both (a swap of
    two adjacent characters). Two tokens one edit apart share a key at such
    positions, and keys shared at other positions do not decide the pair.
    washline choices: all-digit tokens are never corrected (a zip or phone
    one digit off is a different value), the error token must also be at least
    ``minLenStdToken`` long, and among several candidates the most frequent
    wins (ties: smallest token), so the map is deterministic.

    The standard tokens' deletion keys are the index the rare tokens are
    looked up in: when they are at most ``hdwm.spark.BROADCAST_MAX_ROWS``
    rows (counted here, one Spark job) the index is broadcast, and the rare
    tokens, most of a large vocabulary, stream past it in their own
    partitions with no shuffle (at 3M references: 6.0M keys of 543,000 rare
    tokens against 1.7M keys of the standard ones; 24 s against 28 s with both
    sides shuffled, ``local[2]``). Above that, both sides are shuffled by key.
    The rows are the same either way.

    Returns: DataFrame (``token`` string, ``replacement`` string).
    """
    from .spark import broadcast_if_small

    rare = (
        freq.filter(
            (F.col("freq") <= profile.maxFreqErrToken)
            & (F.length("token") >= profile.minLenStdToken)
            & ~F.col("token").rlike(r"^\d+$")
        )
        .select("token", F.posexplode(deletion_sequence("token")).alias("i", "k"))
        .filter(F.col("k").isNotNull())
    )
    std = (freq.filter((F.col("freq") >= profile.minFreqStdToken) & (F.length("token") >= profile.minLenStdToken))
           .select(F.col("token").alias("std"), F.col("freq").alias("std_freq"),
                   F.posexplode(deletion_sequence("token")).alias("j", "k"))
           .filter(F.col("k").isNotNull()))
    std = broadcast_if_small(std, std.count())

    # one aggregation picks the most frequent standard token, then the smallest: a pair sharing several
    # deletion keys appears several times, which min_by does not mind (no distinct, no second pass)
    i, j = F.col("i"), F.col("j")
    one_edit = ((i == 0) | (j == 0) | (i == j)
                | ((F.abs(i - j) == 1) & (F.expr("substring(token, i, 1)") == F.expr("substring(std, j, 1)"))))
    cands = rare.join(std, "k").filter(one_edit)
    return cands.groupBy("token").agg(F.expr("min_by(std, struct(-std_freq, std))").alias("replacement"))


def apply_corrections(tokens: DataFrame, cmap: DataFrame, remove_duplicates: bool) -> DataFrame:
    """Replace tokens by their correction (order kept); returns (``record_id``, ``tokens``).

    Only references holding a corrected token are rebuilt: posexplode → join
    with the map (broadcast when small) → the affected references'
    ``(pos, token)`` lists re-sorted by position. Every other reference passes
    through untouched (no shuffle of the whole token table).
    """
    ex = tokens.select("record_id", F.posexplode("tokens").alias("pos", "token"))
    hit = ex.join(cmap, "token").select("record_id", "pos", "replacement")
    fixes = hit.groupBy("record_id").agg(F.map_from_entries(F.collect_list(F.struct("pos", "replacement"))).alias("fx"))
    joined = tokens.join(fixes, "record_id", "left")
    arr = F.when(
        F.col("fx").isNull(), F.col("tokens")
    ).otherwise(
        F.transform("tokens", lambda t, i: F.coalesce(F.try_element_at(F.col("fx"), i), t))
    )
    if remove_duplicates:
        arr = F.array_distinct(arr)
    return joined.select("record_id", arr.alias("tokens"))


def corrected_frequencies(freq: DataFrame, cmap: DataFrame, cmap_rows: int | None = None) -> DataFrame:
    """Counts after global correction without the token lists: every raw
    count of a corrected token moves to its replacement (DWM25).

    Args:
        freq: (``token``, ``freq``) raw counts, one row per token;
        cmap: (``token``, ``replacement``) ``correction_map`` of those counts.
        cmap_rows: the map's row count when the caller knows it (else counted
            here, one Spark job).
    Returns: (``token``, ``freq`` long), one row per token. With
    ``removeDuplicateTokens`` a
    reference holding both a token and its misspelling counts twice for the
    replacement here, once in a recount of the corrected lists; the engine
    has always used this form for population frequencies (``hdwm.pipeline``).

    Only the replacements' counts are summed: a map of at most
    ``hdwm.spark.BROADCAST_MAX_ROWS`` rows is broadcast, every other token's
    row passes through in its partition, and only the rows of corrected
    tokens and of their replacements are shuffled (at 3M references about
    a quarter of a vocabulary of 2.0M tokens). A larger map: the whole
    vocabulary is grouped.
    """
    from .spark import BROADCAST_MAX_ROWS

    n = cmap.count() if cmap_rows is None else int(cmap_rows)
    small = n <= BROADCAST_MAX_ROWS
    moved = (freq.join(F.broadcast(cmap) if small else cmap, "token", "left")
             .select(F.coalesce("replacement", "token").alias("token"), "freq"))
    if not small:
        return moved.groupBy("token").agg(F.sum("freq").cast("long").alias("freq"))
    targets = F.broadcast(cmap.select(F.col("replacement").alias("token")).distinct())
    alone = moved.join(targets, "token", "left_anti").select("token", F.col("freq").cast("long").alias("freq"))
    summed = (moved.join(targets, "token", "left_semi")
              .groupBy("token").agg(F.sum("freq").cast("long").alias("freq")))
    return alone.unionByName(summed)
