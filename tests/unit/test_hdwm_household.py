"""Household evidence and cluster consistency (issue "Linkage accuracy on messy household data"):
generation suffixes, dates of birth in several shapes, standard given names with one
first letter, household identifiers, the constrained regrouping of a component, and the
engine end to end on a household that plain transitive closure chains into one cluster."""

from __future__ import annotations

import pandas as pd
import pytest

from hdwm.config import load_profile
from hdwm.consistency import (
    CANNOT_LINK,
    LINK,
    MUST_LINK,
    _identifier_group_veto,
    _member_conflict,
    _surname_group_veto,
    group_veto,
    regroup_component,
)
from hdwm.evidence import (
    common_given_name_conflict,
    conflicting,
    date_of_birth_conflict,
    date_readings,
    evidence_score,
    generation_conflict,
    is_date_like,
    surname_conflict,
)

PROFILE = load_profile("default")


def test_generation_suffixes_conflict_only_when_both_are_given_and_differ():
    assert generation_conflict(["JOHN", "SMITH", "JR"], ["JOHN", "SMITH", "SR"])
    assert generation_conflict(["JOHN", "SMITH", "II"], ["JOHN", "SMITH", "III"])
    assert not generation_conflict(["JOHN", "SMITH", "JR"], ["JOHN", "SMITH"])
    assert not generation_conflict(["JOHN", "SMITH", "JR"], ["JOHN", "SMITH", "II"])  # both "the second"


@pytest.mark.parametrize(
    "token, reading",
    [("19800315", "19800315"), ("03151980", "19800315"), ("3151980", "19800315"), ("15031980", "19800315")],
)
def test_date_readings_accept_the_common_shapes(token, reading):
    assert reading in date_readings(token)
    assert is_date_like(token)


def test_date_readings_reject_identifiers():
    assert date_readings("123456789") == set()  # 9 digits: an SSN
    assert date_readings("5551234") == set()  # a 7-digit phone: no month/day reading
    assert not is_date_like("10525974")  # S8P's SSN without its leading zero


def test_date_of_birth_conflict_tolerates_one_typo_and_other_shapes():
    assert not date_of_birth_conflict(["19800315"], ["03151980"])  # same date, two shapes
    assert not date_of_birth_conflict(["19800315"], ["19800351"])  # a transposition
    assert date_of_birth_conflict(["19800315"], ["19550702"])  # father and son
    assert not date_of_birth_conflict(["19800315"], ["19830513"])  # two edits, but three years: a mangled date
    assert not date_of_birth_conflict(["19800315", "20200101"], ["19550702"])  # two dates: no call


def test_common_given_names_conflict_only_when_both_are_standard_tokens():
    assert common_given_name_conflict(["JOHN", "SMITH"], ["JAMES", "SMITH"], True, True)
    assert not common_given_name_conflict(["JOHN", "SMITH"], ["JAMES", "SMITH"], True, False)  # a typo?
    assert not common_given_name_conflict(["JIM", "SMITH"], ["JAMES", "SMITH"], True, True)  # nickname
    assert not common_given_name_conflict(["ROB", "SMITH"], ["ROBERT", "SMITH"], True, True)  # prefix
    assert not common_given_name_conflict(["JOHN", "SMITH"], ["JON", "SMITH"], True, True)  # close spelling


def test_junior_and_senior_sharing_a_phone_are_vetoed_not_matched():
    # same name, same landline, other dates of birth: the phone used to make
    # an identifier match (score 1.0); the date of birth now vetoes the pair
    jr = (["JOHN", "SMITH", "JR"], ["5015551239", "19800315"])
    sr = (["JOHN", "SMITH"], ["5015551284", "19550702"])  # nearly equal numbers (two digits)
    assert evidence_score(*jr, *sr, PROFILE) == 0.0
    off = PROFILE.model_copy(update={"dateOfBirthConflictRule": False, "generationConflictRule": False,
                                     "identifierMatchMaxEdits": 2})
    assert evidence_score(*jr, *sr, off) == 1.0
    # an equal identifier lifts the date veto (FEBRL replaces dates of birth) ...
    assert evidence_score(["AMY", "MCCARTHY"], ["19381203", "4829707"],
                          ["AMY", "MCCARTHY"], ["19721005", "4829707"], PROFILE) == 1.0
    # ... and so does one within identifierMatchMaxEdits (1) edits: FEBRL mistypes the SSN as well
    assert evidence_score(["AMY", "MCCARTHY"], ["19381203", "4829707"],
                          ["AMY", "MCCARTHY"], ["19721005", "4829770"], PROFILE) == 1.0
    assert evidence_score(["AMY", "MCCARTHY"], ["19381203", "4829707"],
                          ["AMY", "MCCARTHY"], ["19721005", "4892770"], PROFILE) == 0.0
    # a landline written with and without its area code agrees as a number, but is no lift here:
    # a junior and a senior share it
    assert evidence_score(["JOHN", "SMITH"], ["19500315", "5551234"],
                          ["JOHN", "SMITH"], ["19800101", "2125551234"], PROFILE) == 0.0
    # the same person with one digit of the date mistyped, in another shape, stays a match
    a = (["JOHN", "SMITH"], ["123456789", "19800315"])
    b = (["JOHN", "SMITH"], ["123456789", "03161980"])
    assert evidence_score(*a, *b, PROFILE) == 1.0


