"""The ``ranked`` registry neighbourhood: per night reference, the best
entities it shares an engine block key with, bounded whatever the history's size."""

from __future__ import annotations

import math

import pytest

from hdwm.config import load_profile
from hdwm.incremental import apply_split_policy, ranked_candidates, scored_candidates

pytestmark = pytest.mark.spark

N = 1000  # references after the night: beta 16, a token of frequency <= 4 blocks alone


def _frames(spark, night: dict, registry: dict, freq: dict):
    """night: {night_key: [tokens]}; registry: {ref_key: (entity_id, [tokens])}; freq: {token: freq}."""
    nb = spark.createDataFrame([(k, t, freq[t]) for k, ts in night.items() for t in ts],
                               "ref_key string, token string, freq long")
    rb = spark.createDataFrame([(k, t) for k, (_, ts) in registry.items() for t in ts if t in freq],
                               "ref_key string, token string")
    mem = spark.createDataFrame([(k, e) for k, (e, _) in registry.items()], "ref_key string, entity_id string")
    return nb, rb, mem


def _entities(spark, night, registry, freq, top):
    nb, rb, mem = _frames(spark, night, registry, freq)
    eff = load_profile("default").effective(N)
    keys = [r.ref_key for r in ranked_candidates(nb, rb, mem, eff, top).collect()]
    assert len(keys) == len(set(keys))
    return sorted(registry[k][0] for k in keys)


def test_co_residents_cannot_crowd_out_the_persons_own_entity(spark):
    # twelve co-residents share the street and the city with the night reference; the person's
    # own earlier reference also shares the SSN and the surname, so it ranks first
    freq = {"ELM": 12, "SPRINGFIELD": 14, "123456789": 2, "ZORBA": 3}
    night = {"n|1": ["ELM", "SPRINGFIELD", "123456789", "ZORBA"]}
    registry = {f"r|{i}": (f"E{i:02d}", ["ELM", "SPRINGFIELD"]) for i in range(12)}
    registry["r|own"] = ("EZZ", ["ELM", "123456789", "ZORBA"])
    assert _entities(spark, night, registry, freq, 3) == ["E00", "E01", "EZZ"]  # ties: smaller id
    assert len(_entities(spark, night, registry, freq, 10)) == 10
    assert "EZZ" in _entities(spark, night, registry, freq, 1)


def test_only_references_sharing_an_engine_block_key_are_candidates(spark):
    # the engine's block keys at N = 1000 (beta 16): a pair of blocking tokens, or one token rarer
    # than sqrt(beta) = 4 on its own (rareTokenBlocks)
    freq = {"ELM": 12, "SPRINGFIELD": 14, "ZORBA": 3, "QUILL": 8}
    night = {"n|1": ["ELM", "SPRINGFIELD", "ZORBA", "QUILL"]}
    registry = {
        "r|street": ("EA", ["ELM"]),              # one common token: no key
        "r|rare": ("EB", ["ZORBA"]),              # one token rarer than sqrt(beta): a key, as in the engine
        "r|pair": ("EC", ["ELM", "SPRINGFIELD"]),  # a pair key
        "r|both": ("ED", ["SPRINGFIELD", "ZORBA"]),
        "r|mid": ("EE", ["QUILL"]),               # one blocking token above sqrt(beta): no key
    }
    assert _entities(spark, night, registry, freq, 10) == ["EB", "EC", "ED"]
    # the lone rare token ranks below a pair (weight ln(N/3) against ln(N/12) + ln(N/14))
    assert _entities(spark, night, registry, freq, 2) == ["EC", "ED"]
    eff = load_profile("default").effective(N).model_copy(update={"rareTokenBlocks": False})
    nb, rb, mem = _frames(spark, night, registry, freq)
    assert sorted(registry[r.ref_key][0] for r in ranked_candidates(nb, rb, mem, eff, 10).collect()) == ["EC", "ED"]


def test_an_entity_counts_once_with_its_best_member(spark):
    freq = {"ELM": 12, "SPRINGFIELD": 14, "ZORBA": 3, "QUILL": 5}
    night = {"n|1": ["ELM", "SPRINGFIELD", "ZORBA", "QUILL"]}
    registry = {
        "r|a1": ("EA", ["ELM", "SPRINGFIELD"]),
        "r|a2": ("EA", ["ELM", "SPRINGFIELD", "ZORBA", "QUILL"]),
        "r|b": ("EB", ["ELM", "SPRINGFIELD", "QUILL"]),
    }
    nb, rb, mem = _frames(spark, night, registry, freq)
    eff = load_profile("default").effective(N)
    got = sorted(r.ref_key for r in ranked_candidates(nb, rb, mem, eff, 1).collect())
    assert got == ["r|a2"]  # EA's best member; EB (weaker) is cut by the rank
    w_a2 = sum(math.log(N / freq[t]) for t in registry["r|a2"][1])
    w_b = sum(math.log(N / freq[t]) for t in registry["r|b"][1])
    assert w_a2 > w_b


