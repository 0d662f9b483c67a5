"""The HDWM iteration loop (``hdwm.pipeline.run_linkage``) on tiny hand-checked inputs:
the mu iteration, the stop rules, and the iteration shortcut (``iterationShortcut``), whose
partition, why-linked pairs and iteration records are checked against the plain loop."""

from __future__ import annotations

import pytest

from hdwm.config import load_profile
from hdwm.pipeline import run_linkage

pytestmark = pytest.mark.spark

# Two pairs of the same people who moved house (same name and SSN, other
# address) and one unrelated person. The identifier-match rule scores each
# pair 1.0, so it links at every mu up to 1; half of each pair's tokens
# differ, so the cluster's entropy quality is about 0.5.
REFS = [
    ("a1", "ALICE SMITH 12 OAK STREET PERTH 123456789"),
    ("a2", "ALICE SMITH 98 ELM ROAD SYDNEY 123456789"),
    ("b1", "BRUNO KEANE 7 PINE AVENUE HOBART 555123987"),
    ("b2", "BRUNO KEANE 3 BAY ROAD DARWIN 555123987"),
    ("c1", "CARLA DIAZ 45 HILL STREET ADELAIDE 777000111"),
]


def _run(spark, tmp_path, **overrides):
    profile = load_profile("default").model_copy(update=overrides)
    refs = spark.createDataFrame(REFS, "record_id string, text string")
    links, metrics = run_linkage(spark, refs, profile, str(tmp_path / "ckpt"))
    clusters = {}
    for row in links.collect():
        clusters.setdefault(row["cluster_id"], set()).add(row["record_id"])
    return sorted(sorted(c) for c in clusters.values()), metrics


def test_low_quality_clusters_are_rejected_at_every_mu_without_recomputing(spark, tmp_path):
    """epsilon 0.9: the two pair clusters are rejected in iteration 1; the same
    references remain and the same links reappear at every higher mu, so
    iterations 2..11 are marked unchanged (nothing recomputed) and everything
    ends as singletons, exactly what recomputing would give."""
    clusters, m = _run(spark, tmp_path, epsilon=0.9)
    assert clusters == [["a1"], ["a2"], ["b1"], ["b2"], ["c1"]]
    its = m["iterations"]
    assert [round(i["mu"], 2) for i in its] == [round(0.5 + 0.05 * k, 2) for k in range(11)]
    first = its[0]
    assert (first["links"], first["clusters"], first["accepted_clusters"], first["unchanged"]) == (2, 2, 0, False)
    assert 0.0 < first["mean_quality"] < 0.9
    for later in its[1:]:
        assert later["unchanged"] is True
        assert (later["references"], later["links"], later["clusters"], later["accepted_clusters"]) == (5, 2, 2, 0)
        assert later["mean_quality"] == first["mean_quality"]


def test_accepted_clusters_leave_the_next_iteration(spark, tmp_path):
    """epsilon 0.2: both pairs are accepted in iteration 1 at mu 0.5; the next
    iteration has only the unrelated reference left and stops."""
    clusters, m = _run(spark, tmp_path, epsilon=0.2)
    assert clusters == [["a1", "a2"], ["b1", "b2"], ["c1"]]
    its = m["iterations"]
    assert (its[0]["accepted_clusters"], its[0]["unchanged"]) == (2, False)
    assert its[-1]["references"] == 1 and len(its) == 2
    assert m["pairwise"] is None and m["clusters"] == 3 and m["singletons"] == 1


def test_a_rising_epsilon_keeps_the_shortcut(spark, tmp_path):
    """With epsilonIterate > 0 the same links meet a higher epsilon each time:
    a cluster rejected at a lower epsilon is rejected again, so the shortcut
    still applies, and the result is that of the plain loop."""
    clusters, m = _run(spark, tmp_path, epsilon=0.9, epsilonIterate=0.01)
    assert clusters == [["a1"], ["a2"], ["b1"], ["b2"], ["c1"]]
    assert [i["unchanged"] for i in m["iterations"]] == [False] + [True] * 10
    assert all(i["links"] == 2 and i["accepted_clusters"] == 0 for i in m["iterations"])


# -- the shortcut against the plain loop (iterationShortcut: false): the same partition, pairs and records --

