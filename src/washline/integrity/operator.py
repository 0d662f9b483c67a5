"""``DatabaseIntegrityCheckOperator``: one Airflow operator for every engine.

It dispatches on the connection type (sqlite, postgres, mssql, oracle) via
:func:`washline.integrity.check_hook`, logs a readable summary, pushes the
report dict to XCom under key ``report`` *before* deciding the task state,
appends one row to ``washline_integrity_log`` in the checked database
(:mod:`washline.integrity.history`), and returns the report dict.

Task state: PASS/WARN succeed; FAIL raises ``AirflowFailException`` (no
retry: corruption does not heal); ERROR raises :class:`IntegrityCheckError`
(an ``AirflowException``, so the task's retries apply: the check may not
have run).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Sequence

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from washline.integrity import MODES, MSSQL_OPTIONS, validate_request


class IntegrityCheckError(AirflowException):
    """The integrity check could not run or did not finish (verdict ERROR); retryable."""


def _seconds(value: float | int | str | dt.timedelta | None, what: str) -> float | None:
    if value is None or value == "":
        return None
    seconds = value.total_seconds() if isinstance(value, dt.timedelta) else float(value)
    if seconds <= 0:
        raise ValueError(f"{what} must be positive seconds, got {value!r}")
    return seconds


class DatabaseIntegrityCheckOperator(BaseOperator):
    """Check the physical and logical integrity of the database behind ``conn_id``.

    Args:
        conn_id: Airflow connection id (templated), e.g.
            ``"{{ params.staging_conn_id }}"``.
        mode: ``"full"`` or ``"physical_only"`` (templated).
        objects: tables to check where the engine checks per object
            (PostgreSQL, Oracle); None = washline's staging tables.
        time_limit: seconds (or timedelta) after the DAG run started after
            which this check is not started (skipped), like Ola's
            ``@TimeLimit``; None = no limit.
        not_after: absolute UTC time (ISO-8601 text or aware datetime;
            templated) after which this check is not started (skipped); the
            sweep DAG sets it from the time its plan ran.
        check_timeout: seconds one check (SQLite) or statement (others) may
            run; reaching it gives verdict ERROR. None = no limit.
        data_purity, extended_logical_checks, noindex, tablock, maxdop:
            SQL Server ``DBCC CHECKDB`` switches. ``PHYSICAL_ONLY`` (mode)
            with ``DATA_PURITY`` or ``EXTENDED_LOGICAL_CHECKS`` is refused
            when the DAG is parsed (and again at run time for templated modes).
        write_history: append the row to ``washline_integrity_log``.

    Returns (XCom ``return_value``, also ``report``):
        ``IntegrityReport.to_dict()``: ``verdict``, ``findings``, ``error``,
        ``duration_s``, counts, ``command``, ``coverage``, times, ….

    Raises:
        AirflowFailException: verdict FAIL.
        IntegrityCheckError: verdict ERROR (retryable).
        AirflowSkipException: the time limit had passed before the check started.
        ValueError: bad mode/options or a malformed connection id.
    """

    template_fields: Sequence[str] = ("conn_id", "mode", "not_after")
    ui_color = "#c1e1c1"

    def __init__(
        self,
        *,
        conn_id: str,
        mode: str = "full",
        objects: list[str] | None = None,
        time_limit: float | int | dt.timedelta | None = None,
        not_after: str | dt.datetime | None = None,
        check_timeout: float | int | dt.timedelta | None = None,
        data_purity: bool = False,
        extended_logical_checks: bool = False,
        noindex: bool = False,
        tablock: bool = False,
        maxdop: int | None = None,
        write_history: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self.mode = mode
        self.objects = list(objects) if objects else None
        self.time_limit = _seconds(time_limit, "time_limit")
        self.not_after = not_after
        self.check_timeout = _seconds(check_timeout, "check_timeout")
        self.check_options = {"data_purity": data_purity, "extended_logical_checks": extended_logical_checks,
                              "noindex": noindex, "tablock": tablock, "maxdop": maxdop}
        self.write_history = write_history
        if "{{" not in str(mode):
            validate_request(None, mode, self.check_options)  # refuse bad combinations at parse time

    def _deadline_passed(self, context: Any) -> bool:
        now = dt.datetime.now(dt.timezone.utc)
        if self.not_after:
            limit = self.not_after if isinstance(self.not_after, dt.datetime) else \
                dt.datetime.fromisoformat(str(self.not_after))
            if limit.tzinfo is None:
                limit = limit.replace(tzinfo=dt.timezone.utc)
            if now > limit:
                return True
        if self.time_limit is None:
            return False
        dag_run = context.get("dag_run")
        start = getattr(dag_run, "start_date", None) if dag_run is not None else None
        if start is None:
            return False
        if start.tzinfo is None:
            start = start.replace(tzinfo=dt.timezone.utc)
        return (now - start).total_seconds() > self.time_limit

    def execute(self, context: Any) -> dict[str, Any]:
        from washline.integrity import check_hook, history
        from washline.integrity.report import Verdict
        from washline.paths import CONN_ID_PATTERN, validate_name
        from washline.staging.dialects import get_db_hook

        conn_id = validate_name(str(self.conn_id).strip(), CONN_ID_PATTERN, "integrity connection id")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self._deadline_passed(context):
            raise AirflowSkipException(
                f"time limit passed (not_after={self.not_after}, time_limit={self.time_limit} s from the run start); "
                f"not starting {conn_id}")
        hook, dialect = get_db_hook(conn_id)
        options = {k: v for k, v in self.check_options.items() if v not in (None, False)}
        validate_request(dialect, self.mode, options)
        report = check_hook(hook, dialect, self.mode, self.objects, options=options, timeout_s=self.check_timeout)
        payload = report.to_dict()
        payload["conn_id"] = conn_id
        context["ti"].xcom_push(key="report", value=payload)
        self.log.info("integrity check of connection %s:\n%s", conn_id, report.render())
        if self.write_history:
            history.record(hook, dialect, report)
        if report.verdict is Verdict.FAIL:
            raise AirflowFailException(f"integrity check FAIL: {report.summary()}; nothing will be published")
        if report.verdict is Verdict.ERROR:
            raise IntegrityCheckError(f"integrity check ERROR (did not complete): {report.summary()}")
        return payload


__all__ = ["DatabaseIntegrityCheckOperator", "IntegrityCheckError", "MSSQL_OPTIONS"]
