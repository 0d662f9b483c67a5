"""``washline.operators.SparkJobOperator``: the spark-submit command a run gets.

The command is the one ``execute`` runs: ``SparkJobOperator.prepare`` sets the
templated fields from the run's Params, then the Spark provider's own builder
turns them and the Spark connection into argv. No Spark is started here.
"""

from __future__ import annotations

import json
import secrets
import zipfile
from pathlib import Path

import pytest

from washline.operators import BASE_CONF, SPARK_JOBS, SparkJobOperator, job_arguments
from washline.paths import ParamError, RunPaths

DS = "2025-01-01"


def context(**params):
    return {"params": params, "ds": DS, "run_id": "manual__x"}


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("WASHLINE_PYSPARK_PYTHON", "/opt/py/bin/python3")
    return tmp_path


def options(cmd: list[str], flag: str) -> list[str]:
    """Every value given to ``flag`` in ``cmd``."""
    return [cmd[i + 1] for i, arg in enumerate(cmd[:-1]) if arg == flag]


def app_args(cmd: list[str], job: str) -> list[str]:
    return cmd[cmd.index(str(SPARK_JOBS / f"{job}.py")) + 1:]


def test_cleanse_command(data):
    op = SparkJobOperator(task_id="cleanse", job="cleanse", conf={"spark.driver.memory": "1g"})
    cmd = op.spark_submit_command(context())
    paths = RunPaths.for_run(DS, "landing")
    assert cmd[:3] == ["spark-submit", "--master", "local[2]"]
    assert options(cmd, "--name") == ["washline-cleanse"]
    assert app_args(cmd, "cleanse") == job_arguments("cleanse", paths, "default") == [
        "--landing", str(data / "landing"), "--ds", DS, "--curated", str(paths.curated),
        "--quarantine", str(paths.quarantine), "--metrics", str(paths.cleanse_metrics)]
    conf = dict(kv.split("=", 1) for kv in options(cmd, "--conf"))
    # every base setting once; the operator's own conf wins; the executors' Python from the environment
    assert len(conf) == len(options(cmd, "--conf"))
    assert conf == {**BASE_CONF, "spark.pyspark.python": "/opt/py/bin/python3", "spark.driver.memory": "1g"}


def test_the_py_files_zip_is_the_engine(data):
    cmd = SparkJobOperator(task_id="cleanse", job="cleanse").spark_submit_command(context())
    [zip_path] = options(cmd, "--py-files")
    assert Path(zip_path).parent == data / "lake" / "_build" and Path(zip_path).name.startswith("hdwm-")
    with zipfile.ZipFile(zip_path) as zf:
        tops = {name.split("/")[0] for name in zf.namelist()}
    assert tops == {"hdwm", "jobcontract"}
    # the same engine, the same zip, when the command is built again (a retry)
    again = SparkJobOperator(task_id="cleanse", job="cleanse").spark_submit_command(context())
    assert options(again, "--py-files") == [zip_path]


def test_link_command_follows_the_registry_params(data):
    op = SparkJobOperator(task_id="link", job="link")
    paths = RunPaths.for_run(DS, "landing")
    args = app_args(op.spark_submit_command(context(profile="febrl")), "link")
    assert args[:10] == ["--curated", str(paths.curated), "--out", str(paths.linked), "--ds", DS,
                         "--profile", "febrl", "--checkpoint-dir", str(paths.checkpoints)]
    assert args[10:] == ["--registry", str(paths.entities), "--landing", str(paths.landing)]
    assert app_args(op.spark_submit_command(context(rebuild=True)), "link")[-1] == "--rebuild"
    assert "--registry" not in app_args(op.spark_submit_command(context(entity_registry=False)), "link")
    assert options(op.spark_submit_command(context()), "--name") == ["washline-link"]


def test_executor_memory_param_sizes_the_executors(data):
    op = SparkJobOperator(task_id="link", job="link")
    assert options(op.spark_submit_command(context()), "--executor-memory") == []
    assert options(op.spark_submit_command(context(executor_memory="")), "--executor-memory") == []
    assert options(op.spark_submit_command(context(executor_memory="6G")), "--executor-memory") == ["6g"]
    # the operator's own value stays when the Param is empty
    own = SparkJobOperator(task_id="link", job="link", executor_memory="3g")
    assert options(own.spark_submit_command(context()), "--executor-memory") == ["3g"]
    assert options(own.spark_submit_command(context(executor_memory="1536m")), "--executor-memory") == ["1536m"]
    assert options(own.spark_submit_command(context()), "--executor-memory") == ["3g"]
    for bad in ("6", "0g", "6gb", "-1g", "6g --conf x=y", 6):
        with pytest.raises(ParamError, match="executor_memory"):
            op.spark_submit_command(context(executor_memory=bad))


def test_templated_conf_is_rendered_into_the_command(data):
    op = SparkJobOperator(task_id="cleanse", job="cleanse", conf={"spark.app.tag": "night-{{ ds }}"})
    ctx = context()
    op.render_template_fields(ctx)
    assert f"spark.app.tag=night-{DS}" in options(op.spark_submit_command(ctx), "--conf")


def test_a_bad_param_stops_before_any_command(data):
    op = SparkJobOperator(task_id="link", job="link")
    for params, message in (({"profile": "../x"}, "profile"), ({"input_folder": "../../etc"}, "outside the data root"),
                            ({"rebuild": True, "entity_registry": False}, "needs entity_registry=true")):
        with pytest.raises(ParamError, match=message):
            op.spark_submit_command(context(**params))


def test_no_credentials_in_argv(data, monkeypatch):
    """The Spark connection's login and password, and the staging connection's,
    never reach spark-submit's argv (which any local user can read)."""
    # sentinels made here, so that no credential-shaped literal is committed
    spark_user, spark_pass, staging_pass = (f"{kind}-{secrets.token_hex(8)}" for kind in ("su", "sp", "st"))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(
        {"conn_type": "spark", "host": "spark://127.0.0.1", "port": 7077, "login": spark_user,
         "password": spark_pass}))
    monkeypatch.setenv("AIRFLOW_CONN_WASHLINE_STAGING", json.dumps(
        {"conn_type": "postgres", "host": "127.0.0.1", "login": "washline", "password": staging_pass}))
    for job in ("cleanse", "link"):
        cmd = SparkJobOperator(task_id=job, job=job).spark_submit_command(context())
        assert cmd[1:3] == ["--master", "spark://127.0.0.1:7077"]
        argv = " ".join(cmd)
        for secret in (spark_user, spark_pass, staging_pass):
            assert secret not in argv, (secret, job)
