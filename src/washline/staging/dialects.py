"""Connection type → dialect dispatch, identifier quoting, statement rendering,
DDL loading and connecting with retries.

Every name that reaches SQL text (table, column, schema) goes through
:func:`quote_ident`, which accepts only plain identifiers and quotes them per
dialect; every value goes as a bound parameter. Statements are written once
with ``:name`` binds and compiled by SQLAlchemy for the DB-API driver each
provider hook uses (:func:`render`), so the same text runs on sqlite3,
psycopg 3, pymssql and python-oracledb.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Mapping, Sequence

from washline.paths import IDENTIFIER_RE
from washline.staging.spec import ENTITY_TABLES, SCHEMA_TOKEN, SQL_DIR, ddl_path, split_statements, sqlalchemy_dialect

log = logging.getLogger(__name__)

__all__ = [
    "DIALECTS", "ENTITY_STAGING_TABLES", "ENTITY_TABLES", "IDENTIFIER", "PUBLISHED_TABLES", "SQL_DIR",
    "STAGING_TABLES", "StagingLocked",
    "StagingUnreachable", "UnsupportedConnection", "busy_timeout", "connect", "raise_if_locked",
    "ddl_statements", "dialect_for", "get_db_hook", "markers",
    "placeholder", "qualify", "quote_ident", "render", "table_columns", "validate_schema",
]

#: Airflow conn_type → washline dialect folder under ``sql/``.
DIALECTS: dict[str, str] = {
    "sqlite": "sqlite",
    "postgres": "postgres",
    "postgresql": "postgres",
    "mssql": "mssql",
    "oracle": "oracle",
}

#: Allow-list for every identifier: letters, digits and ``_``, not starting
#: with a digit, at most 63 characters (PostgreSQL's limit; Oracle 12.2+ and
#: SQL Server allow 128).
IDENTIFIER = re.compile(IDENTIFIER_RE)

STAGING_TABLES = ("staging_records", "staging_links", "staging_clusters")
PUBLISHED_TABLES = {
    "staging_records": "published_records",
    "staging_links": "published_links",
    "staging_clusters": "published_clusters",
}
#: The entity registry's staging tables (loaded and published with the slice
#: when the link job wrote a registry version); published names in ``ENTITY_TABLES``.
ENTITY_STAGING_TABLES = tuple(ENTITY_TABLES)


class UnsupportedConnection(ValueError):
    """The connection's type has no washline dialect."""


class StagingUnreachable(ConnectionError):
    """The staging database could not be reached after all connection attempts.

    A ``ConnectionError``, not a ``ValueError``: the task's Airflow retries
    (bounded, ``retries`` of the DAG) apply, then the run fails with this message.
    """


class StagingLocked(StagingUnreachable):
    """The staging database stayed locked by another connection for the whole
    busy timeout (SQLite ``database is locked``). Nothing was changed; the
    task's bounded Airflow retries try again."""


def busy_timeout() -> float:
    """Seconds a statement waits for another connection's lock before
    failing: ``$WASHLINE_STAGING_BUSY_TIMEOUT``, default 30 (SQLite's
    ``busy_timeout``)."""
    return max(0.0, float(os.environ.get("WASHLINE_STAGING_BUSY_TIMEOUT", 30)))


def _is_lock_error(exc: BaseException) -> bool:
    import sqlite3

    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("database is locked" in text or "database is busy" in text
                                                          or "database table is locked" in text)


def raise_if_locked(exc: BaseException, conn_id: str, dialect: str, hook: Any, action: str) -> None:
    """Turn a lock timeout into :class:`StagingLocked` naming the connection,
    the database and the wait; any other error is left alone.

    Raises:
        StagingLocked: ``exc`` is SQLite's ``database is locked`` / ``busy``.
    """
    if not _is_lock_error(exc):
        return
    raise StagingLocked(
        f"staging database {conn_id!r} ({dialect} at {_location(hook)}) is locked by another connection: "
        f"{action} waited {busy_timeout():g} s (busy timeout, $WASHLINE_STAGING_BUSY_TIMEOUT) and gave up "
        f"({type(exc).__name__}: {exc}). Nothing was changed; the task's retries will try again"
    ) from exc


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
    """Validate ``name`` against :data:`IDENTIFIER` and quote it for ``dialect``.

    PostgreSQL and SQLite keep the (lower-case) name in double quotes, SQL
    Server uses brackets, Oracle upper-cases it (the name its unquoted DDL
    created) in double quotes.

    Raises:
        ValueError: the name is not a plain identifier.
    """
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise ValueError(f"identifier {name!r} is not allowed; it must match {IDENTIFIER.pattern}")
    if dialect == "mssql":
        return f"[{name}]"
    if dialect == "oracle":
        return f'"{name.upper()}"'
    return f'"{name}"'


def validate_schema(schema: str | None, dialect: str) -> str | None:
    """Check a schema name (e.g. from a Param); ``None``/``""`` mean the
    connection's default schema.

    Raises:
        ValueError: not a plain identifier, or a schema on SQLite other than ``main``.
    """
    if schema in (None, ""):
        return None
    quote_ident(schema, dialect)  # raises on anything but a plain identifier
    if dialect == "sqlite" and schema != "main":
        raise ValueError(f"SQLite staging has no schema {schema!r}; use the database file of the connection")
    return schema


def qualify(table: str, dialect: str, schema: str | None = None) -> str:
    """``table`` quoted, prefixed by the quoted ``schema`` when one is given."""
    schema = validate_schema(schema, dialect)
    return f"{quote_ident(schema, dialect)}.{quote_ident(table, dialect)}" if schema else quote_ident(table, dialect)


