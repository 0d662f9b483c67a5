"""The DAG's task bodies on a registry night, on real SQLite and
PostgreSQL staging: load_staging stages the version with the slice, publish
writes _PUBLISHED.json after its commit, report writes _REJECTED.json for a
night that did not publish (and keeps an earlier publish of the date)."""

from __future__ import annotations

import json
import shutil

import pytest
from airflow.sdk.exceptions import AirflowFailException

from registry_data import D1, D2, two_nights, write_version
from staging_data import write_slice
from washline import tasks
from washline.paths import RunPaths
from washline.staging.dialects import get_db_hook

pytestmark = pytest.mark.postgres


class TI:
    def __init__(self, xcoms):
        self.xcoms, self.pushed = xcoms, {}

    def xcom_push(self, key, value):
        self.pushed[key] = value

    def xcom_pull(self, task_ids, key="return_value"):
        return self.xcoms.get((task_ids, key))


def night(data, staging_conn, version, n, **xcoms):
    """Land the night's Spark outputs where the tasks read them; a task context."""
    day = write_slice(data / "spark", version.ds, n=n)
    lake = data / "lake"
    for table, target in {"staging_records": lake / "curated" / version.ds,
                          "staging_links": lake / "linked" / version.ds / "links",
                          "staging_clusters": lake / "linked" / version.ds / "clusters"}.items():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(day[table], target)
    write_version(lake, version)
    link = {"references": n, "clusters": n // 2, "registry": {
        "enabled": True, "rebuild": False, "version": str(lake / "entities" / f"ds={version.ds}"),
        "complete": version.complete()}}
    ti = TI({("link", "return_value"): link, **{(k, "return_value"): v for k, v in xcoms.items()}})
    return {"params": {"staging_conn_id": staging_conn}, "ds": version.ds, "run_id": f"scheduled__{version.ds}",
            "ti": ti}


