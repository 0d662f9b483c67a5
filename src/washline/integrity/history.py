"""Integrity-check history: one row per check in ``washline_integrity_log``
of the checked (staging) database, after Ola Hallengren's ``CommandLog``.

Columns: ``database_name, engine, check_mode, command, start_time, end_time,
duration_s, verdict, allocation_errors, consistency_errors, findings
(count), error_message``. DDL per dialect: ``sql/<dialect>/integrity_history.sql``.

A SQLite file whose check gave FAIL or ERROR is not written to: inserting
into a damaged b-tree file can spread the damage. The row is then only in
the task log (and the XCom report). Write errors never change a verdict.
"""

from __future__ import annotations

import logging
from typing import Any

from washline.integrity.report import IntegrityReport
from washline.paths import REPO_ROOT

log = logging.getLogger(__name__)

TABLE = "washline_integrity_log"
COLUMNS = ("database_name", "engine", "check_mode", "command", "start_time", "end_time", "duration_s",
           "verdict", "allocation_errors", "consistency_errors", "findings", "error_message")


def ddl(dialect: str) -> str:
    """The CREATE statement of ``sql/<dialect>/integrity_history.sql`` (comments removed, one statement)."""
    text = (REPO_ROOT / "sql" / dialect / "integrity_history.sql").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip()
    return body if dialect == "oracle" else body.rstrip(";")


def row_values(report: IntegrityReport, dialect: str) -> list[Any]:
    """Values for COLUMNS; SQLite gets ISO text times, SQL Server naive UTC."""
    start, end = report.started_at, report.ended_at
    if dialect == "sqlite":
        start, end = start.isoformat(), end.isoformat()
    elif dialect == "mssql":
        start, end = start.replace(tzinfo=None), end.replace(tzinfo=None)
    return [report.database[:128], report.engine, report.mode, report.command or "-", start, end,
            report.duration_s, report.verdict.value, report.allocation_errors, report.consistency_errors,
            len(report.findings), report.error]


def insert_sql(dialect: str) -> str:
    if dialect == "oracle":
        marks = ", ".join(f":{i + 1}" for i in range(len(COLUMNS)))
    else:
        marks = ", ".join(["?" if dialect == "sqlite" else "%s"] * len(COLUMNS))
    return f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}) VALUES ({marks})"


def should_write(report: IntegrityReport, dialect: str) -> bool:
    return not (dialect == "sqlite" and report.verdict.blocks_publish)


def record(hook: Any, dialect: str, report: IntegrityReport) -> bool:
    """Append the report's row (creating the table if needed), in its own transaction.

    Returns:
        True when written; False when skipped (damaged SQLite file) or the
        write failed (logged as a warning with the reason).
    """
    if not should_write(report, dialect):
        log.warning("not writing %s into %s: its check was %s", TABLE, report.database, report.verdict.value)
        return False
    try:
        conn = hook.get_conn()
        try:
            cur = conn.cursor()
            cur.execute(ddl(dialect))
            cur.execute(insert_sql(dialect), row_values(report, dialect))
            conn.commit()
        finally:
            conn.close()
    except Exception as exc:
        log.warning("could not append to %s in %s: %s: %s", TABLE, report.database, type(exc).__name__, exc)
        return False
    return True
