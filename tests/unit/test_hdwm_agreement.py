"""hdwm.agreement: Fellegi–Sunter m/u estimated by EM, on seeded inputs whose answer is known by construction."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from hdwm.agreement import (CLASSES, LEVELS, comparison_vector, estimate, estimate_from_pairs, pattern_key,
                            profile_update)
from hdwm.compare import score_with_profile
from hdwm.config import load_profile

GIVEN = ["JOHN", "MARY", "LINDA", "ROBERT", "SUSAN", "DAVID", "KAREN", "PAUL", "NANCY", "GEORGE",
         "HELEN", "FRANK", "DIANE", "CARL", "BETTY", "OSCAR", "IRIS", "VICTOR", "WENDY", "ZANE"]
STREETS = ["OAK", "PINE", "ELM", "MAPLE", "CEDAR", "BIRCH", "WALNUT", "SPRUCE", "ASPEN", "WILLOW"]


def _ev(given, surname, number, street, ssn=None):
    nums = [ssn] if ssn else []
    return ([given, surname], nums, [], False, [str(number), street])


def _file(kind: str, seed: int, people: int = 300):
    """Evidence tuples and candidate pairs (all pairs sharing a surname) of a seeded file.

    Surnames come from a pool of ``people // 5``, so a surname is shared by several persons.
    ``movers``: each person has 4 references at 2 addresses of their own (2 each): a given name
    agrees for a match and for 1 in 20 non-matches; a street agrees only for matches.
    ``households``: 4 persons of 4 different given names share a surname and one address, 2
    references each: a street agrees for every pair inside a household, match or not.
    """
    rng = random.Random(seed)
    pool = [f"SUR{k:03d}" for k in range(people // 5)]
    ev, truth = {}, {}
    if kind == "movers":
        for p in range(people):
            g, s = rng.choice(GIVEN), rng.choice(pool)
            homes = [(rng.randrange(1, 99999), rng.choice(STREETS)) for _ in range(2)]
            for k in range(4):
                rid = f"{p}-{k}"
                ev[rid] = _ev(g, s, *homes[k % 2])
                truth[rid] = p
    else:
        for h in range(people // 4):
            s, num, st = rng.choice(pool), rng.randrange(1, 99999), rng.choice(STREETS)
            for q, g in enumerate(rng.sample(GIVEN, 4)):
                for k in range(2):
                    rid = f"{h}-{q}-{k}"
                    ev[rid] = _ev(g, s, num, st)
                    truth[rid] = (h, q)
    by_surname: dict[str, list[str]] = {}
    for rid, e in ev.items():
        by_surname.setdefault(e[0][1], []).append(rid)
    pairs = [(a, b) for ids in by_surname.values() for i, a in enumerate(ids) for b in ids[i + 1:]]
    return ev, pairs, truth


def _w(est, cls, level):
    return est.weight(cls, LEVELS[cls].index(level))


def test_comparison_vector_levels():
    a = (["DONALD", "E", "LINDMAN"], ["19340220"], [], False, ["13889", "OXFORD"])
    b = (["E", "LINDMAN"], ["7162237431"], [], False, ["291", "PELICAN"])
    c = (["DONALD", "LINDMAN"], ["19340220", "123456789"], [], False, ["13889", "OXFORD"])
    d = (["PAUL", "KRAMER"], ["987654321"], [], False, [])
    assert comparison_vector(a, c) == (LEVELS["given"].index("agree"), LEVELS["surname"].index("agree"),
                                       LEVELS["street"].index("agree"), 0, LEVELS["date"].index("agree"))
    # E is DONALD E LINDMAN's middle initial: elsewhere; against DONALD LINDMAN it starts no token
    assert comparison_vector(a, b)[0] == LEVELS["given"].index("initial_elsewhere")
    assert comparison_vector(b, c)[0] == LEVELS["given"].index("initial_conflict")
    assert comparison_vector(b, c)[2] == LEVELS["street"].index("disagree")
    assert comparison_vector(c, d) == (LEVELS["given"].index("different"), LEVELS["surname"].index("disagree"),
                                       0, LEVELS["identifier"].index("disagree"), 0)
    assert comparison_vector((None, None, [], False, None), d) == (0, 0, 0, 0, 0)


def test_rare_name_agreement_among_non_matches_gives_a_high_weight():
    """Movers: a given name agrees for 1 in 20 non-matching candidate pairs and for every match, a
    street only for matches: both agreements weigh several bits, a disagreeing given name is strong
    evidence against a match."""
    ev, pairs, _ = _file("movers", seed=7)
    est = estimate_from_pairs(ev, pairs, random_pairs=20_000)
    assert est.converged
    assert _w(est, "given", "agree") > 3.0
    assert _w(est, "street", "agree") > 5.0
    assert _w(est, "given", "different") < -3.0
    assert est.lifted_given_levels() == []


def test_household_file_reads_as_co_residence():
    """Households: every pair inside a household shares surname and street, and 6 in 7 of them are
    different persons. The two-class EM takes co-residence for its latent class (the documented
    limit): it holds far more than the true match share, mostly shares a street, and a different
    given name weighs much less than among movers."""
    ev, pairs, truth = _file("households", seed=7)
    house = estimate_from_pairs(ev, pairs, random_pairs=20_000)
    movers = estimate_from_pairs(*_file("movers", seed=7)[:2], random_pairs=20_000)
    true_share = sum(truth[a] == truth[b] for a, b in pairs) / len(pairs)
    assert house.lam > 3 * true_share
    assert house.m["street"][LEVELS["street"].index("agree")] > 0.5 > movers.m["street"][1]
    assert _w(house, "given", "different") > _w(movers, "given", "different") + 3.0


def test_em_recovers_known_m_and_u():
    """Patterns drawn from a two-class model with known m, u and λ: EM finds them again."""
    rng = random.Random(3)
    m = {"given": [0, .9, .05, .02, .01, .02], "surname": [0, .9, .05, .05], "street": [0, .4, .6],
         "identifier": [0, .95, .05], "date": [0, .9, .1]}
    u = {"given": [0, .05, .05, .1, .2, .6], "surname": [0, .3, .1, .6], "street": [0, .05, .95],
         "identifier": [0, .01, .99], "date": [0, .02, .98]}
    lam = 0.3
    pats = Counter()
    for _ in range(40_000):
        probs = m if rng.random() < lam else u
        pats[tuple(rng.choices(range(1, len(LEVELS[c])), weights=probs[c][1:])[0] for c in CLASSES)] += 1
    est = estimate(pats, Counter())
    assert est.lam == pytest.approx(lam, abs=0.02)
    assert est.m["street"][1] == pytest.approx(0.4, abs=0.03)
    assert est.u["given"][5] == pytest.approx(0.6, abs=0.03)
    assert est.u["surname"][1] == pytest.approx(0.3, abs=0.03)


def test_estimate_rejects_bad_input():
    with pytest.raises(ValueError, match="no candidate pairs"):
        estimate(Counter(), Counter())
    with pytest.raises(ValueError, match="does not fit"):
        estimate(Counter({(9, 0, 0, 0, 0): 3}), Counter())
    with pytest.raises(ValueError, match="at least two references"):
        estimate_from_pairs({"a": _ev("JOHN", "SMITH", 1, "OAK")}, [("a", "a")])


def test_report_is_deterministic_and_complete():
    ev, pairs, _ = _file("movers", seed=11, people=60)
    r1 = estimate_from_pairs(ev, pairs, random_pairs=5_000).report()
    r2 = estimate_from_pairs(ev, pairs, random_pairs=5_000).report()
    assert r1 == r2
    assert set(r1["classes"]) == set(CLASSES)
    assert set(r1["classes"]["given"]) == set(LEVELS["given"][1:])
    assert 0.0 < r1["lambda"] < 1.0


def test_adaptive_profile_lifts_undecided_pairs_only():
    """The runtime field lifts a pair of a listed pattern to its posterior; a vetoed pair stays 0."""
    prof = load_profile("default").effective(1000)
    c = (["LINDA", "ZORAVEK"], [], [], False, ["12", "OAK"])
    d = (["LINDA", "ZORAVEK"], [], [], False, ["977", "ELM"])
    toks_c, toks_d = ["LINDA", "ZORAVEK", "12", "OAK"], ["LINDA", "ZORAVEK", "977", "ELM"]
    w = [1.0, 6.0, 5.0, 3.0]
    plain = score_with_profile(toks_c, w, toks_d, w, prof, c, d)
    key = pattern_key(comparison_vector(c, d))
    lifted = prof.model_copy(update={"agreementMatchPatterns": {key: 0.995}})
    assert plain < 0.995
    assert score_with_profile(toks_c, w, toks_d, w, lifted, c, d) == pytest.approx(0.995)
    # a vetoed pair stays vetoed
    e = (["PAUL", "ZORAVEK"], [], [], False, ["977", "ELM"])
    assert score_with_profile(toks_c, w, ["PAUL", "ZORAVEK", "977", "ELM"], w, prof.model_copy(
        update={"agreementMatchPatterns": {pattern_key(comparison_vector(c, e)): 0.995}}), c, e) == 0.0


def test_profile_update_fields():
    ev, pairs, _ = _file("movers", seed=5, people=100)
    est = estimate_from_pairs(ev, pairs, random_pairs=5_000)
    upd = profile_update(est, 0.99)
    assert set(upd) == {"agreementMatchPatterns"}
    assert upd["agreementMatchPatterns"] and all(q >= 0.99 for q in upd["agreementMatchPatterns"].values())
    prof = load_profile("default").model_copy(update=upd)  # the field exists on the profile
    assert prof.agreementEvidence == "off"


def _local_inputs(kind: str, seed: int):
    """``hdwm.local.LocalInputs`` built by hand (no Spark) from ``_file``'s references."""
    import pandas as pd

    from hdwm.local import LocalInputs

    ev, _, _ = _file(kind, seed, people=120)
    tokens = {r: [e[0][0], e[0][1], e[4][0], e[4][1]] for r, e in ev.items()}
    freq = Counter(t for ts in tokens.values() for t in set(ts))
    ids = sorted(ev)
    features = pd.DataFrame({"record_id": ids, "ctokens": [tokens[r] for r in ids],
                             "cweights": [[1.0] * 4 for _ in ids], "lead": [ev[r][0] for r in ids],
                             "nums": [ev[r][1] for r in ids], "shared": [[] for _ in ids],
                             "gstd": [False for _ in ids], "street": [ev[r][4] for r in ids]})
    return LocalInputs(tokens=tokens, hashes={r: i for i, r in enumerate(ids)}, freq=dict(freq), features=features)


