"""The washline Airflow plugin (Airflow 3.1+ UI plugin interface).

* A FastAPI app served by the api-server at ``/washline`` (:mod:`washline.web`):
  the nights' ``report.html``, ``review.html`` and GX Data Docs from
  ``$WASHLINE_DATA/lake/reports``, for callers that Airflow authenticates
  and allows to read the DAG's runs.
* External views: the tabs "Night report" and "Link review" on the DAG run page
  of ``washline_nightly``, and "Night reports" (all nights) in the Browse menu.
* Operator extra links: ``check_quality`` → that run's Data Docs, ``report`` →
  that run's ``report.html`` (:mod:`washline.links`; the DAG attaches them).

This file is all there is in ``plugins/``, the folder Airflow's plugins manager
imports file by file; the ``washline`` package it imports is installed from
``src/washline`` (``pip install -e .``).
Importing it is cheap: the FastAPI app is built on its first request.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from washline.links import URL_PREFIX, DataDocsLink, ReportLink


class WashlineReportsApp:
    """An ASGI app that builds :func:`washline.web.create_app` on its first call."""

    def __init__(self) -> None:
        self._app = None

    async def __call__(self, scope, receive, send):
        if self._app is None:
            from washline.web import create_app

            self._app = create_app()
        await self._app(scope, receive, send)


class WashlinePlugin(AirflowPlugin):
    name = "washline"
    fastapi_apps = [{"app": WashlineReportsApp(), "url_prefix": URL_PREFIX, "name": "washline reports"}]
    # hrefs without a leading slash are relative to the UI's base URL
    external_views = [
        {"name": "Night report", "href": "washline/dags/{DAG_ID}/runs/{RUN_ID}/report",
         "destination": "dag_run", "url_route": "washline-report"},
        {"name": "Link review", "href": "washline/dags/{DAG_ID}/runs/{RUN_ID}/review",
         "destination": "dag_run", "url_route": "washline-review"},
        {"name": "Night reports", "href": "washline/", "destination": "nav", "category": "browse",
         "url_route": "washline-nights"},
    ]
    # The DAG attaches the links to its tasks (washline.links.with_links); listed here so
    # that `airflow plugins` shows them. Their `operators` is empty: no other operator gets them.
    operator_extra_links = [DataDocsLink(), ReportLink()]
