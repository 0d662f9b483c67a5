"""Oracle Health Monitor checks from a plain SQL session (Oracle 11g and later).

Each check is one PL/SQL call, with bind variables only::

    BEGIN SYS.DBMS_HM.RUN_CHECK(check_name => :check_name, run_name => :run_name,
                                timeout => :timeout, input_params => :input_params); END;

then the run's status from ``V$HM_RUN`` and its findings from ``V$HM_FINDING``
(``TYPE`` FAILURE or INFORMATIONAL, ``PRIORITY`` CRITICAL / HIGH / LOW,
``STATUS`` OPEN / CLOSED, ``DESCRIPTION``, ``DAMAGE_DESCRIPTION``).

Checks run (the user-runnable ones, ``V$HM_CHECK.INTERNAL_CHECK = 'N'``,
that wash a staging database):

* ``DB Structure Integrity Check``: datafiles, control files and redo logs
  accessible and consistent; every mode.
* ``Dictionary Integrity Check``: the core dictionary tables (``OBJ$``,
  ``TAB$``, ``SEG$`` …); a logical check, so full mode only.
* ``Data Block Integrity Check``: one block per run (``input_params``
  ``BLC_DF_NUM=<file#>;BLC_BL_NUM=<block#>``), run for the blocks the other
  checks named (ORA-01578 from ANALYZE, rows of ``V$DATABASE_BLOCK_CORRUPTION``)
  and the blocks listed in the connection extra, at most ``MAX_BLOCKS``.

Mapping to the integrity report (one finding per problem: a parent finding
whose children are in the same run is folded into their messages, and a child
takes the higher of the two priorities):

* FAILURE, OPEN, priority CRITICAL → severity CRITICAL → FAIL;
* FAILURE, OPEN, priority HIGH (or a priority washline does not know) →
  ERROR → FAIL;
* FAILURE, OPEN, priority LOW → WARNING → WARN;
* FAILURE, CLOSED (Oracle no longer sees it) → WARNING → WARN;
* INFORMATIONAL → INFO (reported, does not change the verdict);
* a run whose ``V$HM_RUN.STATUS`` is not COMPLETED (TIMEDOUT, ERROR,
  INTERRUPTED, …), or with a non-zero ``ERROR_NUMBER`` → ERROR;
* a missing privilege → ERROR naming the grant (``GRANTS``);
* a result set whose columns are not the ones selected, or a ``TYPE`` that
  is neither FAILURE nor INFORMATIONAL → ERROR (:class:`UnexpectedResult`),
  never findings made up from the wrong columns.

Connection extra (all optional): ``"health_monitor": false`` skips these
checks (the report's coverage says so), a list of check names runs only
those; ``"health_monitor_blocks": [[7, 88], …]`` adds blocks for the Data
Block Integrity Check.

Sources: Oracle Database PL/SQL Packages and Types Reference "DBMS_HM"
(security model: EXECUTE on the package); Database Reference "V$HM_RUN",
"V$HM_FINDING"; Administrator's Guide "Running Health Checks with Health
Monitor".
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from typing import Any, Iterable, Sequence

from washline.integrity.report import SEVERITY_ORDER, Finding

DB_STRUCTURE = "DB Structure Integrity Check"
DICTIONARY = "Dictionary Integrity Check"
DATA_BLOCK = "Data Block Integrity Check"
CHECKS = (DB_STRUCTURE, DICTIONARY, DATA_BLOCK)
#: short tags for run names (``V$HM_RUN.NAME`` is VARCHAR2(32))
TAGS = {DB_STRUCTURE: "DSI", DICTIONARY: "DIC", DATA_BLOCK: "DBI"}
#: most blocks re-validated by the Data Block Integrity Check in one report
MAX_BLOCKS = 16

RUN_CHECK_SQL = ("BEGIN SYS.DBMS_HM.RUN_CHECK(check_name => :check_name, run_name => :run_name, "
                 "timeout => :timeout, input_params => :input_params); END;")
RUN_COLUMNS = ("RUN_ID", "CHECK_NAME", "STATUS", "ERROR_NUMBER")
RUN_QUERY = f"SELECT {', '.join(RUN_COLUMNS)} FROM V$HM_RUN WHERE NAME = :run_name"
FINDING_COLUMNS = ("FINDING_ID", "PARENT_ID", "NAME", "TYPE", "PRIORITY", "STATUS", "DESCRIPTION",
                   "DAMAGE_DESCRIPTION")
FINDING_QUERY = (f"SELECT {', '.join(FINDING_COLUMNS)} FROM V$HM_FINDING WHERE RUN_ID = :run_id "
                 "ORDER BY FINDING_ID")

#: the grant that fixes a privilege error, by the statement that raised it
GRANTS = {
    "run_check": "GRANT EXECUTE ON SYS.DBMS_HM TO <user> (Health Monitor checks; the package runs with "
                 "its owner's rights, so nothing broader is needed)",
    "views": "GRANT SELECT ON SYS.V_$HM_RUN TO <user> and GRANT SELECT ON SYS.V_$HM_FINDING TO <user> "
             "(Health Monitor run status and findings)",
}
#: errors that mean a missing privilege: ORA-00942 on a view; PLS-00201 / PLS-00904 on the package
PRIVILEGE_MARKERS = ("ORA-00942", "ORA-01031", "PLS-00201", "PLS-00904")

BLOCK_RE = re.compile(r"\bblock (\d+) in datafile (\d+)", re.I)
PRIORITY_SEVERITY = {"CRITICAL": "CRITICAL", "HIGH": "ERROR", "LOW": "WARNING"}
RUN_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,29}$")


class UnexpectedResult(ValueError):
    """A Health Monitor (or view) result washline cannot read: verdict ERROR, no findings made up."""


class HealthMonitorError(RuntimeError):
    """A Health Monitor check that could not run or did not complete (verdict ERROR)."""


def run_name(check: str, now: dt.datetime | None = None, token: str | None = None) -> str:
    """A unique run name: ``WL_<tag>_<UTC yyyymmddHHMMSS>_<4 hex>`` (26 characters).

    Raises:
        ValueError: unknown check, or a token that would make an invalid name.
    """
    if check not in TAGS:
        raise ValueError(f"unknown Health Monitor check {check!r}; known: {list(CHECKS)}")
    now = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    name = f"WL_{TAGS[check]}_{now:%Y%m%d%H%M%S}_{(token or secrets.token_hex(2)).upper()}"
    if not RUN_NAME_RE.match(name):
        raise ValueError(f"invalid Health Monitor run name {name!r}")
    return name


def block_params(file_no: Any, block_no: Any) -> str:
    """``input_params`` of the Data Block Integrity Check for one block.

    Raises:
        ValueError: file# or block# not a positive integer.
    """
    values = []
    for what, value in (("file#", file_no), ("block#", block_no)):
        if isinstance(value, bool) or not str(value).strip().isdigit() or int(value) <= 0:
            raise ValueError(f"Data Block Integrity Check needs a positive integer {what}, got {value!r}")
        values.append(int(value))
    return f"BLC_DF_NUM={values[0]};BLC_BL_NUM={values[1]}"


def run_binds(check: str, name: str, timeout_s: float | None = None, input_params: str | None = None) -> dict:
    """Bind values of :data:`RUN_CHECK_SQL` (``timeout`` in whole seconds, None = Oracle's default)."""
    return {"check_name": check, "run_name": name,
            "timeout": max(1, int(timeout_s)) if timeout_s else None, "input_params": input_params}


def _records(columns: Sequence[str] | None, rows: Iterable[Sequence[Any]], expected: Sequence[str],
             what: str) -> list[dict[str, Any]]:
    names = [str(c).upper() for c in (columns or ())]
    if sorted(names) != sorted(expected) or len(set(names)) != len(names):
        unknown = [c for c in names if c not in expected]
        missing = [c for c in expected if c not in names]
        raise UnexpectedResult(
            f"{what} result has columns {list(columns or [])}"
            + (f"; unexpected {unknown}" if unknown else "") + (f"; missing {missing}" if missing else "")
            + f"; expected {list(expected)}; nothing was read from it")
    out = []
    for row in rows:
        row = list(row)
        if len(row) != len(names):
            raise UnexpectedResult(f"{what} row has {len(row)} values for {len(names)} columns: {row}")
        out.append(dict(zip(names, row)))
    return out


def parse_run(columns: Sequence[str] | None, rows: Iterable[Sequence[Any]], name: str, check: str) -> int:
    """The ``RUN_ID`` of a completed run, from the rows of :data:`RUN_QUERY`.

    Raises:
        UnexpectedResult: other columns, not exactly one row, or another check's run.
        HealthMonitorError: ``STATUS`` not COMPLETED, or a non-zero ``ERROR_NUMBER``.
    """
    recs = _records(columns, rows, RUN_COLUMNS, "V$HM_RUN")
    if len(recs) != 1:
        raise UnexpectedResult(f"V$HM_RUN has {len(recs)} row(s) for run {name}; expected exactly one")
    rec = recs[0]
    if str(rec["CHECK_NAME"] or "").strip().lower() != check.lower():
        raise UnexpectedResult(f"V$HM_RUN row for run {name} is of check {rec['CHECK_NAME']!r}, not {check!r}")
    status = str(rec["STATUS"] or "").strip().upper()
    error_number = rec["ERROR_NUMBER"]
    if status != "COMPLETED" or (error_number not in (None, 0, "0")):
        text = f"Health Monitor run {name} ({check}) ended with status {status or 'unknown'}"
        if error_number not in (None, 0, "0"):
            text += f", error number {error_number}"
        raise HealthMonitorError(text + "; its findings were not read: the check did not complete")
    try:
        return int(rec["RUN_ID"])
    except (TypeError, ValueError) as exc:
        raise UnexpectedResult(f"V$HM_RUN.RUN_ID {rec['RUN_ID']!r} of run {name} is not a number") from exc


def _severity(rec: dict[str, Any]) -> str:
    kind = str(rec["TYPE"] or "").strip().upper()
    if kind == "INFORMATIONAL":
        return "INFO"
    if str(rec["STATUS"] or "").strip().upper() == "CLOSED":
        return "WARNING"
    return PRIORITY_SEVERITY.get(str(rec["PRIORITY"] or "").strip().upper(), "ERROR")


def parse_findings(columns: Sequence[str] | None, rows: Iterable[Sequence[Any]], check: str,
                   name: str) -> list[Finding]:
    """Findings of one run from the rows of :data:`FINDING_QUERY` (see the module's mapping).

    ``code`` is the finding's ``NAME``; the message names the check and run
    and carries ``TYPE PRIORITY STATUS``, the description, the damage
    description and, for a child, its parent's description. ``location`` is
    ``file#:block#`` when the description names a block ("Block 88 in
    datafile 7").

    Raises:
        UnexpectedResult: other columns, or a ``TYPE`` other than FAILURE / INFORMATIONAL.
    """
    recs = _records(columns, rows, FINDING_COLUMNS, "V$HM_FINDING")
    for rec in recs:
        if str(rec["TYPE"] or "").strip().upper() not in ("FAILURE", "INFORMATIONAL"):
            raise UnexpectedResult(f"V$HM_FINDING.TYPE {rec['TYPE']!r} of run {name} is neither FAILURE nor "
                                   "INFORMATIONAL; the finding cannot be graded")
    by_id = {rec["FINDING_ID"]: rec for rec in recs}
    parents = {rec["PARENT_ID"] for rec in recs if rec["PARENT_ID"] in by_id and rec["PARENT_ID"] != rec["FINDING_ID"]}
    findings = []
    for rec in recs:
        if rec["FINDING_ID"] in parents:
            continue  # folded into its children
        severity = _severity(rec)
        parent = by_id.get(rec["PARENT_ID"]) if rec["PARENT_ID"] != rec["FINDING_ID"] else None
        if parent is not None:
            severity = max(severity, _severity(parent), key=SEVERITY_ORDER.index)
        label = " ".join(str(rec[k]).strip().upper() for k in ("TYPE", "PRIORITY", "STATUS") if rec[k])
        text = f"{check}, run {name}: {label}: {str(rec['DESCRIPTION'] or '').strip()}"
        if rec["DAMAGE_DESCRIPTION"]:
            text += f"; damage: {str(rec['DAMAGE_DESCRIPTION']).strip()}"
        if parent is not None:
            text += f"; part of: {str(parent['DESCRIPTION'] or '').strip()}"
        m = BLOCK_RE.search(str(rec["DESCRIPTION"] or ""))
        findings.append(Finding(code=str(rec["NAME"] or "Health Monitor finding").strip(), message=text,
                                severity=severity, location=f"{m.group(2)}:{m.group(1)}" if m else None))
    return findings


def describe_error(exc_or_text: Any, stage: str) -> str:
    """One line for an error raised by a Health Monitor statement; a
    privilege error also names the grant (``stage`` is ``"run_check"`` or
    ``"views"``). Oracle's multi-line texts (ORA-06550 / PLS-00201) are
    joined with `` / ``."""
    text = " / ".join(line.strip() for line in str(exc_or_text).strip().splitlines() if line.strip())
    if isinstance(exc_or_text, BaseException) and not text.startswith(("ORA-", "PLS-")):
        text = f"{type(exc_or_text).__name__}: {text}"
    if any(marker in text for marker in PRIVILEGE_MARKERS):
        text += f" — missing privilege: {GRANTS[stage]}"
    return text


def plan(extra: dict[str, Any] | None, mode: str,
         blocks: Iterable[tuple[int, int]]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """The runs to make: ``([(check, input_params), …], coverage)``.

    Args:
        extra: the connection's extra (``health_monitor``, ``health_monitor_blocks``).
        mode: ``"physical_only"`` leaves the Dictionary Integrity Check out.
        blocks: ``(file#, block#)`` named by the other checks.

    Raises:
        ValueError: a ``health_monitor`` value that is neither a bool nor a
            list of known check names, or malformed ``health_monitor_blocks``.
    """
    extra = extra or {}
    setting = extra.get("health_monitor", True)
    if setting is False:
        return [], ["Oracle Health Monitor checks (\"health_monitor\": false in the connection extra)"]
    if setting is True or setting is None:
        wanted = list(CHECKS)
    elif isinstance(setting, (list, tuple)) and all(isinstance(c, str) and c in CHECKS for c in setting):
        wanted = [c for c in CHECKS if c in setting]
    else:
        raise ValueError(f"connection extra health_monitor must be true, false or a list of {list(CHECKS)}; "
                         f"got {setting!r}")
    coverage = [f"Health Monitor {c} (not in the connection's health_monitor list)" for c in CHECKS
                if c not in wanted]
    if mode == "physical_only" and DICTIONARY in wanted:
        wanted.remove(DICTIONARY)
        coverage.append(f"Health Monitor {DICTIONARY} (a logical check: full mode only)")
    runs: list[tuple[str, str | None]] = [(c, None) for c in wanted if c != DATA_BLOCK]
    if DATA_BLOCK in wanted:
        extra_blocks = extra.get("health_monitor_blocks") or []
        if not isinstance(extra_blocks, (list, tuple)) or not all(
                isinstance(b, (list, tuple)) and len(b) == 2 for b in extra_blocks):
            raise ValueError(f"connection extra health_monitor_blocks must be a list of [file#, block#]; "
                             f"got {extra_blocks!r}")
        params: list[str] = []
        for file_no, block_no in [*blocks, *extra_blocks]:
            p = block_params(file_no, block_no)
            if p not in params:
                params.append(p)
        runs += [(DATA_BLOCK, p) for p in params[:MAX_BLOCKS]]
        if len(params) > MAX_BLOCKS:
            coverage.append(f"{len(params) - MAX_BLOCKS} more named block(s) not re-validated by the "
                            f"{DATA_BLOCK} (at most {MAX_BLOCKS} a night)")
        if not params:
            coverage.append(f"Health Monitor {DATA_BLOCK}: runs for blocks named by ANALYZE, "
                            "V$DATABASE_BLOCK_CORRUPTION or health_monitor_blocks; none tonight")
    return runs, coverage


def run_one(cursor: Any, check: str, input_params: str | None = None, timeout_s: float | None = None,
            name: str | None = None) -> tuple[list[str], list[Finding]]:
    """Run one check and read its findings through a DB-API cursor (python-oracledb).

    Returns:
        ``(commands, findings)``: the statements sent (with the run's name and
        parameters for the log) and the findings of the run.

    Raises:
        HealthMonitorError: the call failed (the text names a missing grant)
            or the run did not complete.
        UnexpectedResult: a result of another shape.
    """
    name = name or run_name(check)
    binds = run_binds(check, name, timeout_s, input_params)
    commands = [f"{RUN_CHECK_SQL} -- check_name={check!r}, run_name={name!r}"
                + (f", input_params={input_params!r}" if input_params else "")]
    try:
        cursor.execute(RUN_CHECK_SQL, binds)
    except Exception as exc:
        raise HealthMonitorError(f"{check} could not run: {describe_error(exc, 'run_check')}") from exc
    commands.append(RUN_QUERY)
    try:
        cursor.execute(RUN_QUERY, {"run_name": name})
        run_cols, run_rows = [d[0] for d in cursor.description or []], cursor.fetchall()
    except Exception as exc:
        raise HealthMonitorError(f"{check}: reading V$HM_RUN failed: {describe_error(exc, 'views')}") from exc
    run_id = parse_run(run_cols, run_rows, name, check)
    commands.append(FINDING_QUERY)
    try:
        cursor.execute(FINDING_QUERY, {"run_id": run_id})
        cols, rows = [d[0] for d in cursor.description or []], cursor.fetchall()
    except Exception as exc:
        raise HealthMonitorError(f"{check}: reading V$HM_FINDING failed: {describe_error(exc, 'views')}") from exc
    return commands, parse_findings(cols, rows, check, name)