@pytest.mark.parametrize("mode", ["report", "adaptive"])
def test_engine_estimate_on_the_driver_path(mode):
    """``hdwm.pipeline._agreement_estimate``: the report in both modes; only ``adaptive`` changes the profile."""
    from hdwm.pipeline import _agreement_estimate

    prof = load_profile("default").model_copy(update={"agreementEvidence": mode}).effective(480)
    out, report = _agreement_estimate(prof, _local_inputs("movers", 3))
    assert report["pairs"] > 0 and set(report["classes"]) == set(CLASSES)
    assert report["classes"]["given"]["agree"]["weight"] > 0 > report["classes"]["given"]["different"]["weight"]
    if mode == "report":
        assert out.agreementMatchPatterns == {} and "match_patterns" not in report
    else:
        assert out.agreementMatchPatterns and report["match_patterns"] == len(out.agreementMatchPatterns)


def _generated_inputs(gen, n: int, seed: int):
    """``hdwm.local.LocalInputs`` of ``n`` references of a benchmark generator, without Spark: tokens split
    on what is not a letter or digit, the evidence features from ``hdwm.evidence``'s Python forms (the
    engine computes the same in Spark SQL, after its date and spelling corrections)."""
    import re

    import pandas as pd

    from hdwm.evidence import leading_names, long_numbers, street_key
    from hdwm.local import LocalInputs

    tokens = {rid: [t for t in re.split(r"[^0-9A-Z]+", ",".join(f).upper()) if t] for rid, f, _ in gen.generate(n, seed)}
    ids = sorted(tokens)
    features = pd.DataFrame({
        "record_id": ids, "ctokens": [tokens[r] for r in ids], "cweights": [[1.0] * len(tokens[r]) for r in ids],
        "lead": [leading_names(tokens[r]) for r in ids], "nums": [long_numbers(tokens[r]) for r in ids],
        "shared": [[] for _ in ids], "gstd": [False for _ in ids], "street": [street_key(tokens[r]) for r in ids]})
    freq = Counter(t for ts in tokens.values() for t in set(ts))
    return LocalInputs(tokens=tokens, hashes={r: i for i, r in enumerate(ids)}, freq=dict(freq), features=features)