def test_each_night_reference_has_its_own_rank(spark):
    freq = {"ELM": 12, "SPRINGFIELD": 14, "OAK": 10, "SHELBY": 9}
    night = {"n|1": ["ELM", "SPRINGFIELD"], "n|2": ["OAK", "SHELBY"]}
    registry = {"r|1": ("EA", ["ELM", "SPRINGFIELD"]), "r|2": ("EB", ["OAK", "SHELBY"])}
    assert _entities(spark, night, registry, freq, 1) == ["EA", "EB"]


def test_top_entities_must_be_positive(spark):
    nb, rb, mem = _frames(spark, {"n|1": ["ELM"]}, {"r|1": ("EA", ["ELM"])}, {"ELM": 3})
    with pytest.raises(ValueError, match="top_entities"):
        ranked_candidates(nb, rb, mem, load_profile("default").effective(N), 0)


def test_frequent_pair_holders_are_ranked_with_the_pair_keys(spark):
    # the engine's rare pairs of frequent tokens (JOHN SMITH under frequentPairMaxBlock) come in as
    # extra weighted matches: their holders are ranked with the pair-key holders, not all pulled in
    freq = {"ELM": 12, "SPRINGFIELD": 14}
    night = {"n|1": ["ELM", "SPRINGFIELD"]}
    registry = {"r|pair": ("EA", ["ELM", "SPRINGFIELD"])}
    registry.update({f"r|name{i}": (f"EN{i:02d}", []) for i in range(40)})
    nb, rb, mem = _frames(spark, night, registry, freq)
    weak = math.log(N / 40)  # a pair held by 40 references
    extra = spark.createDataFrame([("n|1", f"r|name{i}", weak) for i in range(40)]
                                  + [("n|1", "r|pair", weak)], "night_key string, ref_key string, weight double")
    eff = load_profile("default").effective(N)
    got = sorted(registry[r.ref_key][0] for r in ranked_candidates(nb, rb, mem, eff, 3, extra).collect())
    assert got == ["EA", "EN00", "EN01"]  # EA holds both kinds of key: its weights add up and it ranks first
    everyone = {registry[r.ref_key][0] for r in ranked_candidates(nb, rb, mem, eff, 100, extra).collect()}
    assert len(everyone) == 41


def _scored(spark, night, registry, freq, top, **kw):
    nb, rb, mem = _frames(spark, night, registry, freq)
    nt = spark.createDataFrame(list(night.items()), "record_id string, tokens array<string>")
    rt = spark.createDataFrame([(k, ts) for k, (_, ts) in registry.items()], "record_id string, tokens array<string>")
    fq = spark.createDataFrame(list(freq.items()), "token string, freq long")
    eff = load_profile("default").effective(N)
    keys = [r.ref_key for r in scored_candidates(nb, rb, mem, nt, rt, fq, eff, top, **kw).collect()]
    assert len(keys) == len(set(keys))
    return sorted(registry[k][0] for k in keys)


# a spouse shares the surname, the street, the city and the phone; the person's own earlier
# reference was written before a move (another street and city) but with the same given name and DOB
_HOUSEHOLD_FREQ = {"JOHN": 10, "MARY": 9, "ZORBA": 3, "ELM": 12, "SPRINGFIELD": 14, "5551234": 2, "OAK": 8,
                   "SHELBY": 11, "19800101": 2, "19820505": 1}
_HOUSEHOLD_NIGHT = {"n|1": ["JOHN", "ZORBA", "ELM", "SPRINGFIELD", "5551234", "19800101"]}
_HOUSEHOLD_REGISTRY = {"r|spouse": ("E01", ["MARY", "ZORBA", "ELM", "SPRINGFIELD", "5551234", "19820505"]),
                       "r|own": ("E02", ["JOHN", "ZORBA", "OAK", "SHELBY", "19800101"])}


def test_the_comparator_ranks_the_persons_own_entity_above_a_co_resident(spark):
    f, n, r = _HOUSEHOLD_FREQ, _HOUSEHOLD_NIGHT, _HOUSEHOLD_REGISTRY
    assert _entities(spark, n, r, f, 1) == ["E01"]      # key weight alone: the spouse shares more rare tokens
    assert _scored(spark, n, r, f, 1) == ["E02"]        # the whole reference scored: the person's own entity
    assert _scored(spark, n, r, f, 2) == ["E01", "E02"]


