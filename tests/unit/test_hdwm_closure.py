"""Large-star / small-star connected components."""

from __future__ import annotations

import pytest

from hdwm.closure import connected_components

pytestmark = pytest.mark.spark


def _cc(spark, edges):
    df = spark.createDataFrame(edges, "id1 string, id2 string")
    out, rounds = connected_components(df, checkpoint_interval=2)
    return dict(out.collect()), rounds


def test_chain(spark):
    edges = [(f"n{i:02d}", f"n{i + 1:02d}") for i in range(12)]
    labels, rounds = _cc(spark, edges)
    assert set(labels.values()) == {"n00"} and len(labels) == 13
    assert rounds >= 1


def test_star_cycle_and_reverse_ids(spark):
    star = [("s0", f"s{i}") for i in range(1, 6)]
    cycle = [("c3", "c1"), ("c1", "c2"), ("c2", "c4"), ("c4", "c3")]
    labels, _ = _cc(spark, star + cycle + [("z9", "z1")])
    assert {k for k, v in labels.items() if v == "s0"} == {f"s{i}" for i in range(6)}
    assert {k for k, v in labels.items() if v == "c1"} == {"c1", "c2", "c3", "c4"}
    assert labels["z9"] == labels["z1"] == "z1"


def test_self_loops_duplicates_and_singletons(spark):
    labels, _ = _cc(spark, [("a", "a"), ("b", "c"), ("c", "b"), ("b", "c")])
    assert labels == {"a": "a", "b": "b", "c": "b"}


def test_already_converged_needs_no_round(spark):
    labels, rounds = _cc(spark, [("a", "b"), ("a", "c")])
    assert labels == {"a": "a", "b": "a", "c": "a"} and rounds == 0
