"""Stable entity ids: new / grow / merge / split / merge+split, and decisions enforcement."""

from __future__ import annotations

import pytest

from hdwm.incremental import assign_ids, enforce_decisions
from hdwm.registry import mint_id

pytestmark = pytest.mark.spark
DS = "2024-01-05"


def _run(spark, clusters, old, ents):
    """clusters: {cluster: [keys]}, old: {key: old_id}, ents: {id: (first_seen, member_count)}."""
    c = spark.createDataFrame([(k, cl) for cl, ks in clusters.items() for k in ks], "ref_key string, cluster string")
    o = spark.createDataFrame(list(old.items()) or [], "ref_key string, old_id string")
    e = spark.createDataFrame([(i, fs, n) for i, (fs, n) in ents.items()] or [],
                              "entity_id string, first_seen_ds string, member_count int")
    ids, summary = assign_ids(c, o, e, DS)
    idmap = dict(ids.collect())
    rows = {r.entity_id: (r.change, r.from_entity_ids, r.member_count) for r in summary.collect()}
    return idmap, rows


def test_new_cluster_mints_deterministic_id(spark):
    idmap, rows = _run(spark, {"c1": ["s|2", "s|1"], "c2": ["s|3"]}, {}, {})
    e1, e2 = mint_id(DS, "s|1"), mint_id(DS, "s|3")
    assert idmap == {"s|1": e1, "s|2": e1, "s|3": e2}
    assert rows == {e1: ("new", "", 2), e2: ("new", "", 1)}
    assert e1.startswith("E") and len(e1) == 17 and e1 != e2


def test_grow_and_unchanged(spark):
    idmap, rows = _run(spark, {"c1": ["a|1", "a|2", "b|9"], "c2": ["a|5", "a|6"]},
                       {"a|1": "EA", "a|2": "EA", "a|5": "EB", "a|6": "EB"},
                       {"EA": ("2024-01-01", 2), "EB": ("2024-01-02", 2)})
    assert idmap["b|9"] == "EA" and idmap["a|5"] == idmap["a|6"] == "EB"
    assert rows["EA"] == ("grow", "", 3)
    assert rows["EB"] == (None, "", 2)  # identical entity: no change


def test_merge_keeps_oldest_then_smallest_id(spark):
    idmap, rows = _run(spark, {"c": ["a|1", "b|1", "n|1"]}, {"a|1": "EZ", "b|1": "EA"},
                       {"EZ": ("2024-01-01", 1), "EA": ("2024-01-03", 1)})
    assert set(idmap.values()) == {"EZ"}  # first seen earlier wins over the smaller id
    assert rows == {"EZ": ("merge", "EA,EZ", 3)}
    idmap, rows = _run(spark, {"c": ["a|1", "b|1"]}, {"a|1": "EZ", "b|1": "EA"},
                       {"EZ": ("2024-01-01", 1), "EA": ("2024-01-01", 1)})
    assert set(idmap.values()) == {"EA"}  # same first_seen_ds: smallest id
    assert rows == {"EA": ("merge", "EA,EZ", 2)}


def test_split_larger_part_keeps_id(spark):
    idmap, rows = _run(spark, {"p": ["x|3", "x|2"], "q": ["x|1"]},
                       {"x|1": "E1", "x|2": "E1", "x|3": "E1"}, {"E1": ("2024-01-01", 3)})
    child = mint_id(DS, "x|1")
    assert idmap == {"x|2": "E1", "x|3": "E1", "x|1": child}
    assert rows == {"E1": ("split", "E1", 2), child: ("split", "E1", 1)}


def test_split_tie_goes_to_part_with_smallest_key(spark):
    idmap, rows = _run(spark, {"p": ["x|2"], "q": ["x|1"]}, {"x|1": "E1", "x|2": "E1"}, {"E1": ("2024-01-01", 2)})
    assert idmap == {"x|1": "E1", "x|2": mint_id(DS, "x|2")}


def test_merge_and_split_together(spark):
    # E1 = a1..a3 loses a3, its other part merges with E2 (older) and a night reference
    idmap, rows = _run(spark, {"m": ["a|1", "a|2", "b|1", "b|2", "n|1"], "s": ["a|3"]},
                       {"a|1": "E1", "a|2": "E1", "a|3": "E1", "b|1": "E2", "b|2": "E2"},
                       {"E1": ("2024-01-02", 3), "E2": ("2024-01-01", 2)})
    child = mint_id(DS, "a|3")
    assert idmap == {"a|1": "E2", "a|2": "E2", "b|1": "E2", "b|2": "E2", "n|1": "E2", "a|3": child}
    assert rows == {"E2": ("merge", "E1,E2", 5), child: ("split", "E1", 1)}


def test_rerun_is_identical(spark):
    args = ({"m": ["a|1", "b|1"], "s": ["a|2"], "z": ["n|1"]}, {"a|1": "E1", "a|2": "E1", "b|1": "E2"},
            {"E1": ("2024-01-01", 2), "E2": ("2024-01-01", 1)})
    assert _run(spark, *args) == _run(spark, *args)


def test_enforce_decisions_merge_and_split(spark, capsys):
    c = spark.createDataFrame([("s|1", "A"), ("s|2", "A"), ("s|3", "A"), ("s|4", "B"), ("s|5", "C")],
                              "ref_key string, cluster string")
    must = spark.createDataFrame([("s|4", "s|5")], "id1 string, id2 string")
    cannot = spark.createDataFrame([("s|1", "s|3"), ("s|1", "s|99")], "id1 string, id2 string")
    out = dict(enforce_decisions(c, must, cannot).collect())
    assert out["s|4"] == out["s|5"]  # must-link merged B and C
    assert out["s|1"] == out["s|2"] and out["s|3"] != out["s|1"]  # cannot-link detached the larger key
    assert enforce_decisions(c, None, None) is c
    # s|99 is not linked yet: the pair waits for it, and the log says so
    assert "1 decision pair(s) name 1 reference(s) not linked yet (e.g. s|99)" in capsys.readouterr().err


def test_enforce_cannot_link_moves_must_link_group(spark):
    c = spark.createDataFrame([("s|1", "A"), ("s|2", "A"), ("s|3", "A"), ("s|4", "A")],
                              "ref_key string, cluster string")
    must = spark.createDataFrame([("s|3", "s|4")], "id1 string, id2 string")
    cannot = spark.createDataFrame([("s|1", "s|3")], "id1 string, id2 string")
    out = dict(enforce_decisions(c, must, cannot).collect())
    assert out["s|3"] == out["s|4"] != out["s|1"] == out["s|2"]
