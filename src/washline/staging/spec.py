"""The staging and published tables, declared once and rendered per dialect.

One column list (:data:`TABLES`) is the contract between the Spark outputs and
every staging database. From it come:

* ``sql/<dialect>/staging.sql`` for ``sqlite``, ``postgres``, ``mssql`` and
  ``oracle``: SQLAlchemy ``CreateTable`` / ``CreateIndex`` compiled with each
  engine's dialect, wrapped so that creation is idempotent (``IF NOT EXISTS``
  on SQLite/PostgreSQL, an ``OBJECT_ID`` guard on SQL Server, a PL/SQL block
  that ignores ORA-00955 on Oracle). The files are checked in and reviewed;
  ``python -m washline.staging.spec --write`` regenerates them and a unit test
  fails when a file and this module disagree.
* the loader's checks on each Parquet batch (types, lengths, NULL keys), so a
  bad value is refused with the table and column named on every engine, also
  on SQLite, which does not enforce lengths itself.

Types per engine (logical → sqlite / postgres / mssql / oracle):

=========  =======  ================  ==============  ===================
str(n)     TEXT     VARCHAR(n)        NVARCHAR(n)     VARCHAR2(n CHAR)
date       TEXT     DATE              DATE            DATE
int64      INTEGER  BIGINT            BIGINT          NUMBER(19)
int32      INTEGER  INTEGER           INTEGER         NUMBER(10)
float64    REAL     DOUBLE PRECISION  FLOAT(53)       BINARY_DOUBLE
timestamp  TEXT     TIMESTAMPTZ       DATETIME2(6)    TIMESTAMP
=========  =======  ================  ==============  ===================

Timestamps are UTC. SQL Server ``DATETIME`` (which rounds to 1/300 s) is never
used; Oracle ``TIMESTAMP`` has 6 fractional digits by default; ``BINARY_DOUBLE`` keeps Spark's IEEE doubles bit for bit.
SQLite stores dates and timestamps as ISO-8601 text.

The DDL files carry the token ``{schema}`` before every table name; it becomes
the quoted schema plus ``.`` (or nothing) when the file is run.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from washline.paths import REPO_ROOT

SQL_DIR = REPO_ROOT / "sql"
SCHEMA_TOKEN = "{schema}"
DIALECT_NAMES = ("sqlite", "postgres", "mssql", "oracle")


@dataclass(frozen=True)
class Col:
    """One column: ``kind`` is ``str``, ``date``, ``int64``, ``int32``,
    ``float64`` or ``timestamp``; ``length`` is the maximum number of
    characters of a ``str`` column."""

    name: str
    kind: str
    length: int | None = None
    nullable: bool = True


@dataclass(frozen=True)
class TableSpec:
    """One table. ``lake_only`` names columns the Spark output carries that the
    table does not store (the loader skips them instead of calling them drift)."""

    name: str
    columns: tuple[Col, ...]
    primary_key: tuple[str, ...]
    indexes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    lake_only: tuple[str, ...] = ()

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def col(self, name: str) -> Col:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")


def _s(name: str, length: int, nullable: bool = True) -> Col:
    return Col(name, "str", length, nullable)


#: Columns every staged/published table starts with: the slice key and the load that wrote it.
SLICE_COLUMNS = (_s("ds", 10, False), _s("load_id", 250, False))

RECORD_COLUMNS = (
    *SLICE_COLUMNS,
    _s("record_id", 128, False),
    _s("source", 64, False),
    _s("truth_entity", 128),
    _s("given_name", 200),
    _s("surname", 200),
    _s("street_number", 50),
    _s("address_1", 300),
    _s("address_2", 300),
    _s("suburb", 200),
    _s("postcode", 16),
    _s("state", 64),
    Col("date_of_birth", "date"),
    _s("soc_sec_id", 64),
    _s("source_file", 1024),
    Col("line_number", "int64"),
)
LINK_COLUMNS = (
    *SLICE_COLUMNS,
    _s("record_id", 128, False),
    _s("source", 64, False),
    _s("cluster_id", 128, False),
    Col("iteration", "int32", nullable=False),
    Col("mu", "float64"),
    Col("quality", "float64", nullable=False),
    Col("cluster_size", "int32", nullable=False),
)
CLUSTER_COLUMNS = (
    *SLICE_COLUMNS,
    _s("cluster_id", 128, False),
    Col("cluster_size", "int32", nullable=False),
    Col("quality", "float64", nullable=False),
    Col("iteration", "int32", nullable=False),
)

#: The entity registry, published as the whole current state. Column
#: names of ``entity_members`` are a contract: downstream reads them by name.
#: Dates are ``YYYY-MM-DD`` text, as ``ds``; entity ids are ``E`` + 16 hex digits.
#: ``golden_record`` is a JSON object attribute -> value (survivorship rule in
#: the link job: the most frequent non-null value among the members, ties to the
#: most recently seen member); ``from_entity_ids`` is a sorted, comma-separated
#: id list for ``merge``/``split`` and empty (NULL on Oracle) for ``new``/``grow``/``update``.
ENTITY_MEMBER_COLUMNS = (
    _s("source", 64, False),
    _s("record_id", 128, False),
    _s("entity_id", 32, False),
    _s("first_seen_ds", 10, False),
    _s("last_changed_ds", 10, False),
)
ENTITY_COLUMNS = (
    _s("entity_id", 32, False),
    Col("member_count", "int64", nullable=False),
    _s("first_seen_ds", 10, False),
    _s("last_changed_ds", 10, False),
    _s("golden_record", 4000),
)
#: Staged entities also carry ``removed`` (0/1; the lake's boolean): a row with 1
#: deletes the entity at publish. Published ``entities`` holds live entities only.
REMOVED_COLUMN = Col("removed", "int32", nullable=False)
ENTITY_CHANGE_COLUMNS = (
    _s("entity_id", 32, False),
    _s("change", 8, False),
    _s("from_entity_ids", 4000),
    Col("member_count", "int64", nullable=False),
)

#: The registry version a load staged (``staging_entity_versions``, one row per
#: ``ds``) and the one the published tables hold (``entity_registry_state``, one
#: row): ``publish_mode`` ``incremental`` or ``full``, ``reason`` why, ``held_ds`` the
#: version the database held when the load chose the mode, and the manifest's
#: totals the publish reconciles with.
REGISTRY_VERSION_COLUMNS = (
    *SLICE_COLUMNS,
    _s("base_ds", 10),
    _s("publish_mode", 16, False),
    _s("reason", 500),
    _s("held_ds", 10),
    Col("references_total", "int64", nullable=False),
    Col("entities_total", "int64", nullable=False),
)

#: Staging entity table -> published entity table. Staging keeps, per ``ds`` (with
#: ``load_id``), what the night publishes: its delta (incremental publish) or the
#: merged version (full publish); the published tables hold exactly the contract
#: columns. Which of the two was staged, and the version's totals, are in
#: ``staging_entity_versions``; ``entity_registry_state`` (one row) names the
#: registry version the published tables hold.
ENTITY_TABLES = {
    "staging_entity_members": "entity_members",
    "staging_entities": "entities",
    "staging_entity_changes": "entity_changes",
}


def _tables() -> dict[str, TableSpec]:
    out: dict[str, TableSpec] = {}
    for layer in ("staging", "published"):
        out[f"{layer}_records"] = TableSpec(
            f"{layer}_records", RECORD_COLUMNS, ("ds", "source", "record_id"),
            ((f"ix_{layer}_records_rid", ("ds", "record_id")),),
        )
        out[f"{layer}_links"] = TableSpec(
            f"{layer}_links", LINK_COLUMNS, ("ds", "source", "record_id"),
            ((f"ix_{layer}_links_cluster", ("ds", "cluster_id")),),
        )
        out[f"{layer}_clusters"] = TableSpec(f"{layer}_clusters", CLUSTER_COLUMNS, ("ds", "cluster_id"))
    out["publish_log"] = TableSpec(
        "publish_log",
        (_s("ds", 10, False), _s("load_id", 250, False), Col("published_at", "timestamp", nullable=False),
         Col("records", "int64", nullable=False), Col("links", "int64", nullable=False),
         Col("clusters", "int64", nullable=False)),
        ("ds", "load_id"),
    )
    out["staging_entity_members"] = TableSpec(
        "staging_entity_members", (*SLICE_COLUMNS, *ENTITY_MEMBER_COLUMNS), ("ds", "source", "record_id"),
        (("ix_staging_entity_members_entity", ("ds", "entity_id")),), lake_only=("text", "attributes"))
    out["staging_entities"] = TableSpec("staging_entities", (*SLICE_COLUMNS, *ENTITY_COLUMNS, REMOVED_COLUMN),
                                        ("ds", "entity_id"))
    out["staging_entity_changes"] = TableSpec(
        "staging_entity_changes", (*SLICE_COLUMNS, *ENTITY_CHANGE_COLUMNS), ("ds", "entity_id", "change"))
    out["staging_entity_versions"] = TableSpec("staging_entity_versions", REGISTRY_VERSION_COLUMNS, ("ds",))
    out["entity_registry_state"] = TableSpec(
        "entity_registry_state",
        (*REGISTRY_VERSION_COLUMNS, Col("published_at", "timestamp", nullable=False)), ("ds",))
    out["entity_members"] = TableSpec(
        "entity_members", ENTITY_MEMBER_COLUMNS, ("source", "record_id"),
        (("ix_entity_members_entity", ("entity_id",)),))
    out["entities"] = TableSpec("entities", ENTITY_COLUMNS, ("entity_id",))
    out["entity_changes"] = TableSpec(
        "entity_changes", (_s("ds", 10, False), *ENTITY_CHANGE_COLUMNS), ("ds", "entity_id", "change"))
    return out


#: Every washline table, in creation order.
TABLES: dict[str, TableSpec] = _tables()


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------

#: DB-API paramstyle of the driver behind each provider hook.
PARAMSTYLES = {"sqlite": "qmark", "postgres": "pyformat", "mssql": "pyformat", "oracle": "named"}


def sqlalchemy_dialect(dialect: str):
    """The SQLAlchemy dialect of the DB-API driver each provider hook uses
    (sqlite3, psycopg 3, pymssql, python-oracledb), with that driver's
    paramstyle (a dialect built without its DBAPI would default to ``named``)."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import pysqlite as mod
    elif dialect == "postgres":
        from sqlalchemy.dialects.postgresql import psycopg as mod
    elif dialect == "mssql":
        from sqlalchemy.dialects.mssql import pymssql as mod
    elif dialect == "oracle":
        from sqlalchemy.dialects.oracle import oracledb as mod
    else:
        mod = None
    if mod is not None:
        return mod.dialect(paramstyle=PARAMSTYLES[dialect])
    raise ValueError(f"unknown dialect {dialect!r}; expected one of {DIALECT_NAMES}")


