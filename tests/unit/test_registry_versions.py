"""Which registry version a night links against, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hdwm.registry import RegistryOrderError, resolve_base, versions


def _version(reg: Path, ds: str, *markers: str, complete: bool = True) -> None:
    d = reg / f"ds={ds}"
    (d / "members").mkdir(parents=True)
    if complete:
        (d / "_COMPLETE.json").write_text(json.dumps({"ds": ds}))
    for m in markers:
        (d / f"_{m}.json").write_text("{}")


@pytest.fixture
def lake(tmp_path):
    reg, cur = tmp_path / "entities", tmp_path / "curated"
    reg.mkdir()
    cur.mkdir()
    return reg, cur


def test_empty_registry_is_night_one(lake):
    reg, cur = lake
    assert resolve_base(reg, "2024-01-01", cur) is None
    assert resolve_base(reg / "absent", "2024-01-01", cur) is None


def test_latest_published_before_d(lake):
    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    _version(reg, "2024-01-02", "PUBLISHED")
    _version(reg, "2024-01-03", "REJECTED")  # failed a check: skipped
    (cur / "2024-01-03").mkdir()
    assert resolve_base(reg, "2024-01-04", cur) == "2024-01-02"
    assert resolve_base(reg, "2024-01-02", cur) == "2024-01-01"  # rerun of d: its predecessor


def test_refuses_date_before_a_published_one(lake):
    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    _version(reg, "2024-01-05", "PUBLISHED")
    with pytest.raises(RegistryOrderError) as exc:
        resolve_base(reg, "2024-01-03", cur)
    assert str(exc.value) == ("ds 2024-01-03 is before the published ds 2024-01-05: relinking it would fork the "
                              "registry; run the full rebuild")


def test_refuses_when_predecessor_pending(lake, tmp_path):
    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    (cur / "2024-01-02").mkdir()  # cleansed, never linked
    with pytest.raises(RegistryOrderError, match=r"^ds 2024-01-03: the previous date 2024-01-02 has not been "
                                                 r"published yet \(run or fix it first\)$"):
        resolve_base(reg, "2024-01-03", cur)
    # linked but neither published nor rejected: still pending
    _version(reg, "2024-01-02")
    with pytest.raises(RegistryOrderError, match="2024-01-02"):
        resolve_base(reg, "2024-01-03", cur)
    # a landing folder counts when --landing is given
    land = tmp_path / "landing"
    (land / "febrl" / "2024-01-04").mkdir(parents=True)
    (reg / "ds=2024-01-02" / "_REJECTED.json").write_text("{}")
    assert resolve_base(reg, "2024-01-05", cur) == "2024-01-01"
    with pytest.raises(RegistryOrderError, match="previous date 2024-01-04"):
        resolve_base(reg, "2024-01-05", cur, landing=land)


def test_incomplete_or_temp_versions_are_ignored(lake):
    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    _version(reg, "2024-01-02", "PUBLISHED", complete=False)  # killed job with a stray marker
    (reg / ".ds=2024-01-03.tmp-123").mkdir()
    assert versions(reg) == ["2024-01-01", "2024-01-02"]
    assert resolve_base(reg, "2024-01-03", cur) == "2024-01-01"


def test_a_published_version_is_moved_aside_while_its_date_is_linked_again(lake):
    from hdwm.registry import stash_dir, stash_published

    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    _version(reg, "2024-01-02", "PUBLISHED")
    (reg / "ds=2024-01-02" / "members" / "first").write_text("")
    st = stash_dir(reg, "2024-01-02")
    assert stash_published(reg, "2024-01-02") == st
    assert (st / "_PUBLISHED.json").exists() and (st / "members" / "first").exists()
    assert versions(reg) == ["2024-01-01"]  # a stash is no version: never a base, never pending
    assert resolve_base(reg, "2024-01-03", cur) == "2024-01-01"
    # a retry of the rerun finds its own unpublished attempt: the stash (the publish) stays
    _version(reg, "2024-01-02", complete=False)
    assert stash_published(reg, "2024-01-02") == st and (st / "members" / "first").exists()
    # a published version with a stale stash beside it (publish ended before deleting it): replaced
    (reg / "ds=2024-01-02" / "_COMPLETE.json").write_text("{}")
    (reg / "ds=2024-01-02" / "_PUBLISHED.json").write_text("{}")
    assert stash_published(reg, "2024-01-02") == st and not (st / "members" / "first").exists()
    assert stash_published(reg, "2024-01-09") is None  # nothing to keep


def test_a_night_linked_without_the_registry_is_not_waited_for(lake):
    """``entity_registry=false`` leaves a curated slice and a link output whose metrics say
    ``"registry": null``, and no registry version or marker: the next registry night links
    against the last published version (found by an adversarial test run, 174f1cb: it was refused for ever)."""
    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    (cur / "2024-01-02").mkdir()
    linked = cur.parent / "linked" / "2024-01-02"
    linked.mkdir(parents=True)
    (linked / "metrics.json").write_text(json.dumps({"ds": "2024-01-02", "registry": None}))
    assert resolve_base(reg, "2024-01-03", cur) == "2024-01-01"
    # a link output of another date, without the field, or unreadable, proves nothing: still pending
    for body in (json.dumps({"ds": "2024-01-09", "registry": None}), json.dumps({"ds": "2024-01-02"}), "{not json"):
        (linked / "metrics.json").write_text(body)
        with pytest.raises(RegistryOrderError, match="previous date 2024-01-02"):
            resolve_base(reg, "2024-01-03", cur)
    # a registry link of the date (counts in "registry") is waited for until it is published or rejected
    (linked / "metrics.json").write_text(json.dumps({"ds": "2024-01-02", "registry": {"merges": 0}}))
    with pytest.raises(RegistryOrderError, match="previous date 2024-01-02"):
        resolve_base(reg, "2024-01-03", cur)


def _link_job():
    """``spark_jobs/link.py`` as a module (the spark-submit entry point is no package module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "washline_link_job", Path(__file__).resolve().parents[2] / "spark_jobs" / "link.py")
    link = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(link)
    return link


