"""Oracle integrity checks ("physical only" in Oracle terms), through ``OracleHook`` (thin mode).

1. ``ANALYZE TABLE "OWNER"."T" VALIDATE STRUCTURE CASCADE ONLINE`` per staging
   table: checks every block of the table and its indexes and that each
   index entry points at a row. ORA-01498 (block check failure), ORA-01499
   (table/index cross-reference failure) and ORA-01578 (data block
   corrupted, file# and block# kept as the location) are corruption → FAIL.
2. ``V$DATABASE_BLOCK_CORRUPTION``: blocks marked corrupt by any earlier
   validation (RMAN ``VALIDATE``, ``BACKUP``, Health Monitor). A row with
   ``CORRUPTION_CHANGE#`` 0 is media corruption; ``CORRUPTION_TYPE``
   ``LOGICAL`` is logical corruption. ``BLOCKS`` are summed.
3. Health Monitor (:mod:`washline.integrity.oracle_hm`): ``DBMS_HM.RUN_CHECK``
   for the DB Structure Integrity Check, the Dictionary Integrity Check (full
   mode) and the Data Block Integrity Check of each block named by 1. and 2.;
   findings from ``V$HM_FINDING``: a CRITICAL or HIGH open FAILURE → FAIL,
   LOW → WARN. In ``command`` these calls are listed with their bind values
   as a trailing ``--`` comment.

A privilege error (ORA-00942 on a view, ORA-01031 on ANALYZE, PLS-00201 on
``DBMS_HM``) is ERROR with a message naming the grant needed. A result set
whose columns are not the ones selected is ERROR (:class:`UnexpectedResult`),
never findings read from the wrong columns.

RMAN ``VALIDATE`` needs the ``rman`` binary on the database host, which a
SQL session cannot start. Configure it as a command in the connection's
extra, e.g. ``{"rman_validate_command": ["ssh", "oracle@dbhost",
"rman target / cmdfile=/opt/washline/validate.rman"]}`` where the cmdfile
holds ``VALIDATE CHECK LOGICAL DATABASE;``. Use operating-system
authentication (``target /``) so no password is in argv. The command runs
before the view is read (non-zero exit → ERROR), and its findings are read
from the same ``V$DATABASE_BLOCK_CORRUPTION`` view.

Modes: ANALYZE, the view and the Health Monitor structure and block checks
run in both (ANALYZE is already a physical check); the Dictionary Integrity
Check only in full mode. ``coverage`` names what is not covered.
Sources: Oracle Database SQL Language Reference "ANALYZE"; Database
Reference "V$DATABASE_BLOCK_CORRUPTION", "V$HM_RUN", "V$HM_FINDING"; PL/SQL
Packages and Types Reference "DBMS_HM"; Backup and Recovery User's Guide
"Validating Database Files and Backups".
"""

from __future__ import annotations

import re
import subprocess
from typing import Any, Iterable, Sequence

from washline.integrity import oracle_hm
from washline.integrity.oracle_hm import UnexpectedResult
from washline.integrity.report import Finding, IntegrityReport, Verdict, error_report, utcnow

