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
"""

from __future__ import annotations

import copy
import importlib.util
import json
import logging
import os
import secrets
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from washline.paths import validate_ds
from washline.quality.config import (  # noqa: F401 - public names of the runner
    CONFIG_FILE,
    DEFAULT_KEEP_RUNS,
    REGISTRY_SUITE_NAMES,
    SUITE_NAMES,
    SUITES_DIR,
    QualityConfigError,
    load_config,
)

log = logging.getLogger(__name__)
# GX logs every config save at INFO; keep task logs to what matters.
logging.getLogger("great_expectations").setLevel(logging.WARNING)

#: Suite → the suite parameter holding its expected row count.
ROW_COUNT_PARAMETERS = {
    "staging_records": "expected_row_count",
    "staging_links": "expected_link_rows",
    "staging_clusters": "expected_cluster_rows",
}

#: Suite parameters that carry upstream counts: an expectation using one that
#: was not passed is SKIPPED (listed), never run against a missing value. The
#: registry ones come from the version's ``_COMPLETE.json``.
REGISTRY_COUNT_PARAMETERS = ("expected_member_rows", "expected_entity_rows", "expected_change_rows",
                             "expected_new_references")
COUNT_PARAMETERS = (*ROW_COUNT_PARAMETERS.values(), *REGISTRY_COUNT_PARAMETERS)

#: String concatenation per dialect (the continuity check matches an id inside
#: the comma-separated ``from_entity_ids``).
CONCAT = {"sqlite": "||", "postgres": "||", "mssql": "+", "oracle": "||"}

#: ``date_of_birth`` as ISO ``YYYY-MM-DD`` text, per dialect (PostgreSQL,
#: SQL Server and Oracle store DATE; SQLite stores the ISO text already).
DATE_TEXT = {
    "sqlite": "r.date_of_birth",
    "postgres": "TO_CHAR(r.date_of_birth, 'YYYY-MM-DD')",
    "mssql": "CONVERT(VARCHAR(10), r.date_of_birth, 23)",
    "oracle": "TO_CHAR(r.date_of_birth, 'YYYY-MM-DD')",
}

#: The slice under validation, one query per suite. ``{ds}`` is a validated
#: ``YYYY-MM-DD`` literal; ``{dob}`` comes from :data:`DATE_TEXT`;
#: ``{records}``, ``{links}``, ``{clusters}`` are the quoted (optionally
#: schema-qualified) staging tables. Subquery aliases are written without
#: ``AS`` so the same text runs on Oracle.
SLICE_QUERIES = {
    # Each reference with its link-index rows counted (exactly one expected).
    "staging_records": (
        "SELECT r.ds AS ds, r.record_id AS record_id, r.source AS source, r.surname AS surname, "
        "r.postcode AS postcode, r.state AS state, {dob} AS date_of_birth, r.soc_sec_id AS soc_sec_id, "
        "l.cluster_id AS cluster_id, COALESCE(l.n_links, 0) AS cluster_links "
        "FROM {records} r LEFT JOIN ("
        "SELECT source, record_id, MIN(cluster_id) AS cluster_id, COUNT(*) AS n_links "
        "FROM {links} WHERE ds = '{ds}' GROUP BY source, record_id) l "
        "ON l.source = r.source AND l.record_id = r.record_id "
        "WHERE r.ds = '{ds}'"
    ),
    # Each link row with its cluster and record looked up (NULL = orphan).
    "staging_links": (
        "SELECT l.ds AS ds, l.source AS source, l.record_id AS record_id, l.cluster_id AS cluster_id, "
        "l.cluster_size AS cluster_size, c.cluster_id AS cluster_in_clusters, "
        "r.record_id AS record_in_records "
        "FROM {links} l "
        "LEFT JOIN (SELECT DISTINCT cluster_id FROM {clusters} WHERE ds = '{ds}') c "
        "ON c.cluster_id = l.cluster_id "
        "LEFT JOIN (SELECT DISTINCT source, record_id FROM {records} WHERE ds = '{ds}') r "
        "ON r.source = l.source AND r.record_id = l.record_id "
        "WHERE l.ds = '{ds}'"
    ),
    # Each cluster with the number of references it holds and a 0/1 singleton
    # flag. Linked in isolation, that is the night's link rows naming it; with
    # the entity registry a cluster is an entity and its cluster_size counts
    # every member up to ds, so it is reconciled with the staged members of the
    # version (staging_entity_members of ds, empty without the registry).
    "staging_clusters": (
        "SELECT c.ds AS ds, c.cluster_id AS cluster_id, c.cluster_size AS cluster_size, "
        "COALESCE(m.members, l.linked_records, 0) AS linked_records, "
        "CASE WHEN c.cluster_size = 1 THEN 1 ELSE 0 END AS singleton "
        "FROM {clusters} c LEFT JOIN ("
        "SELECT cluster_id, COUNT(*) AS linked_records FROM {links} WHERE ds = '{ds}' "
        "GROUP BY cluster_id) l ON l.cluster_id = c.cluster_id "
        "LEFT JOIN (SELECT entity_id, COUNT(*) AS members FROM {members} WHERE ds = '{ds}' "
        "GROUP BY entity_id) m ON m.entity_id = c.cluster_id "
        "WHERE c.ds = '{ds}'"
    ),
    # Registry (issue 13). Each staged member with its entity looked up in the
    # staged entities (NULL = orphan), a 0/1 flag "first seen this night", and
    # for those, 0/1 "joined an entity that existed before" (NULL otherwise, so
    # the column's mean is the share of the night's new references that joined).
    "staging_entity_members": (
        "SELECT m.ds AS ds, m.source AS source, m.record_id AS record_id, m.entity_id AS entity_id, "
        "m.first_seen_ds AS first_seen_ds, m.last_changed_ds AS last_changed_ds, "
        "e.entity_id AS entity_in_entities, "
        "CASE WHEN m.first_seen_ds = '{ds}' THEN 1 ELSE 0 END AS new_reference, "
        "CASE WHEN m.first_seen_ds = '{ds}' THEN "
        "CASE WHEN e.first_seen_ds < '{ds}' THEN 1 ELSE 0 END END AS joined_existing "
        "FROM {members} m LEFT JOIN ("
        "SELECT entity_id, first_seen_ds FROM {entities} WHERE ds = '{ds}') e ON e.entity_id = m.entity_id "
        "WHERE m.ds = '{ds}'"
    ),
    # Each staged entity with the number of staged members naming it.
    "staging_entities": (
        "SELECT e.ds AS ds, e.entity_id AS entity_id, e.member_count AS member_count, "
        "e.first_seen_ds AS first_seen_ds, e.last_changed_ds AS last_changed_ds, "
        "COALESCE(m.members, 0) AS counted_members "
        "FROM {entities} e LEFT JOIN ("
        "SELECT entity_id, COUNT(*) AS members FROM {members} WHERE ds = '{ds}' GROUP BY entity_id) m "
        "ON m.entity_id = e.entity_id "
        "WHERE e.ds = '{ds}'"
    ),
    # Each of the night's change rows with its entity looked up in the staged
    # state, and a 0/1 flag for a merge/split that names no source entity.
    "staging_entity_changes": (
        "SELECT c.ds AS ds, c.entity_id AS entity_id, c.change AS change, c.member_count AS member_count, "
        "e.entity_id AS entity_in_entities, "
        "CASE WHEN c.change IN ('merge', 'split') AND (c.from_entity_ids IS NULL OR c.from_entity_ids = '') "
        "THEN 1 ELSE 0 END AS missing_sources "
        "FROM {changes} c LEFT JOIN (SELECT entity_id FROM {entities} WHERE ds = '{ds}') e "
        "ON e.entity_id = c.entity_id "
        "WHERE c.ds = '{ds}'"
    ),
    # Each PUBLISHED entity (the state the night linked against): vanished_id is
    # its id when it is neither in the staged state nor named by a merge or
    # split row of the night, else NULL.
    "entity_continuity": (
        "SELECT p.entity_id AS entity_id, "
        "CASE WHEN EXISTS (SELECT 1 FROM {entities} s WHERE s.ds = '{ds}' AND s.entity_id = p.entity_id) "
        "OR EXISTS (SELECT 1 FROM {changes} c WHERE c.ds = '{ds}' AND c.change IN ('merge', 'split') "
        "AND ',' {cat} c.from_entity_ids {cat} ',' LIKE '%,' {cat} p.entity_id {cat} ',%') "
        "THEN NULL ELSE p.entity_id END AS vanished_id "
        "FROM {published_entities} p"
    ),
}

#: Result format of the validation run: ``unexpected_count`` and
#: ``unexpected_percent`` for every map expectation, but no sample values.
#: GX fetches ``partial_unexpected_list`` with one extra ``SELECT <col> …
#: WHERE <unexpected> LIMIT n`` per expectation even when it passes, and for a
#: passing one that query scans the whole slice to find nothing (16–20 s at
#: 1M rows). With ``partial_unexpected_count: 0`` the query carries
#: ``LIMIT 0``, which PostgreSQL and SQLite answer without reading a row.
RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 0}

#: Result format of the targeted sample run (see :func:`fetch_samples`): only
#: expectations that found unexpected values, at most this many values each.
SAMPLE_COUNT = 5
SAMPLE_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": SAMPLE_COUNT}

#: Per-run views (see :func:`slice_views`): ``wlgx_<suite>_<yyyymmdd>_<8 hex>``.
VIEW_PREFIX = "wlgx"

#: Environment variable that carries the connection secret to GX's config
#: substitution (``${…}``) while a validation runs.
SECRET_ENV_PREFIX = "WASHLINE_GX_SECRET_"


def prune_run_folders(parent: Path, keep: int, current: Path | None = None) -> list[Path]:
    """Delete all but the newest ``keep`` GX run folders under ``parent``.

    ``parent`` is a date's ``lake/reports/<ds>/gx/``; each child holding a
    ``gx/`` project is one run's GX project and Data Docs. Folders are ordered
    by modification time (newest first); ``current`` (this run) is always kept.
    Anything else in ``parent`` is left alone. A folder that cannot be removed
    is logged as a warning, not raised: pruning never fails a validation.

    Returns:
        The folders removed.
    """
    import shutil

    parent = Path(parent)
    if keep < 1 or not parent.is_dir():
        return []
    runs = [p for p in parent.iterdir() if p.is_dir() and (p / "gx").is_dir()]
    runs.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    if current is not None:
        current = Path(current).resolve()
        runs.sort(key=lambda p: p.resolve() != current)  # stable: the current run first
    removed = []
    for old in runs[keep:]:
        try:
            shutil.rmtree(old)
            removed.append(old)
        except OSError as exc:
            log.warning("could not remove the old GX run folder %s: %s", old, exc)
    if removed:
        log.info("removed %d old GX run folder(s) under %s (keep_runs=%d)", len(removed), parent, keep)
    return removed


def load_suite_spec(name: str, suites_dir: Path | None = None) -> dict[str, Any]:
    """The JSON of ``<suites_dir>/<name>.json`` (default ``include/gx/``).

    Raises:
        FileNotFoundError: no such suite file.
        ValueError: not JSON, or without ``name``/``expectations`` (message names the file).
    """
    path = (suites_dir or SUITES_DIR) / f"{name}.json"
    text = path.read_text()
    try:
        spec = json.loads(text)
        if not isinstance(spec.get("expectations"), list) or not spec.get("name"):
            raise ValueError("needs 'name' and a list 'expectations'")
    except ValueError as exc:
        raise ValueError(f"invalid expectation suite {path}: {exc}") from exc
    return spec


def adapt_for_dialect(spec: dict[str, Any], dialect: str) -> dict[str, Any]:
    """Replace expectations that carry a ``meta[<dialect>]`` override.

    GX has no regex support on SQL Server, so the suites give each regex
    expectation a LIKE-pattern twin under ``meta["mssql"]``
    (``{"type": …, "kwargs": …}``); on that dialect the twin replaces the
    regex (same ``meta`` severity). Other dialects get the spec unchanged.
    """
    out = []
    for exp in spec["expectations"]:
        override = (exp.get("meta") or {}).get(dialect)
        if override:
            meta = {k: v for k, v in exp["meta"].items() if k not in ("mssql", "oracle", "postgres", "sqlite")}
            exp = {"type": override["type"], "kwargs": override["kwargs"], "meta": {**meta, "adapted_from": exp["type"]}}
        out.append(exp)
    return {**spec, "expectations": out}


def load_suite(name: str, suites_dir: Path | None = None, dialect: str | None = None):
    """Load ``include/gx/<name>.json`` as a GX ``ExpectationSuite`` (adapted to ``dialect``).

    Raises:
        FileNotFoundError: no such suite file.
        ValueError: the file is not a valid suite (message names the file).
    """
    import great_expectations as gx

    spec = load_suite_spec(name, suites_dir)
    if dialect:
        spec = adapt_for_dialect(spec, dialect)
    try:
        return gx.ExpectationSuite(name=spec["name"], expectations=spec["expectations"], meta=spec.get("meta"))
    except Exception as exc:
        raise ValueError(f"invalid expectation suite {(suites_dir or SUITES_DIR) / (name + '.json')}: {exc}") from exc


def registry_counts(complete: Mapping[str, Any]) -> dict[str, int]:
    """The registry suites' expected counts from a version's ``_COMPLETE.json``."""
    from washline.registry import expected_change_rows

    return {"expected_member_rows": int(complete["references_total"]),
            "expected_entity_rows": int(complete["entities_total"]),
            "expected_change_rows": expected_change_rows(complete),
            "expected_new_references": int(complete["new_references"])}


def suite_parameters(expected_rows: Mapping[str, int | None], config: Mapping[str, Any],
                     registry: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The suite parameters of one run: expected counts plus configured bounds
    (and, given a ``_COMPLETE.json`` as ``registry``, its counts)."""
    params: dict[str, Any] = {
        "joined_share_min": config["joined_share"]["min"],
        "joined_share_max": config["joined_share"]["max"],
        "cluster_size_min": config["cluster_size"]["min"],
        "cluster_size_max": config["cluster_size"]["max"],
        "singleton_share_min": config["singleton_share"]["min"],
        "singleton_share_max": config["singleton_share"]["max"],
        "source_names": list(config["source_names"]),
    }
    for suite, name in ROW_COUNT_PARAMETERS.items():
        if expected_rows.get(suite) is not None:
            params[name] = int(expected_rows[suite])
    if registry is not None:
        params.update(registry_counts(registry))
    return params


