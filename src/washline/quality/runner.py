"""Validate one logical date's staging slice with Great Expectations (GX Core 1.x).

Three suites, one per staging table, are versioned JSON files under
``include/gx/`` (``staging_records``, ``staging_links``, ``staging_clusters``),
and on a night that uses the entity registry four more check the staged new
state before it is published (``staging_entity_members``, ``staging_entities``,
``staging_entity_changes``, and ``entity_continuity``, a cross-table check of
the published ``entities`` against the staged state and the night's changes);
their tunable bounds live in ``include/gx/quality.yaml`` and reach the suites
as suite parameters (``{"$PARAMETER": name}``), together with the expected row
counts passed in from the upstream tasks.

The GX datasource is built from the same Airflow connection as the staging
load (SQLite ``add_sqlite``, PostgreSQL ``add_postgres``, SQL Server
``add_sql_server``, Oracle ``add_sql``). Each suite runs on its table's slice
only (``WHERE ds = '<ds>'``), never the whole table; the slice queries join
the neighbouring staging tables so that referential integrity across tables
is an ordinary column expectation (a NULL join key = an orphan). Each slice
query becomes a per-run database VIEW (unique name, created and dropped by
:func:`slice_views`) that GX validates as a *table* asset: GX then learns the
columns from the catalogue, whereas on a *query* asset it runs the query and
fetches every row just to read the column names. Where the connection may not
create views, the runner falls back to query assets (logged, same checks).
The validation run asks GX for counts only; sample values are fetched
afterwards for the expectations that found unexpected values
(:func:`fetch_samples`), not for every expectation. Staging tables may live
in a schema (the DAG's ``staging_schema`` Param, ``schema=``).
The password never reaches a file: the GX project stores ``${WASHLINE_GX_…}``
and the value sits in this process's environment only while validating.

Statuses per expectation: PASS, FAIL (the data broke it), ERROR (the
expectation raised: ``exception_info.raised_exception``; never a pass), SKIPPED
(a reconciliation whose expected count was not passed; listed, never hidden).
A FAIL of a ``critical`` expectation or any ERROR blocks publish; a FAIL of a
``warning`` expectation is reported and the run goes on. Counts are GX's
``unexpected_count`` (the sample lists are capped at 20 rows on SQL backends,
so they are never counted), reported for passing ``mostly`` expectations too.

Data Docs are built as HTML in the run-specific folder given by the caller;
their ``index.html`` path is logged and returned.

This module owns the run: :func:`validate_slice` (the DAG's call),
:func:`validate_staging` and the one GX checkpoint behind them. The rooms it
calls, each importable on its own (and their public names from here too):

* :mod:`washline.quality.config` - ``quality.yaml`` (pydantic) and the suite lists;
* :mod:`washline.quality.suites` - suite files, dialect adaptation, suite parameters;
* :mod:`washline.quality.slices` - the slice SQL per suite and dialect;
* :mod:`washline.quality.views` - the per-run views' names and lifecycle;
* :mod:`washline.quality.datasource` - the GX datasource from the Airflow connection;
* :mod:`washline.quality.samples` - sample values, fetched where there are some;
* :mod:`washline.quality.results` - rows, statuses and the log table;
* :mod:`washline.quality.folders` - pruning old GX run folders.
"""

from __future__ import annotations

