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

washline's default profile scores with ``WeightedTokenMatch`` (IDF-weighted
greedy token matching, see ``score_weighted``) and takes
``max(weighted, ScoringMatrixKris)`` (``comparatorFloor``): rarity decides
most pairs, and the position-weighted DWM matrix keeps pairs whose leading
tokens agree while the rest differs (mixed layouts, a person who moved).
The rules are written twice, on purpose. ``_similarity_cells`` applies them
to one pair in plain Python; it is the readable definition, and
``score_with_profile`` scores one pair with it
(``tests/unit/test_hdwm_compare_reference.py`` checks it against the full
matrix and repeated ``argmax`` on FEBRL1 pairs). ``score_many``, which the
pandas UDF and the driver loop call, applies the same rules to a whole batch
of pairs as numpy masks over one flat array of cells (one rapidfuzz
``cpdist`` call for the batch's distinct token pairs), so Python walks only
the greedy assignment. ``tests/unit/test_hdwm_compare_batch.py`` checks that
both give the same score, bit for bit, under every rule switch.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from rapidfuzz.distance import DamerauLevenshtein

from .config import LinkageProfile
from .spark import freeze
from .evidence import (evidence_frame, evidence_score, given_name_first, needs_household_numbers,
                       shared_identifiers)


def comparison_tokens(
    tokens: DataFrame, freq: DataFrame, profile: LinkageProfile, n_refs: int | None = None, household: bool = True
) -> DataFrame:
    """(``record_id``, ``tokens``) → (``record_id``, ``ctokens`` array<string>,
    ``cweights`` array<double>, ``lead`` array<string>, ``nums`` array<string>,
    ``shared`` array<string>, ``gstd`` boolean, ``street`` array<string>):
    ``lead``/``nums``/``street`` are the negative-evidence features of the *full* token
    list (``hdwm.evidence.evidence_frame``), ``shared`` the household identifiers
    and ``gstd`` whether the given name is a standard token; stop tokens (and excluded blocking tokens)
    removed, order kept. ``cweights[i]`` is the inverse document frequency
    ``ln(n_refs / freq)`` of ``ctokens[i]`` (natural log; ``n_refs`` defaults
    to 1, giving non-positive weights, so pass it for the weighted comparators).

    Implemented as posexplode → join with the frequency table → filter →
    ordered re-collect; a reference that loses every token keeps an empty array.
    Nothing reaches the driver; the one Python UDF is ``shared_identifiers``',
    run only when a rule needs the household identifiers
    (``hdwm.evidence.needs_household_numbers``) and ``household`` is true
    (otherwise ``shared`` is empty).
    """
    ex = tokens.select("record_id", F.posexplode("tokens").alias("pos", "token"))
    cond = F.col("freq") < profile.sigma
    if profile.removeExcludedBlkTokens:
        cond = cond & (F.length("token") >= profile.minBlkTokenLen)
        if profile.excludeNumericBlocks:
            cond = cond & ~F.col("token").rlike(r"^\d+$")
    if profile.removeExcludedBlkTokens and profile.excludeNumericBlocks and profile.minNumBlkTokenLen > 0:
        # numbers long enough to block are not "excluded blocking tokens"
        cond = (F.col("freq") < profile.sigma) & (F.length("token") >= profile.minBlkTokenLen) & (
            ~F.col("token").rlike(r"^\d+$") | (F.length("token") >= profile.minNumBlkTokenLen)
        )
    n = float(n_refs or 1)
    ev = evidence_frame(tokens, profile.identifierMinLen)
    # the evidence frame feeds several branches (given-name rates and the reordering, household
    # numbers, the final join): computed once each, or Spark evaluates its whole plan again in each
    ev = freeze(ev)
    if profile.givenNameFromData:
        ev = freeze(given_name_first(ev))
    # washline household evidence: household identifiers per reference, and
    # whether the given name (first name token) is a standard (frequent) token
    # (identifierMatchInitials reads them too: an initial is never tied to a person through one);
    # household=False leaves them out, for a caller that computes them itself (hdwm.local's
    # driver loop: hdwm.evidence.household_numbers, without a Python UDF job)
    if household and needs_household_numbers(profile):
        ev = ev.join(shared_identifiers(ev, profile), "record_id", "left")
    else:
        ev = ev.withColumn("shared", F.lit(None).cast("array<string>"))
    gfreq = freq.select(F.col("token").alias("g"), F.col("freq").alias("gfreq"))
    ev = (
        ev.withColumn("g", F.when(F.size("lead") >= 2, F.col("lead")[0]))
        .join(gfreq, "g", "left")
        .select("record_id", "lead", "nums",
                F.coalesce("shared", F.array().cast("array<string>")).alias("shared"),
                F.coalesce(F.col("gfreq") >= profile.minFreqStdToken, F.lit(False)).alias("gstd"),
                "street")
    )
    kept = (
        ex.join(freq, "token")
        .filter(cond)
        .withColumn("w", F.log(F.lit(n) / F.col("freq").cast("double")))
    )
    # tokens are already distinct per reference when removeDuplicateTokens is set
    rebuilt = kept.groupBy("record_id").agg(
        F.array_sort(F.collect_list(F.struct("pos", "token", "w"))).alias("s")
    )
    return (
        ev
        .join(
            rebuilt.select(
                "record_id",
                F.transform("s", lambda x: x["token"]).alias("ctokens"),
                F.transform("s", lambda x: x["w"]).alias("cweights"),
            ),
            "record_id",
            "left",
        )
        .select(
            "record_id",
            F.coalesce("ctokens", F.array().cast("array<string>")).alias("ctokens"),
            F.coalesce("cweights", F.array().cast("array<double>")).alias("cweights"),
            "lead",
            "nums",
            "shared",
            "gstd",
            "street",
        )
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
    if comparator not in ("ScoringMatrixKris", "ScoringMatrixStd"):
        raise ValueError(f"unknown comparator {comparator!r}")
    a = list(a) if a is not None else []
    b = list(b) if b is not None else []
    if not a or not b:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    return _matrix_score(a, b, comparator, num_rule, initial_rule, initial_mode)


def _similarity_cells(a, wa, b, wb, num_rule, initial_rule, initial_mode, tmin, nfuzz) -> list:
    """The token similarity rules, in their one home: the positive cells of
    the weighted similarity matrix as ``(-value, j·len(b) + k)``, sorted.

    Cell ``(j, k)``: the similarity of ``a[j]`` and ``b[k]`` (module doc:
    numeric rule, except numbers both at least ``nfuzz`` digits long when
    ``nfuzz`` > 0, which compare fuzzily; initial rule; else rapidfuzz's
    scalar ``DamerauLevenshtein.normalized_similarity``, equal tokens 1.0)
    times ``min(wa[j], wb[k])``. Rows or columns of weight ≤ 0 and cells
    below ``tmin`` or at 0 are left out. Sorted, the list is the order in
    which repeated ``argmax`` over the matrix would pick (value desc,
    row-major index), which the greedy assignments of ``_greedy`` rely on.
    With weights of 1.0 the value is the similarity itself.
    """
    sim_fn = DamerauLevenshtein.normalized_similarity
    n = len(b)
    bdig = [t.isdigit() for t in b] if num_rule else None
    cells = []
    for j, x in enumerate(a):
        wj = wa[j]
        if wj <= 0.0:
            continue
        xdig = num_rule and x.isdigit()
        x1 = len(x) == 1
        for k, y in enumerate(b):
            w = wb[k]
            if w <= 0.0:
                continue
            if xdig and bdig[k]:
                if nfuzz and min(len(x), len(y)) >= nfuzz:
                    sim = 1.0 if x == y else sim_fn(x, y)
                else:
                    sim = 1.0 if x == y else 0.0
            elif initial_rule and (x1 or len(y) == 1):
                if initial_mode == "initial":
                    sim = 1.0 if x[0] == y[0] else 0.0
                else:
                    sim = 1.0 if x == y else 0.0
            elif x == y:
                sim = 1.0
            else:
                sim = sim_fn(x, y)
            if sim >= tmin and sim > 0.0:
                cells.append((-(sim * (wj if wj < w else w)), j * n + k))
    cells.sort()
    return cells


def _greedy(cells, n: int):
    """Greedy one-to-one assignment over ``_similarity_cells`` (``n`` = len(b)):
    yields ``(j, value)`` for each cell taken, skipping used rows and columns."""
    used_a, used_b = set(), set()
    for neg, idx in cells:
        j, k = divmod(idx, n)
        if j in used_a or k in used_b:
            continue
        used_a.add(j)
        used_b.add(k)
        yield j, -neg


def _matrix_score(a, b, comparator, num_rule, initial_rule, initial_mode) -> float:
    """The scoring matrix (``len(a) ≤ len(b)``): the greedy assignment of
    ``_similarity_cells`` (unit weights, no similarity floor, no fuzzy numbers)
    with ScoringMatrixKris' row weights ``(m − j) / (m(m+1)/2)`` or Std's ``1/m``."""
    m, n = len(a), len(b)
    cells = _similarity_cells(a, [1.0] * m, b, [1.0] * n, num_rule, initial_rule, initial_mode, 0.0, 0)
    weight = ROW_WEIGHTS[comparator]
    score = sum(v * weight(m, j) for j, v in _greedy(cells, n))
    return float(min(max(score, 0.0), 1.0))


def _kris_weight(m: int, j: int) -> float:
    """ScoringMatrixKris: row ``j`` (0-based) of ``m`` weighs ``(m − j) / (m(m+1)/2)``."""
    return (m - j) / (m * (m + 1) / 2.0)


def _std_weight(m: int, j: int) -> float:
    """ScoringMatrixStd: every row of ``m`` weighs ``1/m``."""
    return 1.0 / m


#: the scoring matrices' row weights, ``weight(m, j)`` (module doc); the per-pair and the batched scorer read them
ROW_WEIGHTS = {"ScoringMatrixKris": _kris_weight, "ScoringMatrixStd": _std_weight}


def score_weighted(
    a,
    wa,
    b,
    wb,
    comparator: str = "WeightedTokenMatch",
    num_rule: bool = True,
    initial_rule: bool = True,
    initial_mode: str = "exact",
    token_min_similarity: float = 0.7,
    numeric_fuzzy_min_len: int = 0,
) -> float:
    """Frequency-weighted comparators (washline; ``a``/``b`` tokens, ``wa``/``wb``
    their IDF weights ``ln(N/freq)``, all ≥ 0 in practice).

    * ``WeightedTokenMatch`` (default profile): the token similarity matrix
      (rules as in the scoring matrix; cells below ``token_min_similarity``
      set to 0) is multiplied cell-wise by ``min(w_a, w_b)``; a greedy
      one-to-one assignment takes the largest weighted cell until none is
      positive; the score is that sum divided by ``min(Σwa, Σwb)``. So a rare
      shared token (an SSN, a surname) counts far more than a common one (a
      state, a first name), and the shorter reference is not penalised for
      the fields it lacks – the two weaknesses of ScoringMatrixKris on
      person data (position weights and flat token weights).
    * ``Cosine``: IDF-weighted cosine of the two token sets (exact tokens).
    * ``MongeElkan``: symmetric Monge–Elkan, mean over both directions of the
      average best token similarity (no weights).

    Returns a float in [0, 1]; an empty side scores 0.
    Raises:
        ValueError: unknown comparator.
    """
    if comparator not in WEIGHTED_COMPARATORS:
        raise ValueError(f"unknown comparator {comparator!r}")
    a = list(a) if a is not None else []
    b = list(b) if b is not None else []
    if not a or not b:
        return 0.0
    wa = [max(float(w), 0.0) for w in (wa if wa is not None else [1.0] * len(a))]
    wb = [max(float(w), 0.0) for w in (wb if wb is not None else [1.0] * len(b))]
    if comparator == "Cosine":
        da = dict(zip(a, wa))
        db = dict(zip(b, wb))
        dot = sum(w * db[t] for t, w in da.items() if t in db)
        na = math.sqrt(sum(w * w for w in da.values()))
        nb = math.sqrt(sum(w * w for w in db.values()))
        return float(min(1.0, dot / (na * nb))) if na and nb else 0.0
    if comparator == "MongeElkan":
        m, n = len(a), len(b)
        cells = _similarity_cells(a, [1.0] * m, b, [1.0] * n, num_rule, initial_rule, initial_mode, 0.0,
                                  numeric_fuzzy_min_len)
        row, col = [0.0] * m, [0.0] * n
        for neg, idx in cells:
            j, k = divmod(idx, n)
            row[j] = max(row[j], -neg)
            col[k] = max(col[k], -neg)
        return float(0.5 * (sum(row) / m + sum(col) / n))
    return _weighted_token_match(a, wa, b, wb, num_rule, initial_rule, initial_mode,
                                 token_min_similarity, numeric_fuzzy_min_len)


def _weighted_token_match(a, wa, b, wb, num_rule, initial_rule, initial_mode, tmin, nfuzz) -> float:
    """WeightedTokenMatch in plain Python (see ``_weighted_token_sums``)."""
    total, den = _weighted_token_sums(a, wa, b, wb, num_rule, initial_rule, initial_mode, tmin, nfuzz)
    return float(min(max(total / den, 0.0), 1.0)) if den > 0 else 0.0


def _weighted_token_sums(a, wa, b, wb, num_rule, initial_rule, initial_mode, tmin, nfuzz) -> tuple[float, float]:
    """WeightedTokenMatch's ``(agreement, denominator)``: the weighted sum of
    the greedy one-to-one token assignment over ``_similarity_cells`` (nats,
    IDF weights) and ``min(Σwa, Σwb)``; the score is their ratio clipped to [0, 1].
    """
    den = min(sum(wa), sum(wb))
    cells = _similarity_cells(a, wa, b, wb, num_rule, initial_rule, initial_mode, tmin, nfuzz)
    return sum(v for _, v in _greedy(cells, len(b))), den


def identifying(agreement: float, reference_count: int) -> bool:
    """Is an agreement of ``agreement`` nats rare enough to name one entity?

    Each agreeing token of frequency ``f`` among ``N`` references carries
    ``w = ln(N / f)`` (its IDF weight, ``comparison_tokens``): a reference
    picked at random holds it with probability ``f / N = e^-w``. Taking the
    tokens as independent, the references expected to share the whole
    agreement by chance number ``N · e^-Σw``; the agreement identifies when
    that is below one, i.e. ``Σw ≥ ln N``. This is the frequency-based
    u-probability of Fellegi & Sunter (1969) as Winkler used it for names
    (a JOHN SMITH agreement is worth less than a rare name), read as a
    threshold on the total agreement weight. JOHN + SMITH + a city agree on
    about 12 nats, enough among 10,000 references (ln N = 9.2) but not among
    1,000,000 (13.8), where many other JOHN SMITHs share a city; an SSN
    alone is worth about ln N and an address about ln N more.

    Returns True when ``reference_count ≤ 1`` (unknown: no rule).
    """
    return reference_count <= 1 or agreement >= math.log(reference_count) - 1e-9


def uses_evidence(profile: LinkageProfile) -> bool:
    """True when an evidence rule (``hdwm.evidence``) is on."""
    return bool(profile.givenNameConflictRule or profile.identifierConflictRule or profile.identifierMatchRule
                or profile.surnameConflictRule)


def score_with_profile(a, wa, b, wb, profile: LinkageProfile, ev_a=None, ev_b=None) -> float:
    """Score one pair as the profile's comparator does (what the UDF runs).

    For a weighted comparator with ``comparatorFloor`` set, the score is
    ``max(weighted, floor)`` where the floor (ScoringMatrixKris/Std on the
    same comparison tokens) counts only when it is ≥ ``comparatorFloorMin``.
    With ``identifyingAgreementRule`` (WeightedTokenMatch only) a pair whose
    agreement is not ``identifying`` among ``referenceCount`` references
    scores 0 before any floor.
    ``ev_a``/``ev_b``: optional ``(lead, nums)`` negative-evidence features;
    when given, a rule of the profile can decide the score
    (``hdwm.evidence.evidence_score``: 0.0 for a veto, 1.0 for an identifier match).
    Returns a float in [0, 1].
    """
    if ev_a is not None and ev_b is not None and uses_evidence(profile):
        verdict = _verdict(ev_a, ev_b, profile)
        if verdict is not None:
            return verdict
        if profile.agreementMatchPatterns:
            return _agreement_lift(score_with_profile(a, wa, b, wb, profile.model_copy(
                update={"agreementMatchPatterns": {}}), ev_a, ev_b), ev_a, ev_b, profile)
    args = (profile.matrixNumTokenRule, profile.matrixInitialRule, profile.initialRuleMode)
    if profile.comparator not in WEIGHTED_COMPARATORS:
        return score_tokens(a, b, profile.comparator, *args)
    if profile.comparator == "WeightedTokenMatch" and profile.identifyingAgreementRule:
        if a is None or b is None or len(a) == 0 or len(b) == 0:
            return 0.0
        wa_ = [max(float(w), 0.0) for w in (wa if wa is not None else [1.0] * len(a))]
        wb_ = [max(float(w), 0.0) for w in (wb if wb is not None else [1.0] * len(b))]
        total, den = _weighted_token_sums(list(a), wa_, list(b), wb_, *args, profile.tokenMinSimilarity,
                                          profile.numericFuzzyMinLen)
        if not identifying(total, profile.referenceCount):
            return 0.0  # the agreement is shared by chance with other references: not evidence of one entity
        sc = float(min(max(total / den, 0.0), 1.0)) if den > 0 else 0.0
    else:
        sc = score_weighted(a, wa, b, wb, profile.comparator, *args,
                            profile.tokenMinSimilarity, profile.numericFuzzyMinLen)
    if profile.comparatorFloor != "none" and sc < 1.0:
        fl = score_tokens(a, b, profile.comparatorFloor, *args)
        if fl >= profile.comparatorFloorMin - 1e-12:
            sc = max(sc, fl)
    return sc


WEIGHTED_COMPARATORS = ("WeightedTokenMatch", "Cosine", "MongeElkan")


def _verdict(ev_a, ev_b, profile: LinkageProfile):
    """``evidence_score`` of two evidence tuples ``(lead, nums[, shared, gstd[, street]])``: 0.0, 1.0 or None."""
    return evidence_score(ev_a[0], ev_a[1], ev_b[0], ev_b[1], profile, *_household(ev_a, ev_b))


def _household(ev_a, ev_b) -> tuple:
    """(shared_a, shared_b, std_a, std_b, street_a, street_b) from tuples ``(lead, nums, shared, gstd
    [, street])``; empty for 2-tuples."""
    if len(ev_a) >= 4 and len(ev_b) >= 4:
        sa = ev_a[4] if len(ev_a) >= 5 else None
        sb = ev_b[4] if len(ev_b) >= 5 else None
        return ev_a[2], ev_b[2], bool(ev_a[3]), bool(ev_b[3]), sa, sb
    return None, None, False, False, None, None


# -- batched scoring: the same rules over many pairs at once ------------------------------------------

#: pairs per batch of ``score_many`` (about 90 cells a pair: some 40 MB of cell arrays a batch)
SCORE_BATCH_PAIRS = 4096


class _Cells:
    """Every cell of P token-list pairs, flat and row-major within a pair.

    ``pair``/``j``/``k`` (int64, one per cell): the pair and the cell's
    positions in ``a``/``b``; ``same``: the tokens are equal; ``dig_a``/``dig_b``,
    ``len_a``/``len_b``, ``first_eq``: what the numeric and initial rules read;
    ``m``/``n`` (per pair): the list lengths. ``sim`` (float64, NaN until
    ``fill`` computes it): rapidfuzz's ``DamerauLevenshtein.normalized_similarity``
    of the two tokens. The edit distance is most of a pair's cost (about
    0.15 µs a cell on a quiet core, 90 cells a pair on person data), so it is
    computed only for the cells a comparator can read, once per distinct
    token pair of the batch (``rapidfuzz.process.cpdist``).
    """

    def __init__(self, a_lists, b_lists):
        P = len(a_lists)
        self.m = m = np.fromiter((len(x) for x in a_lists), np.int64, P)
        self.n = n = np.fromiter((len(x) for x in b_lists), np.int64, P)
        cnt = m * n
        total = int(cnt.sum())
        self.pair = pair = np.repeat(np.arange(P, dtype=np.int64), cnt)
        r = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        nn = n[pair]
        self.j = j = r // np.maximum(nn, 1)
        self.k = k = r - j * nn
        flat_a = [str(t) for x in a_lists for t in x]
        flat_b = [str(t) for x in b_lists for t in x]
        codes, vocab = pd.factorize(np.array(flat_a + flat_b, dtype=object))
        codes = codes.astype(np.int64)
        self.aid = aid = codes[: len(flat_a)][(np.cumsum(m) - m)[pair] + j]
        self.bid = bid = codes[len(flat_a):][(np.cumsum(n) - n)[pair] + k]
        self.vocab = vocab = np.asarray(vocab, dtype=object)
        self.same = aid == bid
        vdig = np.fromiter((t.isdigit() for t in vocab), bool, len(vocab))
        vlen = np.fromiter((len(t) for t in vocab), np.int64, len(vocab))
        vfirst = pd.factorize(np.array([t[:1] for t in vocab], dtype=object))[0]
        self.dig_a, self.dig_b = vdig[aid], vdig[bid]
        self.len_a, self.len_b = vlen[aid], vlen[bid]
        self.first_eq = vfirst[aid] == vfirst[bid]
        self.sim = np.full(total, np.nan)

    def fill(self, mask: np.ndarray) -> None:
        """Compute ``sim`` for the cells of ``mask`` (bool per cell) that lack it."""
        from rapidfuzz.process import cpdist

        todo = np.flatnonzero(mask & np.isnan(self.sim))
        if not len(todo):
            return
        nv = max(len(self.vocab), 1)
        inv, keys = pd.factorize(self.aid[todo] * nv + self.bid[todo])
        ua, ub = np.divmod(np.asarray(keys, dtype=np.int64), nv)
        usim = cpdist(self.vocab[ua].tolist(), self.vocab[ub].tolist(),
                      scorer=DamerauLevenshtein.normalized_similarity, dtype=np.float64, workers=1)
        self.sim[todo] = usim[inv]

    def ruled(self, num_rule: bool, initial_rule: bool, initial_mode: str, nfuzz: int,
              need: np.ndarray) -> np.ndarray:
        """The cell similarities under the numeric and initial rules (module
        doc; ``_similarity_cells``). Exact for the cells of ``need`` (bool per
        cell) and for every cell a rule decides; NaN may remain elsewhere."""
        numeric = np.zeros(len(self.sim), dtype=bool)
        decided = np.zeros(len(self.sim), dtype=bool)
        if num_rule:
            numeric = self.dig_a & self.dig_b
            exact = numeric & (np.minimum(self.len_a, self.len_b) < nfuzz) if nfuzz else numeric
            decided |= exact
        one = None
        if initial_rule:
            one = ((self.len_a == 1) | (self.len_b == 1)) & ~numeric
            decided |= one
        self.fill(need & ~decided)
        s = self.sim.copy()
        if num_rule:
            s[exact] = self.same[exact]
        if one is not None:
            hit = self.first_eq if initial_mode == "initial" else self.same
            s[one] = hit[one]
        return s


def _greedy_sums(cells: _Cells, value: np.ndarray, keep: np.ndarray, rows_are_a: np.ndarray,
                 row_weight=None) -> list:
    """Per pair, the greedy one-to-one assignment of ``_greedy`` over the kept
    cells, visited as ``_similarity_cells`` orders them (value desc, then
    row-major index with the shorter list as rows where ``rows_are_a`` is
    False per pair), summed in that order. ``row_weight(rows, j)`` → the
    weight of row ``j`` (None: 1). Returns a list of P Python floats, equal
    bit for bit to the per-pair loop."""
    P = len(cells.m)
    pair = cells.pair[keep]
    a_rows = rows_are_a[pair]
    row = np.where(a_rows, cells.j[keep], cells.k[keep])
    col = np.where(a_rows, cells.k[keep], cells.j[keep])
    ncol = np.where(a_rows, cells.n[pair], cells.m[pair])
    v = value[keep]
    order = np.lexsort((row * ncol + col, -v, pair))
    nrows = np.where(rows_are_a, cells.m, cells.n).tolist()
    limit = np.minimum(cells.m, cells.n).tolist()
    out = [0] * P
    cur, used_r, used_c, full, tot, rows = -1, set(), set(), False, 0, 0
    for p, r, c, x in zip(pair[order].tolist(), row[order].tolist(), col[order].tolist(), v[order].tolist()):
        if p != cur:
            if cur >= 0:
                out[cur] = tot
            cur, used_r, used_c, full, tot, rows = p, set(), set(), False, 0, nrows[p]
        if full or r in used_r or c in used_c:
            continue
        used_r.add(r)
        used_c.add(c)
        tot += x if row_weight is None else x * row_weight(rows, r)
        full = len(used_r) == limit[p]
    if cur >= 0:
        out[cur] = tot
    return out


def _matrix_scores(cells: _Cells, sel: np.ndarray, comparator: str, num_rule, initial_rule, initial_mode) -> list:
    """``score_tokens`` of every pair (``sel``: bool per pair, which to score; the others get 0.0)."""
    chosen = sel[cells.pair]
    s = cells.ruled(num_rule, initial_rule, initial_mode, 0, chosen)
    keep = (s > 0.0) & chosen
    sums = _greedy_sums(cells, s, keep, cells.m <= cells.n, ROW_WEIGHTS[comparator])
    return [float(min(max(x, 0.0), 1.0)) if ok else 0.0 for x, ok in zip(sums, sel.tolist())]


def score_many(a_lists, wa_lists, b_lists, wb_lists, profile: LinkageProfile, ev_a=None, ev_b=None) -> np.ndarray:
    """``score_with_profile`` of P pairs at once: element ``i`` scores
    ``(a_lists[i], wa_lists[i])`` against ``(b_lists[i], wb_lists[i])``
    (sequences of non-empty strings, as ``comparison_tokens`` gives them, and
    their finite IDF weights, one per token; a weight list may be None,
    meaning 1.0 each); ``ev_a``/``ev_b``: None or P evidence tuples each.

    The evidence verdicts stay per pair. The token similarity matrices of
    every pair are built as one flat array of cells (one ``cpdist`` call over
    the batch's distinct token pairs, the numeric and initial rules as numpy
    masks), sorted once; only the greedy assignment walks cells in Python,
    and it sums in the per-pair order, so every score equals
    ``score_with_profile``'s bit for bit
    (``tests/unit/test_hdwm_compare_batch.py``). Cosine and MongeElkan score
    per pair. Returns a float64 array of P scores in [0, 1].
    Raises:
        ValueError: unknown comparator or comparatorFloor; a weight list whose
            length differs from its token list's.
    """
    P = len(a_lists)
    out = np.zeros(P, dtype=np.float64)
    comparator = profile.comparator
    if comparator not in WEIGHTED_COMPARATORS + ("ScoringMatrixKris", "ScoringMatrixStd"):
        raise ValueError(f"unknown comparator {comparator!r}")
    if profile.comparatorFloor not in ("none", "ScoringMatrixKris", "ScoringMatrixStd"):
        raise ValueError(f"unknown comparatorFloor {profile.comparatorFloor!r}")
    args = (profile.matrixNumTokenRule, profile.matrixInitialRule, profile.initialRuleMode)
    todo = []
    evidence = ev_a is not None and ev_b is not None and uses_evidence(profile)
    undecided = []  # pairs no evidence rule decided (agreementEvidence: adaptive may lift them)
    for i in range(P):
        if evidence:
            verdict = _verdict(ev_a[i], ev_b[i], profile)
            if verdict is not None:
                out[i] = verdict
                continue
            undecided.append(i)
        if comparator in ("Cosine", "MongeElkan"):
            out[i] = score_with_profile(a_lists[i], wa_lists[i], b_lists[i], wb_lists[i], profile)
        elif a_lists[i] is not None and b_lists[i] is not None and len(a_lists[i]) and len(b_lists[i]):
            todo.append(i)  # an empty side scores 0
    for i in todo:
        for toks, ws in ((a_lists[i], wa_lists[i]), (b_lists[i], wb_lists[i])):
            if ws is not None and len(ws) != len(toks):
                raise ValueError(f"pair {i}: {len(ws)} weights for {len(toks)} tokens")
    for s in range(0, len(todo), SCORE_BATCH_PAIRS):
        idx = todo[s: s + SCORE_BATCH_PAIRS]
        cells = _Cells([a_lists[i] for i in idx], [b_lists[i] for i in idx])
        everyone = np.ones(len(idx), dtype=bool)
        if comparator not in WEIGHTED_COMPARATORS:
            out[idx] = _matrix_scores(cells, everyone, comparator, *args)
            continue
        # weights clipped at 0 (ln(N/freq) of a token above N is negative), a missing list 1.0 each
        fa = np.maximum(np.concatenate([np.asarray(wa_lists[i] if wa_lists[i] is not None
                                                   else np.ones(len(a_lists[i])), dtype=np.float64) for i in idx]), 0.0)
        fb = np.maximum(np.concatenate([np.asarray(wb_lists[i] if wb_lists[i] is not None
                                                   else np.ones(len(b_lists[i])), dtype=np.float64) for i in idx]), 0.0)
        oa, ob = np.cumsum(cells.m) - cells.m, np.cumsum(cells.n) - cells.n
        wa_c, wb_c = fa[oa[cells.pair] + cells.j], fb[ob[cells.pair] + cells.k]
        la, lb = fa.tolist(), fb.tolist()
        # summed in list order, as score_with_profile sums them (not numpy's pairwise sum)
        dens = [min(sum(la[x: x + m]), sum(lb[y: y + n]))
                for x, m, y, n in zip(oa.tolist(), cells.m.tolist(), ob.tolist(), cells.n.tolist())]
        # a cell can reach tokenMinSimilarity only when the lengths allow it:
        # similarity = 1 − distance / longer, and distance ≥ the length difference
        tmin = profile.tokenMinSimilarity
        longer = np.maximum(cells.len_a, cells.len_b)
        reach = np.abs(cells.len_a - cells.len_b) <= (1.0 - tmin) * longer + 1e-9
        live = (wa_c > 0.0) & (wb_c > 0.0)
        sim = cells.ruled(*args, profile.numericFuzzyMinLen, live & reach)
        value = sim * np.minimum(wa_c, wb_c)
        keep = (sim >= tmin) & (sim > 0.0) & live
        totals = _greedy_sums(cells, value, keep, everyone)
        sc = []
        for total, den in zip(totals, dens):
            if profile.identifyingAgreementRule and not identifying(total, profile.referenceCount):
                sc.append(None)  # not identifying: 0.0, and no floor
            else:
                sc.append(float(min(max(total / den, 0.0), 1.0)) if den > 0 else 0.0)
        if profile.comparatorFloor != "none":
            need = np.array([v is not None and v < 1.0 for v in sc], dtype=bool)
            if need.any():
                floor = _matrix_scores(cells, need, profile.comparatorFloor, *args)
                for q in np.flatnonzero(need).tolist():
                    if floor[q] >= profile.comparatorFloorMin - 1e-12:
                        sc[q] = max(sc[q], floor[q])
        out[idx] = [0.0 if v is None else v for v in sc]
    if evidence and profile.agreementMatchPatterns:
        for i in undecided:
            if out[i] < 1.0:
                out[i] = _agreement_lift(out[i], ev_a[i], ev_b[i], profile)
    return out


def _agreement_lift(score: float, ev_a, ev_b, profile: LinkageProfile) -> float:
    """``agreementEvidence: adaptive``: a pair that no rule decided scores at least the posterior
    match probability of its comparison vector when that is in ``agreementMatchPatterns``
    (``hdwm.agreement``)."""
    from .agreement import comparison_vector, pattern_key

    q = profile.agreementMatchPatterns.get(pattern_key(comparison_vector(ev_a, ev_b)))
    return max(score, q) if q is not None else score


def make_score_udf(profile: LinkageProfile):
    """Build the pandas UDF ``score(array<string>, array<string>) -> double``.

    Vectorised per Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch``
    rows): each batch arrives as pandas Series of numpy arrays (tokens,
    weights, evidence features) and is scored by ``score_many``, which returns
    a float64 array of the same length. Null arrays score 0.
    """
    if uses_evidence(profile):
        @F.pandas_udf(T.DoubleType())
        def escore(left: pd.Series, lw: pd.Series, ll: pd.Series, ln: pd.Series, ls: pd.Series, lg: pd.Series,
                   la: pd.Series, right: pd.Series, rw: pd.Series, rl: pd.Series, rn: pd.Series, rs: pd.Series,
                   rg: pd.Series, ra: pd.Series) -> pd.Series:
            ev_l = list(zip(ll.to_numpy(), ln.to_numpy(), ls.to_numpy(), lg.to_numpy(), la.to_numpy()))
            ev_r = list(zip(rl.to_numpy(), rn.to_numpy(), rs.to_numpy(), rg.to_numpy(), ra.to_numpy()))
            return pd.Series(score_many(list(left.to_numpy()), list(lw.to_numpy()), list(right.to_numpy()),
                                        list(rw.to_numpy()), profile, ev_l, ev_r))

        return escore

    if profile.comparator in WEIGHTED_COMPARATORS:
        @F.pandas_udf(T.DoubleType())
        def wscore(left: pd.Series, lw: pd.Series, right: pd.Series, rw: pd.Series) -> pd.Series:
            return pd.Series(score_many(list(left.to_numpy()), list(lw.to_numpy()), list(right.to_numpy()),
                                        list(rw.to_numpy()), profile))

        return wscore

    @F.pandas_udf(T.DoubleType())
    def score(left: pd.Series, right: pd.Series) -> pd.Series:
        n = len(left)
        return pd.Series(score_many(list(left.to_numpy()), [None] * n, list(right.to_numpy()), [None] * n, profile))

    return score


def score_pairs(pairs: DataFrame, ctokens: DataFrame, profile: LinkageProfile) -> DataFrame:
    """(``id1``, ``id2``) + (``record_id``, ``ctokens``) → (``id1``, ``id2``, ``score`` double)."""
    udf = make_score_udf(profile)
    weighted = profile.comparator in WEIGHTED_COMPARATORS
    if "cweights" not in ctokens.columns:
        ctokens = ctokens.withColumn("cweights", F.transform("ctokens", lambda t: F.lit(1.0)))
    evidence = uses_evidence(profile)
    if evidence and "lead" not in ctokens.columns:
        raise ValueError("negative-evidence rules need comparison_tokens' lead/nums columns")
    if evidence:
        for c, empty in (("shared", F.array().cast("array<string>")), ("gstd", F.lit(False)),
                         ("street", F.array().cast("array<string>"))):
            if c not in ctokens.columns:
                ctokens = ctokens.withColumn(c, empty)
    extra = ["lead", "nums", "shared", "gstd", "street"] if evidence else []
    l = ctokens.select(F.col("record_id").alias("id1"), F.col("ctokens").alias("t1"), F.col("cweights").alias("w1"),
                       *[F.col(c).alias(c + "1") for c in extra])
    r = ctokens.select(F.col("record_id").alias("id2"), F.col("ctokens").alias("t2"), F.col("cweights").alias("w2"),
                       *[F.col(c).alias(c + "2") for c in extra])
    j = pairs.join(l, "id1").join(r, "id2")
    if evidence:
        sc = udf("t1", "w1", "lead1", "nums1", "shared1", "gstd1", "street1",
                 "t2", "w2", "lead2", "nums2", "shared2", "gstd2", "street2")
    else:
        sc = udf("t1", "w1", "t2", "w2") if weighted else udf("t1", "t2")
    return j.select("id1", "id2", sc.alias("score"))
