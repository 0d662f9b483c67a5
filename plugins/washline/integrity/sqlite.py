"""SQLite integrity checks: ``PRAGMA integrity_check(N)`` (full) and
``PRAGMA quick_check(N)`` (physical only).

Source: SQLite documentation, "PRAGMA integrity_check": the pragma returns the
single row ``ok`` when nothing is wrong, otherwise up to N rows, and one row can
hold several newline-separated messages. ``quick_check`` skips checking that
index content matches table content (and UNIQUE constraints).
"""

from __future__ import annotations

import sqlite3
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


def check(hook: Any, mode: str = "full", max_errors: int = MAX_ERRORS) -> IntegrityReport:
    """Run the pragma on the database behind a ``SqliteHook``.

    Returns:
        IntegrityReport: PASS on ``ok``; FAIL with one finding per message;
        ERROR when the file cannot be opened or read as a database.
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
            rows = [r[0] for r in conn.execute(command).fetchall()]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        # "file is not a database" / "database disk image is malformed" on open
        # or read: the file is damaged beyond what the pragma can walk.
        return IntegrityReport(
            engine="sqlite", database=database, mode=mode, command=command,
            verdict=Verdict.FAIL if "malformed" in str(exc) or "not a database" in str(exc) else Verdict.ERROR,
            started_at=started, ended_at=utcnow(), coverage=coverage,
            findings=[Finding(code="sqlite_error", message=str(exc))], error=str(exc),
        )
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
