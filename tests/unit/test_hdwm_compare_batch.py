"""``hdwm.compare.score_many`` (the batched scorer the UDF and the driver loop
run) against ``score_with_profile`` (the per-pair definition), bit for bit.

The pairs come from the project's messy generator (``benchmarks/messy.py``):
references of one entity and references that only share a token, so the
batch holds matches, household confounders, initials, short and long
numbers, dates and one-letter tokens. The evidence features are the Python
forms of what ``comparison_tokens`` computes (``leading_names``,
``long_numbers``, ``street_key``). Every rule switch that changes which cells
count is exercised, plus empty and null token lists, missing and negative
weights, and batches split across ``SCORE_BATCH_PAIRS``.
"""

from __future__ import annotations

import importlib.util
import math
import random
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from hdwm import compare
from hdwm.compare import score_many, score_with_profile
from hdwm.config import load_profile
from hdwm.evidence import leading_names, long_numbers, street_key

ROOT = Path(__file__).resolve().parents[2]


def _messy():
    spec = importlib.util.spec_from_file_location("messy_for_batch", ROOT / "benchmarks" / "messy.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("messy_for_batch", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def pairs():
    rows = list(_messy().generate(900, 11))
    toks, ent = [], []
    for _, fields, entity in rows:
        seen, t = set(), []
        for x in re.findall(r"[A-Z0-9]+", " ".join(fields).upper()):
            x = x.lstrip("0") or "0" if x.isdigit() else x
            if x not in seen:
                seen.add(x)
                t.append(x)
        toks.append(t)
        ent.append(entity)
    df = Counter(x for t in toks for x in t)
    n = len(toks)
    weights = [[math.log(n / df[x]) for x in t] for t in toks]
    rnd = random.Random(5)
    ev = [(leading_names(t), long_numbers(t), [], rnd.random() < 0.5, street_key(t)) for t in toks]
    by_entity: dict[str, list[int]] = {}
    for i, e in enumerate(ent):
        by_entity.setdefault(e, []).append(i)
    idx = [(a, b) for m in by_entity.values() for a in m for b in m if a < b]
    by_token: dict[str, list[int]] = {}
    for i, t in enumerate(toks):
        for x in t:
            by_token.setdefault(x, []).append(i)
    shared = [(a, b) for m in by_token.values() if 2 <= len(m) <= 40 for a in m[:6] for b in m[:6] if a < b]
    idx += rnd.sample(sorted(set(shared) - set(idx)), 900)
    rnd.shuffle(idx)
    out = [(toks[a], weights[a], ev[a], toks[b], weights[b], ev[b]) for a, b in idx]
    # edge cases: an empty side, a null side, missing weights, a negative weight
    t0, w0, e0 = toks[0], weights[0], ev[0]
    out += [([], [], e0, t0, w0, e0), (None, None, e0, t0, w0, e0), (t0, None, e0, toks[1], None, ev[1]),
            (t0, [-1.0] + w0[1:], e0, t0, w0, e0), (["J", "SMITH"], [2.0, 5.0], e0, ["JOHN", "SMITH"], [1.0, 5.0], e0)]
    # numbers at the numericFuzzyMinLen edge: 7 digits one edit apart (fuzzy), 6 digits (exact only), a digit vs a letter
    for x, y in (("5551234", "5551243"), ("555123", "555132"), ("7", "A"), ("12345678", "1234567")):
        out.append((["ANNA", "LEE", x], [3.0, 4.0, 6.0], e0, ["ANNA", "LEE", y], [3.0, 4.0, 6.0], e0))
    assert sum(1 for a, b in idx if ent[a] == ent[b]) > 300
    return out


def _check(pairs, profile):
    a, wa, ea, b, wb, eb = (list(x) for x in zip(*pairs))
    want = np.array([score_with_profile(*p[:2], *p[3:5], profile, p[2], p[5]) for p in pairs])
    got = score_many(a, wa, b, wb, profile, ea, eb)
    assert got.dtype == np.float64 and got.shape == want.shape
    differ = np.flatnonzero(got != want)
    assert differ.size == 0, [(pairs[i][0], pairs[i][3], want[i], got[i]) for i in differ[:3]]
    return want


PROFILES = {
    "default": {},
    "no identifying rule": {"identifyingAgreementRule": False},
    "no floor": {"comparatorFloor": "none"},
    "floor at 0.6": {"comparatorFloorMin": 0.6},
    "Std floor": {"comparatorFloor": "ScoringMatrixStd"},
    "initial mode": {"initialRuleMode": "initial"},
    "exact numbers": {"numericFuzzyMinLen": 0},
    "no number or initial rule": {"matrixNumTokenRule": False, "matrixInitialRule": False},
    "tmin 0.5": {"tokenMinSimilarity": 0.5},
    "no evidence": {"givenNameConflictRule": False, "identifierConflictRule": False,
                    "identifierMatchRule": False, "surnameConflictRule": False},
    "ScoringMatrixKris": {"comparator": "ScoringMatrixKris"},
    "ScoringMatrixStd, initial mode": {"comparator": "ScoringMatrixStd", "initialRuleMode": "initial"},
    "MongeElkan": {"comparator": "MongeElkan"},
    "Cosine": {"comparator": "Cosine"},
}


@pytest.mark.parametrize("name", list(PROFILES))
def test_batch_equals_per_pair_scores(pairs, name):
    profile = load_profile("default").model_copy(update={"referenceCount": 900, **PROFILES[name]})
    want = _check(pairs, profile)
    # the batch is not degenerate: matches, non-matches and scores in between
    assert (want >= 0.9).sum() > 50 and (want <= 0.1).sum() > 100 and ((want > 0.1) & (want < 0.9)).sum() > 30


def test_batches_split_give_the_same_scores(pairs, monkeypatch):
    profile = load_profile("default").model_copy(update={"referenceCount": 900, "identifierMatchRule": False})
    monkeypatch.setattr(compare, "SCORE_BATCH_PAIRS", 7)
    _check(pairs[:300], profile)


def test_unknown_comparator_raises():
    profile = load_profile("default").model_copy(update={"comparator": "Jaccard"})
    with pytest.raises(ValueError, match="unknown comparator"):
        score_many([["A"]], [None], [["A"]], [None], profile)


def test_unknown_floor_and_misaligned_weights_raise():
    floor = load_profile("default").model_copy(update={"comparatorFloor": "Cosine"})
    with pytest.raises(ValueError, match="unknown comparatorFloor"):
        score_many([["A"]], [None], [["A"]], [None], floor)
    profile = load_profile("default")
    # two weights for three tokens: concatenated, the next pair's weights would shift into this one
    with pytest.raises(ValueError, match="pair 0: 2 weights for 3 tokens"):
        score_many([["A1", "BB", "CC"], ["XX", "YY"]], [[1.0, 2.0], [1.0, 1.0]],
                   [["A1", "BB", "CC"], ["XX", "YY"]], [None, None], profile)
