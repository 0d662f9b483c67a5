"""GX validation results reduced to washline's rows, statuses and log table.

What it owns: one row per expectation (:func:`expectation_rows`, reading
GX 1.x's two shapes of ``exception_info`` with :func:`raised_exception`), the
overall status and whether it blocks publish (:func:`overall`,
:func:`summarise`) and the fixed-width table of the task log
(:func:`format_table`). Statuses: PASS, FAIL, ERROR (the expectation raised),
SKIPPED (built by :func:`washline.quality.suites.suite_specs`).
"""

from __future__ import annotations

import json
from typing import Any


def raised_exception(exception_info: Any) -> str | None:
    """The exception message if an expectation raised, else None.

    GX 1.x gives ``exception_info`` either flat (``{"raised_exception": …,
    "exception_message": …}``) or keyed by metric configuration id, one such
    dict per metric; both shapes are read.
    """
    if not isinstance(exception_info, dict):
        return None
    candidates = [exception_info] if "raised_exception" in exception_info else [
        v for v in exception_info.values() if isinstance(v, dict)]
    for info in candidates:
        if info.get("raised_exception"):
            return str(info.get("exception_message") or "expectation raised an exception")
    return None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def expectation_rows(validation_result: Any, suite: str | None = None) -> list[dict[str, Any]]:
    """One summary row per expectation of a GX ``ExpectationSuiteValidationResult``."""
    rows = []
    for res in validation_result.results:
        cfg = res.expectation_config
        kwargs = dict(cfg.kwargs)
        result = dict(res.result or {})
        exception = raised_exception(res.exception_info)
        severity = (cfg.meta or {}).get("severity", "critical")
        status = "ERROR" if exception is not None else ("PASS" if res.success else "FAIL")
        column = kwargs.get("column") or ",".join(
            kwargs.get("column_list", []) or [c for c in (kwargs.get("column_A"), kwargs.get("column_B")) if c])
        rows.append({
            "suite": suite,
            "expectation": cfg.type,
            "column": column or None,
            "severity": severity,
            "status": status,
            "unexpected_count": result.get("unexpected_count"),
            "unexpected_percent": result.get("unexpected_percent"),
            "element_count": result.get("element_count"),
            "observed_value": _jsonable(result.get("observed_value")),
            "sample": [str(v) for v in (result.get("partial_unexpected_list") or [])[:5]],
            "exception": exception,
        })
    return rows


def overall(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``status`` (ERROR > FAIL > WARN > PASS) and ``blocks_publish`` of a list of rows."""
    if any(r["status"] == "ERROR" for r in rows):
        status = "ERROR"
    elif any(r["status"] == "FAIL" and r["severity"] == "critical" for r in rows):
        status = "FAIL"
    elif any(r["status"] == "FAIL" for r in rows):
        status = "WARN"
    else:
        status = "PASS"
    return {"status": status, "blocks_publish": status in ("FAIL", "ERROR")}


def summarise(validation_result: Any) -> dict[str, Any]:
    """Reduce one GX ``ExpectationSuiteValidationResult`` to washline's summary.

    Returns:
        ``{"status": PASS|WARN|FAIL|ERROR, "blocks_publish": bool,
        "expectations": [{"suite", "expectation", "column", "severity", "status",
        "unexpected_count", "unexpected_percent", "element_count",
        "observed_value", "sample", "exception"}]}``
    """
    rows = expectation_rows(validation_result)
    return {**overall(rows), "expectations": rows}


def format_table(summary: dict[str, Any]) -> str:
    """A compact fixed-width table of the expectations, for task logs."""
    lines = [f"{'status':7} {'severity':8} {'suite':16} {'expectation':40} {'column':20} "
             f"{'unexpected':>10} {'pct':>7}  observed / sample"]
    for r in summary["expectations"]:
        pct = r.get("unexpected_percent")
        count = r.get("unexpected_count")
        sample = ", ".join(r.get("sample") or [])
        observed = r.get("observed_value")
        detail = (r.get("exception") or "")[:100] or (f"observed {observed}" if observed is not None else "") \
            + (f"  [{sample}]" if sample else "")
        lines.append(
            f"{r['status']:7} {r['severity']:8} {str(r.get('suite') or '-')[:16]:16} {r['expectation'][:40]:40} "
            f"{str(r['column'] or '-')[:20]:20} {'-' if count is None else count:>10} "
            f"{'-' if pct is None else f'{pct:.2f}':>7}  {detail}"
        )
    if summary.get("error"):
        lines.append(f"ERROR   validation did not run: {summary['error']}")
    return "\n".join(lines)