def test_a_household_phone_no_longer_lifts_a_given_name_veto():
    john = (["JOHN", "SMITH"], ["5015551234"])
    mary = (["MARY", "SMITH"], ["5015551234"])
    # the shared phone agrees, which lifted the given-name veto
    assert not conflicting(*john, *mary, PROFILE)
    # marked as a household identifier (householdIdentifierRule), it no longer does
    on = PROFILE.model_copy(update={"householdIdentifierRule": True})
    assert conflicting(*john, *mary, on, ["5015551234"], ["5015551234"])
    assert not conflicting(*john, *mary, PROFILE, ["5015551234"], ["5015551234"])  # rule off: ignored


def test_surname_conflict_needs_every_later_name_token_to_disagree():
    # one given name in one city, two surnames: the false merge of messy 100k
    assert surname_conflict(["JUSTIN", "WARREN", "LANCASTER", "CA"], ["JUSTIN", "HENIAN"])
    assert surname_conflict(["ALAN", "N", "ROBERTSON"], ["ALAN", "PETERSON"])  # JW 0.75; initials ignored
    # typos, a dropped first letter, a glued field, a hyphenated married name, a swap: agree
    assert not surname_conflict(["JEREMY", "HOLFORD"], ["JEREMY", "HLOFORD"])
    assert not surname_conflict(["STEVEN", "FIGUEROA"], ["STEVEN", "IGUEROA"])
    assert not surname_conflict(["KYLE", "J", "PELLEYSPRINGFIELD"], ["KYLE", "PELLEY"])
    assert not surname_conflict(["KATHLEEN", "WAGNER"], ["KATHLEEN", "RODRIGUEZ", "WAGNER"])
    assert not surname_conflict(["JOHN", "SMITH"], ["SMITH", "JOHN"])
    # nothing to compare: a lone name, only initials or a generation suffix after the given name
    assert not surname_conflict(["SMITH"], ["JOHN", "JONES"])
    assert not surname_conflict(["ALAN", "N"], ["ALAN", "PETERSON"])
    assert not surname_conflict(["JOHN", "JR"], ["JOHN", "JONES"])


def test_surname_veto_is_lifted_by_an_agreeing_long_number():
    warren = (["JUSTIN", "WARREN", "LANCASTER"], ["442845473"])
    henian = (["JUSTIN", "HENIAN"], ["740961249"])
    assert conflicting(*warren, *henian, PROFILE)
    assert not conflicting(*warren, *henian, PROFILE.model_copy(update={"surnameConflictRule": False}))
    # a maiden and a married name with one SSN (one digit mistyped) or one date of birth: the same woman
    assert not conflicting(["KATHLEEN", "STEVENS"], ["750361929"], ["KATHLEEN", "WAGNER"], ["750361928"], PROFILE)
    assert not conflicting(["KATHLEEN", "STEVENS"], ["19910102"], ["KATHLEEN", "WAGNER"], ["19910102"], PROFILE)


def test_the_same_street_address_lifts_the_surname_veto():
    # a married name written at the address of the maiden name (S8P: SHARON D HALL / SHARON D KELLER)
    hall = (["SHARON", "D", "HALL"], ["11476088"])
    keller = (["SHARON", "D", "KELLER"], [])
    assert conflicting(*hall, *keller, PROFILE)
    assert not conflicting(*hall, *keller, PROFILE, None, None, False, False, ["1121A", "LAWSON"], ["1121A", "LAWSON"])
    assert not conflicting(*hall, *keller, PROFILE, None, None, False, False, ["108", "ECHURCH"], ["108", "E"])
    # another house number, or a street that is only a zip: the veto stands
    assert conflicting(*hall, *keller, PROFILE, None, None, False, False, ["1121A", "LAWSON"], ["1123", "LAWSON"])
    assert conflicting(*hall, *keller, PROFILE, None, None, False, False, [], [])


