"""Staging DDL and publish statements for every dialect, compiled with
SQLAlchemy's dialects (sqlite, postgresql+psycopg, mssql+pymssql,
oracle+oracledb) and compared with reviewed files.

SQL Server and Oracle cannot run on this machine; these files are what runs
there. After a deliberate change, regenerate with
``WASHLINE_UPDATE_EXPECTED=1 pytest tests/unit/test_staging_sql.py`` (and
``python -m washline.staging.spec --write`` for ``sql/<dialect>/staging.sql``),
then review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from washline.staging.dialects import ddl_statements, qualify, quote_ident, render, validate_schema
from washline.staging.publish import entity_publish_plan, publish_plan
from washline.staging.spec import DIALECT_NAMES, ENTITY_TABLES, TABLES, ddl_path, render_ddl

EXPECTED = Path(__file__).resolve().parents[1] / "expected" / "staging"
UPDATE = os.environ.get("WASHLINE_UPDATE_EXPECTED") == "1"
SAMPLE = {"ds": "2025-01-01", "load_id": "scheduled__2025-01-01T02:00:00+00:00",
          "published_at": "2025-01-02T03:04:05.123456", "records": 1, "links": 1, "clusters": 1}


def _assert_expected(name: str, text: str) -> None:
    path = EXPECTED / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} missing; run with WASHLINE_UPDATE_EXPECTED=1 and review it"
    assert text == path.read_text(), f"{path} differs from the rendering; review and regenerate"


@pytest.mark.parametrize("dialect", DIALECT_NAMES)
def test_checked_in_ddl_matches_the_spec(dialect):
    assert ddl_path(dialect).read_text() == render_ddl(dialect), (
        f"sql/{dialect}/staging.sql is stale: python -m washline.staging.spec --write")


@pytest.mark.parametrize("dialect", DIALECT_NAMES)
def test_every_table_has_ds_load_id_and_a_primary_key(dialect):
    text = ddl_path(dialect).read_text()
    for name, spec in TABLES.items():
        if name in ENTITY_TABLES.values():  # the published registry: exactly the contract columns
            assert "load_id" not in spec.column_names
        else:
            assert spec.column_names[:2] == ["ds", "load_id"]
        assert f"CONSTRAINT pk_{name} PRIMARY KEY ({', '.join(spec.primary_key)})" in text
        for ix, cols in spec.indexes:
            assert re.search(rf"CREATE INDEX (IF NOT EXISTS )?{ix} ON \{{schema\}}{name} \({', '.join(cols)}\)", text)


def test_engine_types():
    mssql = ddl_path("mssql").read_text()
    assert "NVARCHAR(128)" in mssql and "DATETIME2(6)" in mssql and "FLOAT(53)" in mssql
    assert not re.search(r"\bDATETIME\b(?!2)", mssql), "SQL Server DATETIME drops microseconds"
    assert not re.search(r"\b(VARCHAR|TEXT)\b", mssql.replace("NVARCHAR", ""))
    oracle = ddl_path("oracle").read_text()
    assert "VARCHAR2(128 CHAR)" in oracle and "NUMBER(19)" in oracle and "TIMESTAMP" in oracle
    assert not re.search(r"\b(TEXT|BIGINT|VARCHAR)\b", oracle)
    pg = ddl_path("postgres").read_text()
    assert "TIMESTAMP WITH TIME ZONE" in pg and "DATE" in pg


@pytest.mark.parametrize("dialect", DIALECT_NAMES)
def test_ddl_is_idempotent_by_construction(dialect):
    stmts = ddl_statements(dialect)
    n_objects = len(TABLES) + sum(len(s.indexes) for s in TABLES.values())
    assert len(stmts) == n_objects
    guard = {"sqlite": "IF NOT EXISTS", "postgres": "IF NOT EXISTS", "mssql": "IF ", "oracle": "SQLCODE != -955"}
    assert all(guard[dialect] in s for s in stmts)


def test_schema_is_quoted_per_dialect_in_ddl():
    assert "CREATE TABLE IF NOT EXISTS \"washline\".staging_records" in ddl_statements("postgres", "washline")[0]
    mssql = ddl_statements("mssql", "washline")[0]
    assert mssql.startswith("IF OBJECT_ID(N'[washline].staging_records', N'U') IS NULL")
    assert "CREATE TABLE [washline].staging_records" in mssql
    assert "CREATE TABLE \"WASHLINE\".staging_records" in ddl_statements("oracle", "washline")[0]


@pytest.mark.parametrize("dialect", ["mssql", "oracle"])
def test_ddl_with_schema_matches_reviewed_file(dialect):
    sep = "\n/\n" if dialect == "oracle" else ";\n"
    _assert_expected(f"ddl_{dialect}_schema_washline.sql", sep.join(ddl_statements(dialect, "washline")) + sep)


@pytest.mark.parametrize("bad", ["x; DROP TABLE t", "a.b", "1abc", "", "naïve", "a" * 64, 'x"y', "[x]"])
def test_identifiers_are_allow_listed(bad):
    for dialect in DIALECT_NAMES:
        with pytest.raises(ValueError, match="not allowed"):
            quote_ident(bad, dialect)
        if bad:
            with pytest.raises(ValueError):
                qualify("staging_records", dialect, bad)


def test_quoting_per_dialect():
    assert qualify("staging_records", "postgres", "etl") == '"etl"."staging_records"'
    assert qualify("staging_records", "mssql", "etl") == "[etl].[staging_records]"
    assert qualify("staging_records", "oracle", "etl") == '"ETL"."STAGING_RECORDS"'
    assert qualify("staging_records", "sqlite") == '"staging_records"'
    with pytest.raises(ValueError, match="SQLite"):
        validate_schema("etl", "sqlite")


def _publish_text(dialect: str, schema: str | None) -> str:
    columns = {name: TABLES[name].column_names for name in ("staging_records", "staging_links", "staging_clusters")}
    out = []
    for step in publish_plan(dialect, columns, schema):
        sql, params = render(step.sql, dialect, {k: v for k, v in SAMPLE.items() if f":{k}" in step.sql})
        out.append(f"-- {step.name}  params={params!r}\n{sql};\n")
    return "\n".join(out)


@pytest.mark.parametrize("dialect", ["mssql", "oracle", "postgres", "sqlite"])
def test_publish_statements_match_reviewed_files(dialect):
    _assert_expected(f"publish_{dialect}.sql", _publish_text(dialect, "washline" if dialect != "sqlite" else None))


def test_publish_binds_follow_each_driver():
    sql, params = render("DELETE FROM t WHERE ds = :ds AND load_id = :load_id", "mssql", SAMPLE)
    assert sql.endswith("ds = %(ds)s AND load_id = %(load_id)s") and set(params) >= {"ds", "load_id"}
    sql, params = render("DELETE FROM t WHERE ds = :ds AND load_id = :load_id", "oracle", SAMPLE)
    assert sql.endswith("ds = :ds AND load_id = :load_id")
    sql, params = render("DELETE FROM t WHERE ds = :ds AND load_id = :load_id", "sqlite", SAMPLE)
    assert sql.endswith("ds = ? AND load_id = ?") and params == ("2025-01-01", SAMPLE["load_id"])


def test_entity_tables_follow_the_contract():
    """The published registry tables carry exactly the agreed columns; their
    staging twins add the slice key (ds, load_id), and staged entities the
    ``removed`` flag of the lake's delta layers."""
    assert TABLES["entity_members"].column_names == ["source", "record_id", "entity_id", "first_seen_ds",
                                                     "last_changed_ds"]
    assert TABLES["entity_members"].primary_key == ("source", "record_id")
    assert TABLES["entities"].column_names == ["entity_id", "member_count", "first_seen_ds", "last_changed_ds",
                                               "golden_record"]
    assert TABLES["entities"].primary_key == ("entity_id",)
    assert TABLES["entity_changes"].column_names == ["ds", "entity_id", "change", "from_entity_ids",
                                                     "member_count"]
    for staging, published in ENTITY_TABLES.items():
        cols = TABLES[staging].column_names
        assert cols[:2] == ["ds", "load_id"]
        extra = ["removed"] if staging == "staging_entities" else []
        assert [c for c in cols if c not in ("ds", "load_id")] == [
            c for c in TABLES[published].column_names if c != "ds"] + extra
    assert TABLES["staging_entity_members"].lake_only == ("text", "attributes")
    assert TABLES["entity_registry_state"].column_names[:2] == ["ds", "load_id"]