def test_an_entity_no_member_of_which_reaches_mu_is_not_pulled_in(spark):
    # two rare tokens shared (a key), but the rest differs: the engine could never link the pair
    freq = {"ZORBA": 3, "QUILL": 2, "ANNA": 9, "BORIS": 8, "KIEV": 5, "OSLO": 6, "ALPHA": 7, "OMEGA": 7}
    night = {"n|1": ["ANNA", "ZORBA", "QUILL", "OSLO", "ALPHA", "OMEGA"]}
    registry = {"r|1": ("E01", ["BORIS", "ZORBA", "QUILL", "KIEV"])}
    assert _entities(spark, night, registry, freq, 1) == ["E01"]
    assert _scored(spark, night, registry, freq, 1) == []


def test_scored_arguments_must_be_positive(spark):
    with pytest.raises(ValueError, match="at least 1"):
        _scored(spark, _HOUSEHOLD_NIGHT, _HOUSEHOLD_REGISTRY, _HOUSEHOLD_FREQ, 1, members=0)
    with pytest.raises(ValueError, match="at least 1"):
        _scored(spark, _HOUSEHOLD_NIGHT, _HOUSEHOLD_REGISTRY, _HOUSEHOLD_FREQ, 0)


def _split_case(spark):
    old = spark.createDataFrame([("r|a1", "EA"), ("r|a2", "EA"), ("r|a3", "EA"),   # EA: cut, no night ref near
                                 ("r|b1", "EB"), ("r|b2", "EB"),                   # EB: one part joins n|1
                                 ("r|c1", "EC"), ("r|c2", "EC"),                   # EC: one part joins ED's
                                 ("r|d1", "ED"),
                                 ("r|e1", "EE"), ("r|e2", "EE")],                  # EE: not cut
                                "ref_key string, entity_id string")
    clusters = spark.createDataFrame([
        ("r|a1", "k1", 1), ("r|a2", "k1", 1), ("r|a3", "k2", 2),
        ("r|b1", "k3", 1), ("r|b2", "k4", 1), ("n|1", "k4", 1),
        ("r|c1", "k5", 1), ("r|c2", "k6", 1), ("r|d1", "k6", 1),
        ("r|e1", "k7", 3), ("r|e2", "k7", 3),
        ("n|2", "k8", 1)], "ref_key string, cluster string, iteration int")
    return clusters, old


def test_a_split_without_night_evidence_is_undone_and_one_with_it_stands(spark):
    clusters, old = _split_case(spark)
    out, n = apply_split_policy(clusters, old, "night_evidence")
    got = {r.ref_key: (r.cluster, r.iteration) for r in out.collect()}
    assert n == 1
    assert got["r|a1"][0] == got["r|a2"][0] == got["r|a3"][0] == "k1"  # put back together, smallest label
    assert got["r|a3"][1] == 2  # other columns kept
    assert got["r|b1"][0] != got["r|b2"][0] == got["n|1"][0]  # the night's evidence splits EB
    assert got["r|c1"][0] != got["r|c2"][0] == got["r|d1"][0]  # so does a merge with ED
    assert got["r|e1"][0] == got["r|e2"][0] and got["n|2"][0] == "k8"
    assert len(got) == 12


def test_split_policy_never_puts_every_cut_entity_back_with_what_it_joined(spark):
    clusters, old = _split_case(spark)
    out, n = apply_split_policy(clusters, old, "never")
    got = {r.ref_key: r.cluster for r in out.collect()}
    assert n == 3  # EA, EB and EC were cut
    assert got["r|a1"] == got["r|a2"] == got["r|a3"] == "k1"
    assert got["r|b1"] == got["r|b2"] == got["n|1"] == "k3"  # EB whole, with the night reference it took
    assert got["r|c1"] == got["r|c2"] == got["r|d1"] == "k5"  # EC whole, with ED that its part merged with
    assert got["r|e1"] == got["r|e2"] == "k7" and got["n|2"] == "k8"
    assert sorted(out.columns) == sorted(clusters.columns) and out.count() == 12
    same, n0 = apply_split_policy(clusters, old, "engine")
    assert n0 == 0 and sorted(map(tuple, same.collect())) == sorted(map(tuple, clusters.collect()))
    with pytest.raises(ValueError, match="registrySplits"):
        apply_split_policy(clusters, old, "sometimes")


def test_the_profile_sets_the_scored_pool(spark):
    # candidate_references reads registryScoredPool from the profile: with a pool of one entity only
    # the spouse (first by key weight) is scored; with two, the person's own entity wins on score
    from hdwm.incremental import candidate_references

    f, n, r = _HOUSEHOLD_FREQ, _HOUSEHOLD_NIGHT, _HOUSEHOLD_REGISTRY
    base_mem = spark.createDataFrame([(k, e, " ".join(ts)) for k, (e, ts) in r.items()],
                                     "ref_key string, entity_id string, text string")
    nt = spark.createDataFrame(list(n.items()), "record_id string, tokens array<string>")
    fq = spark.createDataFrame(list(f.items()), "token string, freq long")

    def entities(pool):
        prof = load_profile("default").model_copy(update={"registryScoredPool": pool, "registryScoredMembers": 1})
        got = candidate_references(base_mem, nt, fq, prof.effective(N), prof, "scored", 1).collect()
        return sorted(r[x.ref_key][0] for x in got)

    assert entities(1) == ["E01"]
    assert entities(2) == ["E02"]