def test_cluster_check_applies_the_common_given_name_rule_as_scoring_does():
    # MARK and MATTHEW CARETTI (a father and his son, one address): both given names are frequent
    members = pd.DataFrame({"record_id": ["a", "b"], "lead": [["MARK", "CARETTI"], ["MATTHEW", "CARETTI"]],
                            "nums": [[], []], "shared": [None, None], "gstd": [True, True]})
    assert _member_conflict(members, PROFILE)(0, 1)
    assert not _member_conflict(members.drop(columns="gstd"), PROFILE)(0, 1)  # unknown: not standard



def test_cluster_check_leaves_an_identifier_conflict_to_the_pair_unless_asked():
    # J S LITTLE and JENNIFER S LITTLE with two phones (she moved): the pair itself is vetoed; inside a
    # component the phone disagreement is a cannot-link by default, and none with clusterIdentifierConflict: false
    a, b = (["J", "S", "LITTLE"], ["3868505220"]), (["JENNIFER", "S", "LITTLE"], ["8062022760"])
    assert conflicting(*a, *b, PROFILE)
    members = pd.DataFrame({"record_id": ["a", "b"], "lead": [a[0], b[0]], "nums": [a[1], b[1]]})
    # the default profile estimates it from the input (hdwm.pipeline); until then it keeps the cannot-link
    assert PROFILE.clusterIdentifierConflict == "estimated"
    assert _member_conflict(members, PROFILE)(0, 1)
    assert _member_conflict(members, PROFILE.model_copy(update={"clusterIdentifierConflict": True}))(0, 1)
    lifted = PROFILE.model_copy(update={"clusterIdentifierConflict": False})
    assert not _member_conflict(members, lifted)(0, 1)
    # a given-name conflict stays a cannot-link either way
    members.loc[1, "lead"] = ["PAUL", "S", "LITTLE"]
    members.loc[0, "lead"] = ["JENNIFER", "S", "LITTLE"]
    assert _member_conflict(members, lifted)(0, 1) and _member_conflict(members, PROFILE)(0, 1)

def _regroup(ids, edges, conflicts):
    members = pd.DataFrame({"record_id": ids})
    ed = pd.DataFrame(edges, columns=["id1", "id2", "score", "kind"])
    bad = {frozenset(p) for p in conflicts}
    out = regroup_component(members, ed, lambda i, j: frozenset((ids[i], ids[j])) in bad)
    groups = {}
    for r, c in out.items():
        groups.setdefault(c, set()).add(r)
    return sorted(sorted(g) for g in groups.values()), out


def test_regroup_never_joins_conflicting_references_and_prefers_strong_links():
    # j links John (0.9) and Jane (0.6); John and Jane conflict: j goes with John
    groups, out = _regroup(["jane", "john", "js"], [("john", "js", 0.9, LINK), ("jane", "js", 0.6, LINK)],
                           [("john", "jane")])
    assert groups == [["jane"], ["john", "js"]]
    assert out["js"] == "john"  # cluster id = smallest member id


def test_regroup_without_conflicts_is_transitive_closure():
    groups, _ = _regroup(["a", "b", "c", "d"], [("a", "b", 0.6, LINK), ("b", "c", 0.7, LINK),
                                                ("c", "d", 0.8, LINK)], [])
    assert groups == [["a", "b", "c", "d"]]


def _people(rows):
    """members frame of (record_id, lead, nums, street) rows, and its regrouping."""
    return pd.DataFrame(rows, columns=["record_id", "lead", "nums", "street"])


def _regroup_people(members, edges, profile):
    ed = pd.DataFrame(edges, columns=["id1", "id2", "score", "kind"])
    out = regroup_component(members, ed, _member_conflict(members, profile), group_veto(members, profile))
    groups = {}
    for r, c in out.items():
        groups.setdefault(c, set()).add(r)
    return sorted(sorted(g) for g in groups.values())


SURNAME_ON = PROFILE.model_copy(update={"clusterConsistency": True, "clusterSurnameRule": True,
                                        "clusterIdentifierRule": False})
SURNAME_OFF = SURNAME_ON.model_copy(update={"clusterSurnameRule": False})


def test_two_surnames_are_not_chained_through_a_reference_without_one():
    # MARY WALSTEIN and MARY TORRES both link to a sparse MARY LANCASTER (no surname after the
    # given name that could disagree); no number ties the two women
    members = _people([("w1", ["MARY", "WALSTEIN"], ["727069605"], ["1061", "S"]),
                       ("w2", ["MARY", "A", "WALSTEIN"], ["727069605"], []),
                       ("t1", ["MARY", "L", "TORRES"], ["79955138"], ["4606", "N"]),
                       ("s", ["MARY"], [], [])])
    edges = [("w1", "w2", 0.95, LINK), ("s", "w1", 0.62, LINK), ("s", "t1", 0.58, LINK)]
    assert _regroup_people(members, edges, SURNAME_OFF) == [["s", "t1", "w1", "w2"]]
    assert _regroup_people(members, edges, SURNAME_ON) == [["s", "w1", "w2"], ["t1"]]  # the stronger link wins


