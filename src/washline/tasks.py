"""Bodies of the Python tasks of ``washline_nightly``.

The DAG file only wires these together. Each function takes the Airflow
task context (a mapping with ``params``, ``ds``, ``run_id``, ``ti``), so it
can be unit-tested with a plain dict.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable, Mapping

from washline.paths import CONN_ID_PATTERN, RunPaths, run_ds, validate_name  # noqa: F401 (run_ds re-exported)

log = logging.getLogger(__name__)


def is_permanent(exc: BaseException) -> bool:
    """Errors a retry cannot fix: bad Params, unsupported or drifted schemas,
    bad values, an empty staging slice, a damaged database file, a registry
    version the link job left incomplete (rerun the link task)."""
    import sqlite3

    from washline.registry import RegistryVersionError
    from washline.staging.publish import NothingToPublish

    return isinstance(exc, (ValueError, NothingToPublish, sqlite3.DatabaseError, RegistryVersionError))


def reports_errors(task: str) -> Callable:
    """Decorate a task body: push its failure's one-line cause to XCom key
    ``error`` (the report task names it) and turn permanent errors into
    ``AirflowFailException`` so Airflow does not retry them."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(context: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
            from airflow.sdk.exceptions import AirflowException, AirflowFailException

            try:
                return fn(context, *args, **kwargs)
            except Exception as exc:
                message = str(exc) if isinstance(exc, AirflowException) else f"{type(exc).__name__}: {exc}"
                context["ti"].xcom_push(key="error", value=f"{task}: {message[:500]}")
                if not isinstance(exc, AirflowException) and is_permanent(exc):
                    raise AirflowFailException(f"{task}: {message}") from exc
                raise

        return run

    return wrap


def run_paths(context: Mapping[str, Any]) -> RunPaths:
    return RunPaths.for_run(run_ds(context), context["params"].get("input_folder", "landing"))


def staging_conn_id(context: Mapping[str, Any]) -> str:
    return validate_name(context["params"].get("staging_conn_id", "washline_staging"), CONN_ID_PATTERN,
                         "staging connection id")


def staging_schema(context: Mapping[str, Any]) -> str | None:
    """The ``staging_schema`` Param, or None for the connection's default schema."""
    return context["params"].get("staging_schema") or None


@reports_errors("load_staging")
def load_staging(context: Mapping[str, Any]) -> dict[str, Any]:
    """Replace the date's staging slice with the cleanse and link outputs.

    Raises:
        AirflowFailException: the staging database file is damaged (the
            message carries the integrity check's verdict), or the data does
            not fit the staging schema.
    """
    import sqlite3

    from washline.staging.load import load_slice

    paths = run_paths(context)
    try:
        result = _load(context, paths, load_slice)
    except sqlite3.DatabaseError as exc:
        # A damaged file surfaces here first; name the corruption, not just the error.
        from washline.integrity import run_check

        report = run_check(staging_conn_id(context), mode="physical_only")
        raise sqlite3.DatabaseError(f"{exc}; integrity check of the staging database: {report.summary()}") from exc
    log.info("loaded ds=%s into staging: %s", paths.ds, result["rows"])
    return result


def link_registry(context: Mapping[str, Any]) -> dict[str, Any]:
    """The registry part of the link task's XCom (``enabled``, ``rebuild``,
    ``version``, ``complete``); disabled when the link task left none."""
    link = context["ti"].xcom_pull(task_ids="link")
    registry = (link or {}).get("registry") if isinstance(link, Mapping) else None
    return dict(registry) if registry else {"enabled": False, "rebuild": False, "version": None, "complete": None}


