"""The Airflow side reads what the Spark side writes: versions written by
``hdwm.registry.write_version`` (format 2, delta layers) read through
``washline.registry`` (pyarrow) give the same merged version as
``hdwm.registry.read_version``, and the night's own layers are its delta."""

from __future__ import annotations

import pytest

from washline import registry as R

pytestmark = pytest.mark.spark

D1, D2 = "2024-01-01", "2024-01-02"


def test_pyarrow_reader_agrees_with_the_spark_reader(spark, tmp_path):
    from hdwm.registry import (CHANGES_SCHEMA, ENTITY_LAYER_SCHEMA, FREQ_SCHEMA, MEMBERS_SCHEMA, empty_version,
                               read_version, write_version)

    reg = tmp_path / "lake" / "entities"

    def members(rows):
        return spark.createDataFrame([(s, r, e, f, c, "T", {}) for s, r, e, f, c in rows], MEMBERS_SCHEMA)

    write_version(reg, D1, empty_version(spark),
                  members([("s", "A", "E1", D1, D1), ("s", "B", "E1", D1, D1), ("s", "C", "E2", D1, D1)]),
                  spark.createDataFrame([("E1", 2, D1, D1, "{}", False), ("E2", 1, D1, D1, "{}", False)],
                                        ENTITY_LAYER_SCHEMA),
                  spark.createDataFrame([(D1, "E1", "new", "", 2), (D1, "E2", "new", "", 1)], CHANGES_SCHEMA),
                  spark.createDataFrame([("ANN", 2), ("BOB", 1)], FREQ_SCHEMA),
                  {"ds": D1, "references_total": 3, "entities_total": 2})
    (reg / f"ds={D1}" / "_PUBLISHED.json").write_text('{"ds": "%s"}' % D1)
    write_version(reg, D2, read_version(spark, reg, D1),
                  members([("s", "C", "E1", D1, D2), ("s", "D", "E1", D2, D2)]),
                  spark.createDataFrame([("E1", 4, D1, D2, '{"g": "ANN"}', False), ("E2", 0, D1, D2, None, True)],
                                        ENTITY_LAYER_SCHEMA),
                  spark.createDataFrame([(D2, "E1", "merge", "E1,E2", 4)], CHANGES_SCHEMA),
                  spark.createDataFrame([("ANN", 1), ("BOB", -1)], FREQ_SCHEMA),
                  {"ds": D2, "references_total": 4, "entities_total": 1})
    complete = R.manifest(reg, D2)
    assert R.version_format(complete) == 2 and R.publish_mode(complete, D1)[0] == R.INCREMENTAL

    cols = ["source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds"]
    spark_v = read_version(spark, reg, D2)
    ours = R.read_part(reg, D2, "members", columns=cols).to_pylist()
    assert sorted(tuple(r.values()) for r in ours) == sorted(tuple(r) for r in spark_v.members.select(*cols).collect())
    ecols = ["entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record"]
    ents = R.read_part(reg, D2, "entities", columns=ecols).to_pylist()
    assert sorted(tuple(r.values()) for r in ents) == sorted(tuple(r) for r in spark_v.entities.select(*ecols).collect())
    assert ents == [{"entity_id": "E1", "member_count": 4, "first_seen_ds": D1, "last_changed_ds": D2,
                     "golden_record": '{"g": "ANN"}'}]
    assert {r["token"]: r["freq"] for r in R.read_part(reg, D2, "frequencies").to_pylist()} == {"ANN": 3}
    # the own layers hold the night's delta only, the removed row included
    import pyarrow.dataset as pads

    own = R.own_layers(reg, D2, complete)
    delta = pads.dataset(str(own["entities"]), ignore_prefixes=["_", "."]).to_table().to_pylist()
    assert sorted((e["entity_id"], e["removed"]) for e in delta) == [("E1", False), ("E2", True)]
    assert pads.dataset(str(own["members"]), ignore_prefixes=["_", "."]).count_rows() == 2
    assert R.read_part(reg, D2, "changes").num_rows == 1
