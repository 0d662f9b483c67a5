"""Load → publish on real SQLite and PostgreSQL: idempotent reruns, schema
drift refused, failures leave published tables untouched."""

from __future__ import annotations

import pytest

from staging_data import write_slice
from washline.staging.dialects import get_db_hook
from washline.staging.load import SchemaDriftError, load_slice
from washline.staging.publish import NothingToPublish, publish_slice

pytestmark = pytest.mark.postgres


def rows(conn_id, sql):
    hook, _ = get_db_hook(conn_id)
    return hook.get_records(sql)


def test_load_then_publish_replaces_only_that_date(staging_conn, tmp_path):
    day1 = write_slice(tmp_path, "2025-01-01", n=6)
    day2 = write_slice(tmp_path, "2025-01-02", n=4)
    assert load_slice(staging_conn, "2025-01-01", day1, "run-1")["rows"] == {
        "staging_records": 6, "staging_links": 6, "staging_clusters": 3}
    load_slice(staging_conn, "2025-01-02", day2, "run-2")
    publish_slice(staging_conn, "2025-01-01")
    publish_slice(staging_conn, "2025-01-02")
    # rerun day 1 with new data: only day 1 changes, no duplicates
    day1b = write_slice(tmp_path / "b", "2025-01-01", n=8)
    load_slice(staging_conn, "2025-01-01", day1b, "run-3")
    publish_slice(staging_conn, "2025-01-01")
    publish_slice(staging_conn, "2025-01-01")
    counts = dict(rows(staging_conn, "SELECT ds, COUNT(*) FROM published_records GROUP BY ds ORDER BY ds"))
    assert counts == {"2025-01-01": 8, "2025-01-02": 4}
    assert rows(staging_conn, "SELECT COUNT(DISTINCT load_id) FROM published_records WHERE ds = '2025-01-01'") == [(1,)]
    assert rows(staging_conn, "SELECT COUNT(*) FROM published_links")[0][0] == 12
    dob = rows(staging_conn, "SELECT date_of_birth FROM published_records WHERE record_id = 'rec-3' AND ds = '2025-01-02'")
    assert str(dob[0][0]) == "1980-01-04"


@pytest.mark.parametrize("drop,extra", [("postcode", None), (None, "nickname")])
def test_schema_drift_is_refused_and_previous_slice_kept(staging_conn, tmp_path, drop, extra):
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path, "2025-01-01"), "run-1")
    drifted = write_slice(tmp_path / "d", "2025-01-01", n=2, drop=drop, extra=extra)
    with pytest.raises(SchemaDriftError, match=f"staging_records.*{drop or extra}"):
        load_slice(staging_conn, "2025-01-01", drifted, "run-2")
    assert rows(staging_conn, "SELECT COUNT(*), MIN(load_id) FROM staging_records") == [(6, "run-1")]


def test_failed_publish_leaves_published_tables_untouched(staging_conn, tmp_path):
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path, "2025-01-01", n=6), "run-1")
    publish_slice(staging_conn, "2025-01-01")
    before = rows(staging_conn, "SELECT record_id, load_id FROM published_records ORDER BY record_id")
    # a new load whose clusters table violates the published primary key mid-publish
    load_slice(staging_conn, "2025-01-01", write_slice(tmp_path / "n", "2025-01-01", n=4), "run-2")
    hook, dialect = get_db_hook(staging_conn)
    conn = hook.get_conn()
    cur = conn.cursor()
    cur.execute("DROP TABLE published_clusters")
    cur.execute("CREATE TABLE published_clusters (ds TEXT, load_id TEXT, cluster_id TEXT, "
                "cluster_size INTEGER, quality REAL, iteration INTEGER CHECK (iteration < 0))")
    conn.commit()
    conn.close()
    with pytest.raises(Exception):
        publish_slice(staging_conn, "2025-01-01")
    assert rows(staging_conn, "SELECT record_id, load_id FROM published_records ORDER BY record_id") == before


def test_publishing_an_empty_slice_is_refused(staging_conn):
    with pytest.raises(NothingToPublish, match="2025-03-03"):
        publish_slice(staging_conn, "2025-03-03")
