"""SQL Server integrity checks with ``DBCC CHECKDB ... WITH TABLERESULTS``.

The command always carries ``NO_INFOMSGS, ALL_ERRORMSGS, TABLERESULTS`` and
optionally ``PHYSICAL_ONLY``, ``DATA_PURITY``, ``EXTENDED_LOGICAL_CHECKS``,
``TABLOCK``, ``MAXDOP = n`` and (as the database argument) ``NOINDEX``.
Invalid combinations are refused before anything runs, as Ola Hallengren's
DatabaseIntegrityCheck does: ``PHYSICAL_ONLY`` with ``DATA_PURITY``, and
``PHYSICAL_ONLY`` with ``EXTENDED_LOGICAL_CHECKS``.

Verdict rules (the error rows decide, never the 8989 summary alone):

* error rows (level > 10, not a summary message) → FAIL; a level ≥ 20 row
  (e.g. 824, incorrect checksum) is CRITICAL and FAIL even after a 0/0 summary;
* only 2508 (page/row counts off; ``DBCC UPDATEUSAGE`` fixes them) → WARN;
* 2570 (value out of range for its type) → FAIL, not repairable by DBCC;
* an index-only finding (index id ≥ 2) without a server repair level
  carries ``REPAIR_REBUILD``;
* no row at all from a statement that completed → PASS: ``NO_INFOMSGS``
  suppresses every severity-10 message, and on a clean database that
  includes the 8989 "found 0 allocation errors and 0 consistency errors"
  row, so SQL Server returns nothing (a timeout or a killed session raises
  instead, and is ERROR);
* rows but no 8989 summary row (the output stopped short), a timeout or a
  killed session → ERROR;
* a result set whose columns are not a TABLERESULTS layout → ERROR
  (:class:`UnexpectedColumns`), never findings read from the wrong columns.

Counts (what a DBA compares with SSMS): ``allocation_errors`` and
``consistency_errors`` are the numbers of the 8989 row ("CHECKDB found a
allocation errors and c consistency errors in database 'D'."), unchanged.
Its breakdown, the 8990 rows ("… in table 'T' (object ID n).") and the 8954
row ("… not associated with any single object."), goes to
``object_counts``. When the error rows returned differ in number from the
8989 total, or the 8990 + 8954 rows do not add up to it, both figures are
kept and ``count_notes`` says so. The summary texts are read in English
(the ``us_english`` language of the login).

``TABLERESULTS`` layouts: SQL Server 2012+ returns 23 columns; older servers
omit ``DbFragId``, ``RidDbId``, ``RidPruId``, ``RefDbId``, ``RefPruId`` (18
columns). Columns are read by name when the cursor gives names, otherwise by
position for either width. ``PartitionId`` / ``AllocUnitId`` are 64-bit and
kept as Python ints.

Sources: Microsoft Learn "DBCC CHECKDB (Transact-SQL)" and "MSSQLSERVER_8989"
/ "_824" / "_2508" / "_2570"; Ola Hallengren, DatabaseIntegrityCheck.
pymssql surfaces informational messages only through a message handler, so
this module relies on ``TABLERESULTS`` rows alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from washline.integrity.report import Finding, IntegrityReport, ObjectErrorCount, Verdict, error_report, utcnow

COLUMNS_2012 = (
    "Error", "Level", "State", "MessageText", "RepairLevel", "Status", "DbId", "DbFragId", "ObjectId",
    "IndexId", "PartitionId", "AllocUnitId", "RidDbId", "RidPruId", "File", "Page", "Slot", "RefDbId",
    "RefPruId", "RefFile", "RefPage", "RefSlot", "Allocation",
)
COLUMNS_LEGACY = tuple(c for c in COLUMNS_2012 if c not in ("DbFragId", "RidDbId", "RidPruId", "RefDbId", "RefPruId"))
#: Older servers name two columns differently.
ALIASES = {"id": "objectid", "indid": "indexid"}

SUMMARY_DB = 8989       # CHECKDB found a allocation errors and c consistency errors in database …
SUMMARY_TABLE = 8990    # … in table 'T' (object ID n).
SUMMARY_NO_OBJECT = 8954  # … not associated with any single object.
MIN_REPAIR_MSG = 8958   # <level> is the minimum repair level for the errors found …
WARNING_ONLY = {2508}   # counts off; DBCC UPDATEUSAGE
NOT_REPAIRABLE = {2570}  # data purity: update the value
REPAIR_ORDER = ("REPAIR_REBUILD", "REPAIR_ALLOW_DATA_LOSS")

#: SQL Server errors that mean the login lacks a permission, and the grant that fixes it
#: (the compose stack's sql/mssql/init/01_washline_login.sql grants exactly this).
PRIVILEGE_ERRORS = {
    2571: "DBCC CHECKDB needs db_owner of the database: make the login its owner "
          "(ALTER AUTHORIZATION ON DATABASE::<database> TO <login>) or a member of its db_owner role",
    916: "the login has no access to the database: make it the database's owner "
         "(ALTER AUTHORIZATION ON DATABASE::<database> TO <login>)",
}
SUMMARY_RE = re.compile(r"^\s*CHECKDB found (\d+) allocation errors and (\d+) consistency errors", re.I)
TABLE_RE = re.compile(r"in table '(.*)' \(object ID (-?\d+)\)\.?\s*$", re.I | re.S)
REPAIR_RE = re.compile(r"(repair_\w+) is the minimum repair level", re.I)

COVERAGE = {
    "PHYSICAL_ONLY": "logical checks (index versus data, catalog, allocation consistency), DATA_PURITY column values",
    "NOINDEX": "nonclustered indexes of user tables",
    "no DATA_PURITY": "column-value purity on databases upgraded from SQL Server 2000 or older "
                      "(on by default for databases created on 2005 or later)",
    "no EXTENDED_LOGICAL_CHECKS": "indexed views, XML and spatial indexes (logical consistency)",
}


class InvalidOptions(ValueError):
    """A DBCC CHECKDB option combination that SQL Server (or Ola) refuses."""


@dataclass(frozen=True)
class CheckDbOptions:
    """``DBCC CHECKDB`` options (Ola's Y/N switches).

    ``maxdop`` is the degree of parallelism (0 = server default, 1–64).
    """

    physical_only: bool = False
    data_purity: bool = False
    extended_logical_checks: bool = False
    noindex: bool = False
    tablock: bool = False
    maxdop: int | None = None

    def validate(self) -> None:
        """Raises InvalidOptions for a combination that must not run."""
        if self.physical_only and self.data_purity:
            raise InvalidOptions("PHYSICAL_ONLY cannot be combined with DATA_PURITY")
        if self.physical_only and self.extended_logical_checks:
            raise InvalidOptions("PHYSICAL_ONLY cannot be combined with EXTENDED_LOGICAL_CHECKS")
        if self.maxdop is not None and (not isinstance(self.maxdop, int) or not 0 <= self.maxdop <= 64):
            raise InvalidOptions(f"MAXDOP must be an integer 0–64, got {self.maxdop!r}")

    def with_items(self) -> list[str]:
        items = ["NO_INFOMSGS", "ALL_ERRORMSGS", "TABLERESULTS"]
        if self.physical_only:
            items.append("PHYSICAL_ONLY")
        if self.data_purity:
            items.append("DATA_PURITY")
        if self.extended_logical_checks:
            items.append("EXTENDED_LOGICAL_CHECKS")
        if self.tablock:
            items.append("TABLOCK")
        if self.maxdop is not None:
            items.append(f"MAXDOP = {int(self.maxdop)}")
        return items

    def coverage(self) -> list[str]:
        out = []
        if self.physical_only:
            out.append(COVERAGE["PHYSICAL_ONLY"])
        elif not self.data_purity:
            out.append(COVERAGE["no DATA_PURITY"])
        if self.noindex:
            out.append(COVERAGE["NOINDEX"])
        if not self.extended_logical_checks:
            out.append(COVERAGE["no EXTENDED_LOGICAL_CHECKS"])
        return out


def quote_name(name: str) -> str:
    """T-SQL ``QUOTENAME`` for a database name: ``[name]`` with ``]`` doubled.

    Raises:
        ValueError: empty, longer than 128 characters, or holding a control character.
    """
    if not name or len(name) > 128 or any(ord(ch) < 32 for ch in name):
        raise ValueError(f"database name {name!r} is not allowed")
    return "[" + name.replace("]", "]]") + "]"


def build_command(database: str, options: CheckDbOptions) -> str:
    """The exact ``DBCC CHECKDB`` text.

    >>> build_command("StagingDB", CheckDbOptions(physical_only=True, maxdop=2))
    'DBCC CHECKDB ([StagingDB]) WITH NO_INFOMSGS, ALL_ERRORMSGS, TABLERESULTS, PHYSICAL_ONLY, MAXDOP = 2'

    Raises:
        InvalidOptions: an invalid combination (checked before anything runs).
    """
    options.validate()
    target = quote_name(database) + (", NOINDEX" if options.noindex else "")
    return f"DBCC CHECKDB ({target}) WITH {', '.join(options.with_items())}"


class UnexpectedColumns(ValueError):
    """A result set that is not a ``DBCC CHECKDB … WITH TABLERESULTS`` layout (verdict ERROR)."""


_LAYOUTS = {frozenset(c.lower() for c in COLUMNS_2012): "SQL Server 2012 and later (23 columns)",
            frozenset(c.lower() for c in COLUMNS_LEGACY): "SQL Server 2005 to 2008 R2 (18 columns)"}


def _check_layout(names: list[str], columns: Sequence[str]) -> None:
    if len(set(names)) == len(names) and frozenset(names) in _LAYOUTS:
        return
    nearest = min(_LAYOUTS, key=lambda lay: len(lay ^ set(names)))
    unknown = [c for c, n in zip(columns, names) if n not in nearest]
    missing = sorted(nearest - set(names))
    raise UnexpectedColumns(
        f"not a DBCC CHECKDB TABLERESULTS result set: columns {list(columns)}"
        + (f"; unexpected {unknown}" if unknown else "") + (f"; missing {missing}" if missing else "")
        + "; expected the layout of SQL Server 2012 and later (23 columns) or 2005 to 2008 R2 (18 columns, "
          "Id/IndId); nothing was read from it")


def _integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.strip().lstrip("-").isdigit()


def rows_to_dicts(columns: Sequence[str] | None, rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Map TABLERESULTS rows to dicts keyed by lower-case 2012 column names.

    Args:
        columns: column names from ``cursor.description`` (either layout, any
            case, any order; ``Id`` / ``IndId`` are read as ``ObjectId`` /
            ``IndexId``), or None to infer the layout from the row width (23 or 18).

    Raises:
        UnexpectedColumns: the names are not exactly one of the two layouts,
            a row's width does not match, or a row's ``Error`` / ``Level`` is
            not an integer.
    """
    out = []
    names = None
    if columns is not None:
        names = [ALIASES.get(str(c).lower(), str(c).lower()) for c in columns]
        _check_layout(names, columns)
    for row in rows:
        row = list(row)
        if names is None:
            layout = {23: COLUMNS_2012, 18: COLUMNS_LEGACY}.get(len(row))
            if layout is None:
                raise UnexpectedColumns(f"DBCC TABLERESULTS row has {len(row)} columns; expected 23 or 18")
            keys = [c.lower() for c in layout]
        else:
            keys = names
            if len(row) != len(keys):
                raise UnexpectedColumns(f"DBCC TABLERESULTS row has {len(row)} values for {len(keys)} columns")
        rec = dict(zip(keys, row))
        if not (_integer(rec["error"]) and _integer(rec["level"])):
            raise UnexpectedColumns(f"DBCC TABLERESULTS row with a non-integer Error/Level "
                                    f"({rec['error']!r}, {rec['level']!r}): {row[:4]}")
        out.append(rec)
    return out


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _page(file_no: Any, page: Any) -> str | None:
    return f"{_int(file_no)}:{_int(page)}" if _int(page) > 0 else None


