"""The Airflow side reads a registry version's layers with pyarrow (washline.registry): own
layers, the merged version (newest layer wins, removed entities dropped,
frequencies summed), format 1 read as one layer, and the publish mode."""

from __future__ import annotations

import json
import shutil

import pytest

from registry_data import D1, D2, D3, _entities, three_nights, write_layered, write_version
from washline import registry as R
from washline.paths import RunPaths

MEMBER_COLS = ["source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds"]


@pytest.fixture
def lake(tmp_path):
    n1, n2, n3 = three_nights()
    lake = tmp_path / "lake"
    write_layered(lake, n1, None, frequencies={"SMITH": 3, "ANN": 1})
    write_layered(lake, n2, n1, frequencies={"SMITH": 2, "ANN": -1})
    write_layered(lake, n3, n2, frequencies={"BOB": 1})
    return lake / "entities"


def members(entities, ds, **kw):
    return sorted(tuple(r.values()) for r in R.read_part(entities, ds, "members", columns=MEMBER_COLS, **kw).to_pylist())


def entity_rows(entities, ds):
    table = R.read_part(entities, ds, "entities")
    assert not any(table.column("removed").to_pylist())
    return sorted(tuple(r[c] for c in ("entity_id", "member_count", "first_seen_ds", "last_changed_ds",
                                       "golden_record")) for r in table.to_pylist())


def test_merged_version_is_the_newest_row_per_key(lake):
    for v in three_nights():
        assert members(lake, v.ds) == sorted(v.members), v.ds
        assert entity_rows(lake, v.ds) == sorted(_entities(v).values()), v.ds
    # a key filter is pushed into every layer and keeps newest-wins
    assert members(lake, D3, key_filter=__import__("pyarrow.compute").compute.field("record_id").isin(["b2", "a1"])) \
        == sorted(m for m in three_nights()[2].members if m[1] in ("b2", "a1"))


def test_frequencies_are_summed_deltas_and_changes_are_the_night_s(lake):
    freq = {r["token"]: r["freq"] for r in R.read_part(lake, D2, "frequencies").to_pylist()}
    assert freq == {"SMITH": 5}  # ANN summed to 0: dropped
    assert {r["token"]: r["freq"] for r in R.read_part(lake, D3, "frequencies").to_pylist()} == {"SMITH": 5, "BOB": 1}
    changes = R.read_part(lake, D3, "changes").to_pylist()
    assert sorted((c["entity_id"], c["change"]) for c in changes) == sorted((c[0], c[1]) for c in three_nights()[2].changes)


def test_own_layers_are_the_night_s_delta(lake):
    own = R.own_layers(lake, D2)
    assert set(own) == {"members", "entities", "changes", "frequencies"}
    complete = R.manifest(lake, D2)
    assert own["members"] == lake / "_layers" / "members" / complete["own"]["members"]
    layers = R.version_layers(lake, D2)
    assert layers["members"][-1] == own["members"] and len(layers["members"]) == 2
    assert layers["changes"] == [own["changes"]]
    import pyarrow.dataset as pads

    delta = pads.dataset(str(own["entities"])).to_table().to_pylist()
    removed = [e for e in delta if e["removed"]]
    assert len(removed) == 1 and removed[0]["member_count"] == 0 and removed[0]["golden_record"] is None


def test_a_compacted_version_reads_the_same(tmp_path, lake):
    n1, n2, n3 = three_nights()
    other = tmp_path / "compacted"
    write_layered(other, n1, None)
    write_layered(other, n2, n1, compact=True)
    complete = R.manifest(other / "entities", D2)
    assert len(complete["layers"]["members"]) == 1 and complete["own"]["members"] not in complete["layers"]["members"]
    assert members(other / "entities", D2) == members(lake, D2)
    assert entity_rows(other / "entities", D2) == entity_rows(lake, D2)


