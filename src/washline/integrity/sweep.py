"""Logic of the nightly integrity sweep (``dags/washline_integrity.py``), kept
here so it is unit-testable and the DAG file stays thin.

* Connections: the ``conn_ids`` Param when non-empty, else the Airflow
  Variable ``washline_integrity_connections`` (JSON list or comma-separated
  text), else ``["washline_staging"]``. Read at run time, never at parse time.
* Mode: ``full`` on the configured weekday (``full_day``, default Sunday) of
  the run's due date, ``physical_only`` on the other days, unless the ``mode``
  Param forces one (Ola Hallengren's weekly full / nightly PHYSICAL_ONLY).
* Time limit: minutes after the run started after which no new check starts
  (the operator's ``time_limit``; a check not started is skipped).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Iterable, Mapping

from washline.paths import CONN_ID_PATTERN, validate_name

VARIABLE = "washline_integrity_connections"
DEFAULT_CONNECTIONS = ("washline_staging",)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def parse_connections(value: Any) -> list[str]:
    """Connection ids from a Param/Variable value: a list, a JSON list, or comma-separated text.

    Returns:
        Validated ids in order, duplicates removed; ``[]`` for empty input.

    Raises:
        washline.paths.ParamError: an id does not match the connection-id pattern.
        ValueError: not a list or text.
    """
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        value = json.loads(text) if text.startswith("[") else [v for v in text.split(",")]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"connections must be a list of ids, got {type(value).__name__}")
    out: list[str] = []
    for item in value:
        conn_id = validate_name(str(item).strip(), CONN_ID_PATTERN, "connection id")
        if conn_id not in out:
            out.append(conn_id)
    return out


def resolve_connections(param_value: Any, variable_value: Any) -> list[str]:
    """Param first, then the Variable, then the staging connection."""
    return parse_connections(param_value) or parse_connections(variable_value) or list(DEFAULT_CONNECTIONS)


def mode_for(day: dt.date, full_day: str = "sunday", override: str = "auto") -> str:
    """``full`` on ``full_day`` (weekday name), else ``physical_only``; ``override`` wins unless ``auto``.

    Raises:
        ValueError: unknown weekday or override.
    """
    if override not in ("auto", "full", "physical_only"):
        raise ValueError(f"mode must be auto, full or physical_only, got {override!r}")
    if override != "auto":
        return override
    if full_day.lower() not in WEEKDAYS:
        raise ValueError(f"full_day must be a weekday name, got {full_day!r}")
    return "full" if day.weekday() == WEEKDAYS.index(full_day.lower()) else "physical_only"


def plan(params: Mapping[str, Any], run_day: dt.date, variable_value: Any,
         now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """One ``expand_kwargs`` item per connection: ``conn_id``, ``mode``, and
    ``not_after`` (ISO-8601 UTC: ``now`` + ``time_limit_minutes``, or None)."""
    mode = mode_for(run_day, params.get("full_day", "sunday"), params.get("mode", "auto"))
    minutes = params.get("time_limit_minutes")
    now = now or dt.datetime.now(dt.timezone.utc)
    not_after = (now + dt.timedelta(minutes=float(minutes))).isoformat() if minutes else None
    return [{"conn_id": c, "mode": mode, "not_after": not_after}
            for c in resolve_connections(params.get("conn_ids"), variable_value)]


def summarise(items: list[dict[str, Any]], reports: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """One summary row per planned check; a missing report is ``NOT RUN`` (skipped, or failed before checking)."""
    rows = []
    for item, rep in zip(items, reports):
        rep = rep or {}
        rows.append({
            "conn_id": item["conn_id"], "mode": item["mode"], "verdict": rep.get("verdict", "NOT RUN"),
            "engine": rep.get("engine", "-"), "database": rep.get("database", "-"),
            "findings": len(rep.get("findings") or []), "allocation_errors": rep.get("allocation_errors", 0),
            "consistency_errors": rep.get("consistency_errors", 0), "duration_s": rep.get("duration_s"),
            "error": rep.get("error"),
        })
    return rows


def render_table(rows: list[dict[str, Any]]) -> str:
    """Fixed-width text table of summary rows, for the task log."""
    head = ("connection", "engine", "mode", "verdict", "findings", "alloc", "consist", "seconds")
    body = [(r["conn_id"], r["engine"], r["mode"], r["verdict"], str(r["findings"]), str(r["allocation_errors"]),
             str(r["consistency_errors"]), "-" if r["duration_s"] is None else f"{r['duration_s']:.2f}")
            for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [line(head), line(["-" * w for w in widths])] + [line(b) for b in body]
    out += [f"  {r['conn_id']}: {r['error']}" for r in rows if r["error"]]
    return "\n".join(out)
