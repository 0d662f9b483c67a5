"""Pairwise comparison with a DWM token scoring matrix, as a pandas UDF over Arrow.

Before comparison each reference loses its stop tokens (``freq ≥ sigma``)
and, with ``removeExcludedBlkTokens``, the tokens that could not block
(shorter than ``minBlkTokenLen``, or all digits when
``excludeNumericBlocks``) – DWM55 ``removeStopWords``.

Scoring matrix (DWM65 ScoringMatrixStd / DWM66 ScoringMatrixKris; our own
implementation): let ``A`` be the shorter token list (``m`` tokens; the first
argument on ties) and ``B`` the other (``n``). Cell ``(j, k)`` holds the
token similarity

* ``matrixNumTokenRule``: both tokens all digits → 1.0 if equal else 0.0;
* ``matrixInitialRule``: either token one character long → ``exact`` mode:
  1.0 if equal else 0.0 (DWM66); ``initial`` mode (washline option): 1.0 if
  the first characters agree (``J`` ~ ``JOHN``) else 0.0;
* otherwise ``rapidfuzz.distance.DamerauLevenshtein.normalized_similarity``
  (1 − distance / max length).

Greedy assignment: take the largest cell (first in row-major order on
ties), add its weighted value, delete its row and column; repeat ``m`` times.
Weights: ``ScoringMatrixKris`` – row ``j`` (0-based) weighs
``(m − j) / (m(m+1)/2)`` so earlier tokens of the shorter reference count
more; ``ScoringMatrixStd`` – every row weighs ``1/m``. The score is in [0, 1];
an empty list on either side scores 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .config import LinkageProfile


def comparison_tokens(tokens: DataFrame, freq: DataFrame, profile: LinkageProfile) -> DataFrame:
    """(``record_id``, ``tokens``) → (``record_id``, ``ctokens`` array<string>): stop
    tokens (and excluded blocking tokens) removed, order kept.

    Implemented as posexplode → join with the frequency table → filter →
    ordered re-collect; a reference that loses every token keeps an empty array.
    No Python UDF and nothing reaches the driver.
    """
    ex = tokens.select("record_id", F.posexplode("tokens").alias("pos", "token"))
    cond = F.col("freq") < profile.sigma
    if profile.removeExcludedBlkTokens:
        cond = cond & (F.length("token") >= profile.minBlkTokenLen)
        if profile.excludeNumericBlocks:
            cond = cond & ~F.col("token").rlike(r"^\d+$")
    kept = ex.join(freq, "token").filter(cond)
    rebuilt = kept.groupBy("record_id").agg(
        F.array_sort(F.collect_list(F.struct("pos", "token"))).alias("s")
    )
    arr = F.transform("s", lambda x: x["token"])
    if profile.removeDuplicateTokens:
        arr = F.array_distinct(arr)
    return (
        tokens.select("record_id")
        .join(rebuilt.select("record_id", arr.alias("ctokens")), "record_id", "left")
        .select("record_id", F.coalesce("ctokens", F.array().cast("array<string>")).alias("ctokens"))
    )


def score_tokens(
    a,
    b,
    comparator: str = "ScoringMatrixKris",
    num_rule: bool = True,
    initial_rule: bool = True,
    initial_mode: str = "exact",
) -> float:
    """Score two token lists with the scoring matrix described in the module doc.

    Args:
        a, b: sequences of upper-case tokens.
    Returns:
        float in [0, 1].
    Raises:
        ValueError: unknown comparator.
    """
    from rapidfuzz.distance import DamerauLevenshtein
    from rapidfuzz.process import cdist

    a = list(a) if a is not None else []
    b = list(b) if b is not None else []
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        return 0.0
    if m > n:
        a, b, m, n = b, a, n, m
    mat = cdist(a, b, scorer=DamerauLevenshtein.normalized_similarity, dtype=np.float64)
    if num_rule or initial_rule:
        aa = np.array(a, dtype=object)
        bb = np.array(b, dtype=object)
        eq = aa[:, None] == bb[None, :]
        ruled = np.zeros((m, n), dtype=bool)
        if num_rule:
            da = np.array([t.isdigit() for t in a])
            db = np.array([t.isdigit() for t in b])
            num = da[:, None] & db[None, :]
            mat = np.where(num, eq.astype(np.float64), mat)
            ruled = num
        if initial_rule:
            la = np.array([len(t) == 1 for t in a])
            lb = np.array([len(t) == 1 for t in b])
            one = (la[:, None] | lb[None, :]) & ~ruled
            if initial_mode == "initial":
                fa = np.array([t[0] for t in a], dtype=object)
                fb = np.array([t[0] for t in b], dtype=object)
                hit = fa[:, None] == fb[None, :]
            else:
                hit = eq
            mat = np.where(one, hit.astype(np.float64), mat)
    if comparator == "ScoringMatrixKris":
        base = m * (m + 1) / 2.0
        weights = (m - np.arange(m)) / base
    elif comparator == "ScoringMatrixStd":
        weights = np.full(m, 1.0 / m)
    else:
        raise ValueError(f"unknown comparator {comparator!r}")
    score = 0.0
    for _ in range(m):
        idx = int(np.argmax(mat))
        j, k = divmod(idx, n)
        score += mat[j, k] * weights[j]
        mat[j, :] = -1.0
        mat[:, k] = -1.0
    return float(min(max(score, 0.0), 1.0))


def make_score_udf(profile: LinkageProfile):
    """Build the pandas UDF ``score(array<string>, array<string>) -> double``.

    Vectorised per Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch``
    rows): each batch arrives as two pandas Series of numpy arrays and returns
    a float64 Series of the same length. Null arrays score 0.
    """
    comparator = profile.comparator
    num_rule = profile.matrixNumTokenRule
    initial_rule = profile.matrixInitialRule
    mode = profile.initialRuleMode

    @F.pandas_udf(T.DoubleType())
    def score(left: pd.Series, right: pd.Series) -> pd.Series:
        out = np.fromiter(
            (
                score_tokens(x, y, comparator, num_rule, initial_rule, mode)
                for x, y in zip(left.to_numpy(), right.to_numpy())
            ),
            dtype=np.float64,
            count=len(left),
        )
        return pd.Series(out)

    return score


def score_pairs(pairs: DataFrame, ctokens: DataFrame, profile: LinkageProfile) -> DataFrame:
    """(``id1``, ``id2``) + (``record_id``, ``ctokens``) → (``id1``, ``id2``, ``score`` double)."""
    udf = make_score_udf(profile)
    l = ctokens.select(F.col("record_id").alias("id1"), F.col("ctokens").alias("t1"))
    r = ctokens.select(F.col("record_id").alias("id2"), F.col("ctokens").alias("t2"))
    return pairs.join(l, "id1").join(r, "id2").select("id1", "id2", udf("t1", "t2").alias("score"))