VIEW = "V$DATABASE_BLOCK_CORRUPTION"
VIEW_COLUMNS = ("FILE#", "BLOCK#", "BLOCKS", "CORRUPTION_CHANGE#", "CORRUPTION_TYPE")
#: columns the view may add to those selected (a recorded ``SELECT *`` of Oracle 12c and later)
VIEW_OPTIONAL = ("CON_ID",)
VIEW_QUERY = f"SELECT {', '.join(VIEW_COLUMNS)} FROM {VIEW} ORDER BY FILE#, BLOCK#"
CORRUPTION_CODES = {
    "ORA-01498": "block check failure",
    "ORA-01499": "table/index cross reference failure",
    "ORA-01578": "data block corrupted",
    "ORA-08103": "object no longer exists (possible block corruption)",
}
PRIVILEGE_CODES = {
    "ORA-00942": f"SELECT on {VIEW}: GRANT SELECT ON SYS.V_$DATABASE_BLOCK_CORRUPTION TO <user> "
                 "(or the broader SELECT_CATALOG_ROLE) for the connection's user",
    "ORA-01031": "ANALYZE on the staging tables: the connection's user must own them or hold ANALYZE ANY",
}
ORA_RE = re.compile(r"ORA-\d{5}")
BLOCK_RE = re.compile(r"file # (\d+), block # (\d+)")
COVERAGE = [
    "RMAN VALIDATE of every datafile block (only when rman_validate_command is configured)",
    "blocks of objects other than the checked tables (read from V$DATABASE_BLOCK_CORRUPTION only "
    "when an earlier validation marked them)",
]


class OracleCheckError(RuntimeError):
    """A tooling error that stops the Oracle check (verdict ERROR)."""


def build_analyze(table: str, owner: str | None = None) -> str:
    """``ANALYZE TABLE … VALIDATE STRUCTURE CASCADE ONLINE`` for an allow-listed identifier.

    Raises:
        ValueError: not a plain identifier.
    """
    from washline.staging.dialects import quote_ident

    target = quote_ident(table, "oracle")
    if owner:
        target = f"{quote_ident(owner, 'oracle')}.{target}"
    return f"ANALYZE TABLE {target} VALIDATE STRUCTURE CASCADE ONLINE"


def error_code(exc_or_text: Any) -> str | None:
    """The ``ORA-nnnnn`` code of an oracledb error (or its text), or None."""
    err = exc_or_text.args[0] if isinstance(exc_or_text, BaseException) and exc_or_text.args else exc_or_text
    full = getattr(err, "full_code", None)
    if full:
        return str(full)
    m = ORA_RE.search(str(getattr(err, "message", err)))
    return m.group(0) if m else None


def classify_error(code: str | None, message: str, obj: str | None = None) -> tuple[Verdict, Finding | None, str | None]:
    """Classify an error raised by a check statement.

    Returns:
        ``(FAIL, finding, None)`` for corruption codes; ``(ERROR, None,
        text)`` for privilege errors (text names the grant) and anything else.
    """
    if code in CORRUPTION_CODES:
        m = BLOCK_RE.search(message)
        return Verdict.FAIL, Finding(code=code, message=message.strip(), severity="ERROR", obj=obj,
                                     location=f"{m.group(1)}:{m.group(2)}" if m else None), None
    if code in PRIVILEGE_CODES:
        return Verdict.ERROR, None, f"{message.strip()} — missing privilege: {PRIVILEGE_CODES[code]}"
    return Verdict.ERROR, None, message.strip()


def _block_int(rec: dict[str, Any], column: str) -> int:
    """A non-negative whole number (python-oracledb gives NUMBER as int, or float / Decimal)."""
    value = rec[column]
    try:
        number = None if isinstance(value, (bool, str)) or value is None else float(value)
    except (TypeError, ValueError):
        number = None
    if isinstance(value, str) and value.strip().isdigit():
        number = float(value)
    if number is None or number < 0 or number != int(number):
        raise UnexpectedResult(f"{VIEW}.{column} is {value!r}, not a non-negative integer; row {rec}")
    return int(number)