def placeholder(dialect: str) -> str:
    """The positional DB-API parameter marker of the dialect's driver
    (Oracle's is numbered: see :func:`markers`)."""
    return {"sqlite": "?", "postgres": "%s", "mssql": "%s", "oracle": ":{n}"}[dialect]


def markers(dialect: str, n: int) -> list[str]:
    """``n`` positional parameter markers, e.g. ``[":1", ":2"]`` on Oracle."""
    if dialect == "oracle":
        return [f":{i}" for i in range(1, n + 1)]
    return [placeholder(dialect)] * n


def render(sql: str, dialect: str, params: Mapping[str, Any] | None = None) -> tuple[str, Any]:
    """Compile ``sql`` written with ``:name`` binds for the dialect's driver.

    Returns:
        ``(text, parameters)``: ``?`` + a tuple on SQLite, ``%(name)s`` + a
        dict on PostgreSQL/SQL Server, ``:name`` + a dict on Oracle.
    """
    from sqlalchemy import text

    compiled = text(sql).compile(dialect=sqlalchemy_dialect(dialect))
    values = dict(params or {})
    if compiled.positional:
        return compiled.string, tuple(values[name] for name in compiled.positiontup)
    return compiled.string, values


def ddl_statements(dialect: str, schema: str | None = None) -> list[str]:
    """Statements of ``sql/<dialect>/staging.sql`` in order, with ``{schema}``
    replaced by the quoted schema and a dot (or nothing), comments removed."""
    schema = validate_schema(schema, dialect)
    prefix = f"{quote_ident(schema, dialect)}." if schema else ""
    text = ddl_path(dialect).read_text().replace(SCHEMA_TOKEN, prefix)
    return split_statements(text, dialect)


def get_db_hook(conn_id: str) -> tuple[Any, str]:
    """Return ``(hook, dialect)`` for an Airflow connection, via the provider's
    hook (``SqliteHook``, ``PostgresHook``, ``MsSqlHook``, ``OracleHook``).

    Raises:
        UnsupportedConnection: unsupported connection type.
        AirflowNotFoundException: no such connection.
    """
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    dialect = dialect_for(conn.conn_type)
    return conn.get_hook(), dialect


def _scrub(text: str, secrets: Sequence[str | None]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _conn_info(hook: Any) -> Any:
    conn_info = getattr(hook, "connection", None)
    if conn_info is None:
        try:
            conn_info = hook.get_connection(getattr(hook, hook.conn_name_attr))
        except Exception:
            conn_info = None
    return conn_info


def _location(hook: Any) -> str:
    """``host:port`` of the hook's connection (a SQLite file's path), never its password."""
    info = _conn_info(hook)
    return f"{getattr(info, 'host', None) or '?'}:{getattr(info, 'port', None) or '-'}"


def connect(hook: Any, dialect: str, conn_id: str, attempts: int | None = None, delay: float | None = None) -> Any:
    """Open a DB-API connection through ``hook.get_conn()``, retrying.

    On SQLite the connection waits up to :func:`busy_timeout` seconds for
    another connection's lock (``PRAGMA busy_timeout``) before a statement
    fails with ``database is locked`` (see :func:`raise_if_locked`).

    Attempts default to ``$WASHLINE_STAGING_CONNECT_ATTEMPTS`` (3) with
    ``$WASHLINE_STAGING_CONNECT_DELAY`` seconds (2.0) before the second try,
    doubling after each failure (tenacity). Opening a connection has no side
    effects, so any error is retried.

    Raises:
        StagingUnreachable: every attempt failed; the message names the
            connection id, dialect, host and port, and the last driver error
            (with the connection's password, if it appears, replaced by ``***``).
    """
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    attempts = max(1, int(attempts or os.environ.get("WASHLINE_STAGING_CONNECT_ATTEMPTS", 3)))
    wait = float(delay if delay is not None else os.environ.get("WASHLINE_STAGING_CONNECT_DELAY", 2.0))
    conn_info = _conn_info(hook)
    pw = getattr(conn_info, "password", None)
    where = f"{getattr(conn_info, 'host', None) or '?'}:{getattr(conn_info, 'port', None) or '-'}"

    def described(exc: BaseException) -> str:
        return _scrub(f"{type(exc).__name__}: {exc}".strip(), [pw])

    def open_once() -> Any:
        conn = hook.get_conn()
        if dialect == "sqlite":
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout() * 1000)}")
        return conn

    def warn(state: Any) -> None:
        log.warning("staging connection %s (%s at %s) attempt %d/%d failed: %s; retrying in %.1fs",
                    conn_id, dialect, where, state.attempt_number, attempts, described(state.outcome.exception()),
                    state.next_action.sleep)

    # waits delay, 2·delay, 4·delay, ... between attempts
    retrying = Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=wait),
                        retry=retry_if_exception_type(Exception), before_sleep=warn, reraise=True)
    try:
        return retrying(open_once)
    except Exception as last:  # noqa: BLE001 - reported below, with type and message
        raise StagingUnreachable(
            f"staging database {conn_id!r} ({dialect} at {where}) unreachable after {attempts} attempt(s): "
            f"{described(last)}"
        ) from None


def table_columns(cursor: Any, table: str, dialect: str, schema: str | None = None) -> list[str]:
    """Column names of ``table`` in declaration order, lower-case (a zero-row SELECT)."""
    cursor.execute(f"SELECT * FROM {qualify(table, dialect, schema)} WHERE 1 = 0")
    names = [d[0].lower() for d in cursor.description]
    cursor.fetchall()
    return names