def _token_frames(spark, registry: dict, night: dict):
    """A registry and a night as the neighbourhood reads them: (population size, counts, base_mem
    (ref_key, entity_id, text), registry tokens, night tokens (record_id, tokens), frequencies).
    A night reference with a registry key replaces the stored one in the population's counts."""
    population = {**{k: v for k, v in registry.items() if k not in night}, **night}
    counts: dict[str, int] = {}
    for ts in population.values():
        for t in set(ts):
            counts[t] = counts.get(t, 0) + 1
    base_mem = spark.createDataFrame([(k, "E" + k, " ".join(ts)) for k, ts in registry.items()],
                                     "ref_key string, entity_id string, text string")
    rt = spark.createDataFrame(list(registry.items()), "record_id string, tokens array<string>")
    nt = spark.createDataFrame(list(night.items()), "record_id string, tokens array<string>")
    fq = spark.createDataFrame(list(counts.items()), "token string, freq long")
    return len(population), counts, base_mem, rt, nt, fq


@pytest.mark.parametrize("scan_limit", [None, 0], ids=["arrow-scan", "joins"])
def test_a_nights_frequent_pairs_counted_from_its_own_tokens_equal_the_engines(spark, scan_limit):
    # both ways of reading the registry's token lists (one Arrow pass with the night's sets, or
    # explode and joins when the sets are too large to ship) give the engine's keys. The night counts the registry's holders of its frequent-pair keys from the registry's rows of the
    # night's tokens only; keys and holder counts must equal the engine's frequent_pair_keys over the
    # registry (less the references sent again) plus the night, cut to the keys a night reference holds
    import random

    from hdwm.blocking import frequent_pair_keys
    from hdwm.incremental import _frequent_pair_keys, _shared_token_inputs

    rnd = random.Random(7)
    # 20 frequent words (about 22 holders each, above beta 8): a pair of them has 2-3 holders, under
    # the cap of 6, and so does a word with one of four initials now and then
    common = ["JOHN", "MARY", "SMITH", "JONES", "ELM", "OAK", "SPRINGFIELD", "SHELBY", "PETER", "LISA",
              "BROWN", "WHITE", "PINE", "BIRCH", "OGDEN", "HAVEN", "KAREN", "GREEN", "MAPLE", "CEDAR"]
    rare = [f"R{i:02d}X" for i in range(30)]
    letters = ["A", "B", "C", "D"]

    def ref():
        return rnd.sample(common, 3) + rnd.sample(rare, 1) + rnd.sample(letters, 1)

    registry = {f"r|{i}": ref() for i in range(120)}
    night = {f"n|{i}": ref() for i in range(25)}
    night.update({"r|0": ref(), "r|1": ref()})  # sent again with another text
    population = {**{k: v for k, v in registry.items() if k not in night}, **night}
    _, counts, base_mem, rt, nt, fq = _token_frames(spark, registry, night)
    prof = load_profile("default")
    eff = prof.effective(len(population)).model_copy(update={"beta": 8, "sigma": 200, "frequentPairMaxBlock": 6})
    sh = _shared_token_inputs(base_mem, nt, fq, eff, prof, rt,
                              **({} if scan_limit is None else {"scan_limit": scan_limit}))
    assert (sh.reg_fp is None) == (scan_limit == 0)
    night_fk, reg_fk = _frequent_pair_keys(sh, nt, fq, eff)
    got_night = sorted((r.record_id, r.block_key, r.ub) for r in night_fk.collect())
    got_reg = sorted((r.record_id, r.block_key) for r in reg_fk.collect())

    both = spark.createDataFrame(list(population.items()), "record_id string, tokens array<string>")
    engine = [(r.record_id, r.block_key, r.ub) for r in frequent_pair_keys(both, fq, eff).collect()]
    night_keys = {k for i, k, _ in engine if i in night}
    assert sorted(x for x in engine if x[0] in night) == got_night
    assert sorted((i, k) for i, k, _ in engine if i not in night and k in night_keys) == got_reg
    assert got_night and got_reg  # the case has keys on both sides
    assert any(ub > 1 for _, _, ub in got_night) and any(k.endswith((" A", " B", " C", " D")) for _, k, _ in got_night)


