"""Where a run's files live, and validation of the Params that name them.

Layout under the data root (``$WASHLINE_DATA``, default ``<repo>/data``)::

    landing/<source>/<ds>/*.csv        raw input, one folder per logical date
    lake/curated/<ds>/                 cleansed references (Parquet)
    lake/quarantine/<ds>/              rejected rows with a reason (Parquet)
    lake/linked/<ds>/links/            link index (Parquet) + metrics.json
    lake/reports/<ds>/run_summary.json the run summary
    lake/reports/<ds>/report.html      the night's report (+ review.html, gx/<run>/ Data Docs)
    lake/entities/ds=<ds>/             the entity registry's version after <ds>
                                       (members/, entities/, changes/, frequencies/,
                                       _COMPLETE.json, _PUBLISHED.json or _REJECTED.json)
    decisions/decisions.csv            human must-link / cannot-link decisions (optional)
    staging/washline.db                the default (SQLite) staging database

Every stage reads and writes only its own ``ds`` folder, so rerunning a date
replaces that date's files and nothing else. The entity registry is the one
thing a date reads from an earlier date: the link job of ``ds`` links against
the latest published version before it (see ``washline.registry``).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Mapping

import jobcontract

REPO_ROOT = Path(__file__).resolve().parents[2]
DS_PATTERN = jobcontract.DS_PATTERN
#: The names a run accepts, as regular-expression strings: the DAGs' Params
#: (``pattern=``) and the tasks' checks (``validate_name``, the compiled forms
#: below) read these, so the UI form and the task refuse the same values.
PROFILE_RE = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"  # include/config/<profile>.yaml
CONN_ID_RE = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,249}$"  # an Airflow connection id
IDENTIFIER_RE = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"  # a SQL schema, table or view name (unquoted)
SCHEMA_RE = f"^({IDENTIFIER_RE[1:-1]})?$"  # a schema, or empty for the connection's default
INPUT_FOLDER_RE = r"^[A-Za-z0-9_./-]{1,255}$"  # then resolved under the data root (resolve_under_root)
#: JVM memory for spark-submit's --executor-memory ("2g", "1536m"), or empty for the connection's / Spark's default
MEMORY_RE = r"^([1-9][0-9]{0,6}[mMgG])?$"
PROFILE_PATTERN = re.compile(PROFILE_RE)
MEMORY_PATTERN = re.compile(MEMORY_RE)
CONN_ID_PATTERN = re.compile(CONN_ID_RE)


log = logging.getLogger(__name__)


class ParamError(ValueError):
    """A DAG Param or CLI argument is malformed or points outside the data root."""


def data_root() -> Path:
    """The data root: ``$WASHLINE_DATA`` if set, else ``<repo>/data`` (absolute)."""
    return Path(os.environ.get("WASHLINE_DATA") or REPO_ROOT / "data").resolve()


#: Overrides the ``retry_delay`` of every task of the washline DAGs, in seconds (read when the DAG file
#: is parsed: set it in the environment of the dag-processor, the scheduler and ``airflow dags test``)
RETRY_DELAY_ENV = "WASHLINE_RETRY_DELAY_SECONDS"


def retry_delay(default_seconds: float) -> timedelta:
    """The ``retry_delay`` of a DAG's tasks: ``$WASHLINE_RETRY_DELAY_SECONDS`` if set and not empty,
    else ``default_seconds``. Reads the environment only (no I/O), so a DAG file may call it at parse.

    Raises:
        ValueError: the variable is not a finite number of seconds >= 0 (the DAG file then fails
            to import, naming the variable, instead of retrying on a delay nobody chose).
    """
    raw = os.environ.get(RETRY_DELAY_ENV, "").strip()
    if not raw:
        return timedelta(seconds=default_seconds)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{RETRY_DELAY_ENV}={raw!r}: expected a number of seconds >= 0")
    return timedelta(seconds=seconds)


def validate_ds(ds: str) -> str:
    """Return ``ds`` if it is a real calendar date written ``YYYY-MM-DD``.

    Raises:
        ParamError: on any other string (it becomes part of paths and SQL
            parameters, so nothing else is accepted).
    """
    try:
        return jobcontract.validate_ds(ds)
    except ValueError as exc:
        raise ParamError(str(exc)) from exc.__cause__  # the calendar error, when there is one


def resolve_under_root(path: str | os.PathLike, root: Path | None = None) -> Path:
    """Resolve ``path`` (relative paths are taken from the data root) and refuse
    anything that escapes the data root, such as ``../../etc``.

    Raises:
        ParamError: the resolved path is outside the data root.
    """
    root = (root or data_root()).resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = candidate.resolve()
    if resolved != root and root not in resolved.parents:
        raise ParamError(f"path {str(path)!r} resolves to {resolved}, outside the data root {root}")
    return resolved


def validate_name(value: str, pattern: re.Pattern[str], what: str) -> str:
    """Check an identifier-like Param against an allow-list pattern."""
    if not isinstance(value, str) or not pattern.match(value):
        raise ParamError(f"{what} {value!r} does not match {pattern.pattern}")
    return value



def run_ds(context: Mapping[str, Any]) -> str:
    """The date (``YYYY-MM-DD``) a run works on: the one rule for every task.

    * A run with a logical date (scheduled, backfill, ``airflow dags test``,
      a manual run given one): its ``ds``, the logical date in UTC.
    * A run without one (Airflow 3 allows ``"logical_date": null`` from the
      REST API or the UI; its context then has no ``ds``): the date of its
      ``run_after`` (when it was due) in UTC, e.g. ``2025-03-03T00:30+01:00``
      gives ``2025-03-02``. This is logged at INFO level on every use.

    Args:
        context: the Airflow task context (or a plain dict in tests) with
            ``ds`` and/or ``dag_run`` (whose ``run_after`` is a datetime; a
            naive one is taken as UTC).

    Raises:
        ParamError: the run has neither a logical date nor a ``run_after``,
            or the date is not a real ``YYYY-MM-DD`` date.
    """
    ds = context.get("ds")
    if ds:
        return validate_ds(ds)
    run_after = getattr(context.get("dag_run"), "run_after", None)
    if not isinstance(run_after, datetime):
        raise ParamError("the run has no logical date (ds) and no run_after to take the date from")
    utc = run_after.replace(tzinfo=timezone.utc) if run_after.tzinfo is None else run_after.astimezone(timezone.utc)
    ds = validate_ds(utc.date().isoformat())
    log.info("run %s has no logical date: using the UTC date of its run_after %s -> ds=%s",
             context.get("run_id"), utc.isoformat(), ds)
    return ds


def safe_run_id(run_id: str) -> str:
    """``run_id`` as a folder name: characters other than letters, digits,
    ``-``, ``_`` and ``.`` become ``_`` (``manual__2025-01-01T00:00:00+00:00``
    → ``manual__2025-01-01T00_00_00_00_00``)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id)