def _entity_publish_text(dialect: str, schema: str | None, mode: str = "full") -> str:
    columns = {published: TABLES[published].column_names for published in ENTITY_TABLES.values()}
    out = []
    for step in entity_publish_plan(dialect, columns, schema, mode):
        sql, params = render(step.sql, dialect, {k: v for k, v in SAMPLE.items() if f":{k}" in step.sql})
        out.append(f"-- {step.name}  params={params!r}\n{sql};\n")
    return "\n".join(out)


@pytest.mark.parametrize("dialect", ["mssql", "oracle", "postgres", "sqlite"])
def test_entity_publish_statements_match_reviewed_files(dialect):
    text = _entity_publish_text(dialect, "washline" if dialect != "sqlite" else None)
    # a full publish replaces members and entities whole; changes from ds on; pruning per date
    assert re.search(r"-- delete:entity_members  params=(\{\}|\(\))\nDELETE FROM \S*entity_members\S*;", text, re.I)
    assert "delete:entity_changes  params={'ds'" in text or "delete:entity_changes  params=('2025" in text
    assert re.search(r"FROM \S*staging_entities\S* WHERE ds = \S+ AND removed = 0;", text, re.I)
    _assert_expected(f"publish_entities_{dialect}.sql", text)


@pytest.mark.parametrize("dialect", ["mssql", "oracle", "postgres", "sqlite"])
def test_incremental_entity_publish_statements_match_reviewed_files(dialect):
    text = _entity_publish_text(dialect, "washline" if dialect != "sqlite" else None, "incremental")
    assert "-- delete:entity_members" not in text and "-- delete:entities " not in text  # nothing replaced whole
    assert "-- upsert:entity_members" in text and "-- upsert:entities" in text
    # no whole-table count: the totals are the held version's plus the delta's new rows minus its removed ones
    assert "-- count:entity_members" not in text and "-- count:entities " not in text
    assert text.index("-- new:entity_members") < text.index("-- upsert:entity_members")
    assert text.index("-- removed:entities") < text.index("-- delete_removed:entities")
    assert re.search(r"SELECT ds, references_total, entities_total FROM \S*entity_registry_state", text, re.I)
    assert re.search(r"DELETE FROM \S*entities\S* WHERE entity_id IN \(SELECT entity_id FROM "
                     r"\S*staging_entities\S* WHERE ds = \S+ AND removed = 1\)", text, re.I)
    _assert_expected(f"publish_entities_incremental_{dialect}.sql", text)


