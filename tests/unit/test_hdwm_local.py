"""The driver-local iteration loop (``hdwm.local``) against the Spark path it replaces
for small inputs: the same blocks and candidate pairs as ``hdwm.blocking.build_blocks``
(split blocks included), the same entropy quality as ``hdwm.quality.cluster_quality``,
and the same partition, iteration records and why-linked pairs from ``link_references``."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

from hdwm.config import load_profile

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def _messy_refs(tmp_path, n, seed):
    path = ROOT / "benchmarks" / "messy.py"
    spec = importlib.util.spec_from_file_location("messy", path)
    messy = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("messy", messy)
    spec.loader.exec_module(messy)
    from hdwm.readers import read_dwm

    messy.write_dwm(tmp_path / "m.txt", tmp_path / "t.csv", n, seed)
    refs = [tuple(r) for r in read_dwm(tmp_path / "m.txt").itertuples(index=False)]
    # a reference without a token and one of a single token: no block key, a singleton
    return refs + [("zz-empty", ""), ("zz-one", "X")]


def _local_inputs(spark, tokens, freq, ctokens):
    from pyspark.sql import functions as F

    from hdwm.local import LocalInputs

    tp = tokens.select("record_id", "tokens", F.xxhash64("record_id").alias("h")).toPandas()
    return LocalInputs(
        tokens={r: list(t) if t is not None else [] for r, t in zip(tp["record_id"], tp["tokens"])},
        hashes=dict(zip(tp["record_id"], tp["h"].astype("int64").tolist())),
        freq={r["token"]: int(r["freq"]) for r in freq.collect()},
        features=ctokens.toPandas(),
    )


@pytest.fixture(scope="module")
def messy_tokens(spark, tmp_path_factory):
    """400 messy references tokenised once (the blocking overrides below do not change tokens)."""
    from hdwm.compare import comparison_tokens
    from hdwm.frequency import token_frequencies
    from hdwm.tokenizer import tokenize

    refs = _messy_refs(tmp_path_factory.mktemp("messy"), 400, 5)
    profile = load_profile("default").effective(len(refs))
    df = spark.createDataFrame(refs, "record_id string, text string")
    tokens = tokenize(df, profile).cache()
    freq = token_frequencies(tokens).cache()
    return refs, tokens, freq, _local_inputs(spark, tokens, freq, comparison_tokens(tokens, freq, profile, len(refs)))


@pytest.mark.parametrize("overrides", [
    {},  # pair keys, rare tokens, frequent pairs under their cap
    {"maxBlockSize": 4},  # beta above the cap: blocks split in xxhash64 order
    {"initialPairBlocks": True, "numberPairBlocks": True},
    {"blockByPairs": False},
])
def test_driver_blocks_are_sparks_blocks(spark, messy_tokens, overrides):
    from hdwm.blocking import block_stats, build_blocks
    from hdwm.local import block_members, block_stats as local_stats

    refs, tokens, freq, inp = messy_tokens
    profile = load_profile("default").model_copy(update=overrides).effective(len(refs))
    # every reference but a tenth of them, as after an iteration accepted some
    active_ids = sorted(r for r, _ in refs if random.Random(r).random() > 0.1)
    active = tokens.join(spark.createDataFrame([(r,) for r in active_ids], "record_id string"), "record_id")

    br = build_blocks(active, freq, profile)
    spark_members = sorted(tuple(r) for r in br.members.collect())
    spark_pairs = {tuple(r) for r in br.pairs.collect()}
    members, pairs = block_members(active_ids, inp, profile)

    assert pairs == spark_pairs and len(pairs) > 100
    assert sorted(members) == spark_members
    assert local_stats(members, profile) == block_stats(br.members, profile)
    if overrides.get("maxBlockSize") == 4:
        assert local_stats(members, profile)["oversize_blocks"] > 0  # the split path was taken


def test_driver_quality_is_sparks_quality(spark):
    from hdwm.local import cluster_quality
    from hdwm.quality import cluster_quality as spark_quality

    rnd = random.Random(7)
    words = [f"T{i}" for i in range(30)]
    tokens = {f"r{i}": rnd.sample(words, rnd.randint(0, 8)) for i in range(300)}
    assign = {r: f"c{rnd.randint(0, 60)}" for r in tokens}
    adf = spark.createDataFrame(sorted(assign.items()), "record_id string, cluster_id string")
    tdf = spark.createDataFrame(sorted(tokens.items()), "record_id string, tokens array<string>")
    want = {r["cluster_id"]: r["quality"] for r in spark_quality(adf, tdf).collect()}
    members = {}
    for r, c in assign.items():
        members.setdefault(c, []).append(r)
    got = {c: cluster_quality(m, tokens) for c, m in members.items()}
    assert got.keys() == want.keys()
    assert max(abs(got[c] - want[c]) for c in got) < 1e-12
    assert any(0 < q < 1 for q in got.values()) and cluster_quality(["r0"], tokens) == 1.0


def _longhist_refs(tmp_path, n, seed):
    sys.path.insert(0, str(ROOT / "benchmarks"))  # messy_longhist.py imports messy.py beside it
    import messy_longhist
    from hdwm.readers import read_dwm

    messy_longhist.write_dwm(tmp_path / "l.txt", tmp_path / "lt.csv", n, seed)
    return [tuple(r) for r in read_dwm(tmp_path / "l.txt").itertuples(index=False)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["households", "long histories"])
def test_driver_loop_links_as_the_spark_loop(spark, tmp_path, kind):
    """250 messy household references, clusters accepted over several iterations
    (epsilon 0.6): the partition, every iteration record
    (but its seconds) and the why-linked pairs are Spark's; human decisions too.
    ``clusterIdentifierConflict: estimated`` reads the same on both loops: true on the household
    file, false on the file of long histories (``messy_longhist.py``), with the same clusters."""
    from hdwm.pipeline import link_references

    refs = _messy_refs(tmp_path, 250, 11) if kind == "households" else _longhist_refs(tmp_path, 250, 11)
    ids = sorted(r for r, _ in refs)
    must, cannot = [(ids[3], ids[40])], [(ids[5], ids[6])]
    dec = {"must_link": spark.createDataFrame(must, "id1 string, id2 string"),
           "cannot_link": spark.createDataFrame(cannot, "id1 string, id2 string")}
    out = {}
    for where, local in (("spark", 0), ("driver", 20_000)):
        profile = load_profile("default").model_copy(update={"epsilon": 0.6, "localMaxReferences": local})
        res = link_references(spark, spark.createDataFrame(refs, "record_id string, text string"), profile,
                              str(tmp_path / where), **dec)
        links = sorted(tuple(round(x, 12) if isinstance(x, float) else x for x in r) for r in res.links.collect())
        pairs = sorted(tuple(tuple(x) if isinstance(x, list) else x for x in r) for r in res.pairs.collect())
        recs = [{k: v for k, v in r.items() if k != "seconds"} for r in res.metrics["iterations"]]
        out[where] = (links, pairs, recs, res.metrics["stages"],
                      res.metrics["agreement_estimate"]["cluster_identifier_conflict"])
    assert out["driver"][0] == out["spark"][0]
    assert out["driver"][1] == out["spark"][1]
    assert out["driver"][2] == out["spark"][2]
    assert "collect" in out["driver"][3] and "collect" not in out["spark"][3]  # the driver path was taken
    assert out["driver"][4] == out["spark"][4] and out["driver"][4]["estimated"] is (kind == "households")
    cid = {r[0]: r[1] for r in out["driver"][0]}
    assert cid[must[0][0]] == cid[must[0][1]] and cid[cannot[0][0]] != cid[cannot[0][1]]
    assert sum(r["accepted_clusters"] > 0 for r in out["driver"][2]) >= 2
