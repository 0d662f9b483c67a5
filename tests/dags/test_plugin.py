"""The washline AirflowPlugin (plugins/washline_plugin.py) as Airflow's plugins
manager loads it, and the operator extra links the nightly DAG carries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_airflow_plugins_lists_the_plugin_with_its_views_app_and_links():
    """What `airflow plugins` prints comes from get_plugin_info."""
    out = subprocess.run([str(Path(sys.executable).with_name("airflow")), "plugins", "--output", "json"],
                         capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins")})
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    plugins = {p["name"]: p for p in json.loads(out.stdout[out.stdout.index("["):])}
    wl = plugins["washline"]
    assert wl["source"] == "$PLUGINS_FOLDER/washline_plugin.py"
    views = {v["name"]: v for v in wl["external_views"]}
    assert views["Night report"]["destination"] == "dag_run"
    assert views["Night report"]["href"] == "washline/dags/{DAG_ID}/runs/{RUN_ID}/report"
    assert views["Link review"]["destination"] == "dag_run"
    assert [a["url_prefix"] for a in wl["fastapi_apps"]] == ["/washline"]
    assert {"<washline.links.DataDocsLink object>", "<washline.links.ReportLink object>"} <= set(
        wl["operator_extra_links"])


def test_the_plugin_module_is_cheap_to_import():
    """The plugins manager imports it in every Airflow process: no FastAPI app,
    pandas, pyarrow or matplotlib until the api-server serves a request."""
    code = ("import sys, airflow.plugins_manager, airflow.sdk; before = set(sys.modules); "
            "sys.path.insert(0, sys.argv[1]); import washline_plugin; "
            "print(sorted(m for m in set(sys.modules) - before if m == 'washline.web' or m.split('.')[0] in "
            "('fastapi', 'starlette', 'pandas', 'pyarrow', 'matplotlib', 'jinja2')))")
    out = subprocess.run([sys.executable, "-c", code, str(REPO / "plugins")], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_nightly_dag_links_check_quality_to_data_docs_and_report_to_the_report():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.serialized_objects import DagSerialization

    dag = DagBag(dag_folder=str(REPO / "dags")).dags["washline_nightly"]
    back = DagSerialization.from_dict(DagSerialization.to_dict(dag))  # what the api-server works with
    assert back.get_task("check_quality").extra_links == ["GX Data Docs"]
    assert back.get_task("report").extra_links == ["Night report"]
    assert back.get_task("publish").extra_links == []
    # the worker computes the link when the task ends and keeps it as this XCom
    key = SimpleNamespace(dag_id="washline_nightly", run_id="manual__2025-01-02T02:00:00+00:00")
    links = {type(lk).__name__: lk for lk in dag.get_task("check_quality").operator_extra_links}
    assert links["DataDocsLink"].get_link(None, ti_key=key) == \
        "/washline/dags/washline_nightly/runs/manual__2025-01-02T02%3A00%3A00%2B00%3A00/datadocs"
    assert links["DataDocsLink"].xcom_key == "_link_DataDocsLink"


@pytest.mark.parametrize("base, expected", [
    ("", "/washline/dags/d/runs/r%2F1/report"),
    ("https://airflow.example.org/prefix/", "https://airflow.example.org/prefix/washline/dags/d/runs/r%2F1/report"),
])
def test_links_follow_the_api_base_url(base, expected):
    from washline import links

    assert links.plugin_url("dags/d/runs/r%2F1/report", base_url=base) == expected
    assert links.run_page("d", "r/1", "report").endswith("/washline/dags/d/runs/r%2F1/report")