import logging
import secrets
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from washline.paths import validate_ds
# The public names of washline.quality stay importable from the runner (``__all__``).
from washline.quality.config import (  # noqa: F401
    CONFIG_FILE,
    DEFAULT_KEEP_RUNS,
    REGISTRY_SUITE_NAMES,
    SUITE_NAMES,
    SUITES_DIR,
    QualityConfigError,
    load_config,
)
from washline.quality.datasource import SECRET_ENV_PREFIX, datasource_spec, secret_in_env
from washline.quality.folders import prune_run_folders
from washline.quality.results import (  # noqa: F401
    expectation_rows,
    format_table,
    overall,
    raised_exception,
    summarise,
)
from washline.quality.samples import SAMPLE_COUNT, SAMPLE_FORMAT, fetch_samples  # noqa: F401
from washline.quality.slices import CONCAT, DATE_TEXT, SLICE_QUERIES, query_for  # noqa: F401
from washline.quality.suites import (  # noqa: F401
    COUNT_PARAMETERS,
    REGISTRY_COUNT_PARAMETERS,
    ROW_COUNT_PARAMETERS,
    adapt_for_dialect,
    load_suite,
    load_suite_spec,
    registry_counts,
    suite_parameters,
    suite_specs,
    uses_parameter,
)
from washline.quality.views import VIEW_PREFIX, SliceViewsRefused, slice_views, view_name  # noqa: F401

__all__ = [
    "CONCAT", "CONFIG_FILE", "COUNT_PARAMETERS", "DATE_TEXT", "DEFAULT_KEEP_RUNS", "REGISTRY_COUNT_PARAMETERS",
    "REGISTRY_SUITE_NAMES", "RESULT_FORMAT", "ROW_COUNT_PARAMETERS", "SAMPLE_COUNT", "SAMPLE_FORMAT",
    "SECRET_ENV_PREFIX", "SLICE_QUERIES", "SUITES_DIR", "SUITE_NAMES", "VIEW_PREFIX", "QualityConfigError",
    "SliceViewsRefused", "ValidationRequest", "adapt_for_dialect", "datasource_spec", "expectation_rows",
    "fetch_samples", "format_table", "load_config", "load_suite", "load_suite_spec", "overall",
    "prune_run_folders", "query_for", "raised_exception", "refresh_statistics", "registry_counts",
    "secret_in_env", "slice_views", "suite_parameters", "suite_specs", "summarise", "uses_parameter",
    "validate_slice", "validate_staging", "view_name",
]

log = logging.getLogger(__name__)
# GX logs every config save at INFO; keep task logs to what matters.
logging.getLogger("great_expectations").setLevel(logging.WARNING)

#: Result format of the validation run: ``unexpected_count`` and
#: ``unexpected_percent`` for every map expectation, but no sample values.
#: GX fetches ``partial_unexpected_list`` with one extra ``SELECT <col> …
#: WHERE <unexpected> LIMIT n`` per expectation even when it passes, and for a
#: passing one that query scans the whole slice to find nothing (16–20 s at
#: 1M rows). With ``partial_unexpected_count: 0`` the query carries
#: ``LIMIT 0``, which PostgreSQL and SQLite answer without reading a row.
RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 0}


def refresh_statistics(conn_id: str, dialect: str, schema: str | None = None) -> bool:
    """``ANALYZE`` the staging tables (in ``schema``) on PostgreSQL before validating.

    A freshly loaded table has no planner statistics, and PostgreSQL then
    plans the slice queries' joins as nested loops: O(n²), measured 1.3 s for
    1,000 rows against 5 ms after ``ANALYZE``. Other dialects: nothing to do.

    Returns:
        True when statistics were refreshed; False (with a warning logged)
        when the connection may not ANALYZE, which slows but does not stop validation.
    """
    if dialect != "postgres":
        return False
    from washline.staging.dialects import ENTITY_STAGING_TABLES, STAGING_TABLES, get_db_hook, qualify

    hook, _ = get_db_hook(conn_id)
    conn = hook.get_conn()
    try:
        cur = conn.cursor()
        tables = (*STAGING_TABLES, *ENTITY_STAGING_TABLES, "entities")
        cur.execute("ANALYZE " + ", ".join(qualify(t, dialect, schema) for t in tables))
        conn.commit()
        return True
    except Exception as exc:  # e.g. not the tables' owner
        log.warning("could not ANALYZE the staging tables (validation may be slow): %s", exc)
        conn.rollback()
        return False
    finally:
        conn.close()