def _statement(text: str, step: str) -> str:
    return text.split(f"-- {step}  ", 1)[1].split("\n", 1)[1].split("\n\n", 1)[0]


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
def test_upserts_use_on_conflict_on_the_spec_keys(dialect):
    text = _entity_publish_text(dialect, None, "incremental")
    members = _statement(text, "upsert:entity_members")
    assert members.startswith('INSERT INTO "entity_members" ("source", "record_id", "entity_id", "first_seen_ds", '
                              '"last_changed_ds") SELECT ')
    assert 'ON CONFLICT ("source", "record_id") DO UPDATE SET "entity_id" = excluded."entity_id", ' \
           '"first_seen_ds" = excluded."first_seen_ds", "last_changed_ds" = excluded."last_changed_ds";' in members
    entities = _statement(text, "upsert:entities")
    assert 'AND removed = 0 ON CONFLICT ("entity_id") DO UPDATE SET "member_count" = excluded."member_count"' in entities
    assert '"entity_id" = excluded' not in entities  # the key is never updated


def test_sql_server_merge_statements():
    text = _entity_publish_text("mssql", "washline", "incremental")
    members = _statement(text, "upsert:entity_members")
    assert members.startswith("MERGE INTO [washline].[entity_members] WITH (HOLDLOCK) AS tgt USING (SELECT [source], "
                              "[record_id], [entity_id], [first_seen_ds], [last_changed_ds] FROM "
                              "[washline].[staging_entity_members] WHERE ds = %(ds)s) AS src ON "
                              "(tgt.[source] = src.[source] AND tgt.[record_id] = src.[record_id])")
    assert " WHEN MATCHED THEN UPDATE SET tgt.[entity_id] = src.[entity_id], " in members
    assert "tgt.[source] = src.[source]," not in members  # keys are matched, never set
    assert members.endswith("WHEN NOT MATCHED BY TARGET THEN INSERT ([source], [record_id], [entity_id], "
                            "[first_seen_ds], [last_changed_ds]) VALUES (src.[source], src.[record_id], "
                            "src.[entity_id], src.[first_seen_ds], src.[last_changed_ds]);;")  # T-SQL: MERGE ends in ;
    assert members.count("%(ds)s") == 1