# One person (a1, a2, a4: the same SSN, or the same address) and a namesake a3
# who scores 0.53-0.60 against a1 and a2; two more small entities. With
# epsilon 0.45 the four A references form one cluster of too low a quality
# until mu passes a3's scores; muIterate 0.02 gives iterations whose links do
# not change in between (skipped), then a drop that accepts (a1, a2, a4).
FAMILY = [
    ("a1", "ALICE SMITH 12 OAK STREET PERTH 123456789"),
    ("a2", "ALICE SMITH 98 ELM ROAD SYDNEY 123456789"),
    ("a3", "ALICE SMITH 5 GUM LANE BROOME"),
    ("a4", "ALICE SMYTH 12 OAK STREET PERTH"),
    ("b1", "BRUNO KEANE 7 PINE AVENUE HOBART 555123987"),
    ("b2", "BRUNO KEANE 3 BAY ROAD DARWIN 555123987"),
    ("b3", "BRUNO KEENE 7 PINE AVENUE HOBART"),
    ("c1", "CARLA DIAZ 45 HILL STREET ADELAIDE 777000111"),
    ("c2", "CARLA DIAS 45 HILL STREET ADELAIDE"),
]


#: where the shortcut loop runs: on Spark (``localMaxReferences: 0``) or on the driver (``hdwm.local``,
#: the default for inputs this small); the plain loop always runs on Spark
WHERE = pytest.mark.parametrize("where", ["spark", "driver"])


def _link_both(spark, tmp_path, refs, overrides, must=None, cannot=None, where="spark"):
    """Link ``refs`` with the shortcut (on Spark or on the driver, ``where``) and
    with the plain loop on Spark; return both (links rows, pairs rows, records).
    A quality is rounded to 12 decimals (the driver's log2 may differ from
    Spark's in the last bit, ``hdwm.local``)."""
    from hdwm.pipeline import link_references

    out = []
    decisions = {k: spark.createDataFrame(v, "id1 string, id2 string")
                 for k, v in (("must_link", must), ("cannot_link", cannot)) if v}
    key = (tuple(refs), tuple(sorted(overrides.items())), tuple(must or ()), tuple(cannot or ()))
    for shortcut in (True, False):
        if not shortcut and key in _PLAIN:
            out.append(_PLAIN[key])  # the plain loop of this case already ran (for the other ``where``)
            continue
        local = 20_000 if shortcut and where == "driver" else 0
        profile = load_profile("default").model_copy(update={**overrides, "iterationShortcut": shortcut,
                                                             "localMaxReferences": local})
        res = link_references(spark, spark.createDataFrame(refs, "record_id string, text string"), profile,
                              str(tmp_path / f"ckpt-{shortcut}"), **decisions)
        links = sorted(tuple(round(x, 12) if isinstance(x, float) else x for x in r) for r in res.links.collect())
        pairs = sorted(tuple(tuple(x) if isinstance(x, list) else x for x in r) for r in res.pairs.collect())
        out.append((links, pairs, res.metrics["iterations"]))
        if not shortcut:
            _PLAIN[key] = out[-1]
    return out


#: the plain loop's result per case (it does not depend on ``where``)
_PLAIN: dict = {}


def _same_result(fast, plain):
    """The partition (every links column), the why-linked pairs and every iteration
    record (but timing and how the work was saved) are identical."""
    assert fast[0] == plain[0]
    assert fast[1] == plain[1]
    drop = ("seconds", "unchanged", "candidates")
    assert [{k: v for k, v in r.items() if k not in drop} for r in fast[2]] == \
        [{k: v for k, v in r.items() if k not in drop} for r in plain[2]]
    assert all(r["candidates"] in ("blocked", None) and not r["unchanged"] for r in plain[2])


@WHERE
def test_skipped_iterations_then_an_accepting_one_match_the_plain_loop(spark, tmp_path, where):
    # identifyingAgreementRule off: among nine references it keeps the scores that make this case
    # skip iterations and then accept (the loop's mechanics are what is tested here)
    fast, plain = _link_both(spark, tmp_path, FAMILY, {"epsilon": 0.45, "muIterate": 0.02,
                                                       "identifyingAgreementRule": False}, where=where)
    _same_result(fast, plain)
    recs = fast[2]
    skipped = [r["iteration"] for r in recs if r["unchanged"]]
    accepted_after_skip = [r for r in recs if skipped and r["iteration"] > skipped[0] and r["accepted_clusters"]]
    assert skipped and accepted_after_skip, recs  # the case exercises a skip followed by an acceptance
    assert "restricted" in [r["candidates"] for r in recs]  # accepted references were removed, not re-blocked
    clusters = {}
    for rid, cid, *_ in fast[0]:
        clusters.setdefault(cid, set()).add(rid)
    assert {"a1", "a2", "a4"} in clusters.values() and {"a3"} in clusters.values()