def uses_parameter(expectation: Mapping[str, Any], name: str) -> bool:
    return f'"$PARAMETER": "{name}"' in json.dumps(expectation.get("kwargs", {}))


# ---------------------------------------------------------------------------
# Datasource from the Airflow connection
# ---------------------------------------------------------------------------


def datasource_spec(conn: Any, dialect: str, secret_var: str) -> tuple[str, dict[str, Any], str | None]:
    """How to build the GX datasource for an Airflow ``Connection``.

    Args:
        conn: the Airflow connection (``host``, ``port``, ``login``,
            ``password``, ``schema``, ``extra_dejson``).
        dialect: ``sqlite``, ``postgres``, ``mssql`` or ``oracle``.
        secret_var: environment variable name that will hold the secret.

    Returns:
        ``(method, kwargs, secret)``: the ``context.data_sources`` method
        (``add_or_update_sqlite`` …), its keyword arguments in which the
        secret appears only as ``${secret_var}``, and the secret value to put
        in the environment (None when there is none).

    Raises:
        ValueError: a connection lacking what the dialect needs (message
            names the field); RuntimeError: SQL Server without ``pyodbc``.
    """
    from sqlalchemy.engine import URL

    extra = dict(getattr(conn, "extra_dejson", None) or {})
    ref = "${" + secret_var + "}"
    if dialect == "sqlite":
        path = conn.host or conn.schema
        if not path:
            raise ValueError("sqlite connection needs the database file path in 'host'")
        return "add_or_update_sqlite", {"connection_string": f"sqlite:///{path}"}, None
    if dialect == "postgres":
        url = URL.create("postgresql+psycopg", username=conn.login or None, password=conn.password or None,
                         host=conn.host or None, port=conn.port or None, database=conn.schema or None,
                         query={k: str(extra[k]) for k in ("sslmode", "application_name") if k in extra})
        return "add_or_update_postgres", {"connection_string": ref}, url.render_as_string(hide_password=False)
    if dialect == "oracle":
        service = extra.get("service_name") or conn.schema
        if not conn.host or not service:
            raise ValueError("oracle connection needs 'host' and a service name (extra 'service_name' or 'schema')")
        url = URL.create("oracle+oracledb", username=conn.login or None, password=conn.password or None,
                         host=conn.host, port=conn.port or 1521, query={"service_name": str(service)})
        return "add_or_update_sql", {"connection_string": ref}, url.render_as_string(hide_password=False)
    if dialect == "mssql":
        if importlib.util.find_spec("pyodbc") is None:
            raise RuntimeError("GX validates SQL Server through pyodbc (mssql+pyodbc), which is not installed: "
                               "add pyodbc and the Microsoft ODBC driver to the worker image")
        if not conn.host or not conn.schema:
            raise ValueError("mssql connection needs 'host' and the database in 'schema'")
        kwargs = {
            "host": conn.host, "port": int(conn.port or 1433), "database": conn.schema,
            "schema": extra.get("schema_name", "dbo"), "username": conn.login or "",
            "password": ref if conn.password else "",
            "driver": extra.get("odbc_driver", "ODBC Driver 18 for SQL Server"),
            "encrypt": extra.get("encrypt", "Mandatory"),
            "trust_server_certificate": str(extra.get("trust_server_certificate", "false")).lower() in ("1", "true", "yes"),
        }
        return "add_or_update_sql_server", kwargs, conn.password or None
    raise ValueError(f"no GX datasource for dialect {dialect!r}")


