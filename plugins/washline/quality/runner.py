"""Validate one logical date's staging slice with a Great Expectations suite.

The suite is a versioned JSON file under ``include/gx/``. The GX datasource is
built from the same Airflow connection as the staging load, and the data asset
is a query restricted to the date's slice, so validation never scans other
dates. Data Docs are built as HTML in a run-specific folder.

Statuses per expectation: PASS, FAIL (the data broke it), ERROR (the
expectation raised: ``exception_info.raised_exception``; never a pass).
A FAIL of a ``critical`` expectation or any ERROR blocks publish; a FAIL of a
``warning`` expectation is reported and the run goes on. Counts are GX's
``unexpected_count`` (the sample lists are capped at 20 rows on SQL backends,
so they are never counted).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from washline.paths import REPO_ROOT, validate_ds

log = logging.getLogger(__name__)
# GX logs every config save at INFO; keep task logs to what matters.
logging.getLogger("great_expectations").setLevel(logging.WARNING)
SUITES_DIR = REPO_ROOT / "include" / "gx"

#: The slice under validation: staging_records joined to its link index.
RECORDS_QUERY = (
    "SELECT r.ds AS ds, r.record_id AS record_id, r.source AS source, r.surname AS surname, "
    "r.postcode AS postcode, CAST(r.date_of_birth AS VARCHAR(10)) AS date_of_birth, "
    "l.cluster_id AS cluster_id "
    "FROM staging_records r LEFT JOIN staging_links l ON l.ds = r.ds AND l.record_id = r.record_id "
    "WHERE r.ds = '{ds}'"
)


def load_suite(name: str, suites_dir: Path | None = None):
    """Load ``include/gx/<name>.json`` as a GX ExpectationSuite.

    Raises:
        FileNotFoundError: no such suite file.
        ValueError: the file is not a valid suite (message names the file).
    """
    import great_expectations as gx

    path = (suites_dir or SUITES_DIR) / f"{name}.json"
    try:
        spec = json.loads(path.read_text())
        return gx.ExpectationSuite(name=spec["name"], expectations=spec["expectations"], meta=spec.get("meta"))
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise ValueError(f"invalid expectation suite {path}: {exc}") from exc


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


def summarise(validation_result: Any) -> dict[str, Any]:
    """Reduce a GX ``ExpectationSuiteValidationResult`` to washline's summary.

    Returns:
        ``{"status": PASS|WARN|FAIL|ERROR, "blocks_publish": bool,
        "expectations": [{"expectation", "column", "severity", "status",
        "unexpected_count", "unexpected_percent", "observed_value", "sample"}]}``
    """
    rows = []
    for res in validation_result.results:
        cfg = res.expectation_config
        kwargs = dict(cfg.kwargs)
        result = dict(res.result or {})
        exception = raised_exception(res.exception_info)
        raised = exception is not None
        severity = (cfg.meta or {}).get("severity", "critical")
        status = "ERROR" if raised else ("PASS" if res.success else "FAIL")
        column = kwargs.get("column") or ",".join(kwargs.get("column_list", []) or [])
        rows.append({
            "expectation": cfg.type,
            "column": column or None,
            "severity": severity,
            "status": status,
            "unexpected_count": result.get("unexpected_count"),
            "unexpected_percent": result.get("unexpected_percent"),
            "observed_value": result.get("observed_value"),
            "sample": [str(v) for v in (result.get("partial_unexpected_list") or [])[:5]],
            "exception": exception,
        })
    if any(r["status"] == "ERROR" for r in rows):
        status = "ERROR"
    elif any(r["status"] == "FAIL" and r["severity"] == "critical" for r in rows):
        status = "FAIL"
    elif any(r["status"] == "FAIL" for r in rows):
        status = "WARN"
    else:
        status = "PASS"
    return {"status": status, "blocks_publish": status in ("FAIL", "ERROR"), "expectations": rows}


def format_table(summary: dict[str, Any]) -> str:
    """A compact fixed-width table of the expectations, for task logs."""
    lines = [f"{'status':6} {'severity':8} {'expectation':42} {'column':16} {'unexpected':>10} {'pct':>7}  sample"]
    for r in summary["expectations"]:
        pct = r["unexpected_percent"]
        lines.append(
            f"{r['status']:6} {r['severity']:8} {r['expectation'][:42]:42} {str(r['column'] or '-')[:16]:16} "
            f"{'-' if r['unexpected_count'] is None else r['unexpected_count']:>10} "
            f"{'-' if pct is None else f'{pct:.2f}':>7}  {', '.join(r['sample'][:3]) or (r['exception'] or '')[:80]}"
        )
    return "\n".join(lines)


def validate_slice(
    conn_id: str,
    ds: str,
    expected_row_count: int,
    docs_dir: Path,
    suite_name: str = "staging_records",
    suites_dir: Path | None = None,
) -> dict[str, Any]:
    """Validate the ``ds`` slice of staging with the named suite.

    Args:
        conn_id: Airflow connection of the staging database.
        ds: logical date ``YYYY-MM-DD``.
        expected_row_count: curated rows the cleanse job wrote for ``ds``
            (reconciliation; passed from upstream, never hard-coded).
        docs_dir: run-specific folder; the GX project and Data Docs go here.
        suite_name: suite file name (without ``.json``) in ``suites_dir``.
        suites_dir: folder of suite files; default ``include/gx/``.

    Returns:
        :func:`summarise` output plus ``suite``, ``data_docs`` (path of
        ``index.html``) and ``seconds``.
    """
    import great_expectations as gx

    from washline.staging.dialects import get_db_hook

    validate_ds(ds)
    started = time.monotonic()
    hook, dialect = get_db_hook(conn_id)
    docs_dir.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="file", project_root_dir=str(docs_dir))
    source_name = "washline_staging"
    uri = hook.get_uri() if dialect != "postgres" else hook.get_uri().replace("postgres://", "postgresql://", 1)
    if dialect == "sqlite":
        datasource = context.data_sources.add_or_update_sqlite(name=source_name, connection_string=uri)
    elif dialect == "postgres":
        datasource = context.data_sources.add_or_update_postgres(name=source_name, connection_string=uri)
    else:
        datasource = context.data_sources.add_or_update_sql(name=source_name, connection_string=uri)
    asset = datasource.add_query_asset(name=f"staging_records_{ds}", query=RECORDS_QUERY.format(ds=ds))
    batch = asset.add_batch_definition_whole_table(f"slice_{ds}")
    suite = context.suites.add_or_update(load_suite(suite_name, suites_dir))
    validation = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=f"{suite_name}_{ds}", data=batch, suite=suite)
    )
    checkpoint = context.checkpoints.add_or_update(
        gx.Checkpoint(
            name=f"washline_{suite_name}",
            validation_definitions=[validation],
            actions=[gx.checkpoint.UpdateDataDocsAction(name="update_data_docs")],
            result_format={"result_format": "SUMMARY", "partial_unexpected_count": 5},
        )
    )
    result = checkpoint.run(expectation_parameters={"expected_row_count": int(expected_row_count)})
    validation_result = next(iter(result.run_results.values()))
    summary = summarise(validation_result)
    index = docs_dir / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    summary.update({
        "suite": suite_name,
        "data_docs": str(index) if index.exists() else None,
        "seconds": round(time.monotonic() - started, 2),
    })
    return summary