def _repair(value: Any) -> str | None:
    text = str(value or "").strip().upper()
    return text if text.startswith("REPAIR_") else None


def _counts(text: str) -> tuple[int, int] | None:
    m = SUMMARY_RE.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def reconcile(summary: tuple[int, int] | None, summary_text: str | None, breakdown: list[ObjectErrorCount],
              findings: list[Finding]) -> list[str]:
    """The ways SQL Server's summary rows and the error rows disagree, in words (empty: they reconcile).

    Compared: the 8989 total with the number of error rows returned, and the
    8989 allocation / consistency figures with the sums of the 8990 and 8954
    rows. Each note gives both figures.
    """
    errors = [f for f in findings if f.severity in ("ERROR", "CRITICAL")]
    notes = []
    if summary is None:
        if summary_text is None:
            notes.append(f"no 8989 summary row: SQL Server gave no totals; {_plural(len(errors), 'error row')} "
                         "returned")
        else:
            notes.append(f"the 8989 summary text was not understood ({summary_text!r}); SQL Server's totals "
                         f"are unknown; {_plural(len(errors), 'error row')} returned")
        return notes
    allocation, consistency = summary
    if len(errors) != allocation + consistency:
        severe = [f.code for f in errors if f.severity == "CRITICAL"]
        note = (f"the 8989 summary counts {allocation} allocation and {consistency} consistency error(s) "
                f"({allocation + consistency} in all) but {_plural(len(errors), 'error row')} "
                f"{'was' if len(errors) == 1 else 'were'} returned")
        if severe:
            note += f", {len(severe)} of them at severity 20 or more ({', '.join(sorted(set(severe)))})"
        notes.append(note)
    parts = sum(c.allocation_errors for c in breakdown), sum(c.consistency_errors for c in breakdown)
    if parts != (allocation, consistency) and (breakdown or allocation or consistency):
        notes.append(f"the 8990 per-table and 8954 rows add up to {parts[0]} allocation and {parts[1]} "
                     f"consistency error(s); the 8989 summary says {allocation} and {consistency}")
    return notes


