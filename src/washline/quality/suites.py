"""The expectation suites (``include/gx/<name>.json``) and the parameters they read.

What it owns: reading a suite file (:func:`load_suite_spec`, :func:`load_suite`),
its SQL Server adaptation (:func:`adapt_for_dialect`), the suite parameters of
one run (:func:`suite_parameters`: configured bounds, allowed source names and
the upstream counts, :data:`ROW_COUNT_PARAMETERS`, :data:`REGISTRY_COUNT_PARAMETERS`)
and which expectations can run with the counts passed (:func:`suite_specs`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Mapping

from washline.quality.config import SUITES_DIR
from washline.quality.slices import SLICE_QUERIES

log = logging.getLogger("washline.quality.runner")

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


def suite_specs(names: list[str], suites_dir: Path | None, dialect: str, params: Mapping[str, Any],
                rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The suites ``names`` (adapted to ``dialect``) and the expectations of each that can run.

    An expectation that uses a count parameter (:data:`COUNT_PARAMETERS`)
    missing from ``params`` does not run: a SKIPPED row naming the parameter
    is appended to ``rows`` instead (listed, never a silent pass).

    Returns:
        ``[(suite spec, expectations to run)]`` in the order of ``names``.

    Raises:
        FileNotFoundError, ValueError: a missing or invalid suite file, or one
            whose ``name`` has no slice query (:data:`washline.quality.slices.SLICE_QUERIES`).
    """
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