def registry_staging(paths: RunPaths, conn_id: str, schema: str | None,
                     held_registry: Callable | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a registry night stages: ``(sources, version row)``.

    Reads the date's ``_COMPLETE.json`` (a version without it is never
    staged), asks the database which registry version it holds and picks the
    publish mode (:func:`washline.registry.publish_mode`): the night's delta
    layers when the database holds exactly the night's base, else the merged
    version. The choice and its reason are logged and go into
    ``staging_entity_versions`` (the version row) for the publish.

    Raises:
        RegistryVersionError: the version is incomplete or malformed.
    """
    from washline.registry import publish_mode, require_complete, staging_sources

    if held_registry is None:
        from washline.staging.publish import held_registry
    complete = require_complete(paths)
    held = held_registry(conn_id, schema)
    mode, reason = publish_mode(complete, held)
    log.info("registry ds=%s: staging for a %s publish: %s", paths.ds, mode, reason)
    version = {"base_ds": complete.get("base_ds"), "publish_mode": mode, "reason": reason, "held_ds": held,
               "references_total": int(complete["references_total"]),
               "entities_total": int(complete["entities_total"])}
    return staging_sources(paths, mode, complete), version


def _load(context: Mapping[str, Any], paths: RunPaths, load_slice: Callable) -> dict[str, Any]:
    sources: dict[str, Any] = {
        "staging_records": paths.curated,
        "staging_links": paths.linked / "links",
        "staging_clusters": paths.linked / "clusters",
    }
    registry = link_registry(context)
    version = None
    if registry["enabled"]:
        entity_sources, version = registry_staging(paths, staging_conn_id(context), staging_schema(context))
        sources.update(entity_sources)
    result = load_slice(staging_conn_id(context), paths.ds, sources, load_id=context["run_id"],
                        schema=staging_schema(context), registry_version=version)
    result["registry"] = bool(registry["enabled"])
    if version is not None:
        result["registry_publish"] = {"mode": version["publish_mode"], "reason": version["reason"],
                                      "held_ds": version["held_ds"], "base_ds": version["base_ds"]}
    return result


@reports_errors("check_quality")
def check_quality(context: Mapping[str, Any], expected_row_count: int,
                  link_metrics: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate the staging slice with the GX suites (one per staging table);
    a blocking result fails the task.

    Args:
        expected_row_count: curated rows the cleanse job wrote (reconciliation).
        link_metrics: the link job's metrics (``references``, ``clusters``), to
            reconcile the link index and cluster tables; on a registry night
            its ``registry.complete`` (``_COMPLETE.json``) adds the registry
            suites (what the night staged: its delta or the merged version;
            continuity with the published entities; the totals after publish
            reconciled with the manifest).

    Raises:
        AirflowFailException: a critical expectation failed, one raised, or
            validation could not run.
    """
    from airflow.sdk.exceptions import AirflowFailException

    from washline.quality.runner import validate_slice

    paths = run_paths(context)
    link_metrics = link_metrics or {}
    registry = link_metrics.get("registry") or {}
    summary = validate_slice(
        staging_conn_id(context), paths.ds, expected_row_count, paths.data_docs(context["run_id"]),
        expected_link_rows=link_metrics.get("references"),
        expected_cluster_rows=link_metrics.get("clusters"),
        schema=staging_schema(context),
        registry=registry.get("complete") if registry.get("enabled") else None,
    )
    context["ti"].xcom_push(key="report", value=summary)
    log.info("Data Docs: %s", summary["data_docs"])
    if summary["blocks_publish"]:
        why = f" ({summary['error']})" if summary.get("error") else ""
        raise AirflowFailException(
            f"data quality {summary['status']}{why} for ds={paths.ds}; nothing will be published")
    return summary


@reports_errors("publish")
def publish(context: Mapping[str, Any]) -> dict[str, Any]:
    """Atomically publish the audited staging slice of the date (and, on a
    registry night, the registry version in the same transaction: the night's
    delta upserted, or the merged version in full, as the load chose; the result's
    ``registry`` says which and why), then write
    ``lake/entities/ds=<d>/_PUBLISHED.json``; attach ``ds``, ``load_id`` and row
    counts to the ``washline_published`` asset event."""
    from washline.assets import PUBLISHED
    from washline.registry import drop_stash, write_published
    from washline.staging.publish import publish_slice

    ds = run_ds(context)
    registry = link_registry(context)
    result = publish_slice(staging_conn_id(context), ds, schema=staging_schema(context),
                           with_entities=bool(registry["enabled"]))
    if registry["enabled"]:
        # After the commit: from now on later nights link against this version.
        result["marker"] = str(write_published(RunPaths.for_run(ds)))
        drop_stash(RunPaths.for_run(ds))  # a rerun's earlier publish of the date is superseded
    events = context.get("outlet_events")
    if events is not None:
        events[PUBLISHED].extra = {"ds": ds, "load_id": result["load_id"], "rows": result["rows"]}
    return result


def _run_started(context: Mapping[str, Any]) -> Any:
    """When the DAG run started (None if unknown); older files are not this run's."""
    dag_run = context.get("dag_run")
    return getattr(dag_run, "start_date", None) if dag_run is not None else None