def test_a_city_after_the_surname_ties_nobody():
    # a reference without a street: its name part runs on into the city (MARY WALSTEIN LANCASTER).
    # Another group holds MARY TORRES and MARY TORRES RUSSELL LANCASTER: LANCASTER is no surname
    members = _people([("w", ["MARY", "WALSTEIN", "LANCASTER"], [], []), ("t", ["MARY", "TORRES"], [], []),
                       ("r", ["MARY", "TORRES", "RUSSELL", "LANCASTER"], [], [])])
    assert _surname_group_veto(members, SURNAME_ON)([0], [1, 2])
    # a double-barrelled surname or a middle name written out still ties on the surname
    # (the first surname token of one among the first two of the other)
    kin = _people([("a", ["SARAH", "STEWART", "BARKER"], [], []), ("b", ["SARAH", "JONES"], [], []),
                   ("c", ["SARAH", "BARKER"], [], []), ("d", ["SARAH", "ANN", "JONES"], [], [])])
    veto = _surname_group_veto(kin, SURNAME_ON)
    assert not veto([0], [1, 2])  # STEWART-BARKER / BARKER
    assert veto([2], [1]) and not veto([1], [3])  # BARKER / JONES: apart; JONES / ANN JONES: tied


def test_a_number_shared_across_the_groups_bridges_a_married_name():
    # the maiden name and the married name, tied by one SSN (one digit mistyped) somewhere in the
    # two groups though not on the linking pair
    members = _people([("m1", ["KATHLEEN", "STEVENS"], ["750361929"], []),
                       ("m2", ["KATHLEEN", "STEVENS"], [], ["12", "OAK"]),
                       ("w1", ["KATHLEEN", "WAGNER"], [], ["12", "OAK"]),
                       ("w2", ["KATHLEEN", "WAGNER"], ["750361928"], ["40", "ELM"])])
    edges = [("m1", "m2", 0.9, LINK), ("w1", "w2", 0.9, LINK), ("m2", "w1", 0.7, LINK)]
    assert _regroup_people(members, edges, SURNAME_ON) == [["m1", "m2", "w1", "w2"]]
    # ... or by the address where the maiden name was written (m2 and w1 give 12 OAK)
    assert _regroup_people(members.assign(nums=[[], [], [], []]), edges, SURNAME_ON) == [["m1", "m2", "w1", "w2"]]
    # another SSN each and no address in common: two women of one given name
    other = members.assign(nums=[["750361929"], [], [], ["123456780"]], street=[[], ["12", "OAK"], ["7", "BAY"], []])
    assert _regroup_people(other, edges, SURNAME_ON) == [["m1", "m2"], ["w1", "w2"]]
    assert _regroup_people(other, edges, SURNAME_OFF) == [["m1", "m2", "w1", "w2"]]


def test_the_group_veto_leaves_one_surname_and_must_links_alone():
    members = _people([("a", ["JOHN", "SMITH"], [], []), ("b", ["JOHN", "SMYTH"], [], []),
                       ("c", ["JOHN", "KOWALSKI"], [], [])])
    # SMITH / SMYTH agree (Jaro-Winkler): joined; KOWALSKI is kept apart
    assert _regroup_people(members, [("a", "b", 0.8, LINK), ("b", "c", 0.7, LINK)], SURNAME_ON) == [["a", "b"], ["c"]]
    # a human must-link joins SMYTH and KOWALSKI whatever the surnames; SMITH then joins that
    # group, tied by SMYTH (the surnames agree), though SMITH / KOWALSKI disagree
    assert _regroup_people(members, [("a", "b", 0.8, LINK), ("b", "c", 1.0, MUST_LINK)], SURNAME_ON) == \
        [["a", "b", "c"]]
    # without that tie, nothing joins SMITH to the KOWALSKI group
    lone = _people([("a", ["JOHN", "SMITH"], [], []), ("x", ["JOHN"], [], []), ("c", ["JOHN", "KOWALSKI"], [], [])])
    assert _regroup_people(lone, [("a", "x", 0.8, LINK), ("x", "c", 1.0, MUST_LINK)], SURNAME_ON) == [["a"], ["c", "x"]]
    assert _surname_group_veto(members, SURNAME_OFF) is None


IDS_ON = SURNAME_ON.model_copy(update={"clusterIdentifierRule": True})