def parse_block_corruption(columns: Sequence[str] | None, rows: Iterable[Sequence[Any]]) -> tuple[list[Finding], int]:
    """Findings from ``V$DATABASE_BLOCK_CORRUPTION`` rows.

    Args:
        columns: the result's column names (any case and order): exactly
            ``VIEW_COLUMNS``, optionally with ``CON_ID``; None reads rows of
            exactly five values in ``VIEW_QUERY``'s order.

    Returns:
        ``(findings, corrupt_blocks)``: one finding per row (code ``MEDIA``
        when ``CORRUPTION_CHANGE#`` is 0, ``LOGICAL`` for logical
        corruption), location ``file#:block#``, and the sum of ``BLOCKS``.

    Raises:
        UnexpectedResult: other columns, a row of another width, or a
            ``FILE#`` / ``BLOCK#`` / ``BLOCKS`` / ``CORRUPTION_CHANGE#`` that
            is not an integer (nothing is read from such a result).
    """
    if columns is None:
        names = list(VIEW_COLUMNS)
    else:
        names = [str(c).upper() for c in columns]
        required, allowed = set(VIEW_COLUMNS), set(VIEW_COLUMNS) | set(VIEW_OPTIONAL)
        if not required <= set(names) or not set(names) <= allowed or len(set(names)) != len(names):
            unknown = [c for c in names if c not in allowed]
            missing = [c for c in VIEW_COLUMNS if c not in names]
            raise UnexpectedResult(
                f"{VIEW} result has columns {list(columns)}" + (f"; unexpected {unknown}" if unknown else "")
                + (f"; missing {missing}" if missing else "") + f"; expected {list(VIEW_COLUMNS)}"
                + " (CON_ID allowed); nothing was read from it")
    findings, total = [], 0
    for row in rows:
        row = list(row)
        if len(row) != len(names):
            raise UnexpectedResult(f"{VIEW} row has {len(row)} values for {len(names)} columns: {row}")
        rec = dict(zip(names, row))
        file_no, block_no = _block_int(rec, "FILE#"), _block_int(rec, "BLOCK#")
        blocks, change = _block_int(rec, "BLOCKS"), _block_int(rec, "CORRUPTION_CHANGE#")
        ctype = str(rec.get("CORRUPTION_TYPE") or "").upper()
        kind = "LOGICAL" if ctype == "LOGICAL" else ("MEDIA" if change == 0 else ctype or "UNKNOWN")
        total += blocks
        findings.append(Finding(
            code=kind, severity="ERROR", location=f"{file_no}:{block_no}", blocks=blocks,
            message=(f"{blocks} corrupt block(s) from file {file_no} block {block_no}: "
                     f"{kind.lower()} corruption (type {ctype or '?'}, corruption change# {change})"),
        ))
    return findings, total


def named_blocks(findings: Iterable[Finding]) -> list[tuple[int, int]]:
    """``(file#, block#)`` of findings located ``"file#:block#"``, in order, without repeats."""
    out: list[tuple[int, int]] = []
    for f in findings:
        parts = (f.location or "").split(":")
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            block = (int(parts[0]), int(parts[1]))
            if block not in out:
                out.append(block)
    return out


