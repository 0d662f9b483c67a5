"""The GX datasource built from the staging database's Airflow connection, secret kept out of files.

What it owns: :func:`datasource_spec` (which ``context.data_sources`` method
and keyword arguments per dialect, with the password only as a
``${WASHLINE_GX_SECRET_…}`` reference) and :func:`secret_in_env`, which holds
the value in this process's environment only while a validation runs.
"""

from __future__ import annotations

import importlib.util
import os
from contextlib import contextmanager
from typing import Any, Iterator

#: Environment variable that carries the connection secret to GX's config
#: substitution (``${…}``) while a validation runs.
SECRET_ENV_PREFIX = "WASHLINE_GX_SECRET_"


def datasource_spec(conn: Any, dialect: str, secret_var: str) -> tuple[str, dict[str, Any], str | None]:
    """How to build the GX datasource for an Airflow ``Connection``.

    Args:
        conn: the Airflow connection (``host``, ``port``, ``login``,
            ``password``, ``schema``, ``extra_dejson``).
        dialect: ``sqlite``, ``postgres``, ``mssql`` or ``oracle``.
        secret_var: environment variable name that will hold the secret.

    Returns:
        ``(method, kwargs, secret)``: the ``context.data_sources`` method
        (``add_or_update_sqlite`` …), its keyword arguments in which the
        secret appears only as ``${secret_var}``, and the secret value to put
        in the environment (None when there is none).

    Raises:
        ValueError: a connection lacking what the dialect needs (message
            names the field); RuntimeError: SQL Server without ``pyodbc``.
    """
    from sqlalchemy.engine import URL

    extra = dict(getattr(conn, "extra_dejson", None) or {})
    ref = "${" + secret_var + "}"
    if dialect == "sqlite":
        path = conn.host or conn.schema
        if not path:
            raise ValueError("sqlite connection needs the database file path in 'host'")
        return "add_or_update_sqlite", {"connection_string": f"sqlite:///{path}"}, None
    if dialect == "postgres":
        url = URL.create("postgresql+psycopg", username=conn.login or None, password=conn.password or None,
                         host=conn.host or None, port=conn.port or None, database=conn.schema or None,
                         query={k: str(extra[k]) for k in ("sslmode", "application_name") if k in extra})
        return "add_or_update_postgres", {"connection_string": ref}, url.render_as_string(hide_password=False)
    if dialect == "oracle":
        service = extra.get("service_name") or conn.schema
        if not conn.host or not service:
            raise ValueError("oracle connection needs 'host' and a service name (extra 'service_name' or 'schema')")
        url = URL.create("oracle+oracledb", username=conn.login or None, password=conn.password or None,
                         host=conn.host, port=conn.port or 1521, query={"service_name": str(service)})
        return "add_or_update_sql", {"connection_string": ref}, url.render_as_string(hide_password=False)
    if dialect == "mssql":
        if importlib.util.find_spec("pyodbc") is None:
            raise RuntimeError("GX validates SQL Server through pyodbc (mssql+pyodbc), which is not installed: "
                               "add pyodbc and the Microsoft ODBC driver to the worker image")
        if not conn.host or not conn.schema:
            raise ValueError("mssql connection needs 'host' and the database in 'schema'")
        kwargs = {
            "host": conn.host, "port": int(conn.port or 1433), "database": conn.schema,
            "schema": extra.get("schema_name", "dbo"), "username": conn.login or "",
            "password": ref if conn.password else "",
            "driver": extra.get("odbc_driver", "ODBC Driver 18 for SQL Server"),
            "encrypt": extra.get("encrypt", "Mandatory"),
            "trust_server_certificate": str(extra.get("trust_server_certificate", "false")).lower() in ("1", "true", "yes"),
        }
        return "add_or_update_sql_server", kwargs, conn.password or None
    raise ValueError(f"no GX datasource for dialect {dialect!r}")


@contextmanager
def secret_in_env(name: str, value: str | None) -> Iterator[None]:
    """Hold ``value`` in ``os.environ[name]`` for the block only."""
    if value is None:
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)