@contextmanager
def secret_in_env(name: str, value: str | None) -> Iterator[None]:
    """Hold ``value`` in ``os.environ[name]`` for the block only."""
    if value is None:
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


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


def _suite_specs(names, suites_dir, dialect, params, rows) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """``[(spec, expectations to run)]``; reconciliations without an expected count become SKIPPED rows."""
    out = []
    for name in names:
        spec = adapt_for_dialect(load_suite_spec(name, suites_dir), dialect)
        if spec["name"] not in SLICE_QUERIES:
            raise ValueError(f"suite {name}.json is named {spec['name']!r}; known slices: {sorted(SLICE_QUERIES)}")
        kept = []
        for exp in spec["expectations"]:
            missing = [p for p in COUNT_PARAMETERS if uses_parameter(exp, p) and p not in params]
            if missing:
                rows.append({"suite": spec["name"], "expectation": exp["type"], "column": None,
                             "severity": (exp.get("meta") or {}).get("severity", "critical"),
                             "status": "SKIPPED", "unexpected_count": None, "unexpected_percent": None,
                             "element_count": None, "observed_value": None, "sample": [],
                             "exception": f"no expected count passed for {', '.join(missing)}"})
                log.warning("GX %s: %s skipped, no %s passed", name, exp["type"], ", ".join(missing))
            else:
                kept.append(exp)
        out.append((spec, kept))
    return out


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
    conn_id, ds, expected_rows, docs_dir = req.conn_id, req.ds, req.expected_rows, req.docs_dir
    suites, suites_dir, schema, registry = req.suites, req.suites_dir, req.schema, req.registry
    from airflow.sdk import BaseHook

    from washline.staging.dialects import dialect_for, validate_schema

    config = load_config(req.config_path)
    names = list(suites or config["suites"])
    if registry is not None and not suites:
        names += [n for n in config["registry_suites"] if n not in names]
    conn = BaseHook.get_connection(conn_id)
    dialect = dialect_for(conn.conn_type)
    schema = validate_schema(schema, dialect)
    secret_var = SECRET_ENV_PREFIX + secrets.token_hex(6).upper()
    method, ds_kwargs, secret = datasource_spec(conn, dialect, secret_var)
    params = suite_parameters(expected_rows, config, registry)
    rows: list[dict[str, Any]] = []
    specs = _suite_specs(names, suites_dir, dialect, params, rows)
    order = [spec["name"] for spec, _ in specs]  # the JSON "name", which also picks the slice
    summary["analyzed"] = refresh_statistics(conn_id, dialect, schema)
    docs_dir.mkdir(parents=True, exist_ok=True)

    with ExitStack() as stack:
        views: dict[str, str] | None = None
        if req.use_views:
            try:
                views = stack.enter_context(
                    slice_views(conn_id, ds, dialect, list(dict.fromkeys(order)), schema))
            except SliceViewsRefused as exc:
                log.warning("%s; validating through GX query assets instead (same checks, slower: GX runs "
                            "each slice query once more to learn its columns)", exc)
                summary["slice_source_note"] = str(exc)
        summary["slice_source"] = "view" if views else "query"
        summary["views"] = sorted((views or {}).values())
        stack.enter_context(secret_in_env(secret_var, secret))
        context = gx.get_context(mode="file", project_root_dir=str(docs_dir))
        datasource = getattr(context.data_sources, method)(name="washline_staging", **ds_kwargs)
        validations, batches = [], {}
        for spec, kept in specs:
            try:
                suite = gx.ExpectationSuite(name=spec["name"], expectations=kept, meta=spec.get("meta"))
            except Exception as exc:
                raise ValueError(f"invalid expectation suite {spec['name']}: {exc}") from exc
            suite = context.suites.add_or_update(suite)
            if views:
                extra = {"schema_name": schema} if schema else {}
                asset = datasource.add_table_asset(name=f"{spec['name']}_{ds}", table_name=views[spec["name"]],
                                                   **extra)
            else:
                asset = datasource.add_query_asset(name=f"{spec['name']}_{ds}",
                                                   query=query_for(spec["name"], ds, dialect, schema))
            batches[spec["name"]] = asset.add_batch_definition_whole_table(f"slice_{ds}")
            validations.append(context.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=f"{spec['name']}_{ds}", data=batches[spec["name"]], suite=suite)))
        # No checkpoint action: Data Docs are built below, once the sample values are in.
        checkpoint = context.checkpoints.add_or_update(gx.Checkpoint(
            name=f"washline_staging_{ds}", validation_definitions=validations, actions=[],
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
    index = docs_dir / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    summary.update(overall(rows))
    summary.update({"expectations": rows, "data_docs": str(index) if index.exists() else None,
                    "dialect": dialect, "parameters": params})


def fetch_samples(context: Any, run_results: Mapping[Any, Any], batches: Mapping[str, Any],
                  params: Mapping[str, Any]) -> dict[str, Any]:
    """Add up to :data:`SAMPLE_COUNT` unexpected values to each expectation that found some.

    The validation run asks GX for counts only (:data:`RESULT_FORMAT`). For
    the expectations whose ``unexpected_count`` is above zero (a FAIL, or a
    ``mostly`` expectation that passed with some unexpected rows) this
    re-validates just those expectations on the same batch with
    :data:`SAMPLE_FORMAT`, so GX's own definition of "unexpected" picks the
    values (one ``… LIMIT 5`` query each, which stops at the fifth hit), and
    copies ``partial_unexpected_list``/``partial_unexpected_counts`` into the
    stored validation result, where Data Docs and :func:`expectation_rows`
    find them. Passing expectations with nothing unexpected cost no query.
    Expectations that raised are left alone (their ERROR stands).

    Returns:
        ``{"expectations": number re-validated for samples, "error": message
        or None}``. A failure here is logged and leaves the counts and
        statuses of the main run untouched.
    """
    import great_expectations as gx

    done, errors = 0, []
    for identifier, validation_result in run_results.items():
        targets = [res for res in validation_result.results
                   if raised_exception(res.exception_info) is None
                   and isinstance(res.result, dict) and (res.result.get("unexpected_count") or 0) > 0]
        if not targets:
            continue
        suite_name = validation_result.suite_name
        try:
            sample_suite = gx.ExpectationSuite(
                name=f"{suite_name}_samples",
                expectations=[copy.copy(res.expectation_config.to_domain_obj()) for res in targets])
            batch = batches[suite_name].get_batch()
            sampled = batch.validate(sample_suite, result_format=SAMPLE_FORMAT,
                                     expectation_parameters=dict(params))
            for original, again in zip(targets, sampled.results):
                for key in ("partial_unexpected_list", "partial_unexpected_counts"):
                    if again.result and again.result.get(key) is not None:
                        original.result[key] = again.result[key]
            context.validation_results_store.set(identifier, validation_result)
            done += len(targets)
        except Exception as exc:  # noqa: BLE001 - samples are an aid; counts and statuses stand
            log.warning("GX %s: could not fetch sample values: %s: %s", suite_name, type(exc).__name__, exc)
            errors.append(f"{suite_name}: {type(exc).__name__}: {exc}")
    return {"expectations": done, "error": "; ".join(errors) or None}


def query_for(suite: str, ds: str, dialect: str, schema: str | None = None) -> str:
    """The slice query of ``suite`` for ``ds`` on ``dialect``.

    Args:
        schema: schema of the staging tables (validated, quoted); None = the
            connection's default schema.

    Raises:
        ValueError: ``ds`` is not a ``YYYY-MM-DD`` date, no query for
            ``suite``, or ``schema`` is not a plain identifier.
    """
    from washline.staging.dialects import qualify

    validate_ds(ds)
    if suite not in SLICE_QUERIES:
        raise ValueError(f"no slice query for suite {suite!r}; known: {sorted(SLICE_QUERIES)}")
    return SLICE_QUERIES[suite].format(
        ds=ds, dob=DATE_TEXT.get(dialect, "r.date_of_birth"), cat=CONCAT.get(dialect, "||"),
        records=qualify("staging_records", dialect, schema), links=qualify("staging_links", dialect, schema),
        clusters=qualify("staging_clusters", dialect, schema),
        members=qualify("staging_entity_members", dialect, schema),
        entities=qualify("staging_entities", dialect, schema),
        changes=qualify("staging_entity_changes", dialect, schema),
        published_entities=qualify("entities", dialect, schema))


def view_name(suite: str, ds: str, token: str) -> str:
    """``wlgx_<suite>_<yyyymmdd>_<token>``: the per-run view of one suite's slice.

    The random ``token`` (8 hex digits per run) keeps two runs apart, of the
    same or of different dates, so concurrent validations never share a view.

    Raises:
        ValueError: the name is not a plain identifier of at most 63
            characters (:data:`washline.staging.dialects.IDENTIFIER`).
    """
    from washline.staging.dialects import IDENTIFIER

    validate_ds(ds)
    name = f"{VIEW_PREFIX}_{suite}_{ds.replace('-', '')}_{token}".lower()
    if not IDENTIFIER.match(name):
        raise ValueError(f"view name {name!r} is not a plain identifier ({IDENTIFIER.pattern})")
    return name


class SliceViewsRefused(RuntimeError):
    """The staging connection may not create the per-run views (message says why)."""


@contextmanager
def slice_views(conn_id: str, ds: str, dialect: str, suites: list[str], schema: str | None = None,
                token: str | None = None) -> Iterator[dict[str, str]]:
    """Create one view per suite over the ``ds`` slice for the block, then drop them.

    Each view is :func:`query_for`'s query (restricted to ``ds``, joins
    included) under :func:`view_name`, in ``schema`` (None = default), created
    and committed through the Airflow connection's own hook so that GX's
    separate SQLAlchemy connection sees it. GX then validates a *table*
    asset over the view and reads the column names from the catalogue
    (``Inspector.get_columns``) instead of running the slice query and
    fetching every row (``column_reflection_fallback`` on a query asset).

    The views are dropped when the block ends, also on error; a drop that
    fails is logged as a warning naming the view (PostgreSQL waits at most
    30 s for its lock). A process killed mid-run leaves ``wlgx_*`` views
    behind: they hold no data and can be dropped by hand.

    Yields:
        ``{suite: view name}`` (unqualified, lower case).

    Raises:
        SliceViewsRefused: a CREATE VIEW failed (e.g. no privilege); views
            created before it are dropped.
        ValueError: bad ``ds``, ``schema`` or suite name.
    """
    from washline.staging.dialects import connect, get_db_hook, qualify

    token = token or secrets.token_hex(4)
    names = {suite: view_name(suite, ds, token) for suite in suites}
    statements = {suite: f"CREATE VIEW {qualify(names[suite], dialect, schema)} AS "
                         f"{query_for(suite, ds, dialect, schema)}" for suite in suites}
    hook, _ = get_db_hook(conn_id)
    conn = connect(hook, dialect, conn_id)
    created: list[str] = []
    try:
        cur = conn.cursor()
        try:
            for suite in suites:
                cur.execute(statements[suite])
                created.append(names[suite])
                conn.commit()  # one view per transaction: what exists is what `created` lists
        except Exception as exc:
            conn.rollback()
            raise SliceViewsRefused(f"cannot create the per-run view {names[suite]} for {suite}: "
                                    f"{type(exc).__name__}: {exc}") from exc
        log.info("GX slice views for ds=%s: %s", ds, ", ".join(names.values()))
        yield names
    finally:
        _drop_views(conn, dialect, schema, created)
        conn.close()


def _drop_views(conn: Any, dialect: str, schema: str | None, views: list[str]) -> None:
    from washline.staging.dialects import qualify

    cur = conn.cursor()
    if dialect == "postgres" and views:
        try:
            cur.execute("SET lock_timeout = '30s'")
        except Exception:  # noqa: BLE001 - only a guard against waiting forever
            conn.rollback()
    for name in views:
        try:
            cur.execute(f"DROP VIEW {qualify(name, dialect, schema)}")
            conn.commit()
        except Exception as exc:  # noqa: BLE001 - reported; the view holds no data
            log.warning("could not drop the GX slice view %s (drop it by hand): %s: %s",
                        qualify(name, dialect, schema), type(exc).__name__, exc)
            try:
                conn.rollback()
            except Exception:  # noqa: BLE001
                pass


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