def test_format_1_is_one_layer_that_is_also_its_own(tmp_path):
    n1, n2 = three_nights()[:2]
    write_version(tmp_path / "lake", n2)
    entities = tmp_path / "lake" / "entities"
    assert R.version_format(R.manifest(entities, D2)) == 1
    assert R.own_layers(entities, D2)["members"] == entities / f"ds={D2}" / "members"
    assert members(entities, D2) == sorted(n2.members)
    assert R.read_part(entities, D2, "entities").column("removed").to_pylist() == [False] * 4


def test_malformed_manifests_are_refused_with_the_reason(lake):
    path = lake / f"ds={D3}" / "_COMPLETE.json"
    good = json.loads(path.read_text())
    for change, match in [({"format": 3}, "format 3"), ({"own": {**good["own"], "members": "../../etc"}}, "layer id"),
                          ({"layers": {**good["layers"], "members": []}}, "lists no layers for members")]:
        path.write_text(json.dumps({**good, **change}))
        with pytest.raises(R.RegistryVersionError, match=match):
            R.version_layers(lake, D3)
    path.write_text(json.dumps(good))
    shutil.rmtree(lake / "_layers" / "members" / good["layers"]["members"][0])
    with pytest.raises(R.RegistryVersionError, match="does not exist"):
        R.read_part(lake, D3, "members")
    with pytest.raises(R.RegistryVersionError, match="not complete"):
        R.manifest(lake, "2025-02-01")
    paths = RunPaths(D3, lake.parent.parent, lake.parent.parent / "landing")
    with pytest.raises(R.RegistryVersionError, match="does not exist"):
        R.require_complete(paths)  # a version whose layers are gone is never staged


def test_an_unreadable_layer_file_is_refused_naming_the_layer(lake):
    good = json.loads((lake / f"ds={D3}" / "_COMPLETE.json").read_text())
    layer = lake / "_layers" / "members" / good["layers"]["members"][0]
    data = sorted(layer.glob("*.parquet"))[0]
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])  # truncated: no Parquet footer
    with pytest.raises(R.RegistryVersionError, match=f"registry layer {layer} \\(members\\) is unreadable"):
        R.read_part(lake, D3, "members")


@pytest.mark.parametrize("held, mode, why", [
    (D2, R.INCREMENTAL, "holds the night's base ds=2025-01-02"),
    (None, R.FULL, "records no published registry version"),
    (D1, R.FULL, "holds ds=2025-01-01, not the night's base ds=2025-01-02"),
    (D3, R.FULL, "already holds ds=2025-01-03 (a rerun"),
    ("2025-01-09", R.FULL, "holds ds=2025-01-09, not the night's base"),  # the lake was rolled back
])
def test_publish_mode_is_incremental_only_on_the_base(lake, held, mode, why):
    got, reason = R.publish_mode(R.manifest(lake, D3), held)
    assert got == mode and why in reason


def test_publish_mode_of_a_first_night_and_a_format_1_version(lake):
    assert R.publish_mode(R.manifest(lake, D1), None)[0] == R.FULL
    assert "no base version" in R.publish_mode(R.manifest(lake, D1), D1)[1]
    old = {k: v for k, v in R.manifest(lake, D3).items() if k not in ("format", "layers", "own")}
    assert R.publish_mode(old, D2) == (R.FULL, "ds=2025-01-03 is a format-1 version (whole folders, no delta layers)")


def test_staging_sources_per_mode(lake):
    import pyarrow as pa

    paths = RunPaths(D3, lake.parent.parent, lake.parent.parent / "landing")
    inc = R.staging_sources(paths, R.INCREMENTAL)
    assert inc["staging_entity_members"] == R.own_layers(lake, D3)["members"]
    full = R.staging_sources(paths, R.FULL)
    assert isinstance(full["staging_entity_members"], pa.Table)
    assert full["staging_entity_members"].column_names == MEMBER_COLS  # the lake-only text/attributes not read
    assert full["staging_entities"].num_rows == 6
    with pytest.raises(ValueError, match="publish mode"):
        R.staging_sources(paths, "partial")
