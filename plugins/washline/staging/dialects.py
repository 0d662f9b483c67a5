"""Connection-type → dialect dispatch, identifier quoting and DDL loading."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from washline.paths import REPO_ROOT

SQL_DIR = REPO_ROOT / "sql"

#: Airflow conn_type → washline dialect folder under ``sql/``.
DIALECTS: dict[str, str] = {
    "sqlite": "sqlite",
    "postgres": "postgres",
    "postgresql": "postgres",
    "mssql": "mssql",
    "oracle": "oracle",
}

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

STAGING_TABLES = ("staging_records", "staging_links", "staging_clusters")
PUBLISHED_TABLES = {
    "staging_records": "published_records",
    "staging_links": "published_links",
    "staging_clusters": "published_clusters",
}


class UnsupportedConnection(ValueError):
    """The connection's type has no washline dialect."""


def dialect_for(conn_type: str) -> str:
    """Map an Airflow connection type to a dialect name.

    Raises:
        UnsupportedConnection: the type is none of sqlite, postgres, mssql, oracle.
    """
    try:
        return DIALECTS[(conn_type or "").lower()]
    except KeyError:
        raise UnsupportedConnection(
            f"connection type {conn_type!r} is not supported for staging; "
            f"use one of {sorted(set(DIALECTS))}"
        ) from None


def quote_ident(name: str, dialect: str) -> str:
    """Validate ``name`` against an allow-list pattern and quote it for ``dialect``.

    Raises:
        ValueError: the name is not a plain identifier (letters, digits, ``_``).
    """
    if not IDENTIFIER.match(name or ""):
        raise ValueError(f"identifier {name!r} is not allowed; it must match {IDENTIFIER.pattern}")
    if dialect == "mssql":
        return f"[{name}]"
    if dialect == "oracle":
        return f'"{name.upper()}"'
    return f'"{name}"'


def placeholder(dialect: str) -> str:
    """The DB-API parameter marker of the dialect's driver."""
    return {"sqlite": "?", "postgres": "%s", "mssql": "%s", "oracle": ":{n}"}[dialect]


def ddl_statements(dialect: str) -> list[str]:
    """Statements of ``sql/<dialect>/staging.sql`` in order (comments removed)."""
    text = (SQL_DIR / dialect / "staging.sql").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    return [stmt.strip() for stmt in "\n".join(lines).split(";") if stmt.strip()]


def get_db_hook(conn_id: str) -> tuple[Any, str]:
    """Return ``(hook, dialect)`` for an Airflow connection, via the provider's hook.

    Raises:
        UnsupportedConnection: unsupported connection type.
        AirflowNotFoundException: no such connection.
    """
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    dialect = dialect_for(conn.conn_type)
    return conn.get_hook(), dialect


def table_columns(cursor: Any, table: str, dialect: str) -> list[str]:
    """Column names of ``table`` in declaration order (a zero-row SELECT)."""
    cursor.execute(f"SELECT * FROM {quote_ident(table, dialect)} WHERE 1 = 0")
    return [d[0].lower() for d in cursor.description]