def evaluate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Decide verdict, findings and counts from TABLERESULTS records (see module rules).

    Returns:
        dict with ``verdict`` (Verdict), ``findings``, ``allocation_errors``
        and ``consistency_errors`` (the 8989 row's, 0 without one),
        ``object_counts`` (8990 and 8954 rows as ObjectErrorCount),
        ``error_rows``, ``count_notes``, ``minimum_repair_level``,
        ``repairable_by_dbcc`` and ``error`` (text or None).
    """
    findings: list[Finding] = []
    summary: tuple[int, int] | None = None
    summary_text: str | None = None
    breakdown: list[ObjectErrorCount] = []
    server_repair: str | None = None
    for rec in records:
        number = _int(rec.get("error"))
        level = _int(rec.get("level"))
        text = str(rec.get("messagetext") or "")
        if number == SUMMARY_DB:
            summary_text, summary = text, _counts(text)
            continue
        if number == MIN_REPAIR_MSG:
            m = REPAIR_RE.search(text)
            server_repair = m.group(1).upper() if m else server_repair
            continue
        if number in (SUMMARY_TABLE, SUMMARY_NO_OBJECT):
            counts = _counts(text)
            if counts is None:
                continue  # not understood: the 8989 comparison says the breakdown is short
            if number == SUMMARY_TABLE:
                m = TABLE_RE.search(text)
                object_id = int(m.group(2)) if m else (_int(rec.get("objectid")) or None)
                breakdown.append(ObjectErrorCount("table", counts[0], counts[1],
                                                  table=m.group(1) if m else None, object_id=object_id))
            else:
                breakdown.append(ObjectErrorCount("no single object", counts[0], counts[1]))
            continue
        if level <= 10:
            continue  # informational rows (2593 row counts, …)
        index_id = _int(rec.get("indexid"))
        object_id = _int(rec.get("objectid"))
        repair = _repair(rec.get("repairlevel"))
        if number in WARNING_ONLY:
            severity = "WARNING"
        elif level >= 20:
            severity = "CRITICAL"
        else:
            severity = "ERROR"
        repairable = False if number in NOT_REPAIRABLE else None
        if repair is None and severity != "WARNING" and index_id >= 2 and number not in NOT_REPAIRABLE:
            repair = "REPAIR_REBUILD"  # a nonclustered index can be rebuilt without data loss
        findings.append(Finding(
            code=str(number), message=text, severity=severity,
            obj=str(object_id) if object_id else None, index=str(index_id) if index_id > 0 else None,
            location=_page(rec.get("file"), rec.get("page")), ref_location=_page(rec.get("reffile"), rec.get("refpage")),
            object_id=object_id or None, index_id=index_id if index_id >= 0 and object_id else None,
            repair_level=repair, repairable=repairable,
        ))
    errors = [f for f in findings if f.severity in ("ERROR", "CRITICAL")]
    levels = [f.repair_level for f in findings if f.repair_level] + ([server_repair] if server_repair else [])
    known = [lv for lv in levels if lv in REPAIR_ORDER]
    minimum = max(known, key=REPAIR_ORDER.index) if known else (levels[0] if levels else None)
    allocation, consistency = summary or (0, 0)
    error = None
    if not records:
        verdict = Verdict.PASS  # NO_INFOMSGS: a clean database returns no row, not even 8989
    elif summary_text is None:
        verdict, error = Verdict.ERROR, "no 8989 summary row: DBCC CHECKDB did not finish"
    elif errors:
        verdict = Verdict.FAIL
    elif summary is None:
        verdict, error = Verdict.ERROR, ("the 8989 summary text was not understood (is the login's language "
                                         "us_english?); without error rows the result cannot be read as clean")
    elif findings:
        verdict = Verdict.WARN
    elif allocation or consistency:
        verdict = Verdict.FAIL  # summary counts errors whose rows were not returned
    else:
        verdict = Verdict.PASS
    repairable = False if any(f.repairable is False for f in findings) else (True if minimum else None)
    return {"verdict": verdict, "findings": findings, "allocation_errors": allocation,
            "consistency_errors": consistency, "object_counts": breakdown, "error_rows": len(errors),
            "count_notes": reconcile(summary, summary_text, breakdown, findings) if records else [],
            "minimum_repair_level": minimum, "repairable_by_dbcc": repairable, "error": error}


def parse_dbinfo(columns: Sequence[str] | None, rows: Iterable[Sequence[Any]]) -> str | None:
    """Last-known-good from ``DBCC DBINFO WITH TABLERESULTS`` rows.

    The result set has columns ``ParentObject, Object, Field, VALUE``; the
    field ``dbi_dbccLastKnownGood`` holds e.g. ``2025-01-01 02:13:07.450``.

    Returns:
        ISO-like text of the value, ``"never"`` for 1900-01-01, None when absent.
    """
    names = [c.lower() for c in (columns or ("ParentObject", "Object", "Field", "VALUE"))]
    field_i, value_i = names.index("field"), names.index("value")
    for row in rows:
        if str(row[field_i]).strip() == "dbi_dbccLastKnownGood":
            value = str(row[value_i]).strip()
            return "never" if value.startswith("1900-01-01") else value.replace(" ", "T", 1)
    return None


def report_from_records(records: list[dict[str, Any]], *, database: str, mode: str, command: str,
                        started, options: list[str], coverage: list[str],
                        last_known_good: str | None = None) -> IntegrityReport:
    """Build the IntegrityReport from parsed TABLERESULTS records."""
    result = evaluate(records)
    return IntegrityReport(
        engine="mssql", database=database, mode=mode, command=command, verdict=result["verdict"],
        started_at=started, ended_at=utcnow(), findings=result["findings"],
        allocation_errors=result["allocation_errors"], consistency_errors=result["consistency_errors"],
        minimum_repair_level=result["minimum_repair_level"], repairable_by_dbcc=result["repairable_by_dbcc"],
        coverage=coverage, error=result["error"], last_known_good=last_known_good, options=options,
        error_rows=result["error_rows"], object_counts=result["object_counts"], count_notes=result["count_notes"],
    )


def _fetch_all_sets(cursor: Any) -> list[tuple[list[str], list[tuple]]]:
    """Every result set of the last statement as ``(column names, rows)``."""
    sets = []
    while True:
        if cursor.description:
            sets.append(([d[0] for d in cursor.description], list(cursor.fetchall())))
        if not cursor.nextset():
            return sets


def describe_error(exc: BaseException) -> str:
    """One line for a failed check; a permission error (``PRIVILEGE_ERRORS``,
    pymssql's ``(number, b"message")`` or a message naming "Msg <number>")
    also names the grant that fixes it."""
    text = f"{type(exc).__name__}: {exc}"
    number = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    if number is None:
        m = re.match(r"\((\d+),", str(exc)) or re.search(r"\bMsg (\d+)\b", str(exc))
        number = int(m.group(1)) if m else None
    if number in PRIVILEGE_ERRORS:
        text += f" — missing privilege: {PRIVILEGE_ERRORS[number]}"
    return text


def check(hook: Any, mode: str = "full", options: CheckDbOptions | None = None,
          timeout_s: float | None = None) -> IntegrityReport:
    """Run ``DBCC CHECKDB`` on the connection's current database through an ``MsSqlHook``.

    Args:
        mode: ``"physical_only"`` adds ``PHYSICAL_ONLY``.
        options: further options; validated before anything runs.
        timeout_s: query timeout in seconds (pymssql ``query_timeout``); reaching it is ERROR.

    Returns:
        IntegrityReport (ERROR when the check could not run, timed out, the
        session was killed, or no summary row came back).

    Raises:
        InvalidOptions: invalid option combination (nothing was sent).
    """
    opts = options or CheckDbOptions()
    if mode == "physical_only" and not opts.physical_only:
        opts = CheckDbOptions(**{**opts.__dict__, "physical_only": True})
    opts.validate()
    started = utcnow()
    database, command = "mssql", "DBCC CHECKDB"
    try:
        conn = hook.get_conn()
        try:
            if timeout_s:
                inner = getattr(conn, "_conn", None)
                if inner is not None and hasattr(inner, "query_timeout"):
                    inner.query_timeout = max(1, int(timeout_s))
            cursor = conn.cursor()
            cursor.execute("SELECT DB_NAME()")
            database = cursor.fetchone()[0]
            command = build_command(database, opts)
            cursor.execute(command)
            sets = _fetch_all_sets(cursor)
            last_good = None
            try:
                cursor.execute("DBCC DBINFO WITH TABLERESULTS")
                for cols, rows in _fetch_all_sets(cursor):
                    last_good = parse_dbinfo(cols, rows) or last_good
            except Exception:  # DBINFO needs sysadmin on some versions; the check itself stands
                last_good = None
        finally:
            conn.close()
    except Exception as exc:
        return error_report("mssql", database, mode, command, started, describe_error(exc),
                            options=opts.with_items(), coverage=opts.coverage())
    try:
        records = [r for cols, rows in sets for r in rows_to_dicts(cols, rows)]
    except UnexpectedColumns as exc:
        return error_report("mssql", database, mode, command, started, str(exc),
                            options=opts.with_items(), coverage=opts.coverage())
    return report_from_records(records, database=database, mode=mode, command=command, started=started,
                               options=opts.with_items(), coverage=opts.coverage(), last_known_good=last_good)
