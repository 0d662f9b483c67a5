"""The engine-neutral integrity report.

Verdicts (washline's, after Ola Hallengren's DatabaseIntegrityCheck practice):
PASS nothing found; WARN metadata-only findings; FAIL corruption found;
ERROR the check could not run or did not finish — never treated as a pass.

Finding severities, highest first: ``CRITICAL`` (SQL Server level ≥ 20, e.g.
824; a block the engine could not read), ``ERROR`` (corruption), ``WARNING``
(metadata only, e.g. SQL Server 2508), ``INFO``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

SEVERITY_ORDER = ("INFO", "WARNING", "ERROR", "CRITICAL")


class Verdict(str, Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    ERROR = "ERROR"

    @property
    def blocks_publish(self) -> bool:
        return self in (Verdict.FAIL, Verdict.ERROR)


@dataclass
class Finding:
    """One problem reported by an engine.

    Attributes:
        code: the engine's error number or check name (``"8939"``,
            ``"ORA-01499"``, ``"verify_heapam"``, ``"integrity_check"``).
        message: the engine's message text, unchanged.
        severity: ``CRITICAL``, ``ERROR``, ``WARNING`` or ``INFO``.
        obj: affected table (name, or SQL Server object id as text).
        index: affected index (name, or SQL Server index id as text).
        location: page or block: SQL Server ``"file:page"``, Oracle
            ``"file#:block#"``, PostgreSQL ``"block N"``; None when unknown.
        ref_location: a second page the message refers to (SQL Server
            ``RefFile:RefPage``), or None.
        object_id / index_id: numeric ids where the engine gives them
            (SQL Server ``ObjectId`` / ``IndexId``; 0 = heap, 1 = clustered,
            ≥ 2 = nonclustered index).
        repair_level: minimum repair for this finding (SQL Server
            ``REPAIR_REBUILD`` / ``REPAIR_ALLOW_DATA_LOSS``), or None.
        repairable: False when the engine's repair cannot fix it (SQL Server
            2570: update the value); None when not stated.
        blocks: number of corrupt blocks this finding covers (Oracle).
    """

    code: str
    message: str
    severity: str = "ERROR"
    obj: str | None = None
    index: str | None = None
    location: str | None = None
    ref_location: str | None = None
    object_id: int | None = None
    index_id: int | None = None
    repair_level: str | None = None
    repairable: bool | None = None
    blocks: int | None = None


@dataclass
class ObjectErrorCount:
    """One of SQL Server's own count rows below the 8989 database total.

    Attributes:
        scope: ``"table"`` (8990: "CHECKDB found a allocation errors and c
            consistency errors in table 'T' (object ID n).") or
            ``"no single object"`` (8954: "… not associated with any single
            object.").
        table: the table name as SQL Server printed it (8990), else None.
        object_id: the table's object id (8990), else None.
        allocation_errors / consistency_errors: the numbers SQL Server printed.
    """

    scope: str
    allocation_errors: int
    consistency_errors: int
    table: str | None = None
    object_id: int | None = None


@dataclass
class IntegrityReport:
    """Result of one integrity check of one database.

    Times are UTC; ``duration_s`` is wall seconds. ``coverage`` lists what the
    mode did NOT check. ``command`` is the exact text sent to the server
    (statements joined with ``;\\n``). ``allocation_errors`` /
    ``consistency_errors`` are the engine's counts (SQL Server: the 8989
    summary, raised to the number of error rows when rows outnumber it).
    ``minimum_repair_level`` is SQL Server's; ``repairable_by_dbcc`` is False
    when some finding cannot be repaired by DBCC. ``last_known_good`` is the
    last clean full check the server remembers (ISO-8601, SQL Server
    ``dbi_dbccLastKnownGood``), ``"never"``, or None when not known.
    ``corrupt_blocks`` counts blocks (Oracle). ``truncated`` means the
    engine stopped listing findings at its limit.
    """

    engine: str
    database: str
    mode: str
    command: str
    verdict: Verdict
    started_at: dt.datetime
    ended_at: dt.datetime
    findings: list[Finding] = field(default_factory=list)
    allocation_errors: int = 0
    consistency_errors: int = 0
    minimum_repair_level: str | None = None
    repairable_by_dbcc: bool | None = None
    coverage: list[str] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    last_known_good: str | None = None
    corrupt_blocks: int = 0
    options: list[str] = field(default_factory=list)
    error_rows: int | None = None
    object_counts: list[ObjectErrorCount] = field(default_factory=list)
    count_notes: list[str] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return round((self.ended_at - self.started_at).total_seconds(), 3)

    @property
    def severity(self) -> str | None:
        """Highest finding severity, or None without findings."""
        levels = [f.severity for f in self.findings if f.severity in SEVERITY_ORDER]
        return max(levels, key=SEVERITY_ORDER.index) if levels else None

    @property
    def pages(self) -> list[str]:
        """Distinct pages/blocks named by findings (``location`` and ``ref_location``), in order."""
        seen: list[str] = []
        for f in self.findings:
            for loc in (f.location, f.ref_location):
                if loc and loc not in seen:
                    seen.append(loc)
        return seen

    @property
    def counts_reconcile(self) -> bool:
        """True when the engine's summary, its breakdown and the error rows agree (no ``count_notes``)."""
        return not self.count_notes

    @property
    def index_only(self) -> bool:
        """True when every corruption finding is in a nonclustered index (SQL Server index id ≥ 2)."""
        bad = [f for f in self.findings if f.severity in ("ERROR", "CRITICAL")]
        return bool(bad) and all(f.index_id is not None and f.index_id >= 2 for f in bad)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (enums as names, datetimes as ISO-8601 UTC).

        Keys: every field, plus ``duration_s``, ``severity``, ``pages``,
        ``index_only`` and ``counts_reconcile``.
        """
        out = asdict(self)
        out["verdict"] = self.verdict.value
        out["started_at"] = self.started_at.isoformat()
        out["ended_at"] = self.ended_at.isoformat()
        out["duration_s"] = self.duration_s
        out["severity"] = self.severity
        out["pages"] = self.pages
        out["index_only"] = self.index_only
        out["counts_reconcile"] = self.counts_reconcile
        return out

    def summary(self) -> str:
        """One readable line for task logs."""
        text = (
            f"{self.engine} {self.mode} check of {self.database}: {self.verdict.value} "
            f"({len(self.findings)} finding(s), {self.allocation_errors} allocation / "
            f"{self.consistency_errors} consistency error(s), {self.duration_s:.2f} s)"
        )
        if self.count_notes:
            text += f", figures do not reconcile ({len(self.count_notes)} note(s) in the report)"
        if self.minimum_repair_level:
            text += f", minimum repair {self.minimum_repair_level}"
        if self.repairable_by_dbcc is False:
            text += ", NOT repairable by DBCC"
        if self.truncated:
            text += ", output truncated"
        if self.error:
            text += f" — {self.error}"
        return text

    def render(self, max_findings: int = 50) -> str:
        """Multi-line readable summary: the line, the command, coverage and findings."""
        lines = [self.summary(), f"  command: {self.command}"]
        if self.last_known_good:
            lines.append(f"  last known good: {self.last_known_good}")
        if self.coverage:
            lines.append(f"  not checked in this mode: {'; '.join(self.coverage)}")
        for c in self.object_counts:
            where = (f"table '{c.table}' (object ID {c.object_id})" if c.scope == "table"
                     else "not associated with any single object")
            lines.append(f"  server count {where}: {c.allocation_errors} allocation / "
                         f"{c.consistency_errors} consistency error(s)")
        if self.error_rows is not None:
            lines.append(f"  error rows returned: {self.error_rows}")
        for note in self.count_notes:
            lines.append(f"  counts disagree: {note}")
        for f in self.findings[:max_findings]:
            where = " ".join(x for x in (f.obj and f"object={f.obj}", f.index and f"index={f.index}",
                                         f.location and f"at={f.location}") if x)
            lines.append(f"  [{f.severity}] {f.code} {where}: {f.message}")
        if len(self.findings) > max_findings:
            lines.append(f"  … {len(self.findings) - max_findings} more finding(s) in the XCom report")
        return "\n".join(lines)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def error_report(engine: str, database: str, mode: str, command: str, started: dt.datetime,
                 error: str, **kwargs: Any) -> IntegrityReport:
    """An ERROR report: the check could not run or did not finish."""
    return IntegrityReport(engine=engine, database=database, mode=mode, command=command, verdict=Verdict.ERROR,
                           started_at=started, ended_at=utcnow(), error=error, **kwargs)
