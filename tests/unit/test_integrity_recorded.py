"""Every recorded SQL Server / Oracle output in ../shared/cases/integrity/*.json
and tests/unit/integrity_cases/*.json (recorded-style outputs written for these
tests: SQL Server 2008 R2 and 2019 layouts, Oracle Health Monitor runs, results
of unexpected shape) goes through the real parsing code and must reach the
recorded verdict and figures."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from washline.integrity import mssql, oracle, oracle_hm
from washline.integrity.report import Verdict

CASES = Path(__file__).resolve().parents[3] / "shared" / "cases" / "integrity"
LOCAL = Path(__file__).resolve().parent / "integrity_cases"
FILES = (sorted(CASES.glob("*.json")) if CASES.is_dir() else []) + sorted(LOCAL.glob("*.json"))
STARTED = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)


def _oracle(findings, blocks=0, error=None):
    return oracle.report_from(findings, blocks, database="db", mode="full", command="", started=STARTED,
                              coverage=[], error=error)


def report_for(case: dict):
    if case["engine"] == "mssql":
        records = mssql.rows_to_dicts(case["columns"], case["rows"])
        return mssql.report_from_records(records, database="db", mode="full", command="DBCC CHECKDB",
                                         started=STARTED, options=case["options"], coverage=[])
    if "health_monitor" in case:
        hm = case["health_monitor"]
        name = oracle_hm.run_name(hm["check"], STARTED, "0000")
        try:
            if "error" in hm:
                raise oracle_hm.HealthMonitorError(oracle_hm.describe_error(hm["error"]["message"],
                                                                            hm["error"]["stage"]))
            oracle_hm.parse_run(hm["run"]["columns"], hm["run"]["rows"], name, hm["check"])
            findings = oracle_hm.parse_findings(hm["findings"]["columns"], hm["findings"]["rows"], hm["check"], name)
        except (oracle_hm.HealthMonitorError, oracle_hm.UnexpectedResult) as exc:
            return _oracle([], error=str(exc))
        return _oracle(findings)
    if "error" in case:
        verdict, finding, text = oracle.classify_error(case["error"]["code"], case["error"]["message"], "T")
        return _oracle([], error=text) if finding is None else _oracle([finding])
    try:
        findings, blocks = oracle.parse_block_corruption(case["columns"], case["rows"])
    except oracle.UnexpectedResult as exc:
        return _oracle([], error=str(exc))
    return _oracle(findings, blocks)


def test_cases_are_present():
    assert len(list(LOCAL.glob("*.json"))) >= 13
    if not CASES.is_dir():
        pytest.skip("../shared/cases/integrity is not present")
    assert len(FILES) >= 22


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_recorded_case(path):
    case = json.loads(path.read_text())
    expected = case["expected"]
    report = report_for(case)
    out = report.to_dict()
    json.dumps(out)  # XCom-ready
    assert out["verdict"] == expected["verdict"], report.render()
    checks = {
        "allocation_errors": out["allocation_errors"],
        "consistency_errors": out["consistency_errors"],
        "error_rows": out["error_rows"],
        "counts_reconcile": out["counts_reconcile"],
        "object_counts": [[c["scope"], c["object_id"], c["allocation_errors"], c["consistency_errors"]]
                          for c in out["object_counts"]],
        "min_repair_level": out["minimum_repair_level"],
        "repairable_by_dbcc": out["repairable_by_dbcc"],
        "index_only": out["index_only"],
        "severity": out["severity"],
        "pages": out["pages"],
        "objects": sorted({f["object_id"] for f in out["findings"] if f["object_id"]}),
        "corrupt_blocks": out["corrupt_blocks"],
        "findings": len(out["findings"]),
    }
    for key, value in expected.items():
        if key == "verdict":
            continue
        if key == "error_contains":
            assert value in (out["error"] or ""), report.render()
            continue
        assert key in checks, f"expected figure {key} is not checked"
        assert checks[key] == value, f"{key}: {checks[key]!r} != {value!r}\n{report.render()}"
    if out["verdict"] == "ERROR":
        assert out["error"] and not [f for f in out["findings"] if f["severity"] in ("ERROR", "CRITICAL")]
    if out["error_rows"] is not None and not out["counts_reconcile"]:
        assert "do not reconcile" in report.summary() and "counts disagree:" in report.render()


def _layout_2012(path):
    case = json.loads(path.read_text())
    return case["engine"] == "mssql" and "DbFragId" in (case.get("columns") or [])


@pytest.mark.parametrize("path", [p for p in FILES if _layout_2012(p)], ids=lambda p: p.stem)
def test_legacy_layout_without_names_gives_same_result(path):
    """Pre-2012 TABLERESULTS: 18 columns (no DbFragId, RidDbId, RidPruId, RefDbId, RefPruId), by position."""
    case = json.loads(path.read_text())
    dropped = {case["columns"].index(c) for c in ("DbFragId", "RidDbId", "RidPruId", "RefDbId", "RefPruId")}
    legacy = [[v for i, v in enumerate(r) if i not in dropped] for r in case["rows"]]
    assert all(len(r) == 18 for r in legacy)
    new = mssql.evaluate(mssql.rows_to_dicts(case["columns"], case["rows"]))
    old = mssql.evaluate(mssql.rows_to_dicts(None, legacy))
    assert old["verdict"] == new["verdict"]
    assert [(f.code, f.location, f.ref_location, f.object_id, f.index_id) for f in old["findings"]] == \
        [(f.code, f.location, f.ref_location, f.object_id, f.index_id) for f in new["findings"]]
    assert (old["allocation_errors"], old["consistency_errors"], old["minimum_repair_level"]) == \
        (new["allocation_errors"], new["consistency_errors"], new["minimum_repair_level"])
    assert (old["error_rows"], old["object_counts"], old["count_notes"]) == \
        (new["error_rows"], new["object_counts"], new["count_notes"])
