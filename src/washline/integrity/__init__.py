"""Database integrity checks: one entry point, one report model, one module per engine.

``run_check(conn_id, mode)`` dispatches on the Airflow connection type:
``sqlite`` → ``PRAGMA integrity_check`` / ``quick_check``; ``postgres`` →
amcheck; ``mssql`` → ``DBCC CHECKDB ... WITH TABLERESULTS``; ``oracle`` →
``ANALYZE ... VALIDATE STRUCTURE CASCADE ONLINE`` + ``V$DATABASE_BLOCK_CORRUPTION``.
Every engine returns an :class:`~washline.integrity.report.IntegrityReport`.
Engine modules are imported lazily, so importing this package is cheap.
The Airflow operator is :class:`washline.integrity.operator.DatabaseIntegrityCheckOperator`;
the command line is ``python -m washline.integrity``.
"""

from __future__ import annotations

from typing import Any, Mapping

from washline.integrity.report import Finding, IntegrityReport, ObjectErrorCount, Verdict

__all__ = ["Finding", "IntegrityReport", "ObjectErrorCount", "Verdict", "run_check", "check_hook", "MODES"]

MODES = ("full", "physical_only")
#: DBCC CHECKDB switches accepted in ``options`` (SQL Server only).
MSSQL_OPTIONS = ("data_purity", "extended_logical_checks", "noindex", "tablock", "maxdop")


def validate_request(dialect: str | None, mode: str, options: Mapping[str, Any] | None) -> None:
    """Refuse a bad mode or option combination before anything runs.

    Raises:
        ValueError: unknown mode or option, an option for another engine, or
            an invalid DBCC combination (``mssql.InvalidOptions``).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    options = dict(options or {})
    unknown = set(options) - set(MSSQL_OPTIONS)
    if unknown:
        raise ValueError(f"unknown integrity option(s) {sorted(unknown)}; known: {list(MSSQL_OPTIONS)}")
    set_options = {k for k, v in options.items() if v not in (None, False)}
    if set_options and dialect not in (None, "mssql"):
        raise ValueError(f"option(s) {sorted(set_options)} apply to SQL Server only, not {dialect}")
    from washline.integrity.mssql import CheckDbOptions

    CheckDbOptions(physical_only=mode == "physical_only", **options).validate()


def check_hook(hook: Any, dialect: str, mode: str = "full", tables: list[str] | None = None, *,
               options: Mapping[str, Any] | None = None, timeout_s: float | None = None) -> IntegrityReport:
    """Run the engine for ``dialect`` over an existing DB-API hook (see :func:`run_check`)."""
    from washline.staging.dialects import STAGING_TABLES

    validate_request(dialect, mode, options)
    tables = list(tables or STAGING_TABLES)
    if dialect == "sqlite":
        from washline.integrity import sqlite

        return sqlite.check(hook, mode=mode, timeout_s=timeout_s)
    if dialect == "postgres":
        from washline.integrity import postgres

        return postgres.check(hook, mode=mode, tables=tables, timeout_s=timeout_s)
    if dialect == "mssql":
        from washline.integrity import mssql

        opts = mssql.CheckDbOptions(physical_only=mode == "physical_only", **dict(options or {}))
        return mssql.check(hook, mode=mode, options=opts, timeout_s=timeout_s)
    if dialect == "oracle":
        from washline.integrity import oracle

        return oracle.check(hook, mode=mode, tables=tables, timeout_s=timeout_s)
    raise NotImplementedError(f"integrity checks for {dialect} are not built")


def run_check(conn_id: str, mode: str = "full", tables: list[str] | None = None, *,
              options: Mapping[str, Any] | None = None, timeout_s: float | None = None) -> IntegrityReport:
    """Check the database behind an Airflow connection.

    Args:
        conn_id: Airflow connection id.
        mode: ``"full"`` or ``"physical_only"``.
        tables: tables whose heap and indexes are checked (engines that check
            per object); ``None`` means washline's staging tables.
        options: SQL Server ``DBCC CHECKDB`` switches: ``data_purity``,
            ``extended_logical_checks``, ``noindex``, ``tablock`` (bool),
            ``maxdop`` (int).
        timeout_s: per-check (SQLite) or per-statement (others) limit in
            seconds; reaching it gives ERROR.

    Returns:
        The engine's IntegrityReport (never raises for a failed check: a check
        that could not run is verdict ERROR).

    Raises:
        ValueError: unknown mode, or an invalid option combination (nothing ran).
        washline.staging.dialects.UnsupportedConnection: no engine for the type.
    """
    validate_request(None, mode, options)
    from washline.staging.dialects import get_db_hook

    hook, dialect = get_db_hook(conn_id)
    return check_hook(hook, dialect, mode, tables, options=options, timeout_s=timeout_s)
