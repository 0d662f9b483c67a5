"""Format-2 registry versions through staging and publish on real SQLite and
PostgreSQL (versions fabricated with tests/registry_data.py): the night's delta
is upserted when the database holds its base, the merged version is published
in full otherwise, and both give the same published tables."""

from __future__ import annotations

import pytest

from registry_data import D1, D2, D3, three_nights, write_layered
from staging_data import write_slice
from washline.paths import RunPaths
from washline.registry import FULL, INCREMENTAL
from washline.staging.dialects import get_db_hook
from washline.staging.publish import NothingToPublish, held_registry, publish_slice
from washline.staging.load import load_slice
from washline.tasks import registry_staging

pytestmark = pytest.mark.postgres

REGISTRY = ("entity_members", "entities", "entity_changes")


def rows(conn_id, sql):
    hook, _ = get_db_hook(conn_id)
    return hook.get_records(sql)


def tables(conn_id, names=REGISTRY):
    return {t: sorted(tuple(map(str, r)) for r in rows(conn_id, f"SELECT * FROM {t}")) for t in names}


def night(conn_id, tmp_path, lake, ds, load_id):
    """Stage the date's slice and registry version as load_staging does, then publish."""
    paths = RunPaths(ds, tmp_path, tmp_path / "landing")
    assert paths.entities == lake / "entities"
    entity_sources, version = registry_staging(paths, conn_id, None)
    sources = write_slice(tmp_path / "spark" / load_id, ds, n=4)
    sources.update(entity_sources)
    load_slice(conn_id, ds, sources, load_id, registry_version=version)
    out = publish_slice(conn_id, ds, with_entities=True)
    assert out["registry"]["mode"] == version["publish_mode"]
    return out


@pytest.fixture
def lake(tmp_path):
    n1, n2, n3 = three_nights()
    lake = tmp_path / "lake"
    write_layered(lake, n1, None)
    write_layered(lake, n2, n1)
    write_layered(lake, n3, n2)
    return lake


def expected_registry(versions):
    """What the published tables must hold after the last of ``versions``."""
    from registry_data import _entities

    last = versions[-1]
    return {"entity_members": sorted(tuple(map(str, m)) for m in last.members),
            "entities": sorted(tuple(map(str, e)) for e in _entities(last).values()),
            "entity_changes": sorted(tuple(map(str, (v.ds, *c))) for v in versions for c in v.changes)}


def test_nightly_deltas_equal_a_full_publish_of_the_same_version(staging_conn, tmp_path, lake):
    versions = three_nights()
    out = night(staging_conn, tmp_path, lake, D1, "run-1")
    assert out["registry"]["mode"] == FULL and "no base version" in out["registry"]["reason"]
    assert held_registry(staging_conn) == D1
    for ds, load_id in ((D2, "run-2"), (D3, "run-3")):
        out = night(staging_conn, tmp_path, lake, ds, load_id)
        assert out["registry"]["mode"] == INCREMENTAL, out["registry"]
    assert out["registry"]["reason"] == "the database holds the night's base ds=2025-01-02"
    # the delta staged: night 3 changed 3 members and 4 entities, not the whole version
    assert rows(staging_conn, "SELECT COUNT(*) FROM staging_entity_members WHERE ds = '2025-01-03'") == [(3,)]
    incremental = tables(staging_conn)
    assert incremental == {**expected_registry(versions), "entity_changes": incremental["entity_changes"]}
    assert incremental["entity_changes"] == expected_registry(versions)["entity_changes"]
    state = rows(staging_conn, "SELECT ds, base_ds, publish_mode, held_ds, references_total, entities_total "
                               "FROM entity_registry_state")
    assert state == [(D3, D2, INCREMENTAL, D2, 11, 6)]

    # the same version published in full into an empty database: identical tables
    other = tmp_path / "other"
    other.mkdir()
    hook, dialect = get_db_hook(staging_conn)
    for t in (*REGISTRY, "entity_registry_state"):
        hook.run(f"DELETE FROM {t}")
    for ds in (D1, D2):  # the change rows of earlier nights are history a full publish keeps
        hook.run(f"INSERT INTO entity_changes VALUES ('{ds}', 'E0', 'new', NULL, 1)")
    moved = lake.rename(other / "lake")  # a fresh run folder, the same lake
    out = night(staging_conn, other, moved, D3, "run-full")
    assert out["registry"]["mode"] == FULL and "records no published registry version" in out["registry"]["reason"]
    full = tables(staging_conn)
    assert full["entity_members"] == incremental["entity_members"]
    assert full["entities"] == incremental["entities"]
    assert [r for r in full["entity_changes"] if r[0] == D3] == [r for r in incremental["entity_changes"] if r[0] == D3]