def run_rman(command: Sequence[str], timeout_s: float | None = None) -> None:
    """Run the configured RMAN validate command (argv list, no shell).

    Raises:
        OracleCheckError: not a list of strings, timed out, or exited non-zero
            (its last output lines are in the message).
    """
    if not isinstance(command, (list, tuple)) or not command or not all(isinstance(a, str) for a in command):
        raise OracleCheckError("rman_validate_command must be a non-empty list of strings (argv)")
    try:
        proc = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise OracleCheckError(f"RMAN validate command timed out after {timeout_s} s") from exc
    except OSError as exc:
        raise OracleCheckError(f"RMAN validate command could not start: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise OracleCheckError(f"RMAN validate command exited {proc.returncode}: {tail}")


def check(hook: Any, mode: str = "full", tables: list[str] | None = None,
          timeout_s: float | None = None) -> IntegrityReport:
    """ANALYZE each table, read ``V$DATABASE_BLOCK_CORRUPTION``, then run the
    Health Monitor checks, through an ``OracleHook``.

    Args:
        tables: table names (unquoted; upper-cased); missing tables are skipped.
        timeout_s: per-call timeout (oracledb ``call_timeout``) and the
            ``DBMS_HM.RUN_CHECK`` timeout; reaching it is ERROR.

    Returns:
        IntegrityReport: FAIL when ANALYZE raised a corruption code, the view
        lists blocks or Health Monitor reports a CRITICAL/HIGH open failure;
        WARN for LOW or closed failures only; ERROR on privilege errors (the
        grant named), a Health Monitor run that did not complete, a result of
        unexpected shape, or any other error.
    """
    started = utcnow()
    commands: list[str] = []
    findings: list[Finding] = []
    database = "oracle"
    extra = getattr(getattr(hook, "connection", None), "extra_dejson", None) or {}
    rman = extra.get("rman_validate_command")
    coverage = COVERAGE[1:] if rman else list(COVERAGE)
    try:
        if rman:
            commands.append("RMAN: " + " ".join(rman))
            run_rman(rman, timeout_s)
        conn = hook.get_conn()
        try:
            if timeout_s:
                conn.call_timeout = int(timeout_s * 1000)
            cur = conn.cursor()
            cur.execute("SELECT SYS_CONTEXT('USERENV', 'DB_NAME'), USER FROM DUAL")
            database, owner = cur.fetchone()
            for table in tables or []:
                cur.execute("SELECT COUNT(*) FROM USER_TABLES WHERE TABLE_NAME = :1", [table.upper()])
                if not cur.fetchone()[0]:
                    continue
                sql = build_analyze(table)
                commands.append(sql)
                try:
                    cur.execute(sql)
                except Exception as exc:
                    verdict, finding, text = classify_error(error_code(exc), str(exc), obj=table.upper())
                    if finding is None:
                        raise OracleCheckError(text) from exc
                    findings.append(finding)
            commands.append(VIEW_QUERY)
            try:
                cur.execute(VIEW_QUERY)
            except Exception as exc:
                raise OracleCheckError(classify_error(error_code(exc), str(exc))[2]) from exc
            view_findings, blocks = parse_block_corruption([d[0] for d in cur.description], cur.fetchall())
            findings += view_findings
            runs, hm_coverage = oracle_hm.plan(extra, mode, named_blocks(findings))
            coverage += hm_coverage
            for hm_check, params in runs:
                sent, hm_findings = oracle_hm.run_one(cur, hm_check, params, timeout_s)
                commands += sent
                findings += hm_findings
        finally:
            conn.close()
    except Exception as exc:
        if isinstance(exc, (OracleCheckError, oracle_hm.HealthMonitorError, UnexpectedResult)):
            text = str(exc)
        else:
            text = f"{type(exc).__name__}: {exc}"
        return error_report("oracle", database, mode, ";\n".join(commands), started, text,
                            findings=findings, coverage=coverage)
    return report_from(findings, blocks, database=database, mode=mode,
                       command=";\n".join(commands), started=started, coverage=coverage)


def report_from(findings: list[Finding], corrupt_blocks: int, *, database: str, mode: str, command: str,
                started, coverage: list[str], error: str | None = None) -> IntegrityReport:
    """IntegrityReport from findings.

    Verdict: ERROR when ``error`` is given; else FAIL with a CRITICAL or
    ERROR finding, WARN with only WARNING findings (Health Monitor LOW or
    closed failures), PASS otherwise (INFO findings do not count).
    ``consistency_errors`` counts the CRITICAL and ERROR findings.
    """
    serious = [f for f in findings if f.severity in ("CRITICAL", "ERROR")]
    if error:
        verdict = Verdict.ERROR
    elif serious:
        verdict = Verdict.FAIL
    elif any(f.severity == "WARNING" for f in findings):
        verdict = Verdict.WARN
    else:
        verdict = Verdict.PASS
    return IntegrityReport(engine="oracle", database=database, mode=mode, command=command, verdict=verdict,
                           started_at=started, ended_at=utcnow(), findings=findings,
                           consistency_errors=len(serious), corrupt_blocks=corrupt_blocks,
                           coverage=coverage, error=error)
