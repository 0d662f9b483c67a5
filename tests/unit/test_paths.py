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
