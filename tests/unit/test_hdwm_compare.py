"""Token scoring matrix (ScoringMatrixKris / Std) with the numeric and initial rules."""

from __future__ import annotations

import pytest

from hdwm.compare import score_tokens
from hdwm.config import LinkageProfile


def test_identical_and_empty():
    assert score_tokens(["JOHN", "SMITH"], ["JOHN", "SMITH"]) == pytest.approx(1.0)
    assert score_tokens([], ["JOHN"]) == 0.0
    assert score_tokens(None, None) == 0.0


def test_kris_position_weights_hand_example():
    # shorter list m=2, base=3: JOHN~JOHN 1.0 (row 0, w 2/3), SMITH~SMYTH 0.8 (row 1, w 1/3)
    a, b = ["JOHN", "SMITH"], ["JOHN", "SMYTH", "XY"]
    assert score_tokens(a, b) == pytest.approx(2 / 3 + 0.8 / 3)
    assert score_tokens(b, a) == pytest.approx(2 / 3 + 0.8 / 3)  # shorter list always rows
    assert score_tokens(a, b, comparator="ScoringMatrixStd") == pytest.approx(0.9)
    # a match on the second row only weighs 1/3
    assert score_tokens(["ALPHA", "BETA"], ["ZZZZZ", "BETA"]) == pytest.approx(1 / 3)


def test_numeric_rule():
    a, b = ["123", "MAIN"], ["124", "MAIN"]
    assert score_tokens(a, b, num_rule=True) == pytest.approx(1 / 3)
    # without the rule 123~124 is 1 - 1/3
    assert score_tokens(a, b, num_rule=False) == pytest.approx(1 / 3 + (2 / 3) * (2 / 3))


def test_initial_rule_modes():
    a, b = ["J", "SMITH"], ["JOHN", "SMITH"]
    assert score_tokens(a, b, initial_rule=True, initial_mode="exact") == pytest.approx(1 / 3)
    assert score_tokens(a, b, initial_rule=True, initial_mode="initial") == pytest.approx(1.0)
    # no rule: J vs JOHN = 1 - 3/4
    assert score_tokens(a, b, initial_rule=False) == pytest.approx(1 / 3 + (2 / 3) * 0.25)
    assert score_tokens(["K", "SMITH"], b, initial_mode="initial") == pytest.approx(1 / 3)


def test_unknown_comparator():
    with pytest.raises(ValueError):
        score_tokens(["A"], ["A"], comparator="Cosine")


@pytest.mark.spark
def test_pandas_udf_matches_python(spark):
    from hdwm.compare import score_pairs

    prof = LinkageProfile(beta=4, sigma=10)
    ct = spark.createDataFrame(
        [("a", ["JOHN", "SMITH"]), ("b", ["JOHN", "SMYTH", "XY"]), ("c", []), ("d", ["123", "MAIN"])],
        "record_id string, ctokens array<string>",
    )
    pairs = spark.createDataFrame([("a", "b"), ("a", "c"), ("b", "d")], "id1 string, id2 string")
    got = {(r.id1, r.id2): r.score for r in score_pairs(pairs, ct, prof).collect()}
    assert got[("a", "b")] == pytest.approx(2 / 3 + 0.8 / 3)
    assert got[("a", "c")] == 0.0
    assert got[("b", "d")] == pytest.approx(score_tokens(["JOHN", "SMYTH", "XY"], ["123", "MAIN"]))
