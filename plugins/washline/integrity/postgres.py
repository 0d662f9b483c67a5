"""PostgreSQL integrity checks with the amcheck extension (PostgreSQL 14+).

Full mode: ``verify_heapam`` on each table and ``bt_index_check(index,
heapallindexed => true)`` on each B-tree index. Physical-only mode skips
``heapallindexed`` (the index-versus-heap fingerprint). Source: PostgreSQL
documentation, "amcheck".
"""

from __future__ import annotations

from typing import Any

from washline.integrity.report import Finding, IntegrityReport, Verdict, utcnow


def check(hook: Any, mode: str = "full", tables: list[str] | None = None) -> IntegrityReport:
    """Run amcheck over ``tables`` (and their B-tree indexes) through a ``PostgresHook``.

    Returns:
        IntegrityReport: FAIL with one finding per corrupt block or index,
        ERROR when amcheck is missing and cannot be created, or the
        connection is lost during the check.
    """
    heapallindexed = "true" if mode == "full" else "false"
    coverage = [] if mode == "full" else ["index entries versus heap tuples (heapallindexed)"]
    commands: list[str] = ["CREATE EXTENSION IF NOT EXISTS amcheck"]
    findings: list[Finding] = []
    started = utcnow()
    database = "postgres"
    try:
        conn = hook.get_conn()
        database = getattr(getattr(conn, "info", None), "dbname", None) or database
        try:
            conn.autocommit = True
            cur = conn.cursor()
            cur.execute(commands[0])
            for table in tables or []:
                cur.execute("SELECT to_regclass(%s)", (table,))
                if cur.fetchone()[0] is None:
                    continue
                sql = "SELECT blkno, offnum, attnum, msg FROM verify_heapam(%s::regclass)"
                commands.append(sql.replace("%s", f"'{table}'"))
                cur.execute(sql, (table,))
                for blkno, offnum, attnum, msg in cur.fetchall():
                    findings.append(Finding(code="verify_heapam", message=msg, obj=table,
                                            location=f"block {blkno} offset {offnum}"))
                cur.execute(
                    "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = %s::regclass AND a.amname = 'btree'",
                    (table,),
                )
                for (index,) in cur.fetchall():
                    sql = f"SELECT bt_index_check(%s::regclass, {heapallindexed})"
                    commands.append(sql.replace("%s", f"'{index}'"))
                    try:
                        cur.execute(sql, (index,))
                    except Exception as exc:  # amcheck raises on a corrupt index
                        if "connection" in str(exc).lower() or "terminat" in str(exc).lower():
                            raise
                        findings.append(Finding(code="bt_index_check", message=str(exc).strip(),
                                                obj=table, index=index))
        finally:
            conn.close()
    except Exception as exc:
        return IntegrityReport(
            engine="postgres", database=database, mode=mode, command=";\n".join(commands),
            verdict=Verdict.ERROR, started_at=started, ended_at=utcnow(), findings=findings,
            coverage=coverage, error=f"{type(exc).__name__}: {exc}",
        )
    return IntegrityReport(
        engine="postgres", database=database, mode=mode, command=";\n".join(commands),
        verdict=Verdict.FAIL if findings else Verdict.PASS, started_at=started, ended_at=utcnow(),
        findings=findings, consistency_errors=len(findings), coverage=coverage,
    )
