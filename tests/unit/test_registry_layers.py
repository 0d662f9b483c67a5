"""The entity registry's storage: layered versions, compaction, retention and rollback.

A night writes only its own rows (a layer per part) and a manifest; a reader
merges the layers (newest row per key, frequencies summed, removed entities
dropped). These tests build versions from hand-made deltas and read them
back through ``read_version`` and the files themselves.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from hdwm.registry import (CHANGES_SCHEMA, ENTITY_LAYER_SCHEMA, FREQ_SCHEMA, MEMBERS_SCHEMA, TOKENS_SCHEMA,
                           RegistryError, compact, empty_version, layer_dir, main, prune, read_version,
                           resolve_base, rollback, version_dir, versions, write_version)

pytestmark = pytest.mark.spark

D1, D2, D3 = "2024-01-01", "2024-01-02", "2024-01-03"
FP = "fingerprint-of-a-test-tokeniser"


def _members(spark, rows):
    return spark.createDataFrame([(s, r, e, f, c, t, {}) for s, r, e, f, c, t in rows], MEMBERS_SCHEMA)


def _entities(spark, rows):
    return spark.createDataFrame(rows, ENTITY_LAYER_SCHEMA)


def _freq(spark, rows):
    return spark.createDataFrame(rows, FREQ_SCHEMA)


def _tokens(spark, rows):
    return spark.createDataFrame(rows, TOKENS_SCHEMA)


def _changes(spark, ds, rows):
    return spark.createDataFrame([(ds, e, c, f, n) for e, c, f, n in rows], CHANGES_SCHEMA)


def _publish(reg, ds):
    (version_dir(reg, ds) / "_PUBLISHED.json").write_text(json.dumps({"ds": ds}))


def _three_nights(spark, reg, **kw):
    """Night 1: A, B (E1), C (E2). Night 2: D joins E1; C's text is sent again. Night 3: E1 and E2
    merge into E1 (E2 removed). Returns the versions read back."""
    e = empty_version(spark)
    write_version(reg, D1, e,
                  _members(spark, [("s", "A", "E1", D1, D1, "ANN LEE"), ("s", "B", "E1", D1, D1, "ANN LEE"),
                                   ("s", "C", "E2", D1, D1, "BOB RAY")]),
                  _entities(spark, [("E1", 2, D1, D1, "{}", False), ("E2", 1, D1, D1, "{}", False)]),
                  _changes(spark, D1, [("E1", "new", "", 2), ("E2", "new", "", 1)]),
                  _freq(spark, [("ANN", 2), ("LEE", 2), ("BOB", 1), ("RAY", 1)]),
                  {"references_total": 3, "entities_total": 2},
                  tokens=_tokens(spark, [("s", "A", ["ANN", "LEE"]), ("s", "B", ["ANN", "LEE"]),
                                         ("s", "C", ["BOB", "RAY"])]), tokens_fingerprint=FP, **kw)
    _publish(reg, D1)
    v1 = read_version(spark, reg, D1)
    write_version(reg, D2, v1,
                  _members(spark, [("s", "D", "E1", D2, D2, "ANN LEE"), ("s", "C", "E2", D1, D2, "ROB RAY")]),
                  _entities(spark, [("E1", 3, D1, D2, "{}", False), ("E2", 1, D1, D2, '{"g":"ROB"}', False)]),
                  _changes(spark, D2, [("E1", "grow", "", 3), ("E2", "update", "", 1)]),
                  _freq(spark, [("ANN", 1), ("LEE", 1), ("BOB", -1), ("ROB", 1)]),
                  {"references_total": 4, "entities_total": 2},
                  tokens=_tokens(spark, [("s", "D", ["ANN", "LEE"]), ("s", "C", ["ROB", "RAY"])]),
                  tokens_fingerprint=FP, **kw)
    _publish(reg, D2)
    v2 = read_version(spark, reg, D2)
    write_version(reg, D3, v2,
                  _members(spark, [("s", "C", "E1", D1, D3, "ROB RAY")]),
                  _entities(spark, [("E1", 4, D1, D3, "{}", False), ("E2", 0, D1, D3, None, True)]),
                  _changes(spark, D3, [("E1", "merge", "E1,E2", 4)]),
                  _freq(spark, []), {"references_total": 4, "entities_total": 1},
                  tokens=_tokens(spark, []), tokens_fingerprint=FP, **kw)
    return v1, v2, read_version(spark, reg, D3)


def _rows(df, *cols):
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def test_a_version_is_its_layers_merged(spark, tmp_path):
    reg = tmp_path / "entities"
    v1, v2, v3 = _three_nights(spark, reg)
    assert _rows(v2.members, "record_id", "entity_id", "text") == [
        ("A", "E1", "ANN LEE"), ("B", "E1", "ANN LEE"), ("C", "E2", "ROB RAY"), ("D", "E1", "ANN LEE")]
    assert _rows(v3.members, "record_id", "entity_id", "last_changed_ds") == [
        ("A", "E1", D1), ("B", "E1", D1), ("C", "E1", D3), ("D", "E1", D2)]
    assert _rows(v3.entities, "entity_id", "member_count") == [("E1", 4)]  # E2 was removed by night 3
    assert _rows(v2.entities, "entity_id", "member_count", "golden_record") == [
        ("E1", 3, "{}"), ("E2", 1, '{"g":"ROB"}')]
    # frequencies are the sum of the nights' deltas; a count that falls to 0 is gone
    assert _rows(v3.frequencies, "token", "freq") == [("ANN", 3), ("LEE", 3), ("RAY", 1), ("ROB", 1)]
    assert _rows(v3.tokens, "record_id", "tokens") == [
        ("A", ["ANN", "LEE"]), ("B", ["ANN", "LEE"]), ("C", ["ROB", "RAY"]), ("D", ["ANN", "LEE"])]
    assert _rows(v3.changes, "entity_id", "change") == [("E1", "merge")]  # the night's own changes only
    c3 = json.loads((version_dir(reg, D3) / "_COMPLETE.json").read_text())
    assert c3["format"] == 2 and c3["base_ds"] == D2 and len(c3["layers"]["members"]) == 3
    assert c3["layers"]["members"][-1] == c3["own"]["members"]
    # the older versions still read as they were: layers are never rewritten
    assert _rows(read_version(spark, reg, D1).members, "record_id", "text")[2] == ("C", "BOB RAY")


def test_a_night_writes_its_own_rows_not_the_history(spark, tmp_path):
    """The bytes a night writes follow the night: a one-reference night on top of a large
    registry writes a members layer of one row."""
    reg = tmp_path / "entities"
    e = empty_version(spark)
    many = spark.range(20000).selectExpr(
        "'s' as source", "cast(id as string) as record_id", "concat('E', cast(id as string)) as entity_id",
        f"'{D1}' as first_seen_ds", f"'{D1}' as last_changed_ds", "concat('NAME ', cast(id as string)) as text",
        "map('k', cast(id as string)) as attributes")
    ents = many.selectExpr("entity_id", "1 as member_count", "first_seen_ds", "last_changed_ds",
                           "'{}' as golden_record", "false as removed")
    write_version(reg, D1, e, many, ents, _changes(spark, D1, []), _freq(spark, [("NAME", 20000)]),
                  {"references_total": 20000, "entities_total": 20000})
    _publish(reg, D1)
    v1 = read_version(spark, reg, D1)
    write_version(reg, D2, v1, _members(spark, [("s", "new", "Enew", D2, D2, "NAME NEW")]),
                  _entities(spark, [("Enew", 1, D2, D2, "{}", False)]), _changes(spark, D2, [("Enew", "new", "", 1)]),
                  _freq(spark, [("NAME", 1), ("NEW", 1)]), {"references_total": 20001, "entities_total": 20001})

    def size(ds, part):
        own = json.loads((version_dir(reg, ds) / "_COMPLETE.json").read_text())["own"][part]
        return sum(f.stat().st_size for f in layer_dir(reg, part, own).rglob("*.parquet"))

    assert size(D2, "members") * 20 < size(D1, "members")
    v2 = read_version(spark, reg, D2)
    assert v2.members.count() == 20001 and v2.entities.count() == 20001
    assert _rows(v2.frequencies, "token", "freq") == [("NAME", 20001), ("NEW", 1)]


def test_compaction_keeps_the_content_in_one_layer(spark, tmp_path):
    reg = tmp_path / "entities"
    _, _, v3 = _three_nights(spark, reg)
    before = {p: _rows(getattr(v3, p), *getattr(v3, p).columns) for p in ("members", "entities", "frequencies")}
    (version_dir(reg, D3) / "_PUBLISHED.json").write_text("{}")
    manifest = compact(spark, reg, D3)
    assert all(len(manifest["layers"][p]) == 1 for p in ("members", "entities", "frequencies", "tokens"))
    assert (version_dir(reg, D3) / "_PUBLISHED.json").is_file()  # markers untouched
    after = read_version(spark, reg, D3)
    for p, rows in before.items():
        assert _rows(getattr(after, p), *getattr(after, p).columns) == rows
    assert _rows(after.changes, "entity_id", "change") == [("E1", "merge")]
    # a version that would exceed max_layers is compacted as it is written
    reg2 = tmp_path / "auto"
    _, _, v3b = _three_nights(spark, reg2, max_layers=2)
    c = json.loads((version_dir(reg2, D3) / "_COMPLETE.json").read_text())
    assert len(c["layers"]["members"]) == 1
    assert _rows(v3b.members, "record_id", "entity_id") == _rows(v3.members, "record_id", "entity_id")


def test_a_format_1_version_is_read_and_layered_on_once(spark, tmp_path):
    """A lake written before layers (whole parts in ds=<d>/) stays readable; the next night copies it
    into one layer per part and writes its own layer on top."""
    from hdwm.registry import ENTITIES_SCHEMA

    reg = tmp_path / "entities"
    d = version_dir(reg, D1)
    _members(spark, [("s", "A", "E1", D1, D1, "ANN LEE")]).write.parquet(str(d / "members"))
    spark.createDataFrame([("E1", 1, D1, D1, "{}")], ENTITIES_SCHEMA).write.parquet(str(d / "entities"))
    _changes(spark, D1, [("E1", "new", "", 1)]).write.parquet(str(d / "changes"))
    _freq(spark, [("ANN", 1), ("LEE", 1)]).write.parquet(str(d / "frequencies"))
    (d / "_COMPLETE.json").write_text(json.dumps({"ds": D1, "references_total": 1, "entities_total": 1}))
    _publish(reg, D1)
    v1 = read_version(spark, reg, D1)
    assert v1.fmt == 1 and _rows(v1.members, "record_id") == [("A",)]
    write_version(reg, D2, v1, _members(spark, [("s", "B", "E1", D2, D2, "ANN LEE")]),
                  _entities(spark, [("E1", 2, D1, D2, "{}", False)]), _changes(spark, D2, [("E1", "grow", "", 2)]),
                  _freq(spark, [("ANN", 1), ("LEE", 1)]), {"references_total": 2, "entities_total": 1})
    v2 = read_version(spark, reg, D2)
    assert v2.fmt == 2 and len(v2.layers["members"]) == 2
    assert _rows(v2.members, "record_id", "entity_id") == [("A", "E1"), ("B", "E1")]
    assert _rows(v2.entities, "entity_id", "member_count") == [("E1", 2)]
    assert _rows(v2.frequencies, "token", "freq") == [("ANN", 2), ("LEE", 2)]


def test_prune_keeps_the_last_published_versions_and_what_they_need(spark, tmp_path):
    reg = tmp_path / "entities"
    _three_nights(spark, reg)
    _publish(reg, D3)
    all_layers = {p.name for p in (reg / "_layers" / "members").iterdir()}
    # a layer no version names, just written (a night in flight): left alone within the grace period
    fresh = layer_dir(reg, "members", "2024-01-04-000000000000")
    fresh.mkdir(parents=True)
    (fresh / "part-0.parquet").write_bytes(b"x")
    out = prune(reg, keep=1, grace_seconds=60)
    # D3 is layered on D1 and D2's layers: their folders go, the layers D3 names stay
    assert out["removed_versions"] == [D1, D2] and versions(reg) == [D3]
    assert {p.name for p in (reg / "_layers" / "members").iterdir()} == all_layers | {fresh.name}
    assert read_version(spark, reg, D3).members.count() == 4
    old = time.time() - 7200
    os.utime(fresh, (old, old))
    assert prune(reg, keep=1, grace_seconds=60)["removed_layers"] == 1 and not fresh.exists()
    # after a compaction the older layers are no longer needed by anyone
    compact(spark, reg, D3)
    out = prune(reg, keep=1, grace_seconds=0)
    c = json.loads((version_dir(reg, D3) / "_COMPLETE.json").read_text())
    named = set(c["layers"]["members"]) | {c["own"]["members"]}
    assert {p.name for p in (reg / "_layers" / "members").iterdir()} == named and out["freed_bytes"] > 0
    assert _rows(read_version(spark, reg, D3).members, "record_id") == [("A",), ("B",), ("C",), ("D",)]
    with pytest.raises(ValueError, match="at least 1"):
        prune(reg, keep=0)


def test_prune_never_removes_a_pending_nights_base_or_a_stash(spark, tmp_path):
    from hdwm.registry import stash_published

    reg = tmp_path / "entities"
    _three_nights(spark, reg)  # D1, D2 published; D3 written, not published (pending)
    out = prune(reg, keep=1, grace_seconds=0)
    assert out["removed_versions"] == [D1] and versions(reg) == [D2, D3]  # D2: D3's base
    assert read_version(spark, reg, D3).members.count() == 4
    # a rerun of the published D2 moved it aside: the stash and its layers are kept
    stash_published(reg, D2)
    prune(reg, keep=1, grace_seconds=0)
    assert (reg / f".published-ds={D2}" / "_COMPLETE.json").is_file()
    c = json.loads((reg / f".published-ds={D2}" / "_COMPLETE.json").read_text())
    assert all(layer_dir(reg, "members", i).is_dir() for i in c["layers"]["members"])


def test_rollback_makes_an_older_published_version_the_base(spark, tmp_path):
    reg = tmp_path / "entities"
    _three_nights(spark, reg)
    _publish(reg, D3)
    assert resolve_base(reg, "2024-01-04") == D3
    assert rollback(reg, D2, reason="bad merge on 2024-01-03") == [D3]
    assert resolve_base(reg, "2024-01-04") == D2
    rej = json.loads((version_dir(reg, D3) / "_REJECTED.json").read_text())
    assert rej == {"ds": D3, "reason": "bad merge on 2024-01-03"}
    assert not (version_dir(reg, D3) / "_PUBLISHED.json").exists()
    with pytest.raises(RegistryError, match="not a published version.*published versions kept: 2024-01-01, 2024-01-02"):
        rollback(reg, D3)
    # the command line: exit 2 and one line for a bad target or date, 0 and JSON otherwise
    assert main(["rollback", "--registry", str(reg), "--to", "2024-02-30x"]) == 2
    assert main(["rollback", "--registry", str(reg), "--to", "2023-12-31"]) == 2
    assert main(["rollback", "--registry", str(reg), "--to", D1]) == 0
    assert resolve_base(reg, "2024-01-04") == D1
    assert main(["prune", "--registry", str(reg), "--keep", "0"]) == 2
    assert main(["prune", "--registry", str(reg), "--keep", "1", "--grace-seconds", "0"]) == 0
    assert versions(reg) == [D1, D2, D3]  # D2, D3 are rejected after the kept D1: a rerun may still use them
    # a mistyped registry or version: exit 2 before any work (no "nothing pruned" success, no Spark start)
    assert main(["prune", "--registry", str(tmp_path / "entitie"), "--keep", "1"]) == 2
    assert main(["compact", "--registry", str(reg), "--ds", "2024-05-01"]) == 2
    assert main(["compact", "--registry", str(tmp_path / "entitie"), "--ds", D1]) == 2
