"""The HDWM iteration loop (``hdwm.pipeline.run_linkage``) on tiny hand-checked inputs:
the mu iteration, the stop rules, and the shortcut for iterations that cannot
change anything (same references, same links: components and quality skipped)."""

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


def test_epsilon_iterate_breaks_the_shortcut(spark, tmp_path):
    """With epsilonIterate > 0 the same links meet a higher epsilon each time, so
    the shortcut must not apply (and the clusters stay rejected)."""
    clusters, m = _run(spark, tmp_path, epsilon=0.9, epsilonIterate=0.01)
    assert clusters == [["a1"], ["a2"], ["b1"], ["b2"], ["c1"]]
    assert not any(i["unchanged"] for i in m["iterations"])
    assert all(i["links"] == 2 and i["accepted_clusters"] == 0 for i in m["iterations"])
