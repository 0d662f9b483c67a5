"""The Airflow side of the entity registry: the link job's registry
options (Params entity_registry / rebuild), the version's _COMPLETE.json, the
_PUBLISHED / _REJECTED markers, and the run summary's registry figures."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from registry_data import D1, D2, two_nights, write_version
from washline import registry
from washline.operators import job_arguments, link_mode
from washline.paths import ParamError, RunPaths
from washline.report import build_summary, render


@pytest.fixture
def paths(tmp_path, monkeypatch):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    return RunPaths.for_run(D2, "landing")


def test_link_arguments_without_and_with_the_registry(paths):
    base = job_arguments("link", paths, "default")
    assert "--registry" not in base and base[:2] == ["--curated", str(paths.curated)]
    args = job_arguments("link", paths, "default", registry=True)
    assert args[len(base):] == ["--registry", str(paths.root / "lake" / "entities"), "--landing", str(paths.landing)]
    paths.decisions.parent.mkdir(parents=True)
    paths.decisions.write_text("source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n")
    args = job_arguments("link", paths, "default", registry=True, rebuild=True)
    assert args[len(base):] == ["--registry", str(paths.entities), "--landing", str(paths.landing),
                                "--decisions", str(paths.decisions), "--rebuild"]
    with pytest.raises(ValueError, match="rebuild needs"):
        job_arguments("link", paths, "default", rebuild=True)


def test_link_mode_follows_the_entity_registry_param(paths):
    # default: the registry is on; the arguments then carry --registry and --landing
    mode = link_mode({})
    assert mode == {"registry": True, "rebuild": False}
    args = job_arguments("link", paths, "default", **mode)
    assert args[args.index("--registry") + 1] == str(paths.entities)
    assert args[args.index("--landing") + 1] == str(paths.landing)
    assert link_mode({"entity_registry": True, "rebuild": False}) == mode
    # false: the night is linked in isolation, no registry options at all
    off = link_mode({"entity_registry": False})
    assert off == {"registry": False, "rebuild": False}
    args = job_arguments("link", paths, "default", **off)
    assert not {"--registry", "--landing", "--decisions", "--rebuild"} & set(args)
    assert args == ["--curated", str(paths.curated), "--out", str(paths.linked), "--ds", D2,
                    "--profile", "default", "--checkpoint-dir", str(paths.checkpoints)]


def test_link_mode_refuses_bad_params_and_an_impossible_rebuild():
    with pytest.raises(ParamError, match="rebuild=true needs entity_registry=true"):
        link_mode({"entity_registry": False, "rebuild": True})
    with pytest.raises(ParamError, match="entity_registry must be true or false, got 'no'"):
        link_mode({"entity_registry": "no"})
    with pytest.raises(ParamError, match="rebuild must be true or false"):
        link_mode({"rebuild": "yes"})
    assert link_mode({"rebuild": True}) == {"registry": True, "rebuild": True}


def test_the_link_job_takes_the_rebuild_option_it_is_given():
    """job_arguments' --rebuild is an option of spark_jobs/link.py (its own parser, no Spark)."""
    import subprocess
    import sys

    from washline.operators import SPARK_JOBS

    out = subprocess.run([sys.executable, str(SPARK_JOBS / "link.py"), "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert "--rebuild" in out and "--registry" in out


def test_complete_json_is_required_and_checked(paths):
    with pytest.raises(registry.RegistryVersionError, match="no complete registry version for ds=2025-01-02"):
        registry.require_complete(paths)
    _, night2 = two_nights()
    write_version(paths.lake, night2, complete=False)
    assert registry.read_complete(paths) is None  # a killed job: incomplete version
    write_version(paths.lake, night2)
    complete = registry.require_complete(paths)
    assert complete["references_total"] == 10 and complete["joined_existing"] == 3
    assert registry.expected_change_rows(complete) == 3
    # one entity split in two parts: two change rows, one split entity (demo night 2 had 2 such)
    split = dict(complete, new_entities=1, grows=2, merges=1, splits=1, split_rows=2)
    assert registry.expected_change_rows(split) == 6
    assert registry.expected_change_rows({k: v for k, v in split.items() if k != "split_rows"}) == 5
    bad = dict(complete, ds=D1)
    (paths.registry_version / "_COMPLETE.json").write_text(json.dumps(bad))
    with pytest.raises(registry.RegistryVersionError, match="is for ds='2025-01-01'"):
        registry.require_complete(paths)
    (paths.registry_version / "_COMPLETE.json").write_text(json.dumps(dict(complete, merges=-1)))
    with pytest.raises(registry.RegistryVersionError, match=r"invalid count\(s\) \['merges'\]"):
        registry.require_complete(paths)


def test_markers(paths):
    assert registry.marker_state(paths) is None
    rejected = registry.write_rejected(paths, "check_quality status FAIL")
    assert json.loads(rejected.read_text()) == {"ds": D2, "reason": "check_quality status FAIL"}
    assert registry.marker_state(paths) == "rejected"
    when = datetime(2025, 1, 3, 2, 5, tzinfo=timezone.utc)
    published = registry.write_published(paths, when)
    assert json.loads(published.read_text()) == {"ds": D2, "published_at": "2025-01-03T02:05:00+00:00"}
    assert registry.marker_state(paths) == "published" and not rejected.exists()
    # a later failed run of the date that never relinked it keeps the earlier publish
    assert registry.write_rejected(paths, "cleanse failed") is None
    assert registry.marker_state(paths) == "published"
    assert registry.published_after(RunPaths.for_run(D1)) == [D2]
    assert registry.published_after(paths) == []


def _summary(night, publish_rows=None, rebuild=False):
    complete = night.complete()
    link = {"clusters": 3, "registry": {"enabled": True, "rebuild": rebuild, "version": "x", "complete": complete}}
    return build_summary(night.ds, "r", {"link": link, "publish": {"rows": publish_rows} if publish_rows else None})


def test_summary_reports_the_nights_registry_figures():
    _, night2 = two_nights()
    s = _summary(night2, {"published_records": 4, "entity_members": 10, "entities": 4})
    assert s["registry"] == {
        "version": D2, "base_ds": D1, "rebuild": False, "references_total": 10, "entities_total": 4,
        "night_references": 4, "new_references": 4, "joined_existing": 3, "joined_share": 0.75,
        "new_entities": 1, "grows": 1, "merges": 1, "splits": 0, "updates": None, "published_members": 10,
        "published_entities": 4, "rebuild_f1": None}
    text = render(s)
    assert "this night       4 references: 4 new, 3 joined existing entities (75.0%)" in text
    assert "entity changes   1 new entities, 1 grown, 1 merges, 0 splits\n" in text
    night2.extra = {"updates": 2}
    assert "1 merges, 0 splits, 2 golden records updated\n" in render(_summary(night2))
    assert "linked against the published 2025-01-01" in text and "entity_members   10 rows published" in text
    night2.extra = {"rebuild_f1": 0.9931}
    assert "rebuild vs incremental pairwise F1 0.9931" in render(_summary(night2, rebuild=True))
    # without the registry there is no registry section
    plain = build_summary(D2, "r", {"link": {"clusters": 3}})
    assert plain["registry"] is None and "this night" not in render(plain)
    assert "not tracked across nights (entity_registry=false" in render(plain)


def test_link_xcom_carries_the_versions_complete_json(paths):
    from washline.operators import SparkJobOperator

    off = SparkJobOperator._registry_result(paths, {"registry": False, "rebuild": False})
    assert off == {"enabled": False, "rebuild": False, "version": None, "complete": None}
    with pytest.raises(registry.RegistryVersionError, match="_COMPLETE.json is missing"):
        SparkJobOperator._registry_result(paths, {"registry": True, "rebuild": False})
    _, night2 = two_nights()
    write_version(paths.lake, night2)
    on = SparkJobOperator._registry_result(paths, {"registry": True, "rebuild": True})
    assert on["enabled"] and on["rebuild"] and on["version"] == str(paths.registry_version)
    assert on["complete"] == night2.complete()
