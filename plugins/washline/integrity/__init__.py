"""Database integrity checks: one entry point, one report model, one module per engine.

``run_check(conn_id, mode)`` dispatches on the Airflow connection type:
``sqlite`` → ``PRAGMA integrity_check`` / ``quick_check``; ``postgres`` →
amcheck. Every engine returns an :class:`~washline.integrity.report.IntegrityReport`.
"""

from __future__ import annotations

from washline.integrity.report import Finding, IntegrityReport, Verdict

__all__ = ["Finding", "IntegrityReport", "Verdict", "run_check"]


def run_check(conn_id: str, mode: str = "full", tables: list[str] | None = None) -> IntegrityReport:
    """Check the database behind an Airflow connection.

    Args:
        conn_id: Airflow connection id.
        mode: ``"full"`` or ``"physical_only"``.
        tables: tables whose heap and indexes are checked (engines that check
            per object); ``None`` means washline's staging tables.

    Returns:
        The engine's IntegrityReport (never raises for a failed check: a check
        that could not run is verdict ERROR).

    Raises:
        ValueError: unknown mode.
        washline.staging.dialects.UnsupportedConnection: no engine for the type.
    """
    if mode not in ("full", "physical_only"):
        raise ValueError(f"mode must be 'full' or 'physical_only', got {mode!r}")
    from washline.staging.dialects import STAGING_TABLES, get_db_hook

    hook, dialect = get_db_hook(conn_id)
    tables = list(tables or STAGING_TABLES)
    if dialect == "sqlite":
        from washline.integrity import sqlite

        return sqlite.check(hook, mode=mode)
    if dialect == "postgres":
        from washline.integrity import postgres

        return postgres.check(hook, mode=mode, tables=tables)
    raise NotImplementedError(f"integrity checks for {dialect} are not built yet")