def test_removed_entities_are_deleted(staging_conn, tmp_path, lake):
    n1, n2, _ = three_nights()
    night(staging_conn, tmp_path, lake, D1, "run-1")
    before = {r[0] for r in rows(staging_conn, "SELECT entity_id FROM entities")}
    night(staging_conn, tmp_path, lake, D2, "run-2")
    after = {r[0] for r in rows(staging_conn, "SELECT entity_id FROM entities")}
    merged_away = {e for e in before if e not in {m[2] for m in n2.members}}
    assert len(merged_away) == 1 and not merged_away & after
    assert rows(staging_conn, "SELECT COUNT(*) FROM staging_entities WHERE ds = '2025-01-02' AND removed = 1") == [(1,)]
    # no member points at an entity that is gone
    assert rows(staging_conn, "SELECT COUNT(*) FROM entity_members m WHERE NOT EXISTS "
                              "(SELECT 1 FROM entities e WHERE e.entity_id = m.entity_id)") == [(0,)]


def test_a_rerun_of_a_published_night_publishes_in_full_and_changes_nothing(staging_conn, tmp_path, lake):
    n1, n2, n3 = three_nights()
    for ds, load_id in ((D1, "run-1"), (D2, "run-2"), (D3, "run-3")):
        night(staging_conn, tmp_path, lake, ds, load_id)
    before = tables(staging_conn)
    # the link job writes night 3 again over the same base (new layer ids, same content)
    write_layered(lake, n3, n2)
    out = night(staging_conn, tmp_path, lake, D3, "run-3-again")
    assert out["registry"]["mode"] == FULL and "already holds ds=2025-01-03" in out["registry"]["reason"]
    assert tables(staging_conn) == before
    # and once more: the rerun's record names the same version, so again in full, again identical
    out = night(staging_conn, tmp_path, lake, D3, "run-3-third")
    assert out["registry"]["mode"] == FULL and tables(staging_conn) == before


def test_a_database_not_at_the_base_gets_the_whole_version(staging_conn, tmp_path, lake):
    n1, n2, n3 = three_nights()
    night(staging_conn, tmp_path, lake, D1, "run-1")
    # night 2 never reached this database; night 3's base is night 2
    out = night(staging_conn, tmp_path, lake, D3, "run-3")
    assert out["registry"]["mode"] == FULL
    assert out["registry"]["reason"] == "the database holds ds=2025-01-01, not the night's base ds=2025-01-02"
    assert tables(staging_conn) == {**expected_registry([n1, n2, n3]),
                                    "entity_changes": sorted(tuple(map(str, (v.ds, *c)))
                                                             for v in (n1, n3) for c in v.changes)}
    # a rollback of the lake: night 2 is published again after night 3 (its base night 1 is not held)
    out = night(staging_conn, tmp_path, lake, D2, "run-2")
    assert out["registry"]["mode"] == FULL
    assert tables(staging_conn) == expected_registry([n1, n2])  # night 3's change rows belong to no published version
    assert held_registry(staging_conn) == D2