def test_two_groups_confirming_different_identifiers_stay_apart():
    # two LARRY BAUMSKIs in two states, each written twice with his own SSN, chained by a bare
    # LARRY BAUMSKI: the given names agree, so no pair of them is vetoed, and one surname ties the groups
    members = _people([("p1", ["LARRY", "R", "BAUMSKI"], ["193958342"], ["497", "N"]),
                       ("p2", ["LARRY", "BAUMSKI"], ["193958342", "6025639070"], []),
                       ("o1", ["LARRY", "K", "BAUMSKI"], ["400314293"], ["105", "CERISE"]),
                       ("o2", ["LARRY", "BAUMSKI"], ["400314293", "19750811"], ["105", "CERISE"]),
                       ("x", ["LARRY", "BAUMSKI"], [], [])])
    edges = [("p1", "p2", 0.95, LINK), ("o1", "o2", 0.95, LINK), ("x", "p2", 0.62, LINK), ("x", "o2", 0.58, LINK)]
    assert _regroup_people(members, edges, SURNAME_ON) == [["o1", "o2", "p1", "p2", "x"]]
    assert _regroup_people(members, edges, IDS_ON) == [["o1", "o2"], ["p1", "p2", "x"]]  # the stronger link wins
    assert _identifier_group_veto(members, SURNAME_ON) is None


def test_an_identifier_seen_once_or_agreeing_somewhere_does_not_split_a_person():
    veto = _identifier_group_veto
    # one reference with another SSN (a typo, or FEBRL's replaced value) confirms nothing
    once = _people([("a1", ["ANNA", "LEE"], ["123456789"], []), ("a2", ["ANNA", "LEE"], ["123456789"], []),
                    ("b1", ["ANNA", "LEE"], ["987654321"], [])])
    assert not veto(once, IDS_ON)([0, 1], [2])
    # a person who moved: a landline confirmed at each address, the same mobile in both groups
    moved = _people([("a1", ["ANNA", "LEE"], ["5015551234", "9045550000"], []),
                     ("a2", ["ANNA", "LEE"], ["5015551234"], []),
                     ("b1", ["ANNA", "LEE"], ["2175557777", "9045550000"], []),
                     ("b2", ["ANNA", "LEE"], ["2175557777"], [])])
    assert not veto(moved, IDS_ON)([0, 1], [2, 3])
    # the SSN confirmed in one group with one digit mistyped in the other still agrees
    typo = _people([("a1", ["ANNA", "LEE"], ["123456789"], []), ("a2", ["ANNA", "LEE"], ["123456789"], []),
                    ("b1", ["ANNA", "LEE"], ["123456780"], []), ("b2", ["ANNA", "LEE"], ["123456780"], [])])
    assert not veto(typo, IDS_ON)([0, 1], [2, 3])
    # without the shared mobile the two landlines are two people: the cost of the rule, kept on
    # purpose (a person's SSN or mobile usually appears on both sides; measured in benchmarks/README.md)
    apart = moved.assign(nums=[["5015551234"], ["5015551234"], ["2175557777"], ["2175557777"]])
    assert veto(apart, IDS_ON)([0, 1], [2, 3])


def test_dates_and_numbers_of_other_shapes_confirm_no_identifier_conflict():
    veto = _identifier_group_veto
    # twins' date of birth twice in each group is a date, not an identifier
    dates = _people([("a1", ["JOHN", "POE"], ["19800315"], []), ("a2", ["JOHN", "POE"], ["19800315"], []),
                     ("b1", ["JOHN", "POE"], ["19620101"], []), ("b2", ["JOHN", "POE"], ["19620101"], [])])
    assert not veto(dates, IDS_ON)([0, 1], [2, 3])
    # an SSN confirmed on one side and a phone on the other say nothing about each other
    shapes = _people([("a1", ["JOHN", "POE"], ["123456789"], []), ("a2", ["JOHN", "POE"], ["123456789"], []),
                      ("b1", ["JOHN", "POE"], ["5015551234"], []), ("b2", ["JOHN", "POE"], ["5015551234"], [])])
    assert not veto(shapes, IDS_ON)([0, 1], [2, 3])


def test_regroup_human_decisions_override():
    edges = [("a", "b", 0.9, LINK), ("b", "c", 0.8, LINK), ("a", "c", 0.0, CANNOT_LINK)]
    groups, _ = _regroup(["a", "b", "c"], edges, [])
    assert groups == [["a", "b"], ["c"]]
    # a must-link joins even a pair the evidence calls conflicting
    groups, _ = _regroup(["a", "b"], [("a", "b", 1.0, MUST_LINK)], [("a", "b")])
    assert groups == [["a", "b"]]