def test_bounded_members_keeps_the_found_members_then_the_most_recent(spark):
    from hdwm.incremental import bounded_members

    # entity EA has five members; the neighbourhood rule found a|1 (the oldest); EB has two
    neigh = spark.createDataFrame(
        [("a|1", "EA", "2024-01-01"), ("a|2", "EA", "2024-01-02"), ("a|3", "EA", "2024-01-03"),
         ("a|4", "EA", "2024-01-04"), ("a|5", "EA", "2024-01-04"), ("b|1", "EB", "2024-01-01"),
         ("b|2", "EB", "2024-01-02")], "ref_key string, entity_id string, first_seen_ds string")
    keep = spark.createDataFrame([("a|1",), ("a|1",)], "ref_key string")
    relinked, followers = bounded_members(neigh, keep, 3)
    assert relinked.columns == neigh.columns
    assert sorted(r.ref_key for r in relinked.collect()) == ["a|1", "a|4", "a|5", "b|1", "b|2"]
    assert sorted((r.ref_key, r.entity_id) for r in followers.collect()) == [("a|2", "EA"), ("a|3", "EA")]
    # found members are never cut, even beyond the limit
    many = spark.createDataFrame([("a|2",), ("a|3",), ("a|1",)], "ref_key string")
    relinked, followers = bounded_members(neigh, many, 1)
    assert sorted(r.ref_key for r in relinked.collect()) == ["a|1", "a|2", "a|3", "b|2"]
    assert sorted(r.ref_key for r in followers.collect()) == ["a|4", "a|5", "b|1"]
    with pytest.raises(ValueError, match="registryEntityMembers"):
        bounded_members(neigh, keep, 0)


def test_followers_join_their_entitys_main_part(spark):
    from hdwm.incremental import follow_entities

    # EA's relinked members were split 2 / 1 by the night: its followers go with the larger part (c1);
    # EB's one relinked member joined a night reference in cluster c9: its follower goes there too
    clusters = spark.createDataFrame(
        [("a|1", "c1", 1, 0.6, 0.9), ("a|2", "c1", 1, 0.6, 0.9), ("a|3", "c2", 0, None, 1.0),
         ("b|1", "c9", 1, 0.5, 0.8), ("n|1", "c9", 1, 0.5, 0.8)],
        "ref_key string, cluster string, iteration int, mu double, quality double")
    relinked = spark.createDataFrame([("a|1", "EA"), ("a|2", "EA"), ("a|3", "EA"), ("b|1", "EB")],
                                     "ref_key string, entity_id string")
    followers = spark.createDataFrame([("a|8", "EA"), ("a|9", "EA"), ("b|7", "EB")], "ref_key string, entity_id string")
    out = follow_entities(clusters, relinked, followers)
    assert out.columns == clusters.columns and out.count() == 8
    got = {r.ref_key: r.cluster for r in out.collect()}
    assert (got["a|8"], got["a|9"], got["b|7"]) == ("c1", "c1", "c9")
    assert got["a|3"] == "c2" and got["n|1"] == "c9"
    # a tie between two parts goes to the smaller cluster label
    tie = clusters.filter("ref_key != 'a|2'")
    got = {r.ref_key: r.cluster for r in follow_entities(tie, relinked.filter("ref_key != 'a|2'"), followers).collect()}
    assert got["a|8"] == "c1"


def test_the_neighbourhood_sees_the_tokens_after_the_populations_correction(spark):
    # the night writes SMTIH, the person's registry references SMITH and SMIHT: on raw tokens the
    # night reference has one blocking token (ZELDA) and no key; after the population's correction
    # (DWM25: a token held at most maxFreqErrToken times, one edit from a standard token) both sides
    # hold SMITH, so they share the engine's pair key "SMITH ZELDA" – as the engine will block them
    from hdwm.frequency import correction_map
    from hdwm.incremental import candidate_references

    registry = {"r|own": ("E1", ["ZELDA", "SMITH", "ELM"]), "r|typo": ("E2", ["ZELDA", "SMIHT", "ELM"])}
    registry.update({f"r|s{i}": (f"S{i}", ["SMITH", f"OAK{i}X"]) for i in range(8)})   # SMITH: standard
    registry.update({f"r|z{i}": (f"Z{i}", ["ZELDA", f"PINE{i}X"]) for i in range(3)})  # ZELDA alone: no key
    night = {"n|1": ["ZELDA", "SMTIH"]}
    counts: dict[str, int] = {}
    for ts in [ts for _, ts in registry.values()] + list(night.values()):
        for t in set(ts):
            counts[t] = counts.get(t, 0) + 1
    base_mem = spark.createDataFrame([(k, e, " ".join(ts)) for k, (e, ts) in registry.items()],
                                     "ref_key string, entity_id string, text string")
    rt = spark.createDataFrame([(k, ts) for k, (_, ts) in registry.items()], "record_id string, tokens array<string>")
    nt = spark.createDataFrame(list(night.items()), "record_id string, tokens array<string>")
    fq = spark.createDataFrame(list(counts.items()), "token string, freq long")
    prof = load_profile("default")
    eff = prof.effective(N)
    cmap = correction_map(fq, eff)
    assert sorted(map(tuple, cmap.collect())) == [("SMIHT", "SMITH"), ("SMTIH", "SMITH")]
    for rule in ("pair_key", "scored"):
        raw = candidate_references(base_mem, nt, fq, eff, prof, rule, 2, rt).collect()
        fixed = candidate_references(base_mem, nt, fq, eff, prof, rule, 2, rt, correction=cmap).collect()
        assert raw == [], rule
        assert sorted(r.ref_key for r in fixed) == ["r|own", "r|typo"], rule


