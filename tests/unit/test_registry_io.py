"""Golden record survivorship, decisions file, version writing (the entity registry)."""

from __future__ import annotations

import json

import pytest

from hdwm.incremental import DecisionsError, read_decisions
from hdwm.registry import (MEMBERS_SCHEMA, empty_version, golden_records, read_version, write_version)

pytestmark = pytest.mark.spark


def test_golden_record_most_frequent_then_most_recent(spark):
    rows = [  # entity_id, source, record_id, last_changed_ds, attributes
        ("E1", "a", "1", "2024-01-01", {"name": "JOHN", "city": "X"}),
        ("E1", "a", "2", "2024-01-01", {"name": "JOHN", "city": "Y"}),
        ("E1", "b", "3", "2024-01-02", {"name": "JON", "city": "Z", "phone": None}),
        ("E2", "a", "9", "2024-01-01", {}),
    ]
    df = spark.createDataFrame(rows, "entity_id string, source string, record_id string, last_changed_ds string, "
                                     "attributes map<string,string>")
    gold = {r.entity_id: r.golden_record for r in golden_records(df).collect()}
    # name: JOHN twice beats JON; city: a three-way tie goes to the most recently changed member (Z)
    assert gold["E1"] == json.dumps({"city": "Z", "name": "JOHN"}, separators=(",", ":"))
    assert gold["E2"] == "{}"
    # same last_changed_ds: the larger (source, record_id) wins the tie
    df2 = spark.createDataFrame([("E", "a", "1", "d", {"c": "P"}), ("E", "b", "1", "d", {"c": "Q"})],
                                df.schema)
    assert json.loads(golden_records(df2).first().golden_record) == {"c": "Q"}


def test_decisions_file(spark, tmp_path):
    p = tmp_path / "decisions.csv"
    p.write_text("source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n"
                 "web,2,crm,1,must_link,ann,2024-01-01,same person\n"
                 "crm,5,crm,6,cannot_link,bob,2024-01-01,twins\n"
                 "crm,7,crm,8,must_link,bob,2024-01-01,\n"
                 "crm,8,crm,7,cannot_link,bob,2024-01-02,revised\n")
    must, cannot = read_decisions(spark, str(p))
    assert sorted(tuple(r) for r in must.collect()) == [("crm|1", "web|2")]
    assert sorted(tuple(r) for r in cannot.collect()) == [("crm|5", "crm|6"), ("crm|7", "crm|8")]
    assert read_decisions(spark, None) == (None, None)
    bad = tmp_path / "bad.csv"
    for body, msg in (("crm,1,crm,2,maybe,x,y,z\n", "must_link or cannot_link"),
                      ("c rm,1,crm,2,must_link,x,y,z\n", "not \\[A-Za-z0-9_-\\]"),
                      ("crm,1,crm,2,must_link,x,2024-01-01,\ncrm,2,crm,3,must_link,x,2024-01-01,\n"
                       "crm,1,crm,3,cannot_link,x,2024-01-01,\n",
                       "contradicts")):
        bad.write_text("source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n" + body)
        with pytest.raises(DecisionsError, match=msg):
            read_decisions(spark, str(bad))
    with pytest.raises(DecisionsError, match="does not exist"):
        read_decisions(spark, str(tmp_path / "nope.csv"))


def test_the_latest_decided_at_wins_as_a_time_not_as_text(spark, tmp_path):
    head = "source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n"
    p = tmp_path / "decisions.csv"
    # 10:00 at +02:00 is 08:00 UTC, before 09:30 (UTC, no offset): the cannot_link is the later one
    p.write_text(head + "crm,1,crm,2,cannot_link,ann,2025-01-09 09:30,\n"
                        "crm,1,crm,2,must_link,bob,2025-01-09T10:00:00+02:00,\n"
                        "crm,3,crm,4,must_link,ann,2025-01-09,\n"
                        "crm,3,crm,4,cannot_link,bob,2025-01-10T00:00:00Z,\n"
                        "crm,5,crm,6,must_link,bob,,undated\n"
                        "crm,5,crm,6,cannot_link,bob,2025-01-01,\n")
    must, cannot = read_decisions(spark, str(p))
    assert must is None
    assert sorted(tuple(r) for r in cannot.collect()) == [("crm|1", "crm|2"), ("crm|3", "crm|4"), ("crm|5", "crm|6")]
    for bad in ("2025-1-9", "09/01/2025 10:00", "yesterday"):
        p.write_text(head + f"crm,1,crm,2,must_link,ann,{bad},\n")
        with pytest.raises(DecisionsError, match="is not an ISO 8601 date"):
            read_decisions(spark, str(p))


