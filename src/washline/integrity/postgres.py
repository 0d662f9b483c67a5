"""PostgreSQL integrity checks with the amcheck extension (PostgreSQL 14+).

Full mode: ``verify_heapam`` on each table and ``bt_index_check(index,
heapallindexed => true)`` on each B-tree index. Physical-only mode skips
``heapallindexed`` (the index-versus-heap fingerprint).

Outcomes:

* ``verify_heapam`` rows (``blkno, offnum, attnum, msg``) → one finding each,
  located ``block N``;
* an error with SQLSTATE class ``XX001`` (data_corrupted, e.g. "invalid page
  in block 3") or ``XX002`` (index_corrupted, raised by ``bt_index_check``)
  → a finding, with the block number taken from the message or detail;
* a lost connection (server PANIC or restart), a cancelled statement
  (``statement_timeout``) or any other error → ERROR: the check did not finish.

The queries live in ``sql/postgres/integrity_*.sql``. The ``pg_amcheck``
client (exit 0 clean, 1 tool failure, 2 corruption) does the same checks
from the shell; on Debian it is under ``pg_config --bindir``, not PATH, and
needs ``--install-missing`` to create the extension. Source: PostgreSQL
documentation, "amcheck" and "pg_amcheck".
"""

from __future__ import annotations

import re
from typing import Any

from washline.integrity.report import Finding, IntegrityReport, Verdict, error_report, utcnow
from washline.paths import REPO_ROOT

SQL_DIR = REPO_ROOT / "sql" / "postgres"
BLOCK_RE = re.compile(r"\bblock (\d+)|\btid=\((\d+),|\bblkno[= ](\d+)", re.I)
CORRUPTION_STATES = {"XX001", "XX002"}
LOST_CONNECTION_STATES_PREFIX = ("08", "57P")  # connection exceptions, admin/crash shutdown


def load_sql(name: str) -> str:
    """Text of ``sql/postgres/integrity_<name>.sql`` without comment lines."""
    text = (SQL_DIR / f"integrity_{name}.sql").read_text()
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip().rstrip(";")


def sqlstate(exc: BaseException) -> str | None:
    """SQLSTATE of a psycopg (3) or psycopg2 error, or None."""
    return getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)


def _detail(exc: BaseException) -> str:
    diag = getattr(exc, "diag", None)
    return getattr(diag, "message_detail", None) or ""


def block_of(text: str) -> str | None:
    """``block N`` from an amcheck/heap error message, or None."""
    m = BLOCK_RE.search(text or "")
    if not m:
        return None
    return f"block {next(g for g in m.groups() if g is not None)}"


def is_lost_connection(exc: BaseException) -> bool:
    state = sqlstate(exc) or ""
    if state.startswith(LOST_CONNECTION_STATES_PREFIX):
        return True
    name = type(exc).__name__
    text = str(exc).lower()
    return name in ("OperationalError", "InterfaceError") or "server closed the connection" in text \
        or "terminating connection" in text or "connection is closed" in text


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def check(hook: Any, mode: str = "full", tables: list[str] | None = None,
          timeout_s: float | None = None) -> IntegrityReport:
    """Run amcheck over ``tables`` (and their B-tree indexes) through a ``PostgresHook``.

    Args:
        tables: table names (resolved with ``to_regclass``; missing ones skipped).
        timeout_s: ``statement_timeout`` per statement, seconds; reaching it is ERROR.

    Returns:
        IntegrityReport: FAIL with one finding per corrupt tuple, block or
        index; ERROR when amcheck is missing and cannot be created, the
        connection is lost (PANIC), a statement times out, or any other error.
    """
    heapallindexed = mode == "full"
    coverage = [] if heapallindexed else ["index entries versus heap tuples (heapallindexed)"]
    coverage.append("B-tree parent/child invariants (bt_index_parent_check, needs a ShareLock)")
    commands: list[str] = []
    findings: list[Finding] = []
    started = utcnow()
    database = "postgres"
    missing: list[str] = []
    heap_sql, index_list_sql, index_sql = load_sql("verify_heap"), load_sql("indexes"), load_sql("index_check")
    try:
        conn = hook.get_conn()
        database = getattr(getattr(conn, "info", None), "dbname", None) or \
            (conn.get_dsn_parameters().get("dbname") if hasattr(conn, "get_dsn_parameters") else database)
        try:
            conn.autocommit = True
            cur = conn.cursor()
            if timeout_s:
                cur.execute(f"SET statement_timeout = {int(timeout_s * 1000)}")
                commands.append(f"SET statement_timeout = {int(timeout_s * 1000)}")
            commands.append("CREATE EXTENSION IF NOT EXISTS amcheck")
            cur.execute(commands[-1])
            for table in tables or []:
                cur.execute("SELECT to_regclass(%s)", (table,))
                if cur.fetchone()[0] is None:
                    missing.append(table)
                    continue
                commands.append(heap_sql.replace("%(rel)s", _literal(table)))
                try:
                    cur.execute(heap_sql, {"rel": table})
                    for blkno, offnum, attnum, msg in cur.fetchall():
                        where = f"block {blkno}" + (f" offset {offnum}" if offnum is not None else "")
                        findings.append(Finding(code="verify_heapam", message=f"{where}: {msg}", obj=table,
                                                location=f"block {blkno}"))
                except Exception as exc:
                    if sqlstate(exc) not in CORRUPTION_STATES:
                        raise
                    text = f"{str(exc).strip()} {_detail(exc)}".strip()
                    findings.append(Finding(code=f"verify_heapam:{sqlstate(exc)}", message=text, obj=table,
                                            location=block_of(text)))
                cur.execute(index_list_sql, {"rel": table})
                for (index,) in cur.fetchall():
                    commands.append(index_sql.replace("%(idx)s", _literal(index))
                                    .replace("%(heapallindexed)s", str(heapallindexed).lower()))
                    try:
                        cur.execute(index_sql, {"idx": index, "heapallindexed": heapallindexed})
                        cur.fetchall()
                    except Exception as exc:  # amcheck raises index_corrupted on a corrupt index
                        if sqlstate(exc) not in CORRUPTION_STATES:
                            raise
                        text = f"{str(exc).strip()} {_detail(exc)}".strip()
                        findings.append(Finding(code=f"bt_index_check:{sqlstate(exc)}", message=text, obj=table,
                                                index=index, location=block_of(text)))
        finally:
            try:
                conn.close()
            except Exception:
                pass
    except Exception as exc:
        state = sqlstate(exc)
        what = "connection lost during the check (server crash or PANIC?)" if is_lost_connection(exc) else \
            ("statement timed out" if state == "57014" else "check failed to run")
        return error_report("postgres", database, mode, ";\n".join(commands), started,
                            f"{what}: {type(exc).__name__}{f' [{state}]' if state else ''}: {str(exc).strip()}",
                            findings=findings, coverage=coverage, consistency_errors=len(findings))
    if missing:
        coverage.append(f"tables not found, so not checked: {', '.join(missing)}")
    return IntegrityReport(
        engine="postgres", database=database, mode=mode, command=";\n".join(commands),
        verdict=Verdict.FAIL if findings else Verdict.PASS, started_at=started, ended_at=utcnow(),
        findings=findings, consistency_errors=len(findings), coverage=coverage,
    )
