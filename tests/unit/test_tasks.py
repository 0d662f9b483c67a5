"""Task bodies: permanent errors fail without retry and leave their cause in XCom."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from washline import tasks
from washline.operators import EXIT_CODE, PERMANENT_EXIT_CODES, SparkJobOperator
from washline.paths import ParamError


class FakeTI:
    def __init__(self, xcoms=None):
        self.pushed = {}
        self.xcoms = xcoms or {}  # (task_id, key) -> value

    def xcom_push(self, key, value):
        self.pushed[key] = value

    def xcom_pull(self, task_ids, key="return_value"):
        return self.xcoms.get((task_ids, key))


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


def test_spark_job_without_a_logical_date_uses_the_run_after_date(tmp_path, monkeypatch):
    """A run triggered with ``"logical_date": null`` has no ``ds`` in its context:
    the operator derives the same date as every other task (run_after, UTC)."""
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    ctx = {"params": {}, "run_id": "manual__nodate", "ti": FakeTI(),
           "dag_run": SimpleNamespace(run_after=datetime(2025, 3, 2, 23, 30, tzinfo=timezone.utc))}
    op = SparkJobOperator(task_id="cleanse", job="cleanse")
    with pytest.raises(AirflowFailException, match="no input for 2025-03-02 in "):
        op.execute(ctx)
    assert ctx["ti"].pushed["error"].startswith("no input for 2025-03-02")
    # with input for that date, spark-submit gets --ds 2025-03-02 (stopped right there)
    (tmp_path / "landing" / "febrl" / "2025-03-02").mkdir(parents=True)
    (tmp_path / "landing" / "febrl" / "2025-03-02" / "a.csv").write_text("rec_id\n")
    seen = {}

    def stop(self, context):
        seen["args"] = list(self.application_args)
        raise AirflowException("stopped before spark-submit")

    monkeypatch.setattr(SparkSubmitOperatorBase(), "execute", stop)
    with pytest.raises(AirflowException, match="stopped before spark-submit"):
        op.execute(ctx)
    assert seen["args"][seen["args"].index("--ds") + 1] == "2025-03-02"
    assert str(tmp_path / "lake" / "curated" / "2025-03-02") in seen["args"]
    # the Python tasks use the same date
    assert tasks.run_paths(ctx).ds == "2025-03-02"


NO_VALID_ROWS = "no valid rows for 2025-01-01: 201 row(s) in, 201 quarantined {'bad_header': 201}"
ALL_QUARANTINED = {"ds": "2025-01-01", "rows_in": 201, "rows_curated": 0, "rows_quarantined": 201,
                   "quarantined_by_reason": {"bad_header": 201, "malformed": 0},
                   "fixed_by_rule": {"bad_date": 0, "bad_postcode": 0, "bad_phone": 0},
                   "finished_at": "2025-01-02T02:00:30+00:00"}


def _report_after_cleanse_failed(tmp_path, monkeypatch, started, **params):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    metrics = tmp_path / "lake" / "curated" / "2025-01-01.metrics.json"
    metrics.parent.mkdir(parents=True, exist_ok=True)
    metrics.write_text(json.dumps(ALL_QUARANTINED))
    ctx = context(**params)
    ctx["ti"] = FakeTI({("cleanse", "error"): NO_VALID_ROWS})  # no cleanse return value
    ctx["dag_run"] = SimpleNamespace(start_date=started)
    with pytest.raises(AirflowFailException, match="was not published: no valid rows"):
        tasks.report(ctx)
    return json.loads((tmp_path / "lake" / "reports" / "2025-01-01" / "run_summary.json").read_text())


def test_report_counts_rows_from_the_cleanse_metrics_when_every_row_was_quarantined(tmp_path, monkeypatch):
    summary = _report_after_cleanse_failed(tmp_path, monkeypatch,
                                           datetime(2025, 1, 2, 2, 0, tzinfo=timezone.utc))
    assert summary["rows"]["in"] == 201 and summary["rows"]["quarantined"] == 201
    assert summary["rows"]["curated"] == 0
    assert summary["rows"]["quarantined_by_reason"]["bad_header"] == 201
    assert summary["rows"]["fixed_by_rule"] == ALL_QUARANTINED["fixed_by_rule"]
    assert summary["checks"]["integrity"] is None and summary["checks"]["integrity_findings"] is None
    assert summary["not_published_because"] == [NO_VALID_ROWS]


def test_report_ignores_a_metrics_file_from_an_earlier_run_of_the_date(tmp_path, monkeypatch):
    # e.g. the date was run before; this run failed before the job started
    # (no input), so the file on disk is not this run's.
    summary = _report_after_cleanse_failed(tmp_path, monkeypatch,
                                           datetime(2025, 1, 3, 9, 0, tzinfo=timezone.utc))
    assert summary["rows"]["in"] is None and summary["rows"]["quarantined_by_reason"] is None


def test_a_failed_night_is_marked_rejected_only_when_it_used_the_entity_registry(tmp_path, monkeypatch):
    rejected = tmp_path / "lake" / "entities" / "ds=2025-01-01" / "_REJECTED.json"
    started = datetime(2025, 1, 2, 2, 0, tzinfo=timezone.utc)
    summary = _report_after_cleanse_failed(tmp_path, monkeypatch, started)  # default entity_registry=true
    assert json.loads(rejected.read_text()) == {"ds": "2025-01-01", "reason": NO_VALID_ROWS}
    assert summary["registry_marker"] == str(rejected)
    rejected.unlink()
    summary = _report_after_cleanse_failed(tmp_path, monkeypatch, started, entity_registry=False)
    assert not rejected.exists() and "registry_marker" not in summary


def test_link_exit_2_quotes_the_jobs_own_error(tmp_path, monkeypatch):
    """Exit 2 of the link job is permanent; the job's one-line error (a registry
    refusal naming the date, bad input, a bad decisions file) reaches the summary."""
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    meaning = PERMANENT_EXIT_CODES["link"][2]
    for cause in ("linkage profile", "bad input", "decisions file", "previous date is not published yet",
                  "fork the registry"):
        assert cause in meaning, cause
    op = SparkJobOperator(task_id="link", job="link")
    refusal = "ds 2025-01-01: the previous date 2024-12-31 has not been published yet (run or fix it first)"

    def refused(self, ctx):  # what spark-submit does when link.py exits 2 after writing its error file
        error = tmp_path / "lake" / "linked" / "2025-01-01" / "metrics.error.json"
        error.parent.mkdir(parents=True, exist_ok=True)
        error.write_text(json.dumps({"exit_code": 2, "error": refusal}))
        raise AirflowException("Cannot execute: spark-submit --master local[*] link.py. Error code is: 2.")

    monkeypatch.setattr(SparkSubmitOperatorBase(), "execute", refused)
    ctx = context()
    with pytest.raises(AirflowFailException, match="2024-12-31 has not been published"):
        op.execute(ctx)
    assert ctx["ti"].pushed["error"] == f"link failed permanently (spark-submit exit 2): {refusal}"

    def refused_silently(self, ctx):
        raise AirflowException("Cannot execute: spark-submit link.py. Error code is: 2.")

    monkeypatch.setattr(SparkSubmitOperatorBase(), "execute", refused_silently)
    with pytest.raises(AirflowFailException, match=r"exit 2: bad arguments or linkage profile.*see the task log"):
        op.execute(ctx)


def SparkSubmitOperatorBase():
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    return SparkSubmitOperator


REFUSED = ("link failed permanently (spark-submit exit 2): ds 2025-01-01: the previous date 2024-12-31 "
           "has not been published yet (run or fix it first)")


def test_a_night_the_link_job_refused_for_the_registry_order_is_not_marked_rejected(tmp_path, monkeypatch):
    """A date run before its predecessor is refused, not rejected: with _REJECTED.json the night after
    the predecessor skipped it and its references never entered the registry (break-it pass)."""
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    version = tmp_path / "lake" / "entities" / "ds=2025-01-01"
    ctx = context()
    cleansed = {("cleanse", "return_value"): {**ALL_QUARANTINED, "rows_curated": 201, "rows_quarantined": 0,
                                               "quarantined_by_reason": {}}}
    ctx["ti"] = FakeTI({**cleansed, ("link", "error"): REFUSED, ("link", "keep_pending"): True})
    ctx["dag_run"] = SimpleNamespace(start_date=datetime(2025, 1, 2, 2, 0, tzinfo=timezone.utc))
    with pytest.raises(AirflowFailException, match="2024-12-31 has not been published"):
        tasks.report(ctx)
    summary = json.loads((tmp_path / "lake" / "reports" / "2025-01-01" / "run_summary.json").read_text())
    assert not (version / "_REJECTED.json").exists()
    assert summary["registry_marker"].startswith("none: the link job refused the date")
    # any other link failure (here without the flag) still marks the night rejected
    ctx["ti"] = FakeTI({**cleansed, ("link", "error"): REFUSED})
    with pytest.raises(AirflowFailException, match="2024-12-31 has not been published"):
        tasks.report(ctx)
    assert json.loads((version / "_REJECTED.json").read_text())["ds"] == "2025-01-01"


def test_link_exit_2_for_the_registry_order_says_so_in_xcom(tmp_path, monkeypatch):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    op = SparkJobOperator(task_id="link", job="link")
    error = tmp_path / "lake" / "linked" / "2025-01-01" / "metrics.error.json"
    error.parent.mkdir(parents=True, exist_ok=True)

    for payload, flagged in (({"exit_code": 2, "error": "ds 2025-01-01: the previous date ...",
                               "keep_pending": True}, True),
                             ({"exit_code": 2, "error": "decisions.csv:5: decision must be ..."}, False)):
        def refused(self, ctx, payload=payload):  # what spark-submit does when link.py exits 2
            error.write_text(json.dumps(payload))
            raise AirflowException("Cannot execute: spark-submit --master local[*] link.py. Error code is: 2.")

        monkeypatch.setattr(SparkSubmitOperatorBase(), "execute", refused)
        ctx = context()
        with pytest.raises(AirflowFailException):
            op.execute(ctx)
        assert ctx["ti"].pushed.get("keep_pending", False) is flagged, payload
