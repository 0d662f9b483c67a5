from __future__ import annotations

import pytest

from washline.paths import ParamError, RunPaths, resolve_under_root, validate_ds


def test_validate_ds_accepts_calendar_dates():
    assert validate_ds("2025-01-31") == "2025-01-31"


@pytest.mark.parametrize("bad", ["2025-02-30", "2025-1-1", "20250101", "../2025-01-01", "", None])
def test_validate_ds_refuses_other_strings(bad):
    with pytest.raises(ParamError):
        validate_ds(bad)


def test_input_folder_outside_data_root_is_refused(tmp_path):
    with pytest.raises(ParamError, match="outside the data root"):
        resolve_under_root("../../etc", tmp_path)
    with pytest.raises(ParamError):
        RunPaths.for_run("2025-01-01", "/etc", root=tmp_path)


def test_run_paths_are_per_date(tmp_path):
    a = RunPaths.for_run("2025-01-01", "landing", root=tmp_path)
    b = RunPaths.for_run("2025-01-02", "landing", root=tmp_path)
    assert a.landing == tmp_path / "landing"
    assert a.curated != b.curated and a.linked != b.linked and a.summary != b.summary
    assert a.curated.is_relative_to(tmp_path) and a.summary.is_relative_to(tmp_path)


# -- the run's date: logical date, else the UTC date of run_after (washline.paths.run_ds) --

def test_run_ds_prefers_the_logical_date():
    from types import SimpleNamespace
    from datetime import datetime, timezone

    from washline.paths import run_ds

    ctx = {"ds": "2025-01-01", "dag_run": SimpleNamespace(run_after=datetime(2025, 6, 6, tzinfo=timezone.utc))}
    assert run_ds(ctx) == "2025-01-01"


def test_run_ds_without_a_logical_date_uses_run_after_in_utc(caplog):
    """A context as Airflow 3 builds it for ``"logical_date": null``: no ``ds`` key."""
    import logging
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace

    import pendulum

    from washline.paths import run_ds

    plus1 = timezone(timedelta(hours=1))
    with caplog.at_level(logging.INFO, logger="washline.paths"):
        # 00:30 on 3 March at UTC+1 is 23:30 on 2 March in UTC
        assert run_ds({"run_id": "manual__a", "dag_run": SimpleNamespace(
            run_after=datetime(2025, 3, 3, 0, 30, tzinfo=plus1))}) == "2025-03-02"
    assert "run manual__a has no logical date: using the UTC date of its run_after " \
           "2025-03-02T23:30:00+00:00 -> ds=2025-03-02" in caplog.text
    # Airflow hands pendulum DateTimes; a naive datetime is taken as UTC
    assert run_ds({"dag_run": SimpleNamespace(run_after=pendulum.datetime(2025, 3, 3, 1, 0, tz="Europe/Paris"))}) \
        == "2025-03-03"
    assert run_ds({"ds": None, "dag_run": SimpleNamespace(run_after=datetime(2024, 2, 29, 23, 59))}) == "2024-02-29"


def test_run_ds_without_any_date_is_a_param_error():
    from types import SimpleNamespace

    from washline.paths import run_ds

    with pytest.raises(ParamError, match="no logical date .* and no run_after"):
        run_ds({"params": {}})
    with pytest.raises(ParamError, match="no logical date"):
        run_ds({"dag_run": SimpleNamespace(run_after=None)})


def test_retry_delay_is_the_default_unless_the_environment_sets_it(monkeypatch):
    from datetime import timedelta

    from washline.paths import RETRY_DELAY_ENV, retry_delay

    monkeypatch.delenv(RETRY_DELAY_ENV, raising=False)
    assert retry_delay(30) == timedelta(seconds=30)
    monkeypatch.setenv(RETRY_DELAY_ENV, " ")
    assert retry_delay(120) == timedelta(minutes=2)
    monkeypatch.setenv(RETRY_DELAY_ENV, "2")
    assert retry_delay(30) == timedelta(seconds=2)
    monkeypatch.setenv(RETRY_DELAY_ENV, "0.5")
    assert retry_delay(30) == timedelta(milliseconds=500)


@pytest.mark.parametrize("raw", ["-1", "soon", "nan", "inf", "30s"])
def test_a_malformed_retry_delay_is_refused_naming_the_variable(monkeypatch, raw):
    from washline.paths import RETRY_DELAY_ENV, retry_delay

    monkeypatch.setenv(RETRY_DELAY_ENV, raw)
    with pytest.raises(ValueError, match=f"WASHLINE_RETRY_DELAY_SECONDS={raw!r}"):
        retry_delay(30)
