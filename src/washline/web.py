"""The washline plugin's FastAPI app: the nights' reports inside the Airflow UI.

Mounted by the api-server at ``/washline`` (``plugins/washline_plugin.py``).
Airflow does not authenticate a plugin's app, so every route here does, with
Airflow's own dependencies: the caller's JWT (``Authorization: Bearer …`` or
the UI's ``_token`` cookie) is validated by the auth manager (401 without one,
403 for a bad one), and the auth manager must allow reading the DAG's runs
(``is_authorized_dag``, GET, ``DagAccessEntity.RUN``; 403 otherwise). Files
are served only from the reports folder ``$WASHLINE_DATA/lake/reports``: a
path that resolves outside it (``..``, an absolute path, a symlink out) is
refused with 403.

Routes (relative to the mount point):

* ``GET /`` – the nights with a report, newest first.
* ``GET /dags/{dag_id}/runs/{run_id}/report`` – redirect to that run's
  ``report.html`` (the run's logical date, or the UTC date of its
  ``run_after`` without one, as :func:`washline.paths.run_ds`); 404 with a
  page that says why when the report task has not written it yet.
* ``GET /dags/{dag_id}/runs/{run_id}/review`` – the same for ``review.html``.
* ``GET /dags/{dag_id}/runs/{run_id}/datadocs`` – the run's GX Data Docs.
* ``GET /dags/{dag_id}/reports/{path}`` – a file of the reports folder
  (``<ds>/report.html``, ``<ds>/gx/<run>/…``), so that the pages' relative
  links work as they do from the file.

Only the DAGs in :data:`REPORT_DAGS` have reports; another DAG id is 404.
"""

from __future__ import annotations

import html
import json
import logging
import mimetypes
from datetime import timezone
from pathlib import Path
from urllib.parse import quote

from washline.paths import DS_PATTERN, RunPaths, data_root, run_ds

log = logging.getLogger(__name__)

#: DAGs whose runs write ``lake/reports/<ds>/``
REPORT_DAGS = ("washline_nightly",)
#: for report.html / review.html: nothing may be fetched from outside (they are self-contained)
PAGE_CSP = ("default-src 'none'; img-src 'self' data: blob:; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'")


class Refused(Exception):
    """A path outside the reports folder."""


def reports_root() -> Path:
    """``$WASHLINE_DATA/lake/reports`` (resolved)."""
    return (data_root() / "lake" / "reports").resolve()


def resolve_report_file(root: Path, rel: str) -> Path | None:
    """The file ``rel`` inside the reports folder ``root``.

    Returns:
        The resolved path, or None when there is no such file (or it is a folder).

    Raises:
        Refused: ``rel`` resolves outside ``root`` (``..``, an absolute path,
            a symlink that leads out, a NUL byte).
    """
    if "\x00" in rel:
        raise Refused(rel)
    root = root.resolve()
    candidate = (root / rel).resolve()
    if candidate != root and root not in candidate.parents:
        raise Refused(rel)
    return candidate if candidate.is_file() else None


def _page(title: str, body: str, status: int = 200):
    from fastapi.responses import HTMLResponse

    text = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24}"
            "td,th{padding:3px 10px;text-align:left}</style></head>"
            f"<body><h1 style='font-size:19px'>{html.escape(title)}</h1>{body}</body></html>")
    return HTMLResponse(text, status_code=status, headers={"Cache-Control": "no-cache"})


def run_date(dag_id: str, run_id: str) -> str | None:
    """The date (``YYYY-MM-DD``) a run of ``dag_id`` works on, from the metadata
    database; None when there is no such run."""
    from sqlalchemy import select

    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        dr = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        if dr is None:
            return None
        logical = dr.logical_date.astimezone(timezone.utc).strftime("%Y-%m-%d") if dr.logical_date else None
        return run_ds({"ds": logical, "dag_run": dr, "run_id": run_id})