@pytest.mark.parametrize("kind,seed,n", [("messy_longhist", 1, 1500), ("messy_longhist", 2, 250), ("messy", 1, 1500),
                                         ("messy", 2, 250), ("messy_faker", 1, 1500)])
def test_identifier_conflict_is_estimated_from_the_file(benchmark_module, kind, seed, n):
    """``clusterIdentifierConflict: estimated`` on collected inputs (``_agreement_estimate``): a file of
    long-lived persons who move (``messy_longhist.py``: phones change with a move, few households) reads
    as persons whose identifiers change, so the identifier conflict becomes a pairwise veto only; a
    household file (``messy.py``, ``messy_faker.py``) reads as one of co-residents and keeps the
    cannot-link. At 250 and 1,500 references. The kinds are known by construction; no truth is read."""
    from hdwm.pipeline import _agreement_estimate

    prof = load_profile("default").model_copy(update={"clusterIdentifierConflict": "estimated"}).effective(n)
    assert prof.agreementEvidence == "off"
    out, report = _agreement_estimate(prof, _generated_inputs(benchmark_module(kind), n, seed))
    read = report["cluster_identifier_conflict"]
    movers = kind == "messy_longhist"
    assert out.clusterIdentifierConflict is (not movers) and read["estimated"] is (not movers), read
    assert (read["co_residence"] < 0.5) is movers and read["same_address_pairs"] > 100, read
    assert read["same_name_pairs"] > 0 and ((read["identifier_change"] >= 0.05) or not movers), read
    assert out.agreementMatchPatterns == {}  # agreementEvidence off: the scores are left alone
    # with the EM estimate on as well, the reading is the same (one count of the candidate patterns)
    both = prof.model_copy(update={"agreementEvidence": "report"})
    assert _agreement_estimate(both, _generated_inputs(benchmark_module(kind), n, seed))[1][
        "cluster_identifier_conflict"] == read
    # a fixed setting is never changed by the estimate
    fixed = prof.model_copy(update={"clusterIdentifierConflict": movers, "agreementEvidence": "report"})
    assert _agreement_estimate(fixed, _generated_inputs(benchmark_module(kind), 300, seed))[0] \
        .clusterIdentifierConflict is movers