@pytest.mark.spark
def test_engine_keeps_a_household_apart(spark, tmp_path):
    from hdwm.pipeline import link_references

    # one household: John and Mary Smith (two references each) and a bare
    # "J SMITH" reference at their address that scores with both of them
    refs = [
        ("j1", "JOHN SMITH 12 OAK STREET PERTH 123456789"),
        ("j2", "JOHN SMITH 12 OAK STREET PERTH 123456789"),
        ("m1", "MARY SMITH 12 OAK STREET PERTH 987654321"),
        ("m2", "MARY SMITH 12 OAK STREET PERTH 987654321"),
        ("x1", "SMITH 12 OAK STREET PERTH"),
    ]
    # other people, so that the household's tokens are evidence (identifyingAgreementRule:
    # a token every reference holds says nothing)
    refs += [(f"o{i}", f"{g} {s} {n} {st} ROAD {c}") for i, (g, s, n, st, c) in enumerate([
        ("ANNA", "BROWN", 3, "ELM", "DARWIN"), ("PAUL", "GREEN", 7, "PINE", "HOBART"),
        ("RITA", "KHAN", 9, "BAY", "CAIRNS"), ("OMAR", "LEE", 4, "HILL", "SYDNEY"),
        ("IVY", "NGUYEN", 6, "LAKE", "BRISBANE"), ("LEO", "ROSSI", 8, "PARK", "GEELONG")])]
    df = spark.createDataFrame(refs, "record_id string, text string")
    res = link_references(spark, df, PROFILE, str(tmp_path / "ck"))
    lab = {r["record_id"]: r["cluster_id"] for r in res.links.collect()}
    assert lab["j1"] == lab["j2"] and lab["m1"] == lab["m2"]
    assert lab["j1"] != lab["m1"]
    plain = PROFILE.model_copy(update={"clusterConsistency": False})
    res2 = link_references(spark, df, plain, str(tmp_path / "ck2"))
    lab2 = {r["record_id"]: r["cluster_id"] for r in res2.links.collect()}
    assert len(set(lab2.values())) < len(set(lab.values()))  # plain closure chains the household
    pairs = res.pairs.toPandas()
    acc = pairs[pairs.accepted]
    assert {("j1", "j2"), ("m1", "m2")} <= set(zip(acc.record_id_a, acc.record_id_b))
    row = acc[(acc.record_id_a == "j1") & (acc.record_id_b == "j2")].iloc[0]
    assert "SMITH" in list(row["agreeing"]) and list(row["conflicting"]) == []


@pytest.mark.spark
def test_engine_human_decisions_and_global_frequencies(spark, tmp_path):
    from hdwm.frequency import raw_frequencies
    from hdwm.pipeline import link_references

    refs = [
        ("a", "ALICE SMITH 12 OAK STREET PERTH 123456789"),
        ("b", "ALICE SMITH 12 OAK STREET PERTH 123456789"),
        ("c", "CARLA DIAZ 45 HILL STREET ADELAIDE 777000111"),
    ]
    df = spark.createDataFrame(refs, "record_id string, text string")
    cl = spark.createDataFrame([("b", "a")], "id1 string, id2 string")  # reversed order on purpose
    ml = spark.createDataFrame([("a", "c")], "id1 string, id2 string")
    res = link_references(spark, df, PROFILE, str(tmp_path / "ck"), cannot_link=cl, must_link=ml)
    lab = {r["record_id"]: r["cluster_id"] for r in res.links.collect()}
    assert lab["a"] != lab["b"] and lab["a"] == lab["c"]
    # population frequencies: the three references linked against a bigger population
    freq = raw_frequencies(df, PROFILE)
    res2 = link_references(spark, df, PROFILE, str(tmp_path / "ck2"), frequencies=freq, reference_count=3)
    lab2 = {r["record_id"]: r["cluster_id"] for r in res2.links.collect()}
    assert lab2["a"] == lab2["b"] != lab2["c"]
    with pytest.raises(ValueError, match="reference_count"):
        link_references(spark, df, PROFILE, str(tmp_path / "ck3"), frequencies=freq, reference_count=2)
    # a caller that already has the population's correction map (a registry night) hands it over:
    # the same links, and a map without the frequencies it was made from is refused
    from hdwm.frequency import correction_map

    cmap = correction_map(freq, load_profile(PROFILE).effective(3))
    res3 = link_references(spark, df, PROFILE, str(tmp_path / "ck4"), frequencies=freq, reference_count=3,
                           correction=cmap)
    assert {r["record_id"]: r["cluster_id"] for r in res3.links.collect()} == lab2
    with pytest.raises(ValueError, match="correction"):
        link_references(spark, df, PROFILE, str(tmp_path / "ck5"), correction=cmap)