def _population(spark):
    """Sixty references of twenty persons (three each), misspellings of frequent names among them,
    plus fillers that make SMITH, JONES and MAPLE frequent enough to be correction targets."""
    import random

    rng = random.Random(7)
    given = ["JOHN", "MARY", "PETER", "SUSAN", "DAVID"]
    rows = []
    for p in range(20):
        g, s = given[p % 5], ["SMITH", "JONES", "TAYLOR", "BROWN"][p % 4]
        street, num = ["MAPLE", "OAK", "CEDAR"][p % 3], str(100 + p)
        for v in range(3):
            sn = {"SMITH": "SMTIH", "JONES": "JONSE"}.get(s, s) if (v == 2 and p in (0, 1)) else s
            st = "MAPEL" if (v == 1 and p == 3) else street
            rows.append((f"a|{p}-{v}", f"{g} {sn} {num} {st} STREET {rng.randint(1900, 1999)}"))
    # a family no subset below holds, with a misspelling of its own: a correction the subset does not need
    rows += [(f"z|{i}", f"ROBERT {'WALKRE' if i == 0 else 'WALKER'} 900 WILLOW LANE") for i in range(7)]
    return spark.createDataFrame(rows, "ref_key string, text string")


def test_the_engine_links_a_subset_the_same_with_the_subsets_counts(spark):
    from pyspark.sql import functions as F

    from hdwm.frequency import correction_map, corrected_frequencies
    from hdwm.incremental import engine_link, raw_frequencies, subset_frequencies
    from hdwm.tokenizer import tokenize

    profile = load_profile("default")
    pop = _population(spark)
    freq = raw_frequencies(pop, profile).cache()
    n = pop.count()
    eff = profile.effective(n)
    cmap = correction_map(freq, eff).cache()
    assert cmap.filter(F.col("token").isin("SMTIH", "JONSE", "MAPEL", "WALKRE")).count() == 4  # the case has corrections
    night = pop.filter(F.col("ref_key").rlike(r"-2$"))  # holds SMTIH and JONSE
    neigh = pop.filter(F.col("ref_key").rlike(r"^a\|[0-4]-[01]$"))  # holds MAPEL
    tok = tokenize(pop.withColumnRenamed("ref_key", "record_id"), profile)
    night_tok = tok.join(night.select(F.col("ref_key").alias("record_id")), "record_id", "left_semi")
    neigh_tok = tokenize(neigh.withColumnRenamed("ref_key", "record_id"), profile)
    sub_freq, sub_cmap = subset_frequencies(freq, cmap, night_tok, neigh_tok, eff)
    assert sub_freq.count() < freq.count() and sub_cmap.count() == 3  # really cut: WALKRE is not needed
    # the corrected counts of every token the subset holds are the population's
    whole = {r.token: r.freq for r in corrected_frequencies(freq, cmap).collect()}
    for r in corrected_frequencies(sub_freq, sub_cmap).collect():
        if r.token in whole:
            assert r.freq == whole[r.token], r.token
    assert whole["SMITH"] > freq.filter("token = 'SMITH'").first().freq  # SMTIH's count moved there
    sub = night.unionByName(neigh)
    both = []
    for f, c in ((freq, cmap), (sub_freq, sub_cmap)):
        clusters, _, _ = engine_link(spark, sub, profile, f, n, None, None, None, correction=c)
        groups = {}
        for r in clusters.collect():
            groups.setdefault(r.cluster, []).append(r.ref_key)
        both.append(sorted(sorted(g) for g in groups.values()))
    assert both[0] == both[1]
    assert any(len(g) > 1 for g in both[0])  # something was linked


