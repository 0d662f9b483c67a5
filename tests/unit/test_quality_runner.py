"""Unit tests of the GX runner's pure parts: settings, suites, dialect adaptation,
datasource construction (no secret in what GX stores), result reduction."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from washline.quality import runner


def test_the_runner_still_exports_every_public_name_and_each_room_says_what_it_owns():
    import importlib
    import pkgutil

    import washline.quality

    assert all(getattr(runner, name, None) is not None for name in runner.__all__)
    for info in pkgutil.iter_modules(washline.quality.__path__):
        module = importlib.import_module(f"washline.quality.{info.name}")
        assert module.__doc__ and "owns" in module.__doc__, info.name


def test_config_defaults_and_sources():
    cfg = runner.load_config()
    assert cfg["cluster_size"] == {"min": 1, "max": 50}
    assert 0.0 <= cfg["singleton_share"]["min"] <= cfg["singleton_share"]["max"] <= 1.0
    assert cfg["source_names"] == ["febrl", "febrl4a", "febrl4b"]
    assert cfg["suites"] == list(runner.SUITE_NAMES)
    assert cfg["keep_runs"] == 5


@pytest.mark.parametrize("body, message", [
    ("cluster_size: {min: 5, max: 2}\nsingleton_share: {min: 0, max: 1}\n",
     "cluster_size: needs 1 <= min <= max, got min=5, max=2"),
    ("cluster_size: {min: 1, max: 2}\nsingleton_share: {min: 0.5, max: 1.5}\n", "singleton_share: needs 0 <= min <= max <= 1"),
    ("cluster_size: {min: 1}\nsingleton_share: {min: 0, max: 1}\n", r"cluster_size\.max: Field required"),
    ("cluster_size: {min: 1, max: 2.5}\nsingleton_share: {min: 0, max: 1}\n", r"cluster_size\.max: .*integer"),
    ("cluster_size: {min: 1, max: 2}\nsingleton_share: {min: 0, max: 1}\nkeep_runs: 0\n", "keep_runs"),
    ("cluster_size: {min: 1, max: 2}\nsingleton_share: {min: 0, max: 1}\nkeep_runs: many\n", "keep_runs"),
    ("cluster_size: {min: 1, max: 2}\nsingleton_share: {min: 0, max: 1}\nkeep_run: 3\n", "keep_run: unknown key"),
    ("cluster_size: {min: 1, max: 2}\nsingleton_share: {min: 0, max: 1}\nsources_config: include/gx/quality.yaml\n",
     "sources_config: .*non-empty 'sources:' mapping"),
])
def test_bad_config_is_refused(tmp_path, body, message):
    path = tmp_path / "quality.yaml"
    path.write_text(body)
    with pytest.raises(runner.QualityConfigError, match=message):
        runner.load_config(path)


def test_prune_run_folders_keeps_the_newest_and_the_current_run(tmp_path):
    import os

    parent = tmp_path / "gx"
    runs = []
    for i in range(7):
        run = parent / f"manual__2025-01-0{i + 1}"
        (run / "gx").mkdir(parents=True)
        os.utime(run, (1_000_000 + i, 1_000_000 + i))  # run 6 is the newest
        runs.append(run)
    (parent / "notes").mkdir()  # not a GX run folder: never touched
    (parent / "README.txt").write_text("x")
    current = runs[0]  # the oldest mtime, but it is this run's folder
    removed = runner.prune_run_folders(parent, 3, current=current)
    left = sorted(p.name for p in parent.iterdir())
    assert left == sorted(["README.txt", "notes", runs[0].name, runs[6].name, runs[5].name])
    assert sorted(removed) == sorted(runs[1:5])
    assert runner.prune_run_folders(parent, 3, current=current) == []  # idempotent
    assert runner.prune_run_folders(tmp_path / "missing", 3) == []


@pytest.mark.parametrize("name", runner.SUITE_NAMES)
def test_suites_are_valid_and_tagged(name):
    import great_expectations as gx

    spec = runner.load_suite_spec(name)
    assert spec["name"] == name
    known = set(runner.suite_parameters({"staging_records": 1, "staging_links": 1, "staging_clusters": 1},
                                        runner.load_config()))
    for exp in spec["expectations"]:
        assert exp["meta"]["severity"] in ("critical", "warning"), exp
        assert set(re.findall(r'"\$PARAMETER": "(\w+)"', json.dumps(exp))) <= known
    # Each table reconciles its row count with an upstream figure.
    assert any(e["type"] == "expect_table_row_count_to_equal" for e in spec["expectations"])
    gx.ExpectationSuite(name=name, expectations=spec["expectations"])
    for dialect in ("mssql", "sqlite"):
        adapted = runner.adapt_for_dialect(spec, dialect)
        gx.ExpectationSuite(name=name, expectations=adapted["expectations"])


def test_mssql_gets_like_patterns_instead_of_regex():
    spec = runner.adapt_for_dialect(runner.load_suite_spec("staging_records"), "mssql")
    types = [e["type"] for e in spec["expectations"]]
    assert "expect_column_values_to_match_regex" not in types
    postcode = [e for e in spec["expectations"] if e["kwargs"].get("column") == "postcode"][0]
    assert postcode["type"] == "expect_column_values_to_match_like_pattern"
    assert postcode["meta"]["severity"] == "critical" and "mssql" not in postcode["meta"]
    untouched = runner.adapt_for_dialect(runner.load_suite_spec("staging_records"), "postgres")
    assert "expect_column_values_to_match_regex" in [e["type"] for e in untouched["expectations"]]


def conn(**kw):
    base = dict(conn_type="postgres", host="db", port=5432, login="u", password="s3cr3t!@", schema="w",  # secret-scan: allow (a fake, to prove it never reaches a file)
                extra_dejson={})
    base.update(kw)
    return SimpleNamespace(**base)


def test_postgres_datasource_keeps_the_password_out_of_the_config():
    method, kwargs, secret = runner.datasource_spec(conn(), "postgres", "WASHLINE_GX_SECRET_X")
    assert method == "add_or_update_postgres"
    assert kwargs == {"connection_string": "${WASHLINE_GX_SECRET_X}"}
    assert secret.startswith("postgresql+psycopg://u:") and "@db:5432/w" in secret
    assert "s3cr3t" in secret.replace("%21", "!").replace("%40", "@")


def test_oracle_and_sqlite_datasources():
    method, kwargs, secret = runner.datasource_spec(
        conn(conn_type="oracle", port=None, schema=None, extra_dejson={"service_name": "FREEPDB1"}), "oracle", "V")
    assert method == "add_or_update_sql" and kwargs == {"connection_string": "${V}"}
    assert secret.startswith("oracle+oracledb://u:") and "service_name=FREEPDB1" in secret and ":1521" in secret
    method, kwargs, secret = runner.datasource_spec(conn(conn_type="sqlite", host="/x/s.db"), "sqlite", "V")
    assert (method, kwargs, secret) == ("add_or_update_sqlite", {"connection_string": "sqlite:////x/s.db"}, None)


def test_mssql_datasource_uses_add_sql_server(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "pyodbc" else real(n, *a))
    with pytest.raises(RuntimeError, match="pyodbc"):
        runner.datasource_spec(conn(conn_type="mssql"), "mssql", "V")
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "pyodbc" else real(n, *a))
    method, kwargs, secret = runner.datasource_spec(
        conn(conn_type="mssql", port=None, extra_dejson={"trust_server_certificate": "true"}), "mssql", "V")
    assert method == "add_or_update_sql_server" and secret == "s3cr3t!@"
    assert kwargs["password"] == "${V}" and kwargs["database"] == "w" and kwargs["port"] == 1433
    assert kwargs["trust_server_certificate"] is True and kwargs["schema"] == "dbo"


def test_query_is_restricted_to_the_slice_and_checks_ds():
    for suite in runner.SUITE_NAMES:
        q = runner.query_for(suite, "2025-01-01", "postgres")
        assert q.count("'2025-01-01'") >= 2 and "{" not in q
    assert "TO_CHAR(r.date_of_birth" in runner.query_for("staging_records", "2025-01-01", "oracle")
    with pytest.raises(ValueError):
        runner.query_for("staging_records", "2025-01-01' OR '1'='1", "sqlite")


def test_raised_exception_reads_both_shapes():
    assert runner.raised_exception({"raised_exception": True, "exception_message": "boom"}) == "boom"
    assert runner.raised_exception({"m1": {"raised_exception": False}, "m2": {"raised_exception": True,
                                                                             "exception_message": "x"}}) == "x"
    assert runner.raised_exception({"raised_exception": False}) is None
    assert runner.raised_exception(None) is None


@pytest.mark.parametrize("rows, status, blocks", [
    ([("PASS", "critical"), ("PASS", "warning")], "PASS", False),
    ([("PASS", "critical"), ("FAIL", "warning")], "WARN", False),
    ([("FAIL", "critical"), ("FAIL", "warning")], "FAIL", True),
    ([("ERROR", "warning"), ("PASS", "critical")], "ERROR", True),
    ([("SKIPPED", "critical"), ("PASS", "critical")], "PASS", False),
])
def test_overall_status(rows, status, blocks):
    assert runner.overall([{"status": s, "severity": v} for s, v in rows]) == {"status": status,
                                                                                 "blocks_publish": blocks}


def test_format_table_shows_counts_samples_and_errors():
    summary = {"expectations": [
        {"suite": "staging_records", "expectation": "expect_column_values_to_match_regex", "column": "postcode",
         "severity": "critical", "status": "FAIL", "unexpected_count": 3, "unexpected_percent": 0.3,
         "observed_value": None, "sample": ["20X0"], "exception": None},
        {"suite": "staging_records", "expectation": "expect_column_values_to_not_be_null", "column": "nope",
         "severity": "warning", "status": "ERROR", "unexpected_count": None, "unexpected_percent": None,
         "observed_value": None, "sample": [], "exception": "column nope does not exist"}]}
    text = runner.format_table(summary)
    assert "20X0" in text and " 3 " in text and "0.30" in text and "does not exist" in text


def test_query_qualifies_the_staging_tables_with_the_schema():
    q = runner.query_for("staging_links", "2025-01-01", "postgres", schema="stg")
    assert '"stg"."staging_links" l' in q and '"stg"."staging_clusters"' in q and '"stg"."staging_records"' in q
    assert 'FROM "staging_records" r' in runner.query_for("staging_records", "2025-01-01", "sqlite")
    assert '"STG"."STAGING_CLUSTERS" c' in runner.query_for("staging_clusters", "2025-01-01", "oracle", "stg")
    with pytest.raises(ValueError, match="identifier"):
        runner.query_for("staging_records", "2025-01-01", "postgres", schema='x"; DROP TABLE t; --')


def test_view_names_are_per_run_identifiers():
    a = runner.view_name("staging_records", "2025-01-01", "0a1b2c3d")
    assert a == "wlgx_staging_records_20250101_0a1b2c3d" and len(a) <= 63
    assert a != runner.view_name("staging_records", "2025-01-01", "ffffffff")
    assert a != runner.view_name("staging_records", "2025-01-02", "0a1b2c3d")
    with pytest.raises(ValueError, match="identifier"):
        runner.view_name("staging_records", "2025-01-01", "x; DROP")
    with pytest.raises(ValueError):
        runner.view_name("staging_records", "2025-1-1", "0a1b2c3d")


def test_result_format_asks_for_counts_without_sample_values():
    assert runner.RESULT_FORMAT == {"result_format": "BASIC", "partial_unexpected_count": 0}
    assert runner.SAMPLE_FORMAT["partial_unexpected_count"] == runner.SAMPLE_COUNT > 0


@pytest.mark.parametrize("name", runner.REGISTRY_SUITE_NAMES)
def test_registry_suites_are_valid_and_have_slice_queries(name):
    """The registry suites take their counts from _COMPLETE.json and
    each has a slice query; the continuity check reads the published entities."""
    import great_expectations as gx

    spec = runner.load_suite_spec(name)
    assert spec["name"] == name and name in runner.SLICE_QUERIES
    complete = {"references_total": 10, "entities_total": 4, "new_references": 4, "new_entities": 1, "grows": 1,
                "merges": 1, "splits": 0}
    known = set(runner.suite_parameters({}, runner.load_config(), complete))
    for exp in spec["expectations"]:
        assert exp["meta"]["severity"] in ("critical", "warning"), exp
        assert set(re.findall(r'"\$PARAMETER": "(\w+)"', json.dumps(exp))) <= known
    for dialect in ("mssql", "sqlite"):
        gx.ExpectationSuite(name=name, expectations=runner.adapt_for_dialect(spec, dialect)["expectations"])
    sql = runner.query_for(name, "2025-01-02", "mssql", "etl")
    assert "[etl]." in sql and "'2025-01-02'" in sql


def test_registry_counts_and_only_warnings_for_the_shares():
    params = runner.suite_parameters({}, runner.load_config(), {
        "references_total": 10, "entities_total": 4, "new_references": 4, "new_entities": 1, "grows": 1,
        "merges": 1, "splits": 2})
    assert {k: params[k] for k in runner.REGISTRY_COUNT_PARAMETERS} == {
        "expected_member_rows": 10, "expected_entity_rows": 4, "expected_change_rows": 5,
        "expected_new_references": 4}
    # one change row per part of a split entity, and one per updated golden record
    params = runner.suite_parameters({}, runner.load_config(), {
        "references_total": 10, "entities_total": 4, "new_references": 4, "new_entities": 1, "grows": 1,
        "merges": 1, "splits": 1, "split_rows": 3, "updates": 2})
    assert params["expected_change_rows"] == 8
    assert (params["joined_share_min"], params["joined_share_max"]) == (0.0, 1.0)
    shares = [e for name in ("staging_clusters", "staging_entity_members")
              for e in runner.load_suite_spec(name)["expectations"] if e["type"] == "expect_column_mean_to_be_between"]
    assert {e["kwargs"]["column"]: e["meta"]["severity"] for e in shares} == {
        "singleton": "warning", "joined_existing": "warning"}


def test_continuity_concatenates_per_dialect():
    assert "',' + c.from_entity_ids + ','" in runner.query_for("entity_continuity", "2025-01-02", "mssql")
    assert "',' || c.from_entity_ids || ','" in runner.query_for("entity_continuity", "2025-01-02", "oracle")
    assert '"ENTITIES" p' in runner.query_for("entity_continuity", "2025-01-02", "oracle")


@pytest.mark.parametrize("dialect", ["sqlite", "postgres", "mssql", "oracle"])
def test_clusters_read_published_members_on_registry_nights_only(dialect):
    """staging_clusters counts an entity's members after publish on a registry
    night (the staged ones plus, incremental, the published ones kept); without
    the registry it reads staging tables only (a staging-only login validates)."""
    import re

    plain = runner.query_for("staging_clusters", "2025-01-02", dialect)
    night = runner.query_for("staging_clusters", "2025-01-02", dialect, registry=True)
    published = re.compile(r'(\[|")entity_members(\]|")', re.I)
    assert not published.search(plain) and published.search(night)
    assert re.search(r"staging_entity_versions\W+ v WHERE v\.ds = '2025-01-02' AND v\.publish_mode = 'incremental'",
                     night, re.I)
    for suite in ("entity_reconciliation", "entity_continuity", "staging_entities"):
        assert published.search(runner.query_for(suite, "2025-01-02", dialect)) or suite == "entity_continuity"