@dataclass(frozen=True)
class RunPaths:
    """The folders and files of one logical date's run (all absolute)."""

    ds: str
    root: Path
    landing: Path

    @classmethod
    def for_run(cls, ds: str, input_folder: str = "landing", root: Path | None = None) -> "RunPaths":
        """Build the paths for ``ds``; ``input_folder`` is the landing root,
        relative to the data root or absolute inside it.

        Raises:
            ParamError: bad ``ds`` or an input folder outside the data root.
        """
        root = (root or data_root()).resolve()
        return cls(ds=validate_ds(ds), root=root, landing=resolve_under_root(input_folder, root))

    @property
    def lake(self) -> Path:
        return self.root / "lake"

    @property
    def curated(self) -> Path:
        return self.lake / "curated" / self.ds

    @property
    def quarantine(self) -> Path:
        return self.lake / "quarantine" / self.ds

    @property
    def cleanse_metrics(self) -> Path:
        return self.lake / "curated" / f"{self.ds}.metrics.json"

    @property
    def linked(self) -> Path:
        return self.lake / "linked" / self.ds

    @property
    def link_metrics(self) -> Path:
        return self.linked / "metrics.json"

    @property
    def checkpoints(self) -> Path:
        return self.lake / "_checkpoints" / self.ds

    @property
    def reports(self) -> Path:
        return self.lake / "reports" / self.ds

    @property
    def summary(self) -> Path:
        return self.reports / "run_summary.json"

    def data_docs(self, run_id: str) -> Path:
        """The folder of a run's GX project and Data Docs, ``lake/reports/<ds>/gx/<safe run id>``."""
        return self.reports / "gx" / safe_run_id(run_id)

    @property
    def entities(self) -> Path:
        """The entity registry root, ``lake/entities`` (one ``ds=<d>`` folder per version)."""
        return self.lake / "entities"

    @property
    def registry_version(self) -> Path:
        """This date's registry version, ``lake/entities/ds=<ds>``."""
        return self.entities / f"ds={self.ds}"

    @property
    def decisions(self) -> Path:
        """The human decisions file, ``decisions/decisions.csv`` (may not exist)."""
        return self.root / "decisions" / "decisions.csv"
