"""SQLite integrity checks: ``PRAGMA integrity_check(N)`` (full) and
``PRAGMA quick_check(N)`` (physical only).

Source: SQLite documentation, "PRAGMA integrity_check": the pragma returns the
single row ``ok`` when nothing is wrong, otherwise up to N rows, and one row can
hold several newline-separated messages. ``quick_check`` skips checking that
index content matches table content (and UNIQUE constraints).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from washline.integrity.report import Finding, IntegrityReport, Verdict, utcnow

#: Most rows the pragma may return; reaching it means the output is truncated.
MAX_ERRORS = 100


def parse_rows(rows: list[str], max_errors: int = MAX_ERRORS) -> tuple[list[Finding], bool]:
    """Turn pragma output rows into findings.

    Returns:
        ``(findings, truncated)``; ``[]`` when the output is the single row ``ok``.
    """
    if rows == ["ok"]:
        return [], False
    findings = []
    for row in rows:
        for message in str(row).split("\n"):
            message = message.strip()
            if message and message != "ok":
                obj = index = None
                for marker in (" from index ", " of index ", " in index ", " of table ", " in table "):
                    if marker in message:
                        obj = message.split(marker, 1)[1].split()[0].strip(":")
                        index = obj if "index" in marker else None
                        break
                findings.append(Finding(code="integrity_check", message=message, obj=obj, index=index))
    return findings, len(rows) >= max_errors


def check(hook: Any, mode: str = "full", max_errors: int = MAX_ERRORS,
          timeout_s: float | None = None) -> IntegrityReport:
    """Run the pragma on the database behind a ``SqliteHook``.

    Args:
        max_errors: N of the pragma; N rows back marks the report truncated.
        timeout_s: wall-seconds limit; the pragma is interrupted after it
            (a progress handler) and the verdict is ERROR.

    Returns:
        IntegrityReport: PASS on ``ok``; FAIL with one finding per message,
        or when the file is "malformed"/"not a database"; ERROR when the
        file cannot be opened, or the check was interrupted.
    """
    pragma = "integrity_check" if mode == "full" else "quick_check"
    command = f"PRAGMA {pragma}({int(max_errors)})"
    coverage = [] if mode == "full" else ["index content versus table content", "UNIQUE constraints"]
    started = utcnow()
    database = "sqlite"
    try:
        database = hook.get_uri()
        conn = hook.get_conn()
        try:
            if timeout_s:
                deadline = time.monotonic() + float(timeout_s)
                conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            rows = [r[0] for r in conn.execute(command).fetchall()]
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            return IntegrityReport(
                engine="sqlite", database=database, mode=mode, command=command, verdict=Verdict.ERROR,
                started_at=started, ended_at=utcnow(), coverage=coverage,
                error=f"time limit of {timeout_s} s reached; the check did not finish",
            )
        return _db_error(exc, database, mode, command, started, coverage)
    except sqlite3.DatabaseError as exc:
        return _db_error(exc, database, mode, command, started, coverage)
    except Exception as exc:  # could not run at all: never a pass
        return IntegrityReport(
            engine="sqlite", database=database, mode=mode, command=command, verdict=Verdict.ERROR,
            started_at=started, ended_at=utcnow(), coverage=coverage, error=f"{type(exc).__name__}: {exc}",
        )
    findings, truncated = parse_rows(rows, max_errors)
    return IntegrityReport(
        engine="sqlite", database=database, mode=mode, command=command,
        verdict=Verdict.FAIL if findings else Verdict.PASS,
        started_at=started, ended_at=utcnow(), findings=findings,
        consistency_errors=len(findings), coverage=coverage, truncated=truncated,
    )


def _db_error(exc: sqlite3.DatabaseError, database: str, mode: str, command: str, started: Any,
              coverage: list[str]) -> IntegrityReport:
    """FAIL for a damaged file ("malformed", "not a database": the pragma
    cannot even walk it); ERROR otherwise (e.g. unable to open)."""
    damaged = "malformed" in str(exc) or "not a database" in str(exc)
    return IntegrityReport(
        engine="sqlite", database=database, mode=mode, command=command,
        verdict=Verdict.FAIL if damaged else Verdict.ERROR,
        started_at=started, ended_at=utcnow(), coverage=coverage,
        findings=[Finding(code="sqlite_error", message=str(exc), severity="CRITICAL")] if damaged else [],
        consistency_errors=1 if damaged else 0, error=str(exc),
    )
