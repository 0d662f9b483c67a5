"""DAG import and policy tests (after Astronomer's `astro dev init` tests)."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

DAGS_DIR = Path(__file__).resolve().parents[2] / "dags"
DAG_FILES = sorted(p for p in DAGS_DIR.glob("*.py") if not p.name.startswith("_"))
HEAVY_MODULES = {"pyspark", "great_expectations", "pandas", "pyarrow", "sqlalchemy", "psycopg", "psycopg2",
                 "oracledb", "pymssql", "recordlinkage", "rapidfuzz"}


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS_DIR))


@pytest.mark.parametrize("dag_file", DAG_FILES, ids=[p.name for p in DAG_FILES])
def test_dag_file_imports_without_errors(dagbag, dag_file):
    errors = {k: v for k, v in dagbag.import_errors.items() if Path(k).name == dag_file.name}
    assert not errors, errors
    assert any(Path(d.fileloc).name == dag_file.name for d in dagbag.dags.values()), "file defines no DAG"


@pytest.mark.parametrize("dag_file", DAG_FILES, ids=[p.name for p in DAG_FILES])
def test_dag_file_has_no_heavy_top_level_imports(dag_file):
    tree = ast.parse(dag_file.read_text())
    top = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module.split(".")[0])
    assert not (top & HEAVY_MODULES), f"heavy import at parse time: {top & HEAVY_MODULES}"


def test_parsing_is_fast(dagbag):
    from airflow.dag_processing.dagbag import DagBag

    started = time.monotonic()
    DagBag(dag_folder=str(DAGS_DIR))
    assert time.monotonic() - started < 10


def test_every_dag_follows_policy(dagbag):
    assert dagbag.dags, "no DAGs found"
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags, f"{dag_id} has no tags"
        assert dag.catchup is False, f"{dag_id} must set catchup=False"
        assert dag.doc_md, f"{dag_id} has no doc_md"
        for t in dag.tasks:
            if t.task_id in ("report", "check_quality"):
                continue  # terminal verdict tasks: a retry cannot change their answer
            assert t.retries >= 1, f"{dag_id}.{t.task_id} has no retries"


def test_nightly_shape(dagbag):
    dag = dagbag.dags["washline_nightly"]
    order = ["cleanse", "link", "load_staging", "check_integrity", "check_quality", "publish", "report"]
    assert set(order) == set(dag.task_ids)
    assert dag.get_task("publish").upstream_task_ids == {"check_integrity", "check_quality"}
    assert dag.get_task("report").trigger_rule == "all_done"
    assert dag.get_task("cleanse").task_type == "SparkJobOperator"
    assert dag.schedule == "0 2 * * *"
    assert dag.max_active_runs == 1
    # the retry delay comes from washline.paths.retry_delay (tests/conftest.py sets it short)
    from washline.paths import retry_delay

    assert all(t.retry_delay == retry_delay(30) for t in dag.tasks)
    assert set(dag.params.keys()) == {"input_folder", "staging_conn_id", "staging_schema", "profile",
                                      "executor_memory", "entity_registry", "rebuild"}
    assert dag.params["executor_memory"] == ""
    assert dag.params["rebuild"] is False and dag.params["entity_registry"] is True
    schema = dag.params.get_param("entity_registry").schema
    assert schema["type"] == "boolean" and "isolation" in dag.params.get_param("entity_registry").description
    outlets = dag.get_task("publish").outlets
    assert [a.name for a in outlets] == ["washline_published"]


def test_plugins_manager_finds_only_the_airflow_plugin():
    """Airflow's plugins manager imports every .py under plugins/ as a top-level
    module named after the file (integrity/operator.py would shadow the stdlib
    `operator`), so plugins/ holds the AirflowPlugin alone; the washline package
    is installed from src/washline and imported by name."""
    import washline
    from airflow.sdk._shared.module_loading import find_path_from_directory

    plugins = DAGS_DIR.parent / "plugins"
    found = [Path(p).relative_to(plugins).as_posix()
             for p in find_path_from_directory(str(plugins), ".airflowignore", "glob") if p.endswith(".py")]
    assert found == ["washline_plugin.py"], found
    assert Path(washline.__file__).resolve().parent == DAGS_DIR.parent.resolve() / "src" / "washline"


#: What parsing the DAGs must never load: the Spark side, the quality engine and the data libraries
#: (each costs the dag-processor seconds and memory on every parse; the tasks import them when they run).
NEVER_AT_PARSE = {"pyspark", "hdwm", "great_expectations", "pandas", "pyarrow", "numpy", "recordlinkage",
                  "rapidfuzz", "sklearn", "psycopg", "psycopg2", "oracledb", "pymssql"}


def test_parsing_every_dag_loads_no_spark_engine_or_data_library():
    """In a fresh interpreter (this one has imported them for other tests): DagBag of dags/, then sys.modules.
    Without WASHLINE_RETRY_DELAY_SECONDS (tests/conftest.py sets it), so it also sees the production retry delays."""
    import json
    import os
    import subprocess
    import sys

    from washline.paths import RETRY_DELAY_ENV

    code = (
        "import json, sys\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag(dag_folder={str(DAGS_DIR)!r})\n"
        "print(json.dumps({'dags': sorted(bag.dags), 'errors': {k: str(v) for k, v in bag.import_errors.items()},\n"
        "                  'modules': sorted({m.split('.')[0] for m in sys.modules}),\n"
        "                  'retry_delays': {d: sorted({t.retry_delay.total_seconds() for t in bag.dags[d].tasks})\n"
        "                                   for d in bag.dags}}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != RETRY_DELAY_ENV}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True,
                         env=env)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert not seen["errors"] and len(seen["dags"]) == len(DAG_FILES)
    assert "airflow" in seen["modules"] and "washline" in seen["modules"]
    assert not NEVER_AT_PARSE & set(seen["modules"]), sorted(NEVER_AT_PARSE & set(seen["modules"]))
    # the production retry delays: 30 s between the nightly's tries, 2 minutes in the integrity DAG
    assert seen["retry_delays"] == {"washline_nightly": [30.0], "washline_integrity": [120.0]}, seen["retry_delays"]