def test_a_decisions_row_with_an_unquoted_comma_is_refused_by_its_line(spark, tmp_path):
    """One field too many (``note`` holds an unquoted comma): pandas would take the extra leading
    field as the row index and shift every column; the reader names the line instead."""
    head = "source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n"
    bad = tmp_path / "decisions.csv"
    bad.write_text(head + "crm,1,crm,2,must_link,ann,2024-01-01,ok\n\ncrm,3,crm,4,must_link,ann,2024-01-01,a, b\n")
    with pytest.raises(DecisionsError, match=r"decisions.csv:4: 9 fields, the header has 8"):
        read_decisions(spark, str(bad))
    bad.write_text(head + "crm,1,crm,2,must_link,ann\n")  # a short row
    with pytest.raises(DecisionsError, match=r":2: 6 fields"):
        read_decisions(spark, str(bad))
    # a quoted comma, and a note over two lines, are one field each
    good = tmp_path / "good.csv"
    good.write_text(head + 'crm,1,crm,2,must_link,ann,2024-01-01,"a, b"\ncrm,3,crm,4,cannot_link,ann,2024-01-01,"x\ny"\n')
    must, cannot = read_decisions(spark, str(good))
    assert [tuple(r) for r in must.collect()] == [("crm|1", "crm|2")]
    assert [tuple(r) for r in cannot.collect()] == [("crm|3", "crm|4")]


def test_an_empty_decisions_file_or_a_repeated_column_is_refused(spark, tmp_path):
    """A zero-byte file (a truncated export) has no header to say what it holds; a header naming
    ``decision`` twice made pandas read the second as ``decision.1`` and use the first silently."""
    f = tmp_path / "decisions.csv"
    f.write_bytes(b"")
    with pytest.raises(DecisionsError, match=r"is empty: it needs at least the header source_a,"):
        read_decisions(spark, str(f))
    f.write_text("source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,decision\n"
                 "crm,1,crm,2,must_link,ann,2024-01-01,cannot_link\n")
    with pytest.raises(DecisionsError, match=r"\['decision'\] appear more than once"):
        read_decisions(spark, str(f))
    f.write_text("source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n")
    assert read_decisions(spark, str(f)) == (None, None)  # a header alone: no decisions


def test_write_version_replaces_the_manifest_and_keeps_layers_immutable(spark, tmp_path):
    reg = tmp_path / "entities"
    e = empty_version(spark)
    m = spark.createDataFrame([("b", "2", "E2", "d", "d", "t", {}), ("a", "1", "E1", "d", "d", "t", {"k": "v"})],
                              MEMBERS_SCHEMA)
    write_version(reg, "2024-01-01", e, m, e.entities, e.changes, e.frequencies, {"ds": "2024-01-01"})
    first = json.loads((reg / "ds=2024-01-01" / "_COMPLETE.json").read_text())
    (reg / "ds=2024-01-01" / "_PUBLISHED.json").write_text("{}")
    (reg / "ds=2024-01-01" / "stray").write_text("x")
    v = read_version(spark, reg, "2024-01-01")
    assert [(r.source, r.record_id) for r in v.members.collect()] == [("a", "1"), ("b", "2")]  # sorted rows
    write_version(reg, "2024-01-01", e, m.limit(0), e.entities, e.changes, e.frequencies,
                  {"ds": "2024-01-01", "n": 0})
    assert sorted(p.name for p in (reg / "ds=2024-01-01").iterdir()) == ["_COMPLETE.json"]  # markers gone
    assert read_version(spark, reg, "2024-01-01").members.count() == 0
    assert sorted(p.name for p in reg.iterdir()) == ["_layers", "ds=2024-01-01"]  # no temp sibling left
    second = json.loads((reg / "ds=2024-01-01" / "_COMPLETE.json").read_text())
    assert second["format"] == 2 and second["base_ds"] is None and second["n"] == 0
    # the rewrite wrote new layers; the first write's are still there (until prune) and unchanged
    assert second["own"]["members"] != first["own"]["members"]
    assert (reg / "_layers" / "members" / first["own"]["members"]).is_dir()


