"""``hdwm.closure.connected_components`` against networkx on random graphs.

Several hundred seeded random graphs (chains, stars, cliques, random trees,
sparse Erdős–Rényi graphs and mixtures of them, with duplicate edges, reversed
edges and self loops) of 10 to 20,000 nodes (``benchmarks/closure_scale.py``
runs the same check on graphs of 100,000 nodes and more). The graphs of one batch get
disjoint node ids (``<graph>:<label>``) and go into ONE edge DataFrame, so one
``connected_components`` call closes them all. The expected labelling is
networkx's components, each labelled with its smallest id as a string (the
``cluster_id`` rule); the comparison is a Spark join, not a driver-side loop.

Labels are random strings of digits and letters, not zero-padded, so the
lexicographic minimum is rarely the first node of a chain or the centre of a
star (the order large-star/small-star must discover).
"""

from __future__ import annotations

import math
import random

import networkx as nx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hdwm.closure import ClosureDidNotConverge, connected_components, local_components

pytestmark = pytest.mark.spark

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def _labels(rnd: random.Random, n: int) -> list[str]:
    """``n`` distinct random labels of 1 to 7 characters."""
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(1, 7))))
    labels = list(out)
    rnd.shuffle(labels)
    return labels


def _chain(rnd, nodes):
    return list(zip(nodes, nodes[1:]))


def _star(rnd, nodes):
    centre = rnd.choice(nodes)
    return [(centre, v) if rnd.random() < 0.5 else (v, centre) for v in nodes if v != centre]


def _clique(rnd, nodes):
    return [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]]


def _tree(rnd, nodes):
    return [(nodes[i], nodes[rnd.randrange(i)]) for i in range(1, len(nodes))]


def _sparse(rnd, nodes):
    # mean degree about 1.2: many small components, a few larger ones, isolated nodes
    n = len(nodes)
    return [(rnd.choice(nodes), rnd.choice(nodes)) for _ in range(int(0.6 * n))]


SHAPES = {"chain": _chain, "star": _star, "clique": _clique, "tree": _tree, "sparse": _sparse}


