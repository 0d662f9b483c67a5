"""The entity registry through staging on real SQLite and PostgreSQL: a night's
registry version (fabricated as the link job writes it, see
tests/registry_data.py) is staged with the night's slice in one transaction and
published with it in one transaction; a format-1 version is published in full
(entity_members / entities replaced by the version, entity_changes per date); a
failure leaves every published table exactly as before. The format-2 publish
modes are tested in test_registry_incremental.py."""

from __future__ import annotations

import pytest

from registry_data import D1, D2, two_nights, write_version
from staging_data import write_slice
from washline.registry import RegistryVersionError
from washline.tasks import registry_staging
from washline.paths import RunPaths
from washline.staging.dialects import get_db_hook
from washline.staging.load import SchemaDriftError, load_slice
from washline.staging.publish import NothingToPublish, publish_slice

pytestmark = pytest.mark.postgres

PUBLISHED = ("published_records", "published_links", "published_clusters", "publish_log", "entity_members",
             "entities", "entity_changes")


def rows(conn_id, sql):
    hook, _ = get_db_hook(conn_id)
    return hook.get_records(sql)


def snapshot(conn_id):
    return {t: sorted(tuple(map(str, r)) for r in rows(conn_id, f"SELECT * FROM {t}")) for t in PUBLISHED}


def stage(conn_id, tmp_path, version, load_id, n=6, **kw):
    """Write the night's slice and registry version, stage both in one load."""
    lake = tmp_path / "lake"
    write_version(lake, version, **kw)
    sources = write_slice(tmp_path / "spark", version.ds, n=n)
    entity_sources, row = registry_staging(RunPaths(version.ds, tmp_path, tmp_path / "landing"), conn_id, None)
    sources.update(entity_sources)
    return load_slice(conn_id, version.ds, sources, load_id, registry_version=row)


def members(conn_id):
    return sorted(rows(conn_id, "SELECT source, record_id, entity_id, first_seen_ds, last_changed_ds "
                                "FROM entity_members"))


def test_two_nights_publish_the_whole_state_and_the_nights_changes(staging_conn, tmp_path):
    night1, night2 = two_nights()
    loaded = stage(staging_conn, tmp_path, night1, "run-1")
    assert loaded["rows"] == {"staging_records": 6, "staging_links": 6, "staging_clusters": 3,
                              "staging_entity_members": 6, "staging_entities": 4, "staging_entity_changes": 4}
    out = publish_slice(staging_conn, D1, with_entities=True)
    assert {k: out["rows"][k] for k in ("entity_members", "entities", "entity_changes")} == {
        "entity_members": 6, "entities": 4, "entity_changes": 4}
    assert members(staging_conn) == sorted(night1.members)

    stage(staging_conn, tmp_path, night2, "run-2", n=4)
    publish_slice(staging_conn, D2, with_entities=True)
    # the whole new state, not a per-date slice: 6 + 4 references, the merged entity gone
    assert members(staging_conn) == sorted(night2.members)
    ents = sorted(rows(staging_conn, "SELECT entity_id, member_count, first_seen_ds, last_changed_ds, "
                                     "golden_record FROM entities"))
    assert ents == sorted(tuple(e) for e in night2.entities())
    assert sum(e[1] for e in ents) == len(night2.members) == 10
    changes = sorted(rows(staging_conn, "SELECT ds, entity_id, change, COALESCE(from_entity_ids, ''), member_count "
                                        "FROM entity_changes"))
    assert changes == sorted([(D1, *c) for c in night1.changes] + [(D2, *c) for c in night2.changes])
    # the slice tables keep one slice per date as before
    assert dict(rows(staging_conn, "SELECT ds, COUNT(*) FROM published_records GROUP BY ds")) == {D1: 6, D2: 4}
    # staged states of earlier dates are pruned at publish; the night's changes stay
    assert rows(staging_conn, "SELECT DISTINCT ds FROM staging_entity_members") == [(D2,)]
    assert sorted(rows(staging_conn, "SELECT DISTINCT ds FROM staging_entity_changes")) == [(D1,), (D2,)]

    # a rerun of night 2 (same version) leaves every published table identical (publish_log aside)
    before = snapshot(staging_conn)
    stage(staging_conn, tmp_path, night2, "run-3", n=4)
    publish_slice(staging_conn, D2, with_entities=True)
    after = snapshot(staging_conn)
    for table in ("entity_members", "entities", "entity_changes"):
        assert after[table] == before[table], table


