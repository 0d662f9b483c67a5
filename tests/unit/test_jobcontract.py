"""jobcontract: the one home of what the Spark jobs and the operator agree on."""

from __future__ import annotations

import json
import os
import zipfile

import pytest

import jobcontract as jc


def test_validate_ds():
    assert jc.validate_ds("2024-02-29") == "2024-02-29"
    for bad, msg in (("2025-02-30", "is not a calendar date"), ("2025-1-01", "must be YYYY-MM-DD"),
                     (None, "must be YYYY-MM-DD"), ("2025-01-01/../x", "must be YYYY-MM-DD")):
        with pytest.raises(ValueError, match=msg):
            jc.validate_ds(bad, "--ds")


def test_error_path_is_beside_the_metrics(tmp_path):
    assert jc.error_path(tmp_path / "cleanse_metrics.json") == tmp_path / "cleanse_metrics.error.json"
    assert jc.error_path(tmp_path / "metrics") == tmp_path / "metrics.error.json"


def test_write_json_atomic_replaces_whole_file_with_the_open_mode(tmp_path):
    path = tmp_path / "a" / "m.json"
    jc.write_json_atomic(path, {"x": 1})
    jc.write_json_atomic(path, {"x": 2, "when": object()}, default=lambda o: "obj")
    assert json.loads(path.read_text()) == {"x": 2, "when": "obj"}
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in path.parent.iterdir()] == ["m.json"]  # no temp file left
    with pytest.raises(TypeError):
        jc.write_json_atomic(path, {"x": object()})
    assert json.loads(path.read_text())["x"] == 2 and len(list(path.parent.iterdir())) == 1


def test_pyfiles_zip_holds_the_engine_and_the_contract(tmp_path):
    z = jc.pyfiles_zip(tmp_path)
    assert z.name.startswith("hdwm-") and jc.pyfiles_zip(tmp_path) == z  # same sources, same zip
    names = zipfile.ZipFile(z).namelist()
    assert "hdwm/compare.py" in names and "jobcontract/__init__.py" in names
    assert not any(n.startswith(("cleansing/", "sourcecontract/")) for n in names)  # the cleanse driver's only
    assert not any("__pycache__" in n for n in names)
    assert {n.split("/")[0] for n in names} == set(jc.PYFILES_PACKAGES)


def test_the_k8s_image_zips_the_same_packages():
    import re
    from pathlib import Path

    dockerfile = (Path(jc.SPARK_JOBS).parent / "deploy" / "k8s" / "Dockerfile.spark-k8s").read_text()
    zipped = re.search(r"python -m zipfile -c \S+\.zip ([\w ]+?) *\\", dockerfile)
    assert zipped and tuple(zipped.group(1).split()) == jc.PYFILES_PACKAGES


def _script(name):
    import importlib.util
    from pathlib import Path

    path = Path(jc.SPARK_JOBS) / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"washline_{name}_contract_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_both_sides_use_the_contract(tmp_path):
    """The operator's and the jobs' exit codes, error file and date check are jobcontract's."""
    from washline import operators, paths

    cleanse = _script("cleanse")
    assert operators.PERMANENT_EXIT_CODES is jc.PERMANENT_EXIT_CODES
    assert (cleanse.ConfigError.exit_code, cleanse.NoInputError.exit_code, cleanse.InvariantError.exit_code) == (
        jc.EXIT_CONFIG, jc.EXIT_NO_INPUT, jc.EXIT_INVARIANT)
    assert set(jc.PERMANENT_EXIT_CODES["cleanse"]) >= {jc.EXIT_CONFIG, jc.EXIT_NO_INPUT, jc.EXIT_INVARIANT}
    run = paths.RunPaths.for_run("2025-01-01", root=tmp_path)
    assert operators.job_error_path("cleanse", run) == cleanse.error_path(run.cleanse_metrics)
    with pytest.raises(cleanse.ConfigError, match="--ds must be YYYY-MM-DD"):
        cleanse.validate_ds("2025/01/01")
    with pytest.raises(paths.ParamError, match="is not a calendar date"):
        paths.validate_ds("2025-02-30")
    assert _script("link").main(["--curated", str(tmp_path), "--out", str(tmp_path), "--ds", "2025-13-01"]) == 2
