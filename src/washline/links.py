"""Operator extra links of ``washline_nightly`` (buttons on a task instance's
page in the Airflow UI) and the URLs of the washline plugin's pages.

* :class:`DataDocsLink` on ``check_quality``: that run's GX Data Docs.
* :class:`ReportLink` on ``report``: that run's ``report.html``.

Both point into the plugin's FastAPI app (:mod:`washline.web`, mounted at
:data:`URL_PREFIX` by ``plugins/washline_plugin.py``), which resolves the run to
its logical date, checks the caller's Airflow login and DAG access and serves
the file. Airflow computes a link when the task instance finishes, in the
worker, and keeps it as an XCom (``_link_<class>``); the api-server reads it
back from there. The URL is root-relative (``/washline/…``) unless
``[api] base_url`` is set, in which case it is made absolute under it.

Importing this module is cheap (``airflow.sdk`` only).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

#: where the plugin's FastAPI app is mounted in the api-server
URL_PREFIX = "/washline"


def plugin_url(path: str, base_url: str | None = None) -> str:
    """The URL of ``path`` (relative, e.g. ``dags/x/runs/y/report``) inside the plugin app.

    Args:
        base_url: the api-server's public base URL (``[api] base_url``);
            None reads ``AIRFLOW__API__BASE_URL``, then Airflow's config.
    """
    if base_url is None:
        base_url = os.environ.get("AIRFLOW__API__BASE_URL") or _configured_base_url()
    rel = f"{URL_PREFIX}/{path.lstrip('/')}"
    return f"{base_url.rstrip('/')}{rel}" if base_url else rel


def _configured_base_url() -> str:
    try:
        from airflow.configuration import conf

        return conf.get("api", "base_url", fallback="") or ""
    except Exception:  # noqa: BLE001 - a link without a base URL is still a link
        return ""


def run_page(dag_id: str, run_id: str, page: str) -> str:
    """URL of a run's page in the plugin app: ``page`` is ``report``, ``review`` or ``datadocs``."""
    return plugin_url(f"dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}/{page}")


class ReportLink(BaseOperatorLink):
    """The run's ``report.html`` (``lake/reports/<ds>/report.html``)."""

    name = "Night report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return run_page(ti_key.dag_id, ti_key.run_id, "report")


class DataDocsLink(BaseOperatorLink):
    """The run's Great Expectations Data Docs (``lake/reports/<ds>/gx/<run>/…/index.html``)."""

    name = "GX Data Docs"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return run_page(ti_key.dag_id, ti_key.run_id, "datadocs")


def with_links(task_output: Any, *links: BaseOperatorLink) -> Any:
    """Give the operator behind a ``@task`` call (its XComArg) these extra links,
    in the DAG file: ``summary = with_links(report(), ReportLink())``. Returns
    ``task_output`` unchanged."""
    operator = getattr(task_output, "operator", task_output)
    operator.operator_extra_links = [*getattr(operator, "operator_extra_links", ()), *links]
    return task_output