def sa_type(col: Col, dialect: str):
    """SQLAlchemy type of ``col`` on ``dialect`` (see the table in the module docstring)."""
    import sqlalchemy.types as T
    from sqlalchemy.dialects import mssql, oracle, postgresql

    kind = col.kind
    if dialect == "sqlite":
        return {"str": T.TEXT(), "date": T.TEXT(), "int64": T.INTEGER(), "int32": T.INTEGER(),
                "float64": T.REAL(), "timestamp": T.TEXT()}[kind]
    if dialect == "postgres":
        return {"str": lambda: T.VARCHAR(col.length), "date": T.DATE, "int64": T.BIGINT, "int32": T.INTEGER,
                "float64": postgresql.DOUBLE_PRECISION, "timestamp": lambda: postgresql.TIMESTAMP(timezone=True)}[kind]()
    if dialect == "mssql":
        return {"str": lambda: mssql.NVARCHAR(col.length), "date": mssql.DATE, "int64": mssql.BIGINT,
                "int32": mssql.INTEGER, "float64": lambda: mssql.FLOAT(53),
                "timestamp": lambda: mssql.DATETIME2(precision=6)}[kind]()
    if dialect == "oracle":
        return {"str": lambda: oracle.VARCHAR2(col.length), "date": oracle.DATE, "int64": lambda: oracle.NUMBER(19),
                "int32": lambda: oracle.NUMBER(10), "float64": oracle.BINARY_DOUBLE,
                "timestamp": oracle.TIMESTAMP}[kind]()
    raise ValueError(f"unknown dialect {dialect!r}")