@pytest.mark.parametrize("chunk", [None, 7], ids=["one-chunk", "chunks-of-7-lists"])
def test_the_arrow_scan_reads_corrected_registry_tokens_as_the_joins_do(spark, monkeypatch, chunk):
    # registry references written with misspellings of frequent words (SMIHT, JOHM: rare, one edit from
    # a standard token) are read corrected, both for the shared blocking tokens and for the holders of
    # the night's frequent-pair keys; the Arrow pass must give exactly the joins' rows, whether it cuts
    # a partition's lists in one chunk or in many (a key's holders then span chunks)
    import hdwm.incremental

    if chunk is not None:
        monkeypatch.setattr(hdwm.incremental, "SCAN_CHUNK_LISTS", chunk)
    import random

    from hdwm.frequency import apply_corrections, corrected_frequencies, correction_map
    from hdwm.incremental import _frequent_pair_keys, _shared_token_inputs

    rnd = random.Random(11)
    common = ["JOHN", "MARY", "SMITH", "JONES", "ELM", "OAK", "SPRINGFIELD", "SHELBY", "PETER", "LISA",
              "BROWN", "WHITE", "PINE", "BIRCH", "OGDEN", "HAVEN"]
    typo = {"SMITH": "SMIHT", "JOHN": "JOHM"}

    def ref():
        return rnd.sample(common, 3) + [f"R{rnd.randrange(40):02d}X", rnd.choice("ABCD")]

    registry = {f"r|{i}": ref() for i in range(150)}
    for i, (a, b) in enumerate([("SMIHT", "JONES"), ("JOHM", "SMITH"), ("SMIHT", "JOHN"), ("JOHM", "ELM")]):
        registry[f"r|t{i}"] = [a, b, "OAK", "ZORBA", "A"]
    night = {f"n|{i}": ref() for i in range(30)}
    night["n|30"] = ["JOHN", "SMITH", "OAK", "ZORBA", "A"]
    night["r|t3"] = ref()  # a misspelt registry reference sent again
    n, _, base_mem, rt, raw_nt, raw_fq = _token_frames(spark, registry, night)
    prof = load_profile("default")
    eff = prof.effective(n).model_copy(update={"beta": 8, "sigma": 200, "frequentPairMaxBlock": 9})
    cmap = correction_map(raw_fq, eff).cache()
    assert {r.token for r in cmap.collect()} >= {"SMIHT", "JOHM"}  # the case has corrections
    nt = apply_corrections(raw_nt, cmap, prof.removeDuplicateTokens)
    fq = corrected_frequencies(raw_fq, cmap)
    got = {}
    for limit in (None, 0):
        sh = _shared_token_inputs(base_mem, nt, fq, eff, prof, rt, cmap,
                                  **({} if limit is None else {"scan_limit": limit}))
        night_fk, reg_fk = _frequent_pair_keys(sh, nt, fq, eff)
        got[limit] = (sorted(map(tuple, sh.reg_bt.collect())),
                      sorted(map(tuple, night_fk.collect())), sorted(map(tuple, reg_fk.collect())))
    assert got[None] == got[0]
    bt_rows, night_keys, reg_keys = got[None]
    rows = [(k, t) for t, k, _ in bt_rows]
    assert not {t for _, t in rows} & set(typo.values())  # registry rows are corrected
    assert {k for k, t in rows if t == "ZORBA"} == {f"r|t{i}" for i in range(4)}  # a blocking token the night holds
    assert night_keys and reg_keys  # the case has frequent-pair keys on both sides
    assert {("r|t1", "JOHN SMITH"), ("r|t2", "JOHN SMITH")} <= set(reg_keys)  # keys of corrected tokens
    assert not any(k == "r|t3" for k, _ in reg_keys)  # the reference sent again counts with the night's text


def test_the_arrow_scan_reports_a_key_over_the_cap_instead_of_its_holders(spark):
    # three references (one of them sent again by the night, so not counted) hold MARY SMITH: over a cap of
    # one, the scan returns one kind 2 row with the two holders it counted; JOHN SMITH (one holder) comes
    # back with its holder, and every list is corrected (SMIHT -> SMITH) before blocking tokens are kept
    from hdwm.incremental import _scan_token_lists

    rt = spark.createDataFrame([("r|1", ["MARY", "SMITH", "ZORBA"]), ("r|2", ["SMIHT", "MARY", "OAK"]),
                                ("r|3", ["MARY", "SMITH"]), ("r|4", ["JOHN", "SMITH", "SMITH"])],
                               "record_id string, tokens array<string>")
    got = sorted(((r.ref_key, r.kind, r.value, r.n) for r in _scan_token_lists(
        rt.repartition(1), ["ZORBA", "SMITH"], {"SMIHT": "SMITH"}, ["MARY SMITH", "JOHN SMITH"], ["r|3"],
        cap=1).collect()), key=str)
    assert got == sorted([
        ("r|1", 0, "ZORBA", 1), ("r|1", 0, "SMITH", 1), ("r|2", 0, "SMITH", 1), ("r|3", 0, "SMITH", 1),
        ("r|4", 0, "SMITH", 1), (None, 2, "MARY SMITH", 2), ("r|4", 1, "JOHN SMITH", 1)], key=str)


def _zipf_ref(rnd, k: int) -> list[str]:
    """A reference of up to ``k`` distinct words drawn from 60 words with weights 1/rank (common and
    rare words together, as names and addresses are)."""
    vocab = [f"W{i:02d}QX" for i in range(60)]
    return list(dict.fromkeys(rnd.choices(vocab, [1.0 / (i + 1) for i in range(60)], k=k)))