def test_identifiers_of_different_shapes_do_not_conflict():
    # an SSN in one reference and a phone in the other say nothing about each other
    a = (["B", "M", "CARROLL"], ["53903228"])
    b = (["BRENDA", "M", "CARROLL"], ["2174544412"])
    assert not conflicting(*a, *b, PROFILE)
    # two different SSNs do
    c = (["B", "M", "CARROLL"], ["92230935"])
    assert conflicting(*c, *(["BRENDA", "M", "CARROLL"], ["53903228"]), PROFILE)


def test_a_local_number_agrees_with_its_full_form():
    a = (["JOHN", "SMITH"], ["4544412"])
    b = (["MARY", "SMITH"], ["2174544412"])
    # given names conflict, but the numbers agree (suffix rule): no veto without the household rule
    assert not conflicting(*a, *b, PROFILE)


@pytest.mark.spark
def test_given_name_is_learnt_from_positions(spark):
    from hdwm.evidence import given_name_first

    rows = [(f"r{i}", ["JOHN", "SMITH"], []) for i in range(3)] + [("x", ["SMITH", "JOHN"], []),
                                                                    ("y", ["J", "SMITH"], [])]
    # SEAN is a given name (first in 5 of 7 name parts) and KEVIN's middle name; KEVIN is first in 2 of 3
    rows += [(f"s{i}", ["SEAN", "OLIVER"], []) for i in range(5)] + [
        ("k1", ["KEVIN", "SEAN", "OLIVER"], []), ("k2", ["KEVIN", "OLIVER"], []), ("k3", ["OLIVER", "KEVIN", "SEAN"], [])]
    df = spark.createDataFrame(rows, "record_id string, lead array<string>, nums array<string>")
    out = {r["record_id"]: list(r["lead"]) for r in given_name_first(df).collect()}
    assert out["x"] == ["JOHN", "SMITH"]  # JOHN comes first in 3 of 4 name parts, SMITH in 1
    assert out["y"] == ["J", "SMITH"]  # an initial first is left alone
    assert out["r0"] == ["JOHN", "SMITH"]
    # SEAN is first more often than KEVIN (0.71 vs 0.67), but KEVIN is a given name too: it stays
    assert out["k1"] == ["KEVIN", "SEAN", "OLIVER"]
    # OLIVER is seen first in 1 of 8 name parts: the earliest given name after it (not SEAN, the
    # highest rate) moves to the front
    assert out["k3"] == ["KEVIN", "OLIVER", "SEAN"]


@pytest.mark.spark
def test_canonical_numbers_in_the_tokenizer(spark):
    from hdwm.tokenizer import tokenize

    df = spark.createDataFrame([("1", "053 90 3228, (217) 454-4412, 05/27/1967, 1967-05-27, 27/05/1967, 12 2000 3")],
                               "record_id string, text string")
    toks = tokenize(df, PROFILE).first()["tokens"]
    assert toks == ["53903228", "2174544412", "19670527", "12", "2000", "3"]


@pytest.mark.spark
def test_a_zip_plus_4_is_no_ssn_shaped_number(spark):
    """ZIP+4 (USPS Publication 28) keeps its zip and add-on apart; an SSN and a phone written with hyphens still
    become one number each, and a zip that ends a hyphenated run of more digits is left to CompressNbr."""
    from hdwm.evidence import long_numbers
    from hdwm.tokenizer import tokenize

    df = spark.createDataFrame([("1", "MARK BARRETT, 72463 NE KEVIN, KIMBERLY VA 22140-5211, 421-974-9787, 053-90-3228"),
                                ("2", "LISA BARRETT,22140-5211"), ("3", "X 12345-6789-1")],
                               "record_id string, text string")
    toks = {r.record_id: r.tokens for r in tokenize(df, PROFILE).collect()}
    assert toks["1"] == ["MARK", "BARRETT", "72463", "NE", "KEVIN", "KIMBERLY", "VA", "22140", "5211", "4219749787",
                         "53903228"]
    assert toks["2"] == ["LISA", "BARRETT", "22140", "5211"]
    assert toks["3"] == ["X", "1234567891"]
    # the household's ZIP+4 is no long number the two references share (it would lift the given-name veto)
    assert not set(long_numbers(toks["1"], 7)) & set(long_numbers(toks["2"], 7))