def test_failed_publish_leaves_slice_and_registry_untouched(staging_conn, tmp_path):
    night1, night2 = two_nights()
    stage(staging_conn, tmp_path, night1, "run-1")
    publish_slice(staging_conn, D1, with_entities=True)
    stage(staging_conn, tmp_path, night2, "run-2", n=4)
    before = snapshot(staging_conn)
    # entity_changes (the last registry table written) now refuses every row: the
    # slice and entity_members/entities were already replaced inside the transaction
    hook, _ = get_db_hook(staging_conn)
    conn = hook.get_conn()
    cur = conn.cursor()
    cur.execute("DROP TABLE entity_changes")
    cur.execute("CREATE TABLE entity_changes (ds VARCHAR(10), entity_id VARCHAR(32), change VARCHAR(8), "
                "from_entity_ids VARCHAR(4000), member_count BIGINT CHECK (member_count < 0))")
    conn.commit()
    conn.close()
    with pytest.raises(Exception, match="(?i)check|constraint"):
        publish_slice(staging_conn, D2, with_entities=True)
    after = snapshot(staging_conn)
    after["entity_changes"] = before["entity_changes"] = []  # the table was recreated empty on purpose
    assert after == before


def test_registry_version_must_be_staged_with_the_slice(staging_conn, tmp_path):
    night1, _ = two_nights()
    stage(staging_conn, tmp_path, night1, "run-1")
    publish_slice(staging_conn, D1, with_entities=True)
    before = snapshot(staging_conn)
    # a later load of the date without its registry version: the staged version is from another load
    load_slice(staging_conn, D1, write_slice(tmp_path / "again", D1, n=6), "run-2")
    with pytest.raises(NothingToPublish, match="staging_entity_members ds=2025-01-01 has 6 row.*other than 'run-2'"):
        publish_slice(staging_conn, D1, with_entities=True)
    assert snapshot(staging_conn) == before
    # a date with no staged registry version at all would empty the published registry: refused
    load_slice(staging_conn, D2, write_slice(tmp_path / "d2", D2, n=4), "run-3")
    with pytest.raises(NothingToPublish, match="staging_entity_versions holds no row of load 'run-3' for ds=2025-01-02"):
        publish_slice(staging_conn, D2, with_entities=True)
    assert snapshot(staging_conn) == before


def test_lake_only_columns_are_skipped_and_drift_is_named(staging_conn, tmp_path):
    import pyarrow.parquet as pq

    night1, _ = two_nights()
    root = write_version(tmp_path / "lake", night1)
    assert {"text", "attributes"} <= set(pq.read_schema(next((root / "members").glob("*.parquet"))).names)
    path = next((root / "entities").glob("*.parquet"))
    table = pq.read_table(path)
    pq.write_table(table.append_column("nickname", table.column("entity_id")), path)
    sources = write_slice(tmp_path / "spark", D1)
    # a full publish reads the version through the registry reader, which names the drift
    with pytest.raises(RegistryVersionError, match=r"schema drift in registry layer .*entities: column\(s\) \['nickname'\]"):
        registry_staging(RunPaths(D1, tmp_path, tmp_path / "landing"), staging_conn, None)
    # a staged Parquet folder (a delta layer) is checked by the loader, naming table and column
    sources["staging_entities"] = root / "entities"
    with pytest.raises(SchemaDriftError, match=r"into staging_entities: missing column\(s\) \['removed'\], unexpected column\(s\) \['nickname'\]"):
        load_slice(staging_conn, D1, sources, "run-1")
    assert rows(staging_conn, "SELECT COUNT(*) FROM staging_records") == [(0,)]  # one transaction: nothing staged


def test_a_night_without_changes_may_have_no_changes_file(staging_conn, tmp_path):
    night1, _ = two_nights()
    night1.changes = []
    loaded = stage(staging_conn, tmp_path, night1, "run-1", changes_files=False)
    assert loaded["rows"]["staging_entity_changes"] == 0
    publish_slice(staging_conn, D1, with_entities=True)
    assert rows(staging_conn, "SELECT COUNT(*) FROM entity_members") == [(6,)]
