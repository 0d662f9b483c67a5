"""The entity registry's pairwise figures against the truth of every night so far
(``hdwm.metrics.registry_pairwise``, ``hdwm.truth``), on two seeded nights.

Night 1 (2025-01-01) brings a1..a4 from source ``a``; night 2 (2025-01-02)
brings b1..b3 from source ``b`` and moves a4 into a3's entity. Truth: T1 =
{a1, a2}, T2 = {a3, b1}, T3 = {a4, b2}; b3 has no label. Registry after
night 2: E1 = {a1, a2}, E2 = {a3, b1, a4}, E3 = {b2}, E4 = {b3}.

Over the six labelled members: predicted pairs 1 (E1) + 3 (E2) = 4; true
pairs 1 + 1 + 1 = 3; true positives (a1, a2) and (a3, b1) = 2; so precision
1/2, recall 2/3, F1 4/7. Night 2's references alone hold no true pair and no
predicted pair, which is why the night's own figures are undefined there.
"""

from __future__ import annotations

import pytest

from hdwm.metrics import pairwise_metrics, registry_pairwise
from hdwm.truth import curated_nights, history_truth, registry_pairwise_after

pytestmark = pytest.mark.spark

D1, D2 = "2025-01-01", "2025-01-02"
#: (source, record_id, truth_entity) per night
NIGHT1 = [("a", "a1", "T1"), ("a", "a2", "T1"), ("a", "a3", "T2"), ("a", "a4", "T3")]
NIGHT2 = [("b", "b1", "T2"), ("b", "b2", "T3"), ("b", "b3", None)]
#: the registry after each night: (source, record_id, entity_id)
AFTER1 = [("a", "a1", "E1"), ("a", "a2", "E1"), ("a", "a3", "E2"), ("a", "a4", "E3")]
AFTER2 = [("a", "a1", "E1"), ("a", "a2", "E1"), ("a", "a3", "E2"), ("b", "b1", "E2"), ("a", "a4", "E2"),
          ("b", "b2", "E3"), ("b", "b3", "E4")]
TRUTH = "source string, record_id string, truth_entity string"
CURATED = "record_id string, source string, truth_entity string, ds string, given_name string"


def write_curated(spark, root, ds, rows, source_col="source", truth=True):
    """``<root>/<ds>/`` as the cleanse job writes it (record_id, source, truth_entity, ds, attributes)."""
    data = [(rid, src, t, ds, rid.upper()) for src, rid, t in rows]
    df = spark.createDataFrame(data, CURATED).withColumnRenamed("source", source_col)
    if not truth:
        df = df.drop("truth_entity")
    df.write.mode("overwrite").parquet(str(root / ds))


def write_registry(spark, registry, ds, rows):
    """Registry version ``ds`` with ``rows`` as its members, through ``hdwm.registry.write_version``."""
    from pyspark.sql import functions as F

    from hdwm.registry import empty_version, write_version

    members = (spark.createDataFrame(rows, "source string, record_id string, entity_id string")
               .withColumn("first_seen_ds", F.lit(ds)).withColumn("last_changed_ds", F.lit(ds))
               .withColumn("text", F.col("record_id")).withColumn("attributes", F.lit(None)))
    empty = empty_version(spark)
    write_version(registry, ds, empty, members, empty.entities, empty.changes, empty.frequencies,
                  {"ds": ds, "references_total": len(rows)})


def test_registry_pairwise_counts_every_labelled_member_of_every_night(spark):
    members = spark.createDataFrame(AFTER2, "source string, record_id string, entity_id string")
    truth = spark.createDataFrame([r for r in NIGHT1 + NIGHT2 if r[2]], TRUTH)
    got = registry_pairwise(members, truth)
    assert got == {"precision": 0.5, "recall": round(2 / 3, 4), "f1": round(4 / 7, 4), "tp": 2,
                   "predicted_pairs": 4, "true_pairs": 3, "references": 6, "members": 7}
    # the night's own references alone: no predicted pair, no true pair, so nothing is defined
    night = members.join(spark.createDataFrame(NIGHT2, TRUTH), ["source", "record_id"]) \
        .withColumnRenamed("entity_id", "cluster_id")
    own = pairwise_metrics(night)
    assert own["precision"] is None and own["recall"] is None and own["f1"] is None


def test_registry_pairwise_without_any_label_is_none_and_a_twice_labelled_reference_is_refused(spark):
    members = spark.createDataFrame(AFTER1, "source string, record_id string, entity_id string")
    assert registry_pairwise(members, spark.createDataFrame([("a", "a1", None)], TRUTH)) is None
    twice = spark.createDataFrame([("a", "a1", "T1"), ("a", "a1", "T9")], TRUTH)
    with pytest.raises(ValueError, match="more than once"):
        registry_pairwise(members, twice)


def test_history_truth_takes_each_night_up_to_ds_the_latest_label_winning(spark, tmp_path):
    root = tmp_path / "curated"
    write_curated(spark, root, D1, NIGHT1 + [("b", "b1", "OLD")], source_col="origin")
    write_curated(spark, root, D2, NIGHT2, source_col="origin")
    write_curated(spark, root, "2025-01-03", [("a", "a1", "LATER")], source_col="origin")  # after ds: ignored
    write_curated(spark, root, "2024-12-31", [("a", "z9", "T0")], source_col="origin", truth=False)
    (root / "notes").mkdir()
    (root / f"{D1}.metrics.json").write_text("{}")
    (root / "2024-12-30").mkdir()  # a night whose cleanse wrote nothing
    assert [p.name for p in curated_nights(root, D2)] == ["2024-12-31", D1]
    got = {(r.source, r.record_id): r.truth_entity
           for r in history_truth(spark, root, D2, source_col="origin").collect()}
    # b1 came on both nights: night 2's label wins; b3 (no label) and z9 (no truth column) give no row
    assert got == {("a", "a1"): "T1", ("a", "a2"): "T1", ("a", "a3"): "T2", ("a", "a4"): "T3",
                   ("b", "b1"): "T2", ("b", "b2"): "T3"}
    # the night given as a frame stands for <root>/<ds>
    tonight = spark.createDataFrame([("b", "b1", "NEW"), ("b", "b2", "T3")], TRUTH)
    got = {(r.source, r.record_id): r.truth_entity
           for r in history_truth(spark, root, D2, tonight, source_col="origin").collect()}
    assert got[("b", "b1")] == "NEW" and ("b", "b3") not in got and len(got) == 6
    assert history_truth(spark, tmp_path / "nowhere", D1).count() == 0


def test_registry_pairwise_after_reads_the_written_version_and_the_curated_history(spark, tmp_path):
    root, registry = tmp_path / "curated", tmp_path / "entities"
    write_curated(spark, root, D1, NIGHT1)
    write_registry(spark, registry, D1, AFTER1)
    after1 = registry_pairwise_after(spark, registry, D1, root, spark.createDataFrame(NIGHT1, TRUTH))
    # night 1 alone: a1-a2 is the one predicted and the one true pair
    assert after1 == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 1, "predicted_pairs": 1,
                      "true_pairs": 1, "references": 4, "members": 4}
    write_curated(spark, root, D2, NIGHT2)
    write_registry(spark, registry, D2, AFTER2)
    after2 = registry_pairwise_after(spark, registry, D2, root, spark.createDataFrame(NIGHT2, TRUTH))
    assert (after2["tp"], after2["predicted_pairs"], after2["true_pairs"]) == (2, 4, 3)
    assert after2["f1"] == round(4 / 7, 4) and after2["references"] == 6 and after2["members"] == 7