def test_a_delta_whose_base_moved_since_the_load_is_not_published(staging_conn, tmp_path, lake):
    night(staging_conn, tmp_path, lake, D1, "run-1")
    paths = RunPaths(D2, tmp_path, tmp_path / "landing")
    entity_sources, version = registry_staging(paths, staging_conn, None)
    assert version["publish_mode"] == INCREMENTAL
    sources = {**write_slice(tmp_path / "spark2", D2, n=4), **entity_sources}
    load_slice(staging_conn, D2, sources, "run-2", registry_version=version)
    hook, _ = get_db_hook(staging_conn)
    hook.run("UPDATE entity_registry_state SET ds = '2024-12-31'")  # another publish moved the database
    before = tables(staging_conn, (*REGISTRY, "published_records"))
    with pytest.raises(NothingToPublish, match="applies to ds=2025-01-01, but the database now holds ds=2024-12-31"):
        publish_slice(staging_conn, D2, with_entities=True)
    assert tables(staging_conn, (*REGISTRY, "published_records")) == before


def test_totals_that_do_not_reconcile_roll_the_publish_back(staging_conn, tmp_path, lake):
    night(staging_conn, tmp_path, lake, D1, "run-1")
    paths = RunPaths(D2, tmp_path, tmp_path / "landing")
    entity_sources, version = registry_staging(paths, staging_conn, None)
    version["entities_total"] += 1  # the manifest says one more entity than the delta produces
    sources = {**write_slice(tmp_path / "spark2", D2, n=4), **entity_sources}
    load_slice(staging_conn, D2, sources, "run-2", registry_version=version)
    before = tables(staging_conn, (*REGISTRY, "published_records", "entity_registry_state"))
    with pytest.raises(RuntimeError, match="does not reconcile .* entities holds 4 rows, the version has 5"):
        publish_slice(staging_conn, D2, with_entities=True)
    assert tables(staging_conn, (*REGISTRY, "published_records", "entity_registry_state")) == before


def test_an_older_staging_entities_table_gets_the_removed_flag(staging_conn, tmp_path, lake):
    hook, dialect = get_db_hook(staging_conn)
    hook.run("DROP TABLE IF EXISTS staging_entities")
    hook.run("CREATE TABLE staging_entities (ds VARCHAR(10) NOT NULL, load_id VARCHAR(250) NOT NULL, "
             "entity_id VARCHAR(32) NOT NULL, member_count BIGINT NOT NULL, first_seen_ds VARCHAR(10) NOT NULL, "
             "last_changed_ds VARCHAR(10) NOT NULL, golden_record VARCHAR(4000), PRIMARY KEY (ds, entity_id))")
    hook.run("INSERT INTO staging_entities VALUES ('2024-12-31', 'old', 'E0', 1, '2024-12-31', '2024-12-31', NULL)")
    night(staging_conn, tmp_path, lake, D1, "run-1")
    night(staging_conn, tmp_path, lake, D2, "run-2")
    assert rows(staging_conn, "SELECT COUNT(*) FROM staging_entities WHERE ds = '2025-01-02' AND removed = 1") == [(1,)]


