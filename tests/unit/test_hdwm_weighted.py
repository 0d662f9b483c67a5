"""washline extensions of HDWM: number-aware tokens, numeric blocking keys and
the frequency-weighted comparators (WeightedTokenMatch, Cosine, Monge–Elkan)."""

from __future__ import annotations

import math

import pytest

from hdwm.compare import score_weighted
from hdwm.config import LinkageProfile, load_profile


def test_weighted_token_match_hand_example():
    # A = SMITH(w 3) JOHN(w 1) 12(w 2); B = SMYTH(w 3) JOHN(w 1)
    # SMITH~SMYTH sim 0.8 ≥ 0.7 → 0.8·min(3,3)=2.4; JOHN~JOHN 1·1 = 1; 12 unmatched
    # score = 3.4 / min(Σa=6, Σb=4) = 0.85
    s = score_weighted(["SMITH", "JOHN", "12"], [3, 1, 2], ["SMYTH", "JOHN"], [3, 1])
    assert s == pytest.approx(3.4 / 4)
    # the rare token dominates: the same two tokens with swapped weights
    s2 = score_weighted(["SMITH", "JOHN"], [1, 3], ["SMYTH", "JOHN"], [1, 3])
    assert s2 == pytest.approx((0.8 * 1 + 3) / 4)
    # below tokenMinSimilarity a token pair counts nothing
    assert score_weighted(["ABCD"], [1], ["ABXY"], [1], token_min_similarity=0.7) == 0.0
    assert score_weighted([], [], ["A"], [1]) == 0.0


def test_numeric_rules_in_weighted_match():
    # short numbers exact only; long numbers (≥ 7 digits) tolerate a transposition
    assert score_weighted(["123"], [1], ["124"], [1]) == 0.0
    ssn_a, ssn_b = "10525974", "10525947"
    assert score_weighted([ssn_a], [1], [ssn_b], [1], numeric_fuzzy_min_len=7) == pytest.approx(1 - 1 / 8)
    assert score_weighted([ssn_a], [1], [ssn_b], [1], numeric_fuzzy_min_len=0) == 0.0


def test_cosine_and_monge_elkan():
    # cosine of {A:1, B:1} and {A:1, C:1} = 1/2
    assert score_weighted(["A", "B"], [1, 1], ["A", "C"], [1, 1], comparator="Cosine") == pytest.approx(0.5)
    # Monge–Elkan: best matches JOHN→JOHN 1, SMITH→SMYTH 0.8 both ways → 0.9
    me = score_weighted(["JOHN", "SMITH"], None, ["JOHN", "SMYTH"], None, comparator="MongeElkan")
    assert me == pytest.approx(0.9)
    with pytest.raises(ValueError, match="unknown comparator"):
        score_weighted(["A"], [1], ["A"], [1], comparator="Nope")


def test_default_profile_uses_washline_extensions():
    p = load_profile("default")
    assert p.comparator == "WeightedTokenMatch"
    assert p.stripLeadingZeros and p.tokenizerType == "CompressNbr" and p.minNumBlkTokenLen == 5
    with pytest.raises(ValueError):
        LinkageProfile(tokenMinSimilarity=1.5)


@pytest.mark.spark
def test_strip_zeros_and_compress_numbers(spark):
    from hdwm.tokenizer import tokenize

    prof = LinkageProfile(beta=4, sigma=10, tokenizerType="CompressNbr", stripLeadingZeros=True,
                          removeDuplicateTokens=True)
    df = spark.createDataFrame([("r1", "ssn 010-52-5974, 10525974,93755,000 0800")], "record_id string, text string")
    assert tokenize(df, prof).first().tokens == ["SSN", "10525974", "93755", "0", "800"]


@pytest.mark.spark
def test_long_numbers_block_when_excluded(spark):
    from hdwm.blocking import build_blocks
    from hdwm.frequency import token_frequencies

    toks = spark.createDataFrame(
        [("a", ["1234567", "12", "SMITH"]), ("b", ["1234567", "12", "JONES"]), ("c", ["12", "BROWN"])],
        "record_id string, tokens array<string>",
    )
    freq = token_frequencies(toks)
    base = dict(beta=4, sigma=10, minBlkTokenLen=2, excludeNumericBlocks=True)
    assert build_blocks(toks, freq, LinkageProfile(**base)).pairs.count() == 0
    got = build_blocks(toks, freq, LinkageProfile(**base, minNumBlkTokenLen=5)).pairs.collect()
    assert [(r.id1, r.id2) for r in got] == [("a", "b")]