@pytest.mark.spark
def test_a_component_above_the_cap_is_no_cluster_at_that_mu(spark):
    """Its references are left out (relinked at the next mu), never accepted as one chain."""
    from hdwm.consistency import consistent_clusters

    comps = spark.createDataFrame([("a", "a"), ("b", "a"), ("c", "a"), ("d", "a"),  # 4 > cap 3
                                   ("p", "p"), ("q", "p"), ("r", "p"),              # 3: regrouped
                                   ("x", "x"), ("y", "x")], "record_id string, cluster_id string")
    links = spark.createDataFrame([("a", "b", 0.9), ("b", "c", 0.9), ("c", "d", 0.9), ("p", "q", 0.9),
                                   ("q", "r", 0.8), ("x", "y", 0.9)], "id1 string, id2 string, score double")
    feats = spark.createDataFrame(
        [(r, ["JOHN", "SMITH"], []) for r in "abcdxy"] + [("p", ["JOHN", "SMITH"], []), ("q", ["JOHN", "SMITH"], []),
                                                          ("r", ["MARY", "SMITH"], [])],
        "record_id string, lead array<string>, nums array<string>")
    prof = PROFILE.model_copy(update={"consistencyMaxComponent": 3})
    out, stats = consistent_clusters(comps, links, feats, prof)
    got = {r.record_id: r.cluster_id for r in out.collect()}
    assert stats["oversize_components"] == 1 and stats["components_checked"] == 1
    assert not {"a", "b", "c", "d"} & set(got)  # the chain of 4 is no cluster at this mu
    assert got["p"] == got["q"] == "p" and got["r"] == "r"  # MARY conflicts with JOHN: split off
    assert got["x"] == got["y"] == "x"


@pytest.mark.spark
@pytest.mark.parametrize("bucket,local", [(4, 0), (4096, 0), (4096, 27), (4096, 26)])
def test_bucketed_regrouping_equals_one_component_at_a_time(spark, monkeypatch, bucket, local):
    """consistent_clusters hands the UDF buckets of whole components (speed); with
    buckets of about one component (4 references) and of all of them (4096) the
    clusters are those of regroup_component run on each component alone. So are
    they on the driver (``local_max_references`` 27: the 27 references of the
    three components in one call) and, one reference over that limit (26), in
    the UDF again."""
    import hdwm.consistency as consistency
    from hdwm.compare import comparison_tokens
    from hdwm.frequency import token_frequencies
    from hdwm.tokenizer import tokenize

    monkeypatch.setattr(consistency, "BUCKET_REFERENCES", bucket)
    people = [("JOHN", "123456789"), ("MARY", "987654321"), ("PETER", "555000111"), ("ANNA", "444222333")]
    refs, links, comps = [], [], []
    for h, street in enumerate(["OAK STREET PERTH", "ELM ROAD HOBART", "BAY AVENUE DARWIN"]):
        ids = []
        for g, ssn in people:  # four people of one household, two references each, and a bare surname
            for k in (1, 2):
                ids.append(f"h{h}{g[0]}{k}")
                refs.append((ids[-1], f"{g} SMITH {h + 1} {street} {ssn}{h}"))
        ids.append(f"h{h}x")
        refs.append((ids[-1], f"SMITH {h + 1} {street}"))
        comps += [(r, ids[0]) for r in ids]
        links += [(a, b, 0.55 + 0.01 * (i % 7)) for i, (a, b) in enumerate(
            (a, b) for a in ids for b in ids if a < b)]  # one component: every pair linked
    df = spark.createDataFrame(refs, "record_id string, text string")
    feats = comparison_tokens(tokenize(df, PROFILE), token_frequencies(tokenize(df, PROFILE)), PROFILE, len(refs))
    comps_df = spark.createDataFrame(comps, "record_id string, cluster_id string")
    links_df = spark.createDataFrame(links, "id1 string, id2 string, score double")
    calls = []
    real_fn = spark.createDataFrame

    def spy(data, *a, **k):  # the driver path builds its result frame from the function's pandas output
        calls.append(type(data).__name__)
        return real_fn(data, *a, **k)

    monkeypatch.setattr(spark, "createDataFrame", spy)
    got, stats = consistency.consistent_clusters(comps_df, links_df, feats, PROFILE, local_max_references=local)
    got = {r["record_id"]: r["cluster_id"] for r in got.collect()}
    monkeypatch.undo()
    assert stats["components_checked"] == 3
    assert ("DataFrame" in calls) == (local == 27)

    fp = feats.toPandas()
    want = {}
    for cid in {c for _, c in comps}:
        members = fp[fp.record_id.isin([r for r, c in comps if c == cid])].sort_values("record_id").reset_index(drop=True)
        ed = pd.DataFrame([(a, b, s, LINK) for a, b, s in links if a in set(members.record_id)],
                          columns=["id1", "id2", "score", "kind"])
        want.update(regroup_component(members, ed, consistency._member_conflict(members, PROFILE),
                                      consistency._surname_group_veto(members, PROFILE)))
    assert got == want
    assert len(set(want.values())) > 3  # the households were split: the comparison is not trivial
