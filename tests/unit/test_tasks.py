"""Task bodies: permanent errors fail without retry and leave their cause in XCom."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from washline import tasks
from washline.operators import EXIT_CODE, PERMANENT_EXIT_CODES, SparkJobOperator
from washline.paths import ParamError


class FakeTI:
    def __init__(self):
        self.pushed = {}

    def xcom_push(self, key, value):
        self.pushed[key] = value


def context(**params):
    return {"params": params, "ds": "2025-01-01", "run_id": "manual__x", "ti": FakeTI()}


def test_param_error_fails_without_retry_and_is_reported():
    ctx = context(input_folder="../../etc")
    with pytest.raises(AirflowFailException, match="outside the data root"):
        tasks.load_staging(ctx)
    assert ctx["ti"].pushed["error"].startswith("load_staging: ParamError: path '../../etc'")


def test_transient_errors_keep_their_retries(monkeypatch):
    @tasks.reports_errors("publish")
    def flaky(ctx):
        raise ConnectionError("server closed the connection")

    ctx = context()
    with pytest.raises(ConnectionError):
        flaky(ctx)
    assert ctx["ti"].pushed["error"] == "publish: ConnectionError: server closed the connection"


def test_spark_exit_codes_that_retries_cannot_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    (tmp_path / "landing" / "febrl" / "2025-01-01").mkdir(parents=True)
    (tmp_path / "landing" / "febrl" / "2025-01-01" / "a.csv").write_text("rec_id\n")
    op = SparkJobOperator(task_id="cleanse", job="cleanse")

    def boom(self, ctx):
        raise AirflowException("Cannot execute: spark-submit --master local[*] x.py. Error code is: 3.")

    monkeypatch.setattr(SparkSubmitOperatorBase(), "execute", boom)
    ctx = context()
    with pytest.raises(AirflowFailException, match="exit 3: no input"):
        op.execute(ctx)
    assert "exit 3" in ctx["ti"].pushed["error"]
    assert EXIT_CODE.search("... Error code is: 52.").group(1) == "52"
    assert 52 in PERMANENT_EXIT_CODES["link"]


def test_missing_landing_folder_fails_before_spark(tmp_path, monkeypatch):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    op = SparkJobOperator(task_id="cleanse", job="cleanse")
    ctx = context()
    with pytest.raises(AirflowFailException, match="no input for 2025-01-01"):
        op.execute(ctx)
    assert ctx["ti"].pushed["error"].startswith("no input for 2025-01-01")


def SparkSubmitOperatorBase():
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    return SparkSubmitOperator
