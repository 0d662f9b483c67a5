"""Frequency scaling of beta/sigma, evidence rules and alias folding, on tiny hand-checked inputs."""

from __future__ import annotations

import math

import pytest

from hdwm.aliases import ALIASES, fold_tokens
from hdwm.config import LinkageProfile, ProfileError, frequency_scale, load_profile
from hdwm.evidence import (
    conflicting,
    date_readings,
    evidence_score,
    given_name_conflict,
    given_names_agree,
    identifier_match,
    initials_agree,
    is_date_token,
    leading_names,
    long_numbers,
    same_nickname_group,
    street_key,
)

# --------------------------------------------------------------------------- scaling


@pytest.mark.parametrize(
    "n, mode, factor",
    [
        (500, "sqrt", 1.0),  # below the reference size: never shrinks
        (1000, "sqrt", 1.0),
        (4000, "sqrt", 2.0),
        (1_000_000, "sqrt", math.sqrt(1000)),
        (1_000_000, "linear", 1000.0),
        (1_000_000, "none", 1.0),
    ],
)
def test_frequency_scale(n, mode, factor):
    assert frequency_scale(n, mode, 1000) == pytest.approx(factor)


def test_frequency_scale_rejects_bad_arguments():
    with pytest.raises(ValueError, match="frequencyScaling"):
        frequency_scale(10, "log", 1000)
    with pytest.raises(ValueError, match="frequencyReferenceSize"):
        frequency_scale(10, "sqrt", 0)


def test_effective_thresholds_of_the_default_profile():
    p = load_profile("default")
    assert (p.frequencyScaling, p.frequencyReferenceSize, p.beta, p.sigma) == ("sqrt", 1000, 16, 145)
    # 1k-references inputs (S8P, FEBRL1) run with the profile's own values: the same object
    same = p.effective(1000)
    assert (same.beta, same.sigma, same.referenceCount) == (p.beta, p.sigma, 1000)
    got = {n: (p.effective(n).beta, p.effective(n).sigma) for n in (5000, 10_000, 100_000, 1_000_000)}
    # beta·√(N/1000), sigma·√(N/1000), rounded half up
    assert got == {5000: (36, 324), 10_000: (51, 459), 100_000: (160, 1450), 1_000_000: (506, 4585)}
    s = p.effective_summary(100_000)
    assert s == {"references": 100_000, "frequencyScaling": "sqrt", "frequencyReferenceSize": 1000,
                 "scale": 10.0, "beta": 160, "sigma": 1450, "beta_profile": 16, "sigma_profile": 145}