def _sa_table(spec: TableSpec, dialect: str):
    from sqlalchemy import Column, Index, MetaData, PrimaryKeyConstraint, Table

    table = Table(
        spec.name, MetaData(),
        *(Column(c.name, sa_type(c, dialect), nullable=c.nullable) for c in spec.columns),
        PrimaryKeyConstraint(*spec.primary_key, name=f"pk_{spec.name}"),
    )
    indexes = [Index(name, *(table.c[c] for c in cols)) for name, cols in spec.indexes]
    return table, indexes


_TABLE_NAME = re.compile(r"\b(" + "|".join(sorted(TABLES, key=len, reverse=True)) + r")\b")


def _with_schema_token(sql: str) -> str:
    """Put ``{schema}`` before every washline table name (never inside index names)."""
    return _TABLE_NAME.sub(lambda m: SCHEMA_TOKEN + m.group(1), sql)


def _compile(element, dialect: str) -> str:
    text = str(element.compile(dialect=sqlalchemy_dialect(dialect))).strip()
    return "\n".join(line.rstrip() for line in text.splitlines())


def render_ddl(dialect: str) -> str:
    """The text of ``sql/<dialect>/staging.sql`` (with ``{schema}`` tokens)."""
    from sqlalchemy.schema import CreateIndex, CreateTable

    header = [
        f"-- washline staging and published tables for {dialect} (idempotent: safe to run again).",
        "-- GENERATED from src/washline/staging/spec.py by `python -m washline.staging.spec --write`;",
        "-- edit the spec, not this file. {schema} is replaced by the quoted schema and a dot, or by nothing.",
        "-- One logical date (ds, 'YYYY-MM-DD') is one replaceable slice of every staging table; load_id names",
        "-- the load. entity_members and entities hold the whole published registry state (upserted by the night's",
        "-- delta, or replaced by the merged version; entity_registry_state names the version they hold).",
    ]
    if dialect == "oracle":
        header.append("-- Statements are PL/SQL blocks separated by a line holding only '/'.")
    out = ["\n".join(header), ""]
    for spec in TABLES.values():
        table, indexes = _sa_table(spec, dialect)
        if dialect in ("sqlite", "postgres"):
            out.append(_with_schema_token(_compile(CreateTable(table, if_not_exists=True), dialect)) + ";")
            for ix in indexes:
                out.append(_with_schema_token(_compile(CreateIndex(ix, if_not_exists=True), dialect)) + ";")
        elif dialect == "mssql":
            create = _with_schema_token(_compile(CreateTable(table), dialect))
            out.append(f"IF OBJECT_ID(N'{SCHEMA_TOKEN}{spec.name}', N'U') IS NULL\n{create};")
            for ix, (ix_name, _) in zip(indexes, spec.indexes):
                create_ix = _with_schema_token(_compile(CreateIndex(ix), dialect))
                out.append(
                    f"IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'{ix_name}' "
                    f"AND object_id = OBJECT_ID(N'{SCHEMA_TOKEN}{spec.name}'))\n{create_ix};"
                )
        elif dialect == "oracle":
            for stmt in [_compile(CreateTable(table), dialect), *(_compile(CreateIndex(ix), dialect) for ix in indexes)]:
                body = _with_schema_token(stmt).replace("'", "''")
                out.append(
                    "BEGIN\n  EXECUTE IMMEDIATE '\n" + body + "';\nEXCEPTION\n"
                    "  -- ORA-00955: name is already used by an existing object (created before)\n"
                    "  WHEN OTHERS THEN IF SQLCODE != -955 THEN RAISE; END IF;\nEND;\n/"
                )
        else:
            raise ValueError(f"unknown dialect {dialect!r}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def ddl_path(dialect: str) -> Path:
    return SQL_DIR / dialect / "staging.sql"


def split_statements(text: str, dialect: str) -> list[str]:
    """Split a DDL file into statements: on lines holding only ``/`` for
    Oracle (PL/SQL blocks keep their own ``;``), else on ``;``. ``--`` comment
    lines are dropped."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("--")]
    if dialect == "oracle":
        parts = re.split(r"(?m)^\s*/\s*$", "\n".join(lines))
    else:
        parts = "\n".join(lines).split(";")
    return [p.strip() for p in parts if p.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render sql/<dialect>/staging.sql from the table spec.")
    parser.add_argument("--write", action="store_true", help="write the files (default: print diff status)")
    args = parser.parse_args(argv)
    stale = []
    for dialect in DIALECT_NAMES:
        text, path = render_ddl(dialect), ddl_path(dialect)
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
        elif not path.exists() or path.read_text() != text:
            stale.append(str(path))
    if stale:
        print("out of date: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