def _mark_rejected(context: Mapping[str, Any], paths: RunPaths, summary: dict[str, Any]) -> None:
    """Write the date's ``_REJECTED.json`` when the run used the entity registry
    (the link task's XCom says so; when link left no XCom, the Param
    ``entity_registry`` is not false), so the next date links against the last
    published version instead of being refused. A failed rerun of a date
    that was published before gets that publish back first
    (:func:`washline.registry.restore_published`): the published tables still
    hold it, so the next date links against it. A run with
    ``entity_registry=false`` writes no marker, and neither does a run whose
    link job refused the date before linking it, for the registry's order or an
    unreadable decisions file (XCom ``keep_pending``):
    its references were never linked, so marking it rejected would let the next
    date skip them for good (break-it pass: a date run before its predecessor was
    refused, marked rejected, and the night after the predecessor left it out of
    the registry; rerunning it was then refused as before a published date)."""
    from washline.registry import marker_state, restore_published, write_rejected

    link = context["ti"].xcom_pull(task_ids="link")
    if isinstance(link, Mapping) and link.get("registry"):
        in_use = bool(link_registry(context)["enabled"])
    else:
        in_use = (context.get("params") or {}).get("entity_registry", True) is not False
    if not in_use:
        return
    refused = bool(context["ti"].xcom_pull(task_ids="link", key="keep_pending"))
    try:
        restored = restore_published(paths)
        if refused and marker_state(paths) != "published":
            summary["registry_marker"] = ("none: the link job refused the date before linking it (the registry's "
                                          "order, or the decisions file), so its references were not linked; "
                                          "without _REJECTED.json a date after the last published one stays "
                                          "pending and the next date waits for it")
            log.warning("ds=%s: refused before linking (the registry's order or the decisions file); no "
                        "_REJECTED.json: fix the cause and run the date again, in order", paths.ds)
            return
        marker = write_rejected(paths, "; ".join(summary["not_published_because"]) or "not published")
    except OSError as exc:  # the summary still gets written, and says so
        summary["registry_marker"] = f"could not write _REJECTED.json: {exc}"
        log.error("could not write the rejected marker of ds=%s: %s", paths.ds, exc)
        return
    if restored:
        summary["registry_marker"] = ("restored the earlier published version of the date (the rerun published "
                                      "nothing; the next date links against that version)")
        log.warning("ds=%s: the rerun did not publish; its earlier published registry version is back", paths.ds)
    else:
        summary["registry_marker"] = str(marker) if marker else "kept the earlier _PUBLISHED.json of the date"


def write_html_report(paths: RunPaths, summary: dict[str, Any]) -> None:
    """Write the night's ``report.html`` and ``review.html`` (see
    :mod:`washline.report_html`). The pages are a view of the summary: when
    they cannot be written the error is logged, ``report_html`` in the summary
    becomes null with ``report_html_error``, and the task's outcome does not change."""
    from washline.report import write_json_atomic
    from washline.report_html import write_report

    try:
        path = write_report(paths, summary)
        log.info("report: %s (in the Airflow UI: the run's \"Night report\" tab)", path)
    except Exception as exc:  # noqa: BLE001 - the summary is written; the page is not the verdict
        log.exception("could not write the HTML report of ds=%s", paths.ds)
        summary["report_html"] = None
        summary["report_html_error"] = f"{type(exc).__name__}: {exc}"[:500]
        write_json_atomic(paths.summary, summary)


def report(context: Mapping[str, Any]) -> dict[str, Any]:
    """Write and log the run summary and the HTML report (``report.html``,
    ``review.html``); fail the task when the date was not published.

    When the date was not published and the registry is in use, writes
    ``lake/entities/ds=<d>/_REJECTED.json`` (see :func:`washline.registry.write_rejected`).

    Raises:
        AirflowFailException: the slice was not published (the summary says why).
    """
    from airflow.sdk.exceptions import AirflowFailException

    from washline.report import build_summary, read_cleanse_metrics, render, write_json_atomic

    ti = context["ti"]
    # The summary's place depends only on the date, so a bad input_folder Param
    # still gets a summary that says so.
    paths = RunPaths.for_run(run_ds(context))
    errors = {
        task: ti.xcom_pull(task_ids=task, key="error")
        for task in ("cleanse", "link", "load_staging", "check_integrity", "check_quality", "publish")
    }
    results = {
        "cleanse": ti.xcom_pull(task_ids="cleanse"),
        "link": ti.xcom_pull(task_ids="link"),
        "load_staging": ti.xcom_pull(task_ids="load_staging"),
        "check_integrity": ti.xcom_pull(task_ids="check_integrity", key="report"),
        "check_quality": ti.xcom_pull(task_ids="check_quality", key="report"),
        "publish": ti.xcom_pull(task_ids="publish"),
    }
    cleanse_metrics = None
    if results["cleanse"] is None:
        # cleanse failed after the job wrote its metrics (e.g. every row
        # quarantined): count the rows from the file, if it is this run's.
        cleanse_metrics = read_cleanse_metrics(paths.cleanse_metrics, paths.ds, _run_started(context))
    summary = build_summary(paths.ds, context["run_id"], results, errors, cleanse_metrics)
    if not summary["published"]:
        _mark_rejected(context, paths, summary)
    summary["report_html"] = str(paths.reports / "report.html")
    write_json_atomic(paths.summary, summary)
    log.info("%s\nsummary written to %s", render(summary), paths.summary)
    write_html_report(paths, summary)
    if not summary["published"]:
        raise AirflowFailException(
            f"ds={paths.ds} was not published: {'; '.join(summary['not_published_because'])}"
        )
    return summary