@WHERE
def test_split_blocks_and_decisions_match_the_plain_loop(spark, tmp_path, where):
    """maxBlockSize 3 splits blocks, so accepted references force a new blocking
    (only new pairs scored); a rising epsilon and human decisions on top."""
    fast, plain = _link_both(spark, tmp_path, FAMILY,
                             {"epsilon": 0.45, "epsilonIterate": 0.01, "maxBlockSize": 3},
                             must=[("a3", "c2")], cannot=[("b1", "b3")], where=where)
    _same_result(fast, plain)
    assert "reblocked" in [r["candidates"] for r in fast[2]]
    cid = {rid: c for rid, c, *_ in fast[0]}
    assert cid["a3"] == cid["c2"] and cid["b1"] != cid["b3"]


@pytest.mark.slow
@WHERE
def test_messy_households_match_the_plain_loop(spark, tmp_path, where):
    """120 references of the messy household generator (benchmarks/messy.py):
    clusters accepted over several iterations, with split blocks.

    mu rises by 0.1 (``muIterate``; the default is 0.05): six mu levels instead of eleven, each a
    round of Spark jobs in both loops, and still every kind of candidate set the shortcut keeps
    (blocked once, reblocked after an acceptance, the same after an iteration that accepted
    nothing) and acceptances in four of the iterations (the asserts below hold that)."""
    import importlib.util
    import sys
    from pathlib import Path

    from hdwm.readers import read_dwm

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "messy.py"
    spec = importlib.util.spec_from_file_location("messy", path)
    messy = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("messy", messy)
    spec.loader.exec_module(messy)
    messy.write_dwm(tmp_path / "m.txt", tmp_path / "t.csv", 120, 3)
    refs = [tuple(r) for r in read_dwm(tmp_path / "m.txt").itertuples(index=False)]
    # epsilon 0.6: with the surname veto (surnameConflictRule) epsilon 0.5 accepts nearly everything in
    # iteration 1; at 0.6 clusters are accepted in four of the six iterations
    fast, plain = _link_both(spark, tmp_path, refs, {"epsilon": 0.6, "maxBlockSize": 3, "muIterate": 0.1},
                             where=where)
    _same_result(fast, plain)
    recs = fast[2]
    assert len(recs) == 6 and sum(r["accepted_clusters"] > 0 for r in recs) >= 3, recs
    assert recs[0]["largest_block"] > 3, recs[0]  # blocks above maxBlockSize: split
    # the shortcut's candidate sets: built once, rebuilt after an acceptance, kept after none
    assert {"blocked", "reblocked", "same"} <= {r["candidates"] for r in recs}, recs


def test_a_night_without_links_still_keeps_its_close_calls(spark, tmp_path):
    # A night where nobody repeats: no pair reaches mu, yet the pairs just below it are
    # what a reviewer wants to see (why-linked output; the night report's score chart).
    from hdwm.pipeline import link_references

    refs = [("a1", "ALICE SMITH 12 OAK STREET PERTH 6000"), ("a2", "ALICE SMYTH 12 OAK ST PERTH"),
            ("c1", "CARLA DIAZ 45 HILL STREET ADELAIDE 5000"), ("d1", "DEAN MORO 9 BAY ROAD HOBART 7000")]

    def link(mu):
        profile = load_profile("default").model_copy(update={"mu": mu})
        res = link_references(spark, spark.createDataFrame(refs, "record_id string, text string"), profile,
                              str(tmp_path / f"ckpt-{mu}"))
        return res.links.collect(), [r.asDict() for r in res.pairs.collect()], res.metrics["iterations"]

    _, pairs, _ = link(0.5)
    linked = [p for p in pairs if p["accepted"]]
    assert [(p["record_id_a"], p["record_id_b"]) for p in linked] == [("a1", "a2")], pairs
    score = linked[0]["score"]
    mu = round(min(1.0, score + 0.03), 6)  # the pair is now just below mu: inside the close-call band
    assert 0 < mu - score < 0.10
    links, pairs, its = link(mu)
    assert all(r["cluster_size"] == 1 for r in links)  # nobody linked
    assert its[0]["links"] == 0 and its[0]["pairs_compared"] >= 1
    assert [(p["record_id_a"], p["record_id_b"], p["iteration"], p["accepted"]) for p in pairs] == [("a1", "a2", 1, False)]
    assert pairs[0]["score"] == pytest.approx(score)