def test_no_identifier_or_no_address_keeps_the_cannot_link():
    from hdwm.agreement import candidate_patterns, identifiers_change_with_moves

    ev, pairs, _ = _file("movers", seed=4)  # names and addresses only: no identifier to read
    moves, read = identifiers_change_with_moves(candidate_patterns(ev, pairs))
    assert not moves and read["identifier_change"] is None and read["same_name_pairs"] == 0
    assert read["co_residence"] is not None and read["same_address_pairs"] > 0
    # the same movers with a phone per home and no street written: nothing says they are not households
    no_street = {r: (e[0], ["5550000000" if r.endswith(("0", "2")) else "5551111111"], [], False, [])
                 for r, e in ev.items()}
    moves, read = identifiers_change_with_moves(candidate_patterns(no_street, pairs))
    assert not moves and read["co_residence"] is None and read["identifier_change"] > 0.05
    assert identifiers_change_with_moves(candidate_patterns(ev, [])) == (False, {
        "co_residence": None, "same_address_pairs": 0, "identifier_change": None, "same_name_pairs": 0})


def test_identifier_conflict_setting_values():
    prof = load_profile("default")
    assert prof.clusterIdentifierConflict == "estimated"  # include/config/default.yaml
    for v in (True, False, "estimated"):
        assert type(prof).model_validate({**prof.model_dump(), "clusterIdentifierConflict": v}).clusterIdentifierConflict == v
    with pytest.raises(ValueError):
        type(prof).model_validate({**prof.model_dump(), "clusterIdentifierConflict": "sometimes"})