def test_the_link_jobs_order_refusal_is_flagged_in_its_error_file(lake, tmp_path):
    """Exit 2 with ``"keep_pending": true`` in metrics.error.json, before Spark starts, so the report
    task leaves the date pending instead of rejected; other exit-2 errors carry no such flag."""
    link = _link_job()
    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    (cur / "2024-01-02").mkdir()  # the predecessor has input and no marker: pending
    out = tmp_path / "linked" / "2024-01-03"
    args = ["--curated", str(cur / "2024-01-03"), "--out", str(out), "--ds", "2024-01-03", "--registry", str(reg)]
    assert link.main(args) == 2
    error = json.loads((out / "metrics.error.json").read_text())
    assert error["keep_pending"] is True and "2024-01-02 has not been published yet" in error["error"]
    assert link.main(args[:-2] + ["--rebuild"]) == 2  # --rebuild without --registry: no flag
    assert "keep_pending" not in json.loads((out / "metrics.error.json").read_text())


def test_a_bad_decisions_file_keeps_the_date_pending(lake, tmp_path):
    """The decisions file is shared by every night: a typo in it is no fault of the night's data, so the
    link job's exit 2 carries ``"keep_pending": true`` and the report leaves the date pending, not rejected
    (break-it pass: every night was rejected and the next published night left their references out)."""
    link = _link_job()
    reg, cur = lake
    _version(reg, "2024-01-01", "PUBLISHED")
    decisions = tmp_path / "decisions.csv"
    decisions.write_text("source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n"
                         "s,1,s,2,must-link,ana,2024-01-01,typo\n")
    out = tmp_path / "linked" / "2024-01-02"
    args = ["--curated", str(cur / "2024-01-02"), "--out", str(out), "--ds", "2024-01-02", "--registry", str(reg),
            "--decisions", str(decisions)]
    assert link.main(args) == 2
    error = json.loads((out / "metrics.error.json").read_text())
    assert error["keep_pending"] is True and "must_link or cannot_link" in error["error"], error