def test_a_golden_record_that_changes_without_its_members_gets_an_update_row(spark):
    """Same members, another golden record (a member sent again with other values): an ``update``
    change row and last_changed_ds = the night; the same values again: no row, nothing changes."""
    from hdwm.config import load_profile
    from hdwm.incremental import assign_and_build
    from hdwm.registry import ENTITIES_SCHEMA, RegistryVersion

    d1, d2 = "2024-01-01", "2024-01-02"
    members = spark.createDataFrame([
        ("a", "1", "EA", d1, d1, "ANN LEE", {"given_name": "ANN", "surname": "LEE"}),
        ("a", "2", "EA", d1, d1, "ANN LEE", {"given_name": "ANN", "surname": "LEE"}),
        ("a", "3", "EB", d1, d1, "BOB RAY", {"given_name": "BOB", "surname": "RAY"})], MEMBERS_SCHEMA)
    gold = {r.entity_id: r.golden_record for r in golden_records(members).collect()}
    ents = spark.createDataFrame([("EA", 2, d1, d1, gold["EA"]), ("EB", 1, d1, d1, gold["EB"])], ENTITIES_SCHEMA)
    e = empty_version(spark)
    base = RegistryVersion(d1, members, ents, e.frequencies, e.changes, {"references_total": 3})
    clusters = spark.createDataFrame([("a|1", "c1", 1, 0.9, 1.0), ("a|2", "c1", 1, 0.9, 1.0), ("a|3", "c2", 0, None, 1.0)],
                                     "ref_key string, cluster string, iteration int, mu double, quality double")
    schema = "ref_key string, source string, record_id string, text string, attributes map<string,string>"
    profile = load_profile("default")

    def night(surname):
        return spark.createDataFrame([(f"a|{i}", "a", i, f"ANN {surname}", {"given_name": "ANN", "surname": surname})
                                      for i in ("1", "2")], schema)

    res = assign_and_build(spark, base, clusters, night("KING"), d2, profile)
    rows = [(r.ds, r.entity_id, r.change, r.from_entity_ids, r.member_count) for r in res.changes.collect()]
    assert rows == [(d2, "EA", "update", "", 2)] and res.counts["updates"] == 1
    e2 = {r.entity_id: r for r in res.entities.collect()}
    assert json.loads(e2["EA"].golden_record)["surname"] == "KING" and e2["EA"].last_changed_ds == d2
    assert "EB" not in e2  # unchanged: not in the night's layer, the base's row stands
    assert {(r.source, r.record_id) for r in res.members.collect()} == {("a", "1"), ("a", "2")}
    assert res.counts["entities_total"] == 2 and res.counts["references_total"] == 3
    same = assign_and_build(spark, base, clusters, night("LEE"), d2, profile)
    assert same.changes.count() == 0 and same.counts["updates"] == 0
    assert same.entities.count() == 0  # nothing about an entity changed


def test_stored_tokens_are_read_only_under_the_profiles_fingerprint(spark, tmp_path):
    """A version keeps its members' tokens (part ``tokens/``, fingerprint in ``_COMPLETE.json``); a night
    reads them instead of tokenising the texts again, but only under its own tokeniser's fingerprint."""
    from hdwm.config import load_profile
    from hdwm.incremental import registry_tokens
    from hdwm.registry import TOKENS_SCHEMA, ref_key_col
    from hdwm.tokenizer import tokens_fingerprint

    reg, d = tmp_path / "entities", "2024-01-01"
    e = empty_version(spark)
    m = spark.createDataFrame([("a", "1", "E1", d, d, "ANN LEE", {}), ("a", "2", "E2", d, d, "BOB RAY", {})],
                              MEMBERS_SCHEMA)
    # stored tokens that differ from the texts, so the test can tell which were used
    stored = spark.createDataFrame([("a", "2", ["STORED", "TWO"]), ("a", "1", ["STORED", "ONE"])], TOKENS_SCHEMA)
    profile = load_profile("default")
    fp = tokens_fingerprint(profile)
    with pytest.raises(ValueError, match="fingerprint"):
        write_version(reg, d, e, m, e.entities, e.changes, e.frequencies, {"ds": d}, tokens=stored)
    write_version(reg, d, e, m, e.entities, e.changes, e.frequencies, {"ds": d}, tokens=stored, tokens_fingerprint=fp)
    v = read_version(spark, reg, d)
    assert v.complete["tokens_fingerprint"] == fp
    assert [(r.source, r.record_id) for r in v.tokens.collect()] == [("a", "1"), ("a", "2")]  # sorted rows
    mem = v.members.withColumn("ref_key", ref_key_col())
    tok, from_version = registry_tokens(v, mem, profile)
    assert from_version and {r.record_id: r.tokens for r in tok.collect()} == {
        "a|1": ["STORED", "ONE"], "a|2": ["STORED", "TWO"]}
    other = profile.model_copy(update={"tokenizerType": "Compress"})
    assert tokens_fingerprint(other) != fp
    tok, from_version = registry_tokens(v, mem, other)  # another tokeniser: the texts are tokenised again
    assert not from_version and {r.record_id: r.tokens for r in tok.collect()} == {
        "a|1": ["ANN", "LEE"], "a|2": ["BOB", "RAY"]}
    write_version(reg, d, e, m, e.entities, e.changes, e.frequencies, {"ds": d, "tokens_fingerprint": fp})
    v = read_version(spark, reg, d)  # written without tokens: none stored, and no stale fingerprint claims any
    assert v.tokens is None and "tokens_fingerprint" not in v.complete
    c = json.loads((reg / f"ds={d}" / "_COMPLETE.json").read_text())
    assert c["layers"]["tokens"] == [] and "tokens" not in c["own"]