def create_app():
    """Build the FastAPI app (imports FastAPI and Airflow's API security here,
    so that importing this module stays cheap)."""
    from fastapi import Depends, FastAPI, HTTPException
    from fastapi.responses import FileResponse, RedirectResponse

    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import requires_access_dag

    app = FastAPI(title="washline reports", docs_url=None, redoc_url=None, openapi_url=None)
    can_read_runs = Depends(requires_access_dag("GET", DagAccessEntity.RUN))

    def known_dag(dag_id: str) -> None:
        if dag_id not in REPORT_DAGS:
            raise HTTPException(404, f"DAG {dag_id!r} writes no washline reports")

    def summary_run_id(ds: str) -> str | None:
        try:
            return json.loads((reports_root() / ds / "run_summary.json").read_text()).get("run_id")
        except (OSError, ValueError, AttributeError):
            return None

    def serve(path: Path):
        headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
        if path.name in ("report.html", "review.html"):
            headers["Content-Security-Policy"] = PAGE_CSP
        media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return FileResponse(path, media_type=media, headers=headers)

    def run_file(dag_id: str, run_id: str, name: str, what: str):
        if dag_id not in REPORT_DAGS:
            return _page(f"No {what} for {dag_id}", f"<p>Only {', '.join(REPORT_DAGS)} writes washline reports.</p>",
                         404)
        ds = run_date(dag_id, run_id)
        if ds is None:
            return _page(f"No run {run_id}", f"<p>{html.escape(dag_id)} has no run {html.escape(run_id)}.</p>", 404)
        target = f"../../reports/{ds}/{quote(name)}"  # relative: the page's own links resolve under reports/<ds>/
        if not (reports_root() / ds / name).is_file():
            return _page(f"No {what} yet for {ds}",
                         f"<p>Run <code>{html.escape(run_id)}</code> works on {ds}; its <code>report</code> task "
                         f"has not written <code>lake/reports/{ds}/{html.escape(name)}</code> yet.</p>", 404)
        other = summary_run_id(ds)
        if other is not None and other != run_id:
            # a date's folder holds its latest run's pages: say so instead of passing them off as this run's
            return _page(f"The {what} of {ds} is another run's",
                         f"<p>Run <code>{html.escape(run_id)}</code> works on {ds}, but the {what} there was written "
                         f"by run <code>{html.escape(other)}</code> (a later or earlier run of the same date; "
                         f"each run of a date replaces its pages).</p>"
                         f"<p><a href='{html.escape(target)}'>Open the {what} of run {html.escape(other)}</a></p>")
        return RedirectResponse(target, status_code=307)

    @app.get("/dags/{dag_id}/runs/{run_id}/report", dependencies=[can_read_runs])
    def run_report(dag_id: str, run_id: str):
        return run_file(dag_id, run_id, "report.html", "report")

    @app.get("/dags/{dag_id}/runs/{run_id}/review", dependencies=[can_read_runs])
    def run_review(dag_id: str, run_id: str):
        return run_file(dag_id, run_id, "review.html", "review page")

    @app.get("/dags/{dag_id}/runs/{run_id}/datadocs", dependencies=[can_read_runs])
    def run_data_docs(dag_id: str, run_id: str):
        known_dag(dag_id)
        ds = run_date(dag_id, run_id)
        if ds is None:
            raise HTTPException(404, f"no run {run_id!r} of {dag_id}")
        root = reports_root()
        docs = root / ds / "gx" / RunPaths.for_run(ds).data_docs(run_id).name
        index = sorted(docs.glob("**/data_docs/local_site/index.html"), key=lambda p: len(p.parts))
        if not index:
            return _page(f"No Data Docs for run {run_id}",
                         f"<p>The <code>check_quality</code> task of this run (ds {ds}) wrote no Data Docs.</p>", 404)
        rel = index[0].relative_to(root).as_posix()
        return RedirectResponse(f"../../reports/{quote(rel)}", status_code=307)

    @app.get("/dags/{dag_id}/reports/{path:path}", dependencies=[can_read_runs])
    def report_file(dag_id: str, path: str):
        known_dag(dag_id)
        try:
            found = resolve_report_file(reports_root(), path)
        except Refused:
            log.warning("refused a path outside the reports folder: %r", path)
            raise HTTPException(403, "outside the reports folder")
        if found is None:
            raise HTTPException(404, "no such report file")
        return serve(found)

    @app.get("/", dependencies=[Depends(requires_access_dag("GET", DagAccessEntity.RUN,
                                                            param_dag_id=REPORT_DAGS[0]))])
    def index():
        root = reports_root()
        nights = sorted((p.name for p in root.iterdir() if p.is_dir() and DS_PATTERN.match(p.name)),
                        reverse=True) if root.is_dir() else []
        base = f"dags/{quote(REPORT_DAGS[0])}/reports"
        rows = []
        for ds in nights:
            if not (root / ds / "report.html").is_file():
                continue
            review = (f"<a href='{base}/{ds}/review.html'>review</a>" if (root / ds / "review.html").is_file()
                      else "")
            rows.append(f"<tr><td>{ds}</td><td><a href='{base}/{ds}/report.html'>report</a></td><td>{review}</td></tr>")
        rows = "".join(rows)
        body = (f"<table><tr><th>night</th><th></th><th></th></tr>{rows}</table>" if rows
                else "<p>No night has a report yet.</p>")
        return _page("washline nights", body)

    return app
