from __future__ import annotations

import json

from washline.report import build_summary, render, write_json_atomic

CLEANSE = {"rows_in": 10, "rows_curated": 9, "rows_quarantined": 1,
           "quarantined_by_reason": {"column_count": 1, "malformed": 0}, "task_seconds": 12.5}
LINK = {"clusters": 5, "singletons": 2, "largest_cluster": 3, "task_seconds": 20.0,
        "pairwise": {"precision": 0.9, "recall": 0.8, "f1": 0.847, "tp": 4, "predicted_pairs": 5, "true_pairs": 5}}
LOAD = {"rows": {"staging_records": 9}, "seconds": 0.4}
INTEGRITY = {"verdict": "PASS", "findings": [], "duration_s": 0.1}
QUALITY = {"status": "PASS", "expectations": [], "seconds": 2.0, "data_docs": "/x/index.html"}


def test_published_run_reports_counts_f1_and_seconds():
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE, "link": LINK, "load_staging": LOAD,
                                           "check_integrity": INTEGRITY, "check_quality": QUALITY,
                                           "publish": {"rows": {"published_records": 9}, "seconds": 0.2}})
    assert s["published"] and s["not_published_because"] == []
    assert s["rows"] == {"in": 10, "curated": 9, "quarantined": 1,
                         "quarantined_by_reason": {"column_count": 1, "malformed": 0}, "loaded": 9, "published": 9}
    assert s["pairwise"]["f1"] == 0.847
    assert s["seconds"]["cleanse"] == 12.5 and s["seconds"]["publish"] == 0.2
    text = render(s)
    assert "F1 0.8470" in text and "column_count 1" in text and "malformed" not in text


def test_failed_check_is_named_as_the_reason_nothing_was_published():
    quality = {"status": "FAIL", "seconds": 1.0, "expectations": [
        {"expectation": "expect_column_values_to_match_regex", "column": "postcode", "status": "FAIL",
         "severity": "critical"},
        {"expectation": "expect_column_values_to_not_be_null", "column": "surname", "status": "FAIL",
         "severity": "warning"}]}
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE, "link": LINK, "load_staging": LOAD,
                                           "check_integrity": {"verdict": "FAIL", "findings": [{}]},
                                           "check_quality": quality, "publish": None})
    assert s["published"] is False
    assert s["not_published_because"][0] == "check_integrity verdict FAIL"  # no finding message given
    assert "expect_column_values_to_match_regex(postcode)" in s["not_published_because"][1]
    assert "surname" not in s["not_published_because"][1]
    assert "NO" in render(s)


def test_missing_upstream_results_are_reasons_not_crashes():
    s = build_summary("2025-01-01", "r1", {})
    assert not s["published"]
    assert "cleanse did not succeed" in s["not_published_because"]
    render(s)


def test_summary_file_is_written_atomically(tmp_path):
    path = write_json_atomic(tmp_path / "a" / "run_summary.json", {"x": 1})
    assert json.loads(path.read_text()) == {"x": 1}
    assert [p.name for p in path.parent.iterdir()] == ["run_summary.json"]


def test_the_failed_task_s_own_message_is_the_reason():
    s = build_summary("2025-01-01", "r1", {}, {"cleanse": "no input for 2025-01-01 in /data/landing", "link": None})
    assert s["not_published_because"] == ["no input for 2025-01-01 in /data/landing"]
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE, "link": LINK},
                      {"load_staging": "load_staging: DatabaseError: database disk image is malformed"})
    assert s["not_published_because"] == ["load_staging: DatabaseError: database disk image is malformed"]


def test_integrity_reason_quotes_the_first_finding():
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE, "link": LINK, "load_staging": LOAD,
                                           "check_integrity": {"verdict": "FAIL", "findings": [
                                               {"message": "Page 7: btreeInitPage() returns error code 11"}]},
                                           "check_quality": QUALITY})
    assert s["not_published_because"] == [
        "check_integrity verdict FAIL; first finding: Page 7: btreeInitPage() returns error code 11"]