def test_a_registry_night_is_staged_published_and_marked(staging_conn, tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("WASHLINE_DATA", str(data))
    night1, night2 = two_nights()
    ctx = night(data, staging_conn, night1, 6)
    loaded = tasks.load_staging(ctx)
    assert loaded["registry"] is True and loaded["rows"]["staging_entity_members"] == 6
    published = tasks.publish(ctx)
    marker = RunPaths.for_run(D1).registry_version / "_PUBLISHED.json"
    assert published["marker"] == str(marker) and json.loads(marker.read_text())["ds"] == D1
    assert published["rows"]["entity_members"] == 6

    # night 2 is staged, then a check fails: report marks it rejected, the registry stays at night 1
    ctx2 = night(data, staging_conn, night2, 4)
    ctx2["ti"].xcoms[("load_staging", "return_value")] = tasks.load_staging(ctx2)
    ctx2["ti"].xcoms[("check_quality", "report")] = {"status": "FAIL", "expectations": [
        {"expectation": "expect_column_values_to_be_null", "column": "vanished_id", "status": "FAIL",
         "severity": "critical"}]}
    ctx2["ti"].xcoms[("check_integrity", "report")] = {"verdict": "PASS", "findings": []}
    ctx2["ti"].xcoms[("cleanse", "return_value")] = {"rows_in": 4, "rows_curated": 4}
    with pytest.raises(AirflowFailException, match="was not published"):
        tasks.report(ctx2)
    rejected = RunPaths.for_run(D2).registry_version / "_REJECTED.json"
    reason = json.loads(rejected.read_text())["reason"]
    assert "expect_column_values_to_be_null(vanished_id)" in reason
    hook, _ = get_db_hook(staging_conn)
    assert sorted(hook.get_records("SELECT source, record_id, entity_id, first_seen_ds, last_changed_ds "
                                   "FROM entity_members")) == sorted(night1.members)
    summary = json.loads((data / "lake" / "reports" / D2 / "run_summary.json").read_text())
    assert summary["registry"]["merges"] == 1 and summary["registry_marker"] == str(rejected)

    # a version without _COMPLETE.json (a killed link job) is never staged, and a retry cannot fix it
    (RunPaths.for_run(D2).registry_version / "_COMPLETE.json").unlink()
    with pytest.raises(AirflowFailException, match="no complete registry version for ds=2025-01-02"):
        tasks.load_staging(ctx2)


def test_report_keeps_an_earlier_publish_of_the_date(staging_conn, tmp_path, monkeypatch):
    """A rerun of a published date that fails before its link job ran (which
    would have removed the markers) leaves the date published."""
    data = tmp_path / "data"
    monkeypatch.setenv("WASHLINE_DATA", str(data))
    night1, _ = two_nights()
    ctx = night(data, staging_conn, night1, 6)
    tasks.load_staging(ctx)
    tasks.publish(ctx)
    rerun = {"params": {"staging_conn_id": staging_conn}, "ds": D1, "run_id": "manual__again",
             "ti": TI({("cleanse", "error"): f"no input for {D1}", ("link", "return_value"): ctx["ti"].xcoms[
                 ("link", "return_value")]})}
    with pytest.raises(AirflowFailException, match="no input"):
        tasks.report(rerun)
    version = RunPaths.for_run(D1).registry_version
    assert (version / "_PUBLISHED.json").exists() and not (version / "_REJECTED.json").exists()


def _members_of(version_dir):
    import pyarrow.parquet as pq

    t = pq.read_table(version_dir / "members", columns=["source", "record_id", "entity_id"])
    return sorted(zip(*(t.column(c).to_pylist() for c in t.column_names)))


def test_a_failed_rerun_of_a_published_date_gives_its_publish_back(staging_conn, tmp_path, monkeypatch):
    """Rerun of the published D1 whose link job wrote a new version, then a check failed: the
    published tables still hold D1's earlier publish, so the lake's D1 is that version again
    (published), and D2 links against it. A rerun that publishes supersedes it."""
    import dataclasses

    from hdwm.registry import resolve_base, stash_published
    from washline.registry import stash_path

    data = tmp_path / "data"
    monkeypatch.setenv("WASHLINE_DATA", str(data))
    night1, _ = two_nights()
    paths = RunPaths.for_run(D1)
    tasks.publish(_staged(night(data, staging_conn, night1, 6)))
    published = _members_of(paths.registry_version)

    # the rerun's link job: the published version is moved aside, a different one written
    assert stash_published(paths.entities, D1) == stash_path(paths)
    assert not paths.registry_version.exists()
    other = "E" + "0" * 16
    rerun = dataclasses.replace(night1, members=[(s, r, other, f, c) for s, r, _, f, c in night1.members],
                                changes=[(other, "new", "", 6)])
    ctx = _staged(night(data, staging_conn, rerun, 6))
    ctx["ti"].xcoms[("check_quality", "report")] = {"status": "FAIL", "expectations": [
        {"expectation": "expect_column_values_to_be_null", "column": "vanished_id", "status": "FAIL",
         "severity": "critical"}]}
    with pytest.raises(AirflowFailException, match="was not published"):
        tasks.report(ctx)
    version = paths.registry_version
    assert (version / "_PUBLISHED.json").exists() and not (version / "_REJECTED.json").exists()
    assert _members_of(version) == published and not stash_path(paths).exists()
    assert {m[2] for m in _members_of(data / "lake" / "entities" / f".rejected-ds={D1}")} == {other}
    summary = json.loads((data / "lake" / "reports" / D1 / "run_summary.json").read_text())
    assert summary["registry_marker"].startswith("restored the earlier published version of the date")
    hook, _ = get_db_hook(staging_conn)
    rows = hook.get_records("SELECT source, record_id, entity_id FROM entity_members")
    assert sorted(tuple(r) for r in rows) == published  # what the lake says now
    (data / "lake" / "curated" / D2).mkdir(parents=True, exist_ok=True)
    assert resolve_base(paths.entities, D2, curated_root=data / "lake" / "curated") == D1

    # a rerun that publishes: its version stands, the earlier one is gone
    stash_published(paths.entities, D1)
    tasks.publish(_staged(night(data, staging_conn, rerun, 6)))
    assert not stash_path(paths).exists() and (version / "_PUBLISHED.json").exists()
    assert {m[2] for m in _members_of(version)} == {other}
    assert resolve_base(paths.entities, D2, curated_root=data / "lake" / "curated") == D1


def _staged(ctx):
    """The context after load_staging (its XCom set) with cleanse and integrity results."""
    ctx["ti"].xcoms[("load_staging", "return_value")] = tasks.load_staging(ctx)
    ctx["ti"].xcoms[("check_integrity", "report")] = {"verdict": "PASS", "findings": []}
    ctx["ti"].xcoms[("cleanse", "return_value")] = {"rows_in": 6, "rows_curated": 6}
    return ctx
