"""benchmarks/registry_nights.py's figures (shared with tests/dags/test_registry_e2e.py): the
entity partition's pairwise figures against FEBRL's truth, the share of night 1's ids kept, and the
registry tables read through a DB-API connection."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import registry_nights as rn  # noqa: E402


def test_pairwise_against_febrl_truth():
    # truth: entity 1 = {a/rec-1-org, b/rec-1-dup-0}, entity 2 = {a/rec-2-org, b/rec-2-dup-0}
    # entities: E1 holds 1-org, 1-dup-0 and 2-org; E2 holds 2-dup-0 -> tp 1, predicted 3, true 2
    members = [("febrl4a", "rec-1-org", "E1"), ("febrl4b", "rec-1-dup-0", "E1"),
               ("febrl4a", "rec-2-org", "E1"), ("febrl4b", "rec-2-dup-0", "E2")]
    m = rn.pairwise(members)
    assert (m["tp"], m["predicted_pairs"], m["true_pairs"]) == (1, 3, 2)
    assert (m["precision"], m["recall"], m["f1"]) == (0.3333, 0.5, 0.4)
    assert rn.pairwise([("a", "rec-1-org", "E1"), ("b", "rec-2-org", "E2")])["f1"] is None  # no pairs: undefined


def test_kept_share_counts_changed_and_missing_ids():
    before = [("a", "r1", "E1"), ("a", "r2", "E1"), ("a", "r3", "E3"), ("a", "r4", "E4")]
    after = [("a", "r1", "E1"), ("a", "r2", "E1"), ("a", "r3", "E1"), ("b", "r9", "E1")]  # r3 merged, r4 gone
    assert rn.kept_share(before, after) == 0.5
    assert rn.kept_share([], after) == 1.0


def test_registry_tables_sorted_from_a_dbapi_connection(tmp_path):
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.executescript(
        "CREATE TABLE entity_members (source TEXT, record_id TEXT, entity_id TEXT, first_seen_ds TEXT,"
        " last_changed_ds TEXT, extra TEXT);"
        "CREATE TABLE entities (entity_id TEXT, member_count INT);"
        "CREATE TABLE entity_changes (ds TEXT, entity_id TEXT, change TEXT, from_entity_ids TEXT);"
        "INSERT INTO entity_members VALUES ('b','r1','E2','d1','d1','x'), ('a','r2','E1','d1','d2','y');"
        "INSERT INTO entities VALUES ('E2',1), ('E1',1);"
        "INSERT INTO entity_changes VALUES ('d2','E1','grow',''), ('d1','E2','new','');")
    t = rn.registry_tables(conn)
    conn.close()
    assert t["entity_members"] == [("a", "r2", "E1", "d1", "d2"), ("b", "r1", "E2", "d1", "d1")]
    assert t["entities"] == [("E1", 1), ("E2", 1)]
    assert [r[0] for r in t["entity_changes"]] == ["d1", "d2"]
