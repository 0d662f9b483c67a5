"""The engine-neutral integrity report.

Verdicts (washline's, after Ola Hallengren's DatabaseIntegrityCheck practice):
PASS nothing found; WARN metadata-only findings; FAIL corruption found;
ERROR the check could not run or did not finish — never treated as a pass.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


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

    ``code`` is the engine's error number or check name, ``severity`` its
    level, ``obj``/``index`` the affected object, ``location`` a page or block.
    """

    code: str
    message: str
    severity: str = "error"
    obj: str | None = None
    index: str | None = None
    location: str | None = None


@dataclass
class IntegrityReport:
    """Result of one integrity check of one database.

    Times are UTC; ``duration_s`` is wall seconds. ``coverage`` lists what the
    mode did NOT check. ``command`` is the exact text sent to the server.
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
    coverage: list[str] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None

    @property
    def duration_s(self) -> float:
        return round((self.ended_at - self.started_at).total_seconds(), 3)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (enums as names, datetimes as ISO-8601 UTC)."""
        out = asdict(self)
        out["verdict"] = self.verdict.value
        out["started_at"] = self.started_at.isoformat()
        out["ended_at"] = self.ended_at.isoformat()
        out["duration_s"] = self.duration_s
        return out

    def summary(self) -> str:
        """One readable line for task logs."""
        text = (
            f"{self.engine} {self.mode} check of {self.database}: {self.verdict.value} "
            f"({len(self.findings)} finding(s), {self.duration_s:.2f} s)"
        )
        if self.error:
            text += f" — {self.error}"
        return text


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