def _mixture(rnd, nodes):
    """Consecutive slices of ``nodes`` as chains/stars/cliques/trees, a few bridges between them."""
    edges, slices, i = [], [], 0
    while i < len(nodes):
        size = min(len(nodes) - i, rnd.randint(2, max(2, len(nodes) // 4)))
        shape = rnd.choice(["chain", "star", "tree", "clique" if size <= 40 else "tree"])
        part = nodes[i:i + size]
        edges += SHAPES[shape](rnd, part)
        slices.append(part)
        i += size
    for _ in range(rnd.randint(0, len(slices))):
        a, b = rnd.sample(range(len(slices)), 2) if len(slices) > 1 else (0, 0)
        edges.append((rnd.choice(slices[a]), rnd.choice(slices[b])))
    return edges


SHAPES["mixture"] = _mixture


def _graph(rnd: random.Random, gid: int, shape: str, n: int):
    """Edges of one random graph with ids ``<gid>:<label>``, plus noise: some
    edges repeated, some reversed, some self loops (a node with only a self
    loop is a component of its own)."""
    nodes = [f"{gid}:{x}" for x in _labels(rnd, n)]
    edges = SHAPES[shape](rnd, nodes)
    noise = []
    for a, b in rnd.sample(edges, min(len(edges), rnd.randint(0, 5))):
        noise += [(a, b), (b, a)]
    noise += [(v, v) for v in rnd.sample(nodes, min(n, rnd.randint(0, 3)))]
    edges = edges + noise
    rnd.shuffle(edges)
    return edges


def _expected(edges) -> dict[str, str]:
    g = nx.Graph()
    g.add_edges_from(edges)  # self loops add the node
    out = {}
    for comp in nx.connected_components(g):
        low = min(comp)
        out.update(dict.fromkeys(comp, low))
    return out


def _compare(spark, tmp_path, edges, name, local_max_edges=0):
    """Run connected_components on ``edges`` (``local_max_edges`` as given) and
    compare with networkx in Spark.

    Returns (rounds, number of components)."""
    expected = _expected(edges)
    e_path, x_path = tmp_path / f"{name}-edges.parquet", tmp_path / f"{name}-expected.parquet"
    pq.write_table(pa.table({"id1": [a for a, _ in edges], "id2": [b for _, b in edges]}), e_path)
    pq.write_table(pa.table({"record_id": list(expected), "want": list(expected.values())}), x_path)
    out, rounds = connected_components(spark.read.parquet(str(e_path)), local_max_edges=local_max_edges)
    want = spark.read.parquet(str(x_path))
    from pyspark.sql import functions as F

    joined = out.join(want, "record_id", "full_outer")
    row = joined.agg(
        F.count(F.lit(1)).alias("rows"),
        F.countDistinct("record_id").alias("ids"),
        F.sum(F.when(~F.col("component").eqNullSafe(F.col("want")), 1).otherwise(0)).alias("bad"),
        F.countDistinct("component").alias("components"),
    ).first()
    bad = joined.filter(~F.col("component").eqNullSafe(F.col("want"))).limit(5).collect()
    assert row["bad"] == 0, f"{row['bad']} node(s) labelled differently from networkx, e.g. {bad}"
    assert row["rows"] == row["ids"] == len(expected)  # every node once, none invented or lost
    assert row["components"] == len(set(expected.values()))
    return rounds, row["components"]


@pytest.fixture(scope="module")
def small_graphs():
    """300 graphs of 10 to 2,000 nodes (log-uniform sizes; cliques up to 60), all
    shapes: (edges, graphs per shape). Built once for the two tests that close them."""
    rnd = random.Random(20240615)
    shapes = ["chain", "star", "clique", "tree", "sparse", "mixture"]
    edges, kinds = [], {}
    for gid in range(300):
        shape = shapes[gid % len(shapes)]
        n = int(math.exp(rnd.uniform(math.log(10), math.log(60 if shape == "clique" else 2000))))
        edges += _graph(rnd, gid, shape, n)
        kinds[shape] = kinds.get(shape, 0) + 1
    return edges, kinds


def test_several_hundred_small_graphs_in_one_batch(spark, tmp_path, small_graphs):
    """300 graphs of 10 to 2,000 nodes (log-uniform sizes; cliques up to 60),
    all shapes, in one DataFrame and one ``connected_components`` call."""
    edges, kinds = small_graphs
    rounds, components = _compare(spark, tmp_path, edges, "small")
    assert kinds == dict.fromkeys(["chain", "star", "clique", "tree", "sparse", "mixture"], 50)
    assert rounds >= 2 and components > 300  # sparse graphs hold many components each


def test_the_same_graphs_closed_on_the_driver(spark, tmp_path, small_graphs):
    """The 300 graphs above with ``local_max_edges`` above their edge count:
    closed in one SciPy call on the driver (0 rounds), labelled exactly as
    networkx (and so as the rounds); one edge fewer than the count as the limit
    sends the same edges through the rounds again."""
    edges, _ = small_graphs
    rounds, components = _compare(spark, tmp_path, edges, "local", local_max_edges=len(edges))
    assert rounds == 0 and components > 300
    rounds, _ = _compare(spark, tmp_path, edges[:5000], "over", local_max_edges=4999)
    assert rounds >= 1


def test_local_components_orders_like_spark_and_keeps_lone_ends():
    """Labels are the smallest id in string order (``"10" < "9"``, as Spark
    compares strings); an edge with a None end keeps its other end as a node
    of its own; self loops make one-node components; empty input is empty."""
    nodes, comps = local_components(["9", "b", "x", None], ["10", "a", "x", "y"])
    got = dict(zip(nodes, comps))
    assert nodes == sorted(nodes) and len(nodes) == len(set(nodes)) == 6
    assert got == {"9": "10", "10": "10", "a": "a", "b": "a", "x": "x", "y": "y"}
    assert local_components([], []) == ([], [])
    with pytest.raises(ValueError, match="differ in length"):
        local_components(["a"], [])


#: nodes of each of the two large graphs below; ``benchmarks/closure_scale.py`` runs 100,000 and more
BIG_NODES = 20_000


def big_graphs(nodes: int = BIG_NODES):
    """A ``nodes``-node chain and a ``nodes``-node mixture, seeded (the benchmark runs the same)."""
    rnd = random.Random(100_000)
    return _graph(rnd, 0, "chain", nodes) + _graph(rnd, 1, "mixture", nodes)


def test_graphs_of_20k_nodes(spark, tmp_path):
    """A 20,000-node chain (the slow case for large-star/small-star: a long
    path, many rounds) and a 20,000-node mixture of chains, stars, trees and
    cliques with bridges, together in one call."""
    rounds, components = _compare(spark, tmp_path, big_graphs(), "big")
    assert rounds >= 5 and components >= 2


def test_long_chain_with_too_few_rounds_does_not_converge(spark):
    """A chain of 200 shuffled ids needs more than two rounds (the batch tests
    show chains converge with the default limit); with ``max_rounds=2`` the
    closure raises ``ClosureDidNotConverge`` instead of returning a partial
    partition."""
    rnd = random.Random(5)
    df = spark.createDataFrame(_chain(rnd, _labels(rnd, 200)), "id1 string, id2 string")
    with pytest.raises(ClosureDidNotConverge, match="did not converge in 2 rounds"):
        connected_components(df, max_rounds=2)


def test_link_job_exits_2_when_the_closure_does_not_converge(spark, monkeypatch, capsys, tmp_path):
    """Non-convergence is deterministic (the same input and profile fail the
    same way), so the link job exits 2, which SparkJobOperator treats as
    permanent (no Airflow retry), naming the profile's ``ccMaxRounds``; before,
    the exception escaped as exit 1 and Airflow ran the link twice more."""
    import importlib.util
    from pathlib import Path

    from washline.operators import PERMANENT_EXIT_CODES

    path = Path(__file__).resolve().parents[2] / "spark_jobs" / "link.py"
    spec = importlib.util.spec_from_file_location("washline_link_job_closure", path)
    link = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(link)
    rnd = random.Random(5)
    chain = spark.createDataFrame(_chain(rnd, _labels(rnd, 200)), "id1 string, id2 string")

    def run(*args, **kwargs):  # the job's closure step, with a limit this chain cannot meet
        connected_components(chain, max_rounds=2)

    monkeypatch.setattr(link, "run", run)
    out = tmp_path / "linked"
    assert link.main(["--curated", str(tmp_path / "curated"), "--out", str(out), "--ds", "2025-01-01"]) == 2
    assert "ccMaxRounds" in (out / "metrics.error.json").read_text()  # the job's error file, in --out
    err = capsys.readouterr().err
    assert "[link] error: connected components did not converge in 2 rounds" in err and "ccMaxRounds" in err
    assert 2 in PERMANENT_EXIT_CODES["link"] and "ccMaxRounds" in PERMANENT_EXIT_CODES["link"][2]