def scanned_registry_rows(cur, sql):
    """Rows the scans of ``entity_members`` and ``entities`` in ``sql``'s plan produced or filtered out,
    over all their loops (``EXPLAIN ANALYZE``: index-only scans included; a branch never run counts 0)."""
    cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
    plan = cur.fetchone()[0]
    plan = (plan[0] if isinstance(plan, list) else plan)["Plan"]

    def walk(node):
        own = 0
        if node.get("Relation Name") in ("entity_members", "entities"):
            own = (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node.get("Actual Loops", 0)
        return own + sum(walk(child) for child in node.get("Plans", []))

    return walk(plan)


#: Rows a transaction has read so far from the published registry (PostgreSQL's per-transaction counters:
#: rows returned by sequential scans plus rows fetched through an index).
REGISTRY_READS = ("SELECT COALESCE(SUM(seq_tup_read + COALESCE(idx_tup_fetch, 0)), 0) FROM pg_stat_xact_user_tables "
                  "WHERE relname IN ('entity_members', 'entities')")
PAD = 60_000  # stored references added to the published registry, in 30,000 entities of 2


def test_an_incremental_night_reads_its_delta_not_the_registry(staging_conn, tmp_path, lake, request, monkeypatch):
    """A night's GX slice queries and its publish read the published registry by key for the rows the
    night stages, never the whole table: with 60,000 more stored references, each reads fewer than
    1,000 registry rows (a whole-table COUNT(*) reads them all), and the totals still reconcile."""
    if request.node.callspec.params["staging_conn"] != "postgres":
        pytest.skip("per-transaction table counters are PostgreSQL's")
    from washline.quality import runner
    from washline.staging import publish

    night(staging_conn, tmp_path, lake, D1, "run-1")
    hook, _ = get_db_hook(staging_conn)
    conn = hook.get_conn()
    cur = conn.cursor()
    cur.execute("INSERT INTO entity_members SELECT 'pad', 'p-' || g, 'E' || lpad(to_hex(4294967296 + g / 2), 16, '0'), "
                f"'{D1}', '{D1}' FROM generate_series(0, {PAD} - 1) g")
    cur.execute("INSERT INTO entities SELECT 'E' || lpad(to_hex(4294967296 + k), 16, '0'), 2, "
                f"'{D1}', '{D1}', NULL FROM generate_series(0, {PAD // 2} - 1) k")
    cur.execute(f"UPDATE entity_registry_state SET references_total = references_total + {PAD}, "
                f"entities_total = entities_total + {PAD // 2}")
    conn.commit()
    cur.execute("ANALYZE entity_members, entities")  # what autovacuum does after such a load
    conn.commit()

    paths = RunPaths(D2, tmp_path, tmp_path / "landing")
    entity_sources, version = registry_staging(paths, staging_conn, None)
    assert version["publish_mode"] == INCREMENTAL
    version = {**version, "references_total": version["references_total"] + PAD,
               "entities_total": version["entities_total"] + PAD // 2}
    load_slice(staging_conn, D2, {**write_slice(tmp_path / "spark" / "run-2", D2, n=4), **entity_sources}, "run-2",
               registry_version=version)
    assert runner.refresh_statistics(staging_conn, "postgres")  # as check_quality does before validating

    for suite in (*runner.REGISTRY_SUITE_NAMES, "staging_clusters"):
        # every column computed (a COUNT(*) around the query would let the planner drop them)
        assert scanned_registry_rows(cur, runner.query_for(suite, D2, "postgres", registry=True)) < 1_000, suite
    conn.close()

    reads = []

    def counted(cur, step, dialect, params):
        out = execute(cur, step, dialect, params)
        if step.name == "prune:staging_entity_versions":  # the last registry statement
            probe = cur.connection.cursor()
            probe.execute(REGISTRY_READS)
            reads.append(probe.fetchone()[0])
        return out

    execute = publish._execute
    monkeypatch.setattr(publish, "_execute", counted)
    out = publish_slice(staging_conn, D2, with_entities=True)
    assert out["registry"]["mode"] == INCREMENTAL
    assert reads and reads[0] < 1_000, reads
    n2 = three_nights()[1]
    assert out["rows"]["entity_members"] == len(n2.members) + PAD
    assert rows(staging_conn, "SELECT COUNT(*) FROM entity_members") == [(len(n2.members) + PAD,)]
    assert rows(staging_conn, "SELECT COUNT(*) FROM entities") == [(out["rows"]["entities"],)]
    published = tables(staging_conn)
    assert [m for m in published["entity_members"] if m[0] != "pad"] == expected_registry([n2])["entity_members"]