def test_scaling_profile_validation(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("beta: 4\nsigma: 20\nfrequencyScaling: cubic\n")
    with pytest.raises(ProfileError, match="frequencyScaling"):
        load_profile(str(f))
    f.write_text("beta: 4\nsigma: 20\nfrequencyReferenceSize: 0\n")
    with pytest.raises(ProfileError, match="frequencyReferenceSize"):
        load_profile(str(f))
    f.write_text("beta: 4\nsigma: 20\nidentifierConflictRule: true\nidentifierMinLen: 4\nidentifierMaxEdits: 4\n")
    with pytest.raises(ProfileError, match="identifierMaxEdits must be < identifierMinLen"):
        load_profile(str(f))


def test_no_scaling_keeps_dwm_absolute_counts():
    p = LinkageProfile(beta=16, sigma=145)
    assert p.frequencyScaling == "none"
    assert (p.effective(1_000_000).beta, p.effective(1_000_000).sigma) == (16, 145)


# --------------------------------------------------------------------------- evidence features


def test_digits_other_than_0_to_9_are_no_numbers():
    # the tokenizer keeps fullwidth, Arabic-Indic and superscript digits in tokens; like the Spark
    # forms (evidence_frame: [0-9]) the Python forms read them as letters, and never crash on them
    sup, full, arabic = "\u00b2" * 8, "\uff11\uff19\uff18\uff10\uff10\uff13\uff11\uff15", "\u0661\u0662"
    assert not is_date_token(sup) and not is_date_token(full) and date_readings(sup[:7]) == set()
    assert long_numbers([full, sup, "1234567"]) == ["1234567"]
    assert leading_names(["ZOE", arabic, "ELM", "12"]) == ["ZOE", arabic, "ELM"]
    assert street_key(["JOHN", "12", arabic]) == ["12", arabic] and street_key(["JOHN", full, "OAK"]) == []


def test_feature_extraction():
    toks = ["DARRELL", "A", "SOLIZ", "FAJARDO", "5032", "E", "TYLER", "AVE", "93727", "12069502", "19360814"]
    assert leading_names(toks) == ["DARRELL", "A", "SOLIZ", "FAJARDO"]
    assert leading_names(["12", "MAIN"]) == [] and leading_names(["SMITH"]) == ["SMITH"]
    # identifiers written before the name are skipped; a house number first is no name
    assert leading_names(["123456789", "19800315", "JOHN", "SMITH", "12", "ELM"]) == ["JOHN", "SMITH"]
    assert leading_names(["123456", "JOHN"]) == [] and leading_names(["123456789"]) == []
    assert long_numbers(toks) == ["12069502", "19360814"]
    assert is_date_token("19360814") and not is_date_token("12069502") and not is_date_token("19361314")


def test_given_name_conflict_cases():
    # co-residents: other given name, same surname
    assert given_name_conflict(["DARRELL", "A", "SOLIZ"], ["AMPARO", "A", "SOLIZ"])
    # typo, shared first letter, nickname, swapped name parts: no conflict
    assert not given_name_conflict(["JESSICA", "ROLON"], ["JESSIAC", "ROLON"])
    assert not given_name_conflict(["JIM", "JACKSON"], ["JAMES", "JACKSON"])
    assert not given_name_conflict(["BOB", "JONES"], ["ROBERT", "JONES"])
    assert not given_name_conflict(["SMITH", "JOHN"], ["JOHN", "SMITH"])
    # an initial conflicts only when no name token of the other starts with it
    assert given_name_conflict(["A", "HOANG"], ["JUAN", "HOANG"])
    assert not given_name_conflict(["J", "HOANG"], ["JUAN", "HOANG"])
    assert not given_name_conflict(["L", "DEALY"], ["LAVERNE", "L", "DELAY"])
    # a lone surname says nothing about a given name
    assert not given_name_conflict(["PEREZ"], ["LUIS", "PEREZ"])
    assert same_nickname_group("BOB", "ROB") and not same_nickname_group("BOB", "BILL")
    # the nicknames package's direct relations (not in the hand list), in either order
    assert same_nickname_group("GERALD", "JERRY") and same_nickname_group("BECKY", "REBECCA")
    # two nicknames of one formal name of the package (ERIN and RON of AARON) are not a pair
    assert same_nickname_group("AARON", "ERIN") and not same_nickname_group("ERIN", "RON")


class _P:
    givenNameConflictRule = True
    identifierConflictRule = True
    identifierMatchRule = True
    identifierMaxEdits = 2
    identifierMatchMaxEdits = 1
    givenNameMinSimilarity = 0.7


def test_conflict_and_match_rules():
    p = _P()
    darrell = (["DARRELL", "A", "SOLIZ"], ["12069502"])
    amparo = (["AMPARO", "A", "SOLIZ"], [])
    assert conflicting(*darrell, *amparo, p)  # given names conflict, no number agrees
    # the same SSN (one digit transposed) lifts a given-name conflict (FEBRL replaces given names)
    assert not conflicting(["ALEXANDER", "MCCARTHY"], ["1582861"], ["SOPHIE", "MCCARTHY"], ["1582681"], p)
    # identifiers disagree and given names do not agree -> veto
    assert conflicting(["E", "ZENGEL"], ["11843485"], ["JOAQUIN", "M", "ZENGEL"], ["11845832"], p)
    # identifiers disagree but given names agree (FEBRL: a duplicate's SSN replaced) -> no veto
    assert not conflicting(["LUKE", "REES"], ["3099843", "19000103"], ["LUKE", "REES"], ["8588392", "19000103"], p)
    # ... and so does a shared date of birth (FEBRL3: other given name, replaced SSN, same DOB)
    assert not conflicting(["LEAH", "REES"], ["7395505", "19000103"], ["LUKE", "REES"], ["8588392", "19000103"], p)
    assert conflicting(["LEAH", "REES"], ["7395505", "19000103"], ["MARK", "REES"], ["8588392", "19550505"], p)
    # dates are not identifiers: an SSN against a date of birth is no conflict
    assert not conflicting(["E", "ROLON"], ["12181076"], ["E", "ROLON"], ["19360814"], p)
    # moved house, same name and SSN -> 1.0; a 2-edit SSN is not a match (identifierMatchMaxEdits=1)
    assert identifier_match(["DONALD", "DAUGHTERS"], ["12416962"], ["DONALD", "DAUGHTERS"], ["12416962"], 1)
    assert evidence_score(["DONALD", "X"], ["12416962"], ["DONALD", "Y"], ["12419662"], p) == 1.0
    assert evidence_score(["DONALD", "X"], ["12416962"], ["DONALD", "Y"], ["12461926"], p) is None
    assert evidence_score(*darrell, *amparo, p) == 0.0
    assert given_names_agree(["BOB"], ["ROBERT"]) and not given_names_agree(["B"], ["BOB"])


def test_an_initial_with_an_agreeing_surname_counts_for_an_identifier_match():
    # S8P pairs across a move (67c903d): one side writes initials where the given name would be
    assert initials_agree(["M", "LUND"], ["MICHELLE", "M", "LUND"])
    assert initials_agree(["C", "ROY"], ["BRYANT", "C", "ROY"])  # the middle initial, written first
    assert initials_agree(["S", "L", "TREZONA"], ["L", "TREZONA"])
    assert initials_agree(["L", "DEALY"], ["JAMES", "L", "DELAY"])  # a surname typo (JW 0.95)
    assert initials_agree(["JAMES", "L", "DELAY"], ["L", "DEALY"])  # either side may hold the initial
    # an initial of no token of the other name part, another surname, no surname: no agreement
    assert not initials_agree(["K", "LUND"], ["MICHELLE", "M", "LUND"])
    assert not initials_agree(["M", "LUND"], ["MICHELLE", "M", "PETERSON"])
    assert not initials_agree(["M"], ["MICHELLE", "M", "LUND"])
    assert not initials_agree(["M", "JR"], ["MICHELLE", "M", "JR"])  # a generation suffix is no surname
    # the initial must stand for a token other than the surname: S SMITH is not J SMITH
    assert not initials_agree(["S", "SMITH"], ["J", "SMITH"]) and not initials_agree(["S", "SMITH"], ["JOHN", "SMITH"])
    assert initials_agree(["J", "SMITH"], ["JOHN", "SMITH"])
    # the other's given name is no surname: M JAMES is not JAMES MILLER
    assert not initials_agree(["M", "JAMES"], ["JAMES", "MILLER"])
    # two full given names are given_names_agree's to decide, never this rule's
    assert not initials_agree(["MARK", "LUND"], ["MICHELLE", "LUND"])
    assert not initials_agree([], ["M", "LUND"]) and not initials_agree(None, ["M", "LUND"])

    a, b = (["M", "LUND"], ["12379275"]), (["MICHELLE", "M", "LUND"], ["12379275"])
    assert not identifier_match(*a, *b, 1)  # off: an initial is no given name
    assert identifier_match(*a, *b, 1, initials=True)
    assert identifier_match(*a, ["MICHELLE", "M", "LUND"], ["12379725"], 1, initials=True)  # one transposition
    assert not identifier_match(*a, ["MICHELLE", "M", "LUND"], ["12739725"], 1, initials=True)  # two edits
    assert not identifier_match(["M", "LUND"], ["19800315"], ["MICHELLE", "LUND"], ["19800315"], 1, initials=True)  # a date

    # a household number (held by references whose given names conflict: JANE and JOHN SMITH's landline)
    # never ties an initial to a person; a personal one still does
    j, john = (["J", "SMITH"], ["5551234567"]), (["JOHN", "A", "SMITH"], ["5551234567"])
    assert identifier_match(*j, *john, 1, initials=True)
    assert not identifier_match(*j, *john, 1, initials=True, household_a=["5551234567"])
    assert identifier_match(["J", "SMITH"], ["5551234567", "123456789"], ["JOHN", "SMITH"], ["5551234567", "123456789"],
                            1, initials=True, household_a=["5551234567"])
    # ... while two agreeing given names are not affected by it (householdIdentifierRule decides those)
    assert identifier_match(["JOHN", "SMITH"], ["5551234567"], *john, 1, household_a=["5551234567"])

    class On(_P):
        identifierMatchInitials = True
        generationConflictRule = True

    assert evidence_score(*a, *b, _P()) is None
    assert evidence_score(*a, *b, On()) == 1.0
    assert evidence_score(*a, *b, On(), ["12379275"], None) is None  # a household number (shared_identifiers)
    # a veto still comes first: a JR against a SR of one SSN
    assert evidence_score(["M", "LUND", "JR"], ["12379275"], ["MICHELLE", "LUND", "SR"], ["12379275"], On()) == 0.0


@pytest.mark.parametrize(
    "mode, shared_date, ssn_one_edit, ssn_equal",
    [
        # (lifted by a shared date of birth, by SSNs one digit apart, by one equal SSN)
        ("number", True, True, True),
        ("identifier", False, True, True),
        ("exact_identifier", False, False, True),
    ],
)
def test_what_lifts_a_given_name_conflict(mode, shared_date, ssn_one_edit, ssn_equal):
    class P(_P):
        givenNameConflictLift = mode
        identifierConflictRule = False  # only the given-name veto decides here

    p = P()
    # twins: other given names, one date of birth
    assert conflicting(["SABRINA", "GUZMAN"], ["20040627"], ["MELISSA", "GUZMAN"], ["20040627"], p) is not shared_date
    # twins with consecutive SSNs
    assert conflicting(["SABRINA", "GUZMAN"], ["50252286"], ["MELISSA", "GUZMAN"], ["50252287"], p) is not ssn_one_edit
    # one SSN held by both (an alias, or FEBRL's replaced given name)
    assert conflicting(["SABRINA", "GUZMAN"], ["50252286"], ["MELISSA", "GUZMAN"], ["50252286"], p) is not ssn_equal
    # no number on one side: never lifted
    assert conflicting(["SABRINA", "GUZMAN"], ["50252286"], ["MELISSA", "GUZMAN"], [], p)


def test_the_given_name_conflict_lift_is_validated():
    assert LinkageProfile(givenNameConflictLift="identifier").givenNameConflictLift == "identifier"
    with pytest.raises(Exception):
        LinkageProfile(givenNameConflictLift="phone")


def test_rules_off_decide_nothing():
    class Off(_P):
        givenNameConflictRule = identifierConflictRule = identifierMatchRule = False

    assert evidence_score(["DARRELL", "A"], ["12069502"], ["AMPARO", "A"], ["99999999"], Off()) is None


def test_score_with_profile_applies_the_verdict():
    from hdwm.compare import score_with_profile

    p = LinkageProfile(beta=4, sigma=10, comparator="WeightedTokenMatch", givenNameConflictRule=True)
    a, b = ["DARRELL", "SOLIZ", "5032", "TYLER"], ["AMPARO", "SOLIZ", "5032", "TYLER"]
    w = [1.0] * 4
    plain = score_with_profile(a, w, b, w, p)
    assert plain > 0.5
    assert score_with_profile(a, w, b, w, p, (["DARRELL", "SOLIZ"], []), (["AMPARO", "SOLIZ"], [])) == 0.0


# --------------------------------------------------------------------------- alias folding


def test_alias_folding():
    assert fold_tokens(["1510", "SOUTH", "WILLIAMS", "AVENUE", "COMPTON", "CALIFORNIA"]) == [
        "1510", "SOUTH", "WILLIAMS", "AVE", "COMPTON", "CA"]
    assert fold_tokens(["AVNUE", "DRIV", "STREET", "FLA", "TEXAS"]) == ["AVE", "DR", "ST", "FL", "TX"]
    # names that are also places stay as they are
    assert all(k not in ALIASES for k in ("VICTORIA", "GEORGIA", "WASHINGTON", "WY", "MISS"))


@pytest.mark.spark
def test_spark_evidence_frame_and_folding_match_python(spark):
    from hdwm.evidence import evidence_frame
    from hdwm.tokenizer import tokenize

    rows = [("a", "Darrell,A,Soliz-Fajardo,5032,E,Tyler,Avenue,Fresno,,California,93727,,,012-06-9502,19360814"),
            ("b", "12 main st"), ("c", "smith"), ("d", ""), ("e", "123-45-6789,03/15/1980,john,smith,12,elm"),
            ("f", "5015551234"), ("g", "justin warren,lancaster,ca,93539"), ("h", "123456789,elm street,5"),
            ("i", "amy,lee,12b,oak"),
            # digits other than 0-9 stay in tokens; Spark reads them as letters, so must the Python forms
            ("j", "zo\u00eb,\u00e6r\u00f8,\u0661\u0662\u0663\u0664\u0665\u0666\u0667,12,\u0661\u0662"),
            ("k", "ann,lee,\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18,5,oak,\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2\u00b2")]
    prof = LinkageProfile(beta=4, sigma=10, tokenizerType="CompressNbr", stripLeadingZeros=True,
                          removeDuplicateTokens=True, foldAbbreviations=True)
    toks = tokenize(spark.createDataFrame(rows, "record_id string, text string"), prof)
    got = {r.record_id: r for r in toks.join(evidence_frame(toks, 7), "record_id").collect()}
    assert got["a"].tokens == ["DARRELL", "A", "SOLIZ", "FAJARDO", "5032", "E", "TYLER", "AVE", "FRESNO", "CA",
                               "93727", "12069502", "19360814"]
    for r in got.values():
        assert r.lead == leading_names(r.tokens) and r.nums == long_numbers(r.tokens, 7)
        assert r.street == street_key(r.tokens, 7), r.record_id
    assert got["a"].street == ["5032", "E"] and got["e"].street == ["12", "ELM"] and got["i"].street == ["12B", "OAK"]
    assert got["g"].street == [] and got["f"].street == [] and got["c"].street == []  # a zip last; no number
    assert got["b"].lead == [] and got["c"].lead == ["SMITH"] and got["d"].lead == []
    assert got["e"].lead == ["JOHN", "SMITH"] and got["f"].lead == []
    assert got["j"].lead == ["ZO\u00cb", "\u00c6R\u00d8", "\u0661\u0662\u0663\u0664\u0665\u0666\u0667"]
    assert got["j"].street == ["12", "\u0661\u0662"] and got["k"].nums == [] and got["k"].street == ["5", "OAK"]


@pytest.mark.spark
def test_score_pairs_applies_evidence_rules(spark):
    from hdwm.compare import comparison_tokens, score_pairs
    from hdwm.frequency import token_frequencies

    rows = [
        ("darrell", ["DARRELL", "SOLIZ", "5032", "TYLER", "AVE", "FRESNO", "12069502"]),
        ("amparo", ["AMPARO", "SOLIZ", "5032", "TYLER", "AVE", "FRESNO"]),  # co-resident
        ("moved", ["DARRELL", "SOLIZ", "77", "OAK", "LN", "BELL", "12069502"]),  # same person, new address
    ]
    toks = spark.createDataFrame(rows, "record_id string, tokens array<string>")
    on = LinkageProfile(beta=4, sigma=10, comparator="WeightedTokenMatch", givenNameConflictRule=True,
                        identifierConflictRule=True, identifierMatchRule=True)
    off = LinkageProfile(beta=4, sigma=10, comparator="WeightedTokenMatch")
    pairs = spark.createDataFrame([("amparo", "darrell"), ("darrell", "moved")], "id1 string, id2 string")
    ct = comparison_tokens(toks, token_frequencies(toks), on, 3)

    def scores(p):
        return {(r.id1, r.id2): r.score for r in score_pairs(pairs, ct, p).collect()}

    base, got = scores(off), scores(on)
    assert base[("amparo", "darrell")] > 0.5 and got[("amparo", "darrell")] == 0.0
    assert base[("darrell", "moved")] < 1.0 and got[("darrell", "moved")] == 1.0


@pytest.mark.spark
def test_household_numbers_on_the_driver_equal_shared_identifiers_on_spark(spark):
    """The driver loop's household identifiers (``household_numbers``) are Spark's (``shared_identifiers``)."""
    from hdwm.evidence import household_numbers, shared_identifiers

    rows = [
        ("1", ["JOHN", "SMITH"], ["5015551234", "123456789"]),  # the landline JOHN and MARY both write
        ("2", ["MARY", "SMITH"], ["5015551234", "19800315"]),
        ("3", ["J"], ["5015551234"]),  # a one-token name part holds it too: it is reported for it
        ("4", ["JON", "SMITH"], ["123456789"]),  # JOHN / JON do not conflict: not a household number
        ("5", ["MARY", "JONES"], ["19800315", "7777777"]),  # MARY / MARY: the date is no household number
        ("6", ["ANN", "LEE"], None),
        ("7", ["PETER", "LEE"], ["7777777"]),  # ANN has no number; MARY / PETER share 7777777
        ("8", [], ["7777777"]),
    ]
    df = spark.createDataFrame(rows, "record_id string, lead array<string>, nums array<string>")
    prof = LinkageProfile(givenNameMinSimilarity=0.7)
    want = {r.record_id: list(r.shared) for r in shared_identifiers(df, prof).collect()}
    got = household_numbers([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], prof)
    assert got == want
    assert got == {"1": ["5015551234"], "2": ["5015551234"], "3": ["5015551234"], "5": ["7777777"],
                   "7": ["7777777"], "8": ["7777777"]}