def test_key_matches_through_pair_keys_equal_those_through_single_tokens(spark):
    # the scan's pairs of blocking tokens (and the rare tokens alone) find the same night-registry pairs,
    # with the same weights, as joining every blocking token with all its stored holders
    import random

    from hdwm.blocking import rare_token_limit
    from hdwm.incremental import _shared_token_inputs, key_matches

    rnd = random.Random(5)

    def ref():
        return _zipf_ref(rnd, 7)

    registry = {f"r|{i}": ref() for i in range(220)}
    night = {f"n|{i}": ref() for i in range(40)}
    n, counts, base_mem, rt, nt, fq = _token_frames(spark, registry, night)
    prof = load_profile("default")
    eff = prof.effective(n).model_copy(
        update={"beta": 40, "blockByPairs": True, "rareTokenBlocks": True, "frequentPairMaxBlock": 0})
    sh = _shared_token_inputs(base_mem, nt, fq, eff, prof, rt)
    assert sh.reg_pk is not None
    got = {}
    for pk in (sh.reg_pk, None):
        got[pk is None] = sorted((r.night_key, r.ref_key, round(r.weight, 9))
                                 for r in key_matches(sh.night_bt, sh.reg_bt, eff, None, pk).collect())
    assert got[True] == got[False]
    assert len(got[True]) > 50
    # the scored rule reads the stored holders of the rare blocking tokens only: the scan returns just
    # those, and the pairs and weights stay the same
    rare = _shared_token_inputs(base_mem, nt, fq, eff, prof, rt, rare_only=True)
    assert rare.reg_pk is not None and 0 < rare.reg_bt.count() < sh.reg_bt.count()
    assert sorted((r.night_key, r.ref_key, round(r.weight, 9))
                  for r in key_matches(rare.night_bt, rare.reg_bt, eff, None, rare.reg_pk).collect()) == got[True]
    # a night whose pairs of blocking tokens are too many to ship still scans, and joins single tokens
    part = _shared_token_inputs(base_mem, nt, fq, eff, prof, rt,
                                scan_limit=sh.night_bt.select("token").distinct().count())
    assert part.reg_pk is None
    assert sorted((r.night_key, r.ref_key, round(r.weight, 9))
                  for r in key_matches(part.night_bt, part.reg_bt, eff, None, part.reg_pk).collect()) == got[True]
    # the case has pairs matched by one rare token alone and pairs sharing several tokens
    limit = rare_token_limit(eff)
    bt = {k: {t for t in ts if 2 <= counts[t] <= 40} for k, ts in {**registry, **night}.items()}
    shared = [bt[n] & bt[r] for n, r, _ in got[True]]
    assert any(len(s) == 1 and counts[next(iter(s))] <= limit for s in shared)
    assert any(len(s) >= 3 for s in shared)


def test_the_scored_rule_compares_the_scans_lists_as_it_compares_every_stored_list(spark):
    # with rare_only the scan returns the stored token lists of the references it found, and the scored
    # rule compares those instead of reading every stored list again: the same entities are kept, also
    # for a reference the night sends again (compared with its night tokens either way)
    import random

    from hdwm.incremental import _shared_token_inputs, scored_candidates

    rnd = random.Random(23)
    vocab = [f"W{i:02d}QX" for i in range(60)]

    def ref():
        return _zipf_ref(rnd, 8)

    registry = {f"r|{i}": ref() for i in range(200)}
    night = {}
    for i in range(30):  # near copies of stored references: one token changed
        toks = list(registry[f"r|{i * 6}"])
        toks[rnd.randrange(len(toks))] = rnd.choice(vocab)
        night[f"n|{i}"] = list(dict.fromkeys(toks))
    night.update({f"n|x{i}": ref() for i in range(10)})
    night["r|5"] = registry["r|5"][:-1] + ["W59QX"]  # sent again with another token
    n, _, base_mem, rt, nt, fq = _token_frames(spark, registry, night)
    prof = load_profile("default")
    eff = prof.effective(n).model_copy(
        update={"beta": 40, "blockByPairs": True, "rareTokenBlocks": True, "frequentPairMaxBlock": 0})
    got = []
    for rare_only in (False, True):
        sh = _shared_token_inputs(base_mem, nt, fq, eff, prof, rt, rare_only=rare_only)
        assert (sh.reg_lists is not None) == rare_only
        got.append(sorted(r.ref_key for r in scored_candidates(
            sh.night_bt, sh.reg_bt, base_mem, nt, rt, fq, eff, top_entities=2, pool=4, members=2,
            reg_pk=sh.reg_pk, reg_lists=sh.reg_lists).collect()))
    assert got[0] == got[1]
    # the near copies' stored references are found (the entity of a reference sent again is relinked by
    # link_night whatever the rule returns)
    assert len({f"r|{i * 6}" for i in range(30)} & set(got[0])) >= 20