def validate_staging(
    conn_id: str,
    ds: str,
    expected_rows: Mapping[str, int | None],
    docs_dir: Path,
    suites: list[str] | tuple[str, ...] | None = None,
    suites_dir: Path | None = None,
    config_path: Path | None = None,
    schema: str | None = None,
    use_views: bool = True,
    registry: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Validate the ``ds`` slice of every staging table with its suite, in one checkpoint.

    Args:
        conn_id: Airflow connection of the staging database.
        ds: logical date ``YYYY-MM-DD``.
        expected_rows: staging table → the upstream Spark output's row count
            for ``ds`` (``staging_records``: cleanse curated rows;
            ``staging_links``: link job references; ``staging_clusters``:
            link job clusters). A missing or None count turns that table's
            reconciliation expectation into a SKIPPED row (never a silent pass).
        docs_dir: run-specific folder; the GX project and Data Docs go here.
        suites: suite names (files ``<name>.json``); default from ``quality.yaml``.
        suites_dir: folder of suite files; default ``include/gx/``.
        config_path: quality settings; default ``include/gx/quality.yaml``.
        schema: schema of the staging tables (the DAG's ``staging_schema``
            Param); None = the connection's default. The per-run views go there too.
        use_views: validate per-run views as GX table assets (default); False,
            or a connection that may not CREATE VIEW, uses GX query assets
            (same expectations, slower: GX runs each slice query once more and
            fetches all its rows to learn the column names).
        registry: the registry version's ``_COMPLETE.json`` on a registry
            night: adds the ``registry_suites`` of ``quality.yaml`` (default
            :data:`REGISTRY_SUITE_NAMES`) with its counts as expected values.

    Returns:
        ``{"status", "blocks_publish", "expectations": [...] (see
        :func:`summarise`), "suites": {name: status}, "data_docs": path of
        index.html or None, "run_dir", "seconds", "slice_source": "view" or
        "query", "views": the per-run view names, "error": message or None}``.
        The SQL that GX sends is measured outside the product
        (``benchmarks/sqlcapture.py``, used by ``benchmarks/quality.py`` and the tests).
        Setup errors (bad config or suite, unreachable database) give status
        ERROR with ``error`` set instead of raising, so the report can say why.
    """
    validate_ds(ds)
    started = time.monotonic()
    docs_dir = Path(docs_dir)
    summary: dict[str, Any] = {"status": "ERROR", "blocks_publish": True, "expectations": [], "suites": {},
                               "data_docs": None, "run_dir": str(docs_dir), "seconds": None, "error": None,
                               "ds": ds, "schema": schema, "slice_source": None, "views": []}
    try:
        _run(ValidationRequest(conn_id, ds, expected_rows, docs_dir, suites, suites_dir, config_path, schema,
                               use_views, registry), summary)
    except Exception as exc:  # reported as ERROR, never a pass; the traceback goes to the log
        log.exception("GX validation of ds=%s did not run", ds)
        summary.update({"status": "ERROR", "blocks_publish": True, "error": f"{type(exc).__name__}: {exc}"})
    summary["seconds"] = round(time.monotonic() - started, 3)
    return summary


@dataclass(frozen=True)
class ValidationRequest:
    """What ``validate_staging`` was asked to validate (its arguments, see there)."""

    conn_id: str
    ds: str
    expected_rows: Mapping[str, int | None]
    docs_dir: Path
    suites: list[str] | tuple[str, ...] | None = None
    suites_dir: Path | None = None
    config_path: Path | None = None
    schema: str | None = None
    use_views: bool = True
    registry: Mapping[str, Any] | None = None


def _run(req: ValidationRequest, summary: dict[str, Any]) -> None:
    """Run the GX checkpoint for ``req``; fills ``summary`` as it goes, so what
    was learnt before an error (slice source, views, samples) stays in it."""
    import great_expectations as gx
    from airflow.sdk import BaseHook

    from washline.staging.dialects import dialect_for, validate_schema

    config = load_config(req.config_path)
    names = list(req.suites or config["suites"])
    if req.registry is not None and not req.suites:
        names += [n for n in config["registry_suites"] if n not in names]
    conn = BaseHook.get_connection(req.conn_id)
    dialect = dialect_for(conn.conn_type)
    schema = validate_schema(req.schema, dialect)
    secret_var = SECRET_ENV_PREFIX + secrets.token_hex(6).upper()
    method, ds_kwargs, secret = datasource_spec(conn, dialect, secret_var)
    params = suite_parameters(req.expected_rows, config, req.registry)
    rows: list[dict[str, Any]] = []
    specs = suite_specs(names, req.suites_dir, dialect, params, rows)
    order = [spec["name"] for spec, _ in specs]  # the JSON "name", which also picks the slice
    summary["analyzed"] = refresh_statistics(req.conn_id, dialect, schema)
    req.docs_dir.mkdir(parents=True, exist_ok=True)

    with ExitStack() as stack:
        views = _enter_views(stack, req, dialect, schema, list(dict.fromkeys(order)), summary)
        stack.enter_context(secret_in_env(secret_var, secret))
        context = gx.get_context(mode="file", project_root_dir=str(req.docs_dir))
        datasource = getattr(context.data_sources, method)(name="washline_staging", **ds_kwargs)
        validations, batches = _validation_definitions(context, datasource, specs, views, req.ds, dialect, schema,
                                                       registry=req.registry is not None)
        # No checkpoint action: Data Docs are built below, once the sample values are in.
        checkpoint = context.checkpoints.add_or_update(gx.Checkpoint(
            name=f"washline_staging_{req.ds}", validation_definitions=validations, actions=[],
            result_format=RESULT_FORMAT))
        result = checkpoint.run(expectation_parameters=params)
        summary["samples"] = fetch_samples(context, result.run_results, batches, params)
        context.build_data_docs()
    for validation_result in result.run_results.values():
        suite_name = validation_result.suite_name
        suite_rows = expectation_rows(validation_result, suite_name)
        summary["suites"][suite_name] = overall(suite_rows)["status"]
        rows.extend(suite_rows)
    rows.sort(key=lambda r: order.index(r["suite"]) if r["suite"] in order else len(order))
    index = req.docs_dir / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    summary.update(overall(rows))
    summary.update({"expectations": rows, "data_docs": str(index) if index.exists() else None,
                    "dialect": dialect, "parameters": params})


def _enter_views(stack: ExitStack, req: ValidationRequest, dialect: str, schema: str | None, suites: list[str],
                 summary: dict[str, Any]) -> dict[str, str] | None:
    """The per-run views of ``suites`` entered on ``stack`` (dropped when it closes),
    or None for GX query assets (``use_views`` off, or the connection refused a view:
    logged and noted in ``summary["slice_source_note"]``). Sets ``slice_source`` and ``views``."""
    views: dict[str, str] | None = None
    if req.use_views:
        try:
            views = stack.enter_context(slice_views(req.conn_id, req.ds, dialect, suites, schema,
                                                    registry=req.registry is not None))
        except SliceViewsRefused as exc:
            log.warning("%s; validating through GX query assets instead (same checks, slower: GX runs "
                        "each slice query once more to learn its columns)", exc)
            summary["slice_source_note"] = str(exc)
    summary["slice_source"] = "view" if views else "query"
    summary["views"] = sorted((views or {}).values())
    return views


def _validation_definitions(context: Any, datasource: Any, specs: list[tuple[dict[str, Any], list[dict[str, Any]]]],
                            views: Mapping[str, str] | None, ds: str, dialect: str,
                            schema: str | None, registry: bool = False) -> tuple[list[Any], dict[str, Any]]:
    """One GX suite, asset (the suite's view as a table asset, else its slice
    query as a query asset), whole-table batch and validation definition per spec.

    Returns:
        ``(validation definitions, {suite name: batch definition})``.

    Raises:
        ValueError: GX refused a suite (the message names it).
    """
    import great_expectations as gx

    validations, batches = [], {}
    for spec, kept in specs:
        try:
            suite = gx.ExpectationSuite(name=spec["name"], expectations=kept, meta=spec.get("meta"))
        except Exception as exc:
            raise ValueError(f"invalid expectation suite {spec['name']}: {exc}") from exc
        suite = context.suites.add_or_update(suite)
        if views:
            extra = {"schema_name": schema} if schema else {}
            asset = datasource.add_table_asset(name=f"{spec['name']}_{ds}", table_name=views[spec["name"]], **extra)
        else:
            asset = datasource.add_query_asset(name=f"{spec['name']}_{ds}",
                                               query=query_for(spec["name"], ds, dialect, schema, registry))
        batches[spec["name"]] = asset.add_batch_definition_whole_table(f"slice_{ds}")
        validations.append(context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=f"{spec['name']}_{ds}", data=batches[spec["name"]], suite=suite)))
    return validations, batches


def validate_slice(
    conn_id: str,
    ds: str,
    expected_row_count: int | None,
    docs_dir: Path,
    suite_name: str | None = None,
    suites_dir: Path | None = None,
    *,
    expected_link_rows: int | None = None,
    expected_cluster_rows: int | None = None,
    config_path: Path | None = None,
    schema: str | None = None,
    registry: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Validate the ``ds`` slice of staging; the call the nightly DAG makes.

    Args:
        conn_id: Airflow connection of the staging database.
        ds: logical date ``YYYY-MM-DD``.
        expected_row_count: curated rows the cleanse job wrote for ``ds``.
        docs_dir: run-specific folder for the GX project and Data Docs.
        suite_name: validate only this suite (default: all of ``quality.yaml``).
        suites_dir: folder of suite files; default ``include/gx/``.
        expected_link_rows: link-index rows (the link job's ``references``);
            default ``expected_row_count``, since the link job writes one row
            per curated reference (``spark_jobs/link.py``).
        expected_cluster_rows: the link job's ``clusters``; without it the
            clusters reconciliation is SKIPPED (and listed as such).
        config_path: quality settings; default ``include/gx/quality.yaml``.
        schema: schema of the staging tables (the DAG's ``staging_schema``
            Param, checked with ``validate_schema``); None = connection default.
        registry: the registry version's ``_COMPLETE.json`` on a registry
            night (adds the registry suites; see :func:`validate_staging`).

    Returns:
        :func:`validate_staging`'s summary; ``suite`` names what ran. The
        Data Docs path is logged. Afterwards all but the newest ``keep_runs``
        (``quality.yaml``, default 5) run folders beside ``docs_dir`` are
        removed (:func:`prune_run_folders`), so Data Docs stay linkable for
        recent runs without growing forever.
    """
    expected = {
        "staging_records": expected_row_count,
        "staging_links": expected_link_rows if expected_link_rows is not None else expected_row_count,
        "staging_clusters": expected_cluster_rows,
    }
    suites = [suite_name] if suite_name else None
    summary = validate_staging(conn_id, ds, expected, docs_dir, suites=suites, suites_dir=suites_dir,
                               config_path=config_path, schema=schema, registry=registry)
    try:
        keep = load_config(config_path)["keep_runs"]
    except QualityConfigError:
        keep = DEFAULT_KEEP_RUNS  # the validation itself reported the bad file
    prune_run_folders(Path(docs_dir).parent, keep, current=Path(docs_dir))
    summary["suite"] = suite_name or ",".join(summary["suites"]) or "staging"
    log.info("GX validation of ds=%s: %s (%s s)\n%s", ds, summary["status"], summary["seconds"],
             format_table(summary))
    log.info("GX Data Docs for ds=%s: %s", ds, summary["data_docs"])
    return summary