@pytest.mark.spark
def test_comparison_tokens_carry_idf_weights(spark):
    from hdwm.compare import comparison_tokens
    from hdwm.frequency import token_frequencies

    toks = spark.createDataFrame([("a", ["X", "Y"]), ("b", ["X"]), ("c", [])],
                                 "record_id string, tokens array<string>")
    prof = LinkageProfile(beta=2, sigma=10, minBlkTokenLen=1)
    rows = {r.record_id: r for r in comparison_tokens(toks, token_frequencies(toks), prof, 3).collect()}
    assert rows["a"].ctokens == ["X", "Y"]
    assert rows["a"].cweights == pytest.approx([math.log(3 / 2), math.log(3)])
    assert rows["c"].ctokens == [] and rows["c"].cweights == []


def test_weighted_token_match_greedy_takes_largest_weighted_cell_first():
    # the greedy one-to-one assignment picks by weighted value, not by similarity
    s = score_weighted(["ABCDE", "QQQQ"], [5, 1], ["ABCDE", "ABXDE"][::-1], [5, 1][::-1])
    assert s == pytest.approx(5 / 6)  # exact ABCDE~ABCDE (1·5) beats ABCDE~ABXDE (0.8·min(5,1)=0.8)
    s2 = score_weighted(["ABCDE"], [5], ["ABXDE", "ABCDE"], [5, 1])
    assert s2 == pytest.approx(0.8 * 5 / 5)  # 0.8·5 = 4 > 1·min(5,1) = 1


def test_kris_floor_keeps_pairs_whose_leading_tokens_agree():
    # same person, moved house: the name (first tokens) agrees, the address does not
    a = ["JORGE", "A", "CLINTON", "530", "PARKSIDE", "AV", "MERRITT", "32953"]
    b = ["JORGE", "A", "CLINTON", "1780", "VALE", "DR", "CLERMONT", "34711", "FLA"]
    wa, wb = [5.0] * len(a), [5.0] * len(b)
    plain = LinkageProfile(comparator="WeightedTokenMatch", beta=16, sigma=145)
    floored = LinkageProfile(comparator="WeightedTokenMatch", comparatorFloor="ScoringMatrixKris", beta=16, sigma=145)
    from hdwm.compare import score_tokens, score_with_profile

    w = score_with_profile(a, wa, b, wb, plain)
    k = score_tokens(a, b, "ScoringMatrixKris")
    assert w == pytest.approx(3 * 5 / 40)  # 3 of 8 equally weighted tokens
    assert k > 0.5 > w  # Kris: rows weigh (8-j)/36, the first three hold 21/36
    assert score_with_profile(a, wa, b, wb, floored) == pytest.approx(max(w, k))
    # the floor only counts from comparatorFloorMin on
    strict = floored.model_copy(update={"comparatorFloorMin": 0.99})
    assert score_with_profile(a, wa, b, wb, strict) == pytest.approx(w)


def test_default_profile_has_kris_floor():
    p = load_profile("default")
    assert p.comparatorFloor == "ScoringMatrixKris"
    with pytest.raises(ValueError):
        LinkageProfile(comparatorFloor="Jaccard")


def test_agreement_must_identify_among_the_references():
    """ln N nats of agreement: JOHN + SMITH + a city identify among 10k references, not among 1M."""
    import math

    from hdwm.compare import identifying, score_with_profile
    from hdwm.config import LinkageProfile

    assert identifying(12.0, 10_000) and not identifying(12.0, 1_000_000) and identifying(0.0, 0)
    a, b = ["JOHN", "SMITH", "SPRINGFIELD", "ELM"], ["JOHN", "SMITH", "SPRINGFIELD", "OAK"]

    def weights(n, freqs):
        return [math.log(n / f) for f in freqs]

    for n, expect_zero in ((10_000, False), (1_000_000, True)):
        # the same shares of the input: JOHN 3 %, SMITH 1 %, SPRINGFIELD 2 %, street names rare
        w = weights(n, [0.03 * n, 0.01 * n, 0.02 * n, 2])
        prof = LinkageProfile(comparator="WeightedTokenMatch", identifyingAgreementRule=True, referenceCount=n)
        s = score_with_profile(a, w, b, w, prof)
        off = score_with_profile(a, w, b, w, prof.model_copy(update={"identifyingAgreementRule": False}))
        assert off > 0.3
        assert (s == 0.0) is expect_zero and (expect_zero or s == off)
    # a shared rare identifier alone is worth about ln N: it identifies at any size
    n = 1_000_000
    prof = LinkageProfile(comparator="WeightedTokenMatch", identifyingAgreementRule=True, referenceCount=n)
    assert score_with_profile(["123456789", "X"], [math.log(n / 1), 1.0], ["123456789"], [math.log(n / 1)], prof) > 0