def test_oracle_merge_statements():
    text = _entity_publish_text("oracle", "washline", "incremental")
    entities = _statement(text, "upsert:entities")
    assert entities.startswith('MERGE INTO "WASHLINE"."ENTITIES" tgt USING (SELECT "ENTITY_ID", "MEMBER_COUNT", '
                               '"FIRST_SEEN_DS", "LAST_CHANGED_DS", "GOLDEN_RECORD" FROM "WASHLINE"."STAGING_ENTITIES" '
                               'WHERE ds = :ds AND removed = 0) src ON (tgt."ENTITY_ID" = src."ENTITY_ID")')
    assert ' WHEN MATCHED THEN UPDATE SET tgt."MEMBER_COUNT" = src."MEMBER_COUNT", ' in entities
    assert 'SET tgt."ENTITY_ID"' not in entities and ', tgt."ENTITY_ID" =' not in entities  # ORA-38104
    assert entities.endswith('WHEN NOT MATCHED THEN INSERT ("ENTITY_ID", "MEMBER_COUNT", "FIRST_SEEN_DS", '
                             '"LAST_CHANGED_DS", "GOLDEN_RECORD") VALUES (src."ENTITY_ID", src."MEMBER_COUNT", '
                             'src."FIRST_SEEN_DS", src."LAST_CHANGED_DS", src."GOLDEN_RECORD");')
    assert " AS src" not in entities and " AS tgt" not in entities  # Oracle takes no AS before a table alias


def test_upsert_key_must_be_among_the_columns():
    from washline.staging.publish import upsert_sql

    with pytest.raises(ValueError, match="upsert key"):
        upsert_sql("postgres", '"t"', "SELECT a FROM s", ["a"], ("b",))
    with pytest.raises(ValueError, match="publish mode"):
        entity_publish_plan("postgres", {}, None, "sideways")


def test_an_added_column_gets_a_default_on_every_dialect():
    from washline.staging.load import add_column_sql

    assert add_column_sql("staging_entities", "removed", "sqlite") == \
        'ALTER TABLE "staging_entities" ADD COLUMN "removed" INTEGER NOT NULL DEFAULT 0'
    assert add_column_sql("staging_entities", "removed", "postgres", "etl") == \
        'ALTER TABLE "etl"."staging_entities" ADD COLUMN "removed" INTEGER NOT NULL DEFAULT 0'
    assert add_column_sql("staging_entities", "removed", "mssql", "etl") == \
        "ALTER TABLE [etl].[staging_entities] ADD [removed] INTEGER NOT NULL DEFAULT 0"
    assert add_column_sql("staging_entities", "removed", "oracle", "etl") == \
        'ALTER TABLE "ETL"."STAGING_ENTITIES" ADD ("REMOVED" NUMBER(10) DEFAULT 0 NOT NULL)'
    with pytest.raises(ValueError, match="NOT NULL integer"):
        add_column_sql("staging_entities", "golden_record", "sqlite")
