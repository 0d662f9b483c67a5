from __future__ import annotations

import json

import pytest

from datetime import datetime, timezone

from washline.report import (build_summary, pairwise_note, pairwise_undefined, read_cleanse_metrics, render,
                             write_json_atomic)

CLEANSE = {"rows_in": 10, "rows_curated": 9, "rows_quarantined": 1,
           "quarantined_by_reason": {"column_count": 1, "malformed": 0},
           "fixed_by_rule": {"bad_date": 5, "bad_postcode": 0, "bad_phone": 2}, "task_seconds": 12.5}
#: what the cleanse job writes when every row is quarantined (a tab file in a comma feed);
#: the operator then fails "no valid rows", so the cleanse task pushes no XCom.
ALL_QUARANTINED = {"ds": "2025-01-01", "rows_in": 201, "rows_curated": 0, "rows_quarantined": 201,
                   "quarantined_by_reason": {"bad_header": 201, "malformed": 0},
                   "fixed_by_rule": {"bad_date": 0, "bad_postcode": 0, "bad_phone": 0},
                   "finished_at": "2025-01-02T02:00:07+00:00", "seconds": 3.2}
NO_VALID_ROWS = ("no valid rows for 2025-01-01: 201 row(s) in, 201 quarantined "
                 "{'bad_header': 201, 'malformed': 0}")
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
                         "quarantined_by_reason": {"column_count": 1, "malformed": 0},
                         "fixed_by_rule": {"bad_date": 5, "bad_postcode": 0, "bad_phone": 2},
                         "loaded": 9, "published": 9}
    assert s["pairwise"]["f1"] == 0.847
    assert s["checks"]["integrity_findings"] == 0
    assert s["seconds"]["cleanse"] == 12.5 and s["seconds"]["publish"] == 0.2
    text = render(s)
    assert "F1 0.8470" in text and "column_count 1" in text and "malformed" not in text
    # values fixed (kept, not quarantined): the non-zero rules only
    assert "values fixed     7  bad_date 5, bad_phone 2" in text and "bad_postcode" not in text


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


def test_all_quarantined_night_counts_rows_by_reason_from_the_metrics_file():
    # cleanse failed ("no valid rows"), so there is no cleanse XCom; the job's
    # metrics file still says what came in and why every row was quarantined.
    s = build_summary("2025-01-01", "r1", {"cleanse": None}, {"cleanse": NO_VALID_ROWS},
                      cleanse_metrics=ALL_QUARANTINED)
    assert s["rows"]["in"] == 201 and s["rows"]["curated"] == 0 and s["rows"]["quarantined"] == 201
    assert s["rows"]["quarantined_by_reason"] == {"bad_header": 201, "malformed": 0}
    assert s["rows"]["fixed_by_rule"] == {"bad_date": 0, "bad_postcode": 0, "bad_phone": 0}
    assert s["not_published_because"] == [NO_VALID_ROWS]
    text = render(s)
    assert "rows in          201" in text and "quarantined      201 (100.00%)  bad_header 201" in text
    assert "None" not in text


def test_the_cleanse_xcom_wins_over_the_metrics_file():
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE}, cleanse_metrics=ALL_QUARANTINED)
    assert s["rows"]["in"] == 10


def test_integrity_findings_are_null_when_the_check_did_not_run():
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE, "link": LINK}, {"load_staging": "boom"})
    assert s["checks"]["integrity"] is None and s["checks"]["integrity_findings"] is None
    text = render(s)
    assert "integrity        no result" in text and "None" not in text
    # a check that ran and found something still counts its findings
    s = build_summary("2025-01-01", "r1", {"check_integrity": {"verdict": "FAIL", "findings": [{}, {}]}})
    assert s["checks"]["integrity_findings"] == 2


def test_old_summaries_without_fixed_by_rule_still_render():
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE})
    del s["rows"]["fixed_by_rule"]
    assert "values fixed" not in render(s)


def test_read_cleanse_metrics_only_returns_this_run_s_file(tmp_path):
    path = tmp_path / "2025-01-01.metrics.json"
    assert read_cleanse_metrics(path, "2025-01-01") is None  # missing
    path.write_text("{not json")
    assert read_cleanse_metrics(path, "2025-01-01") is None  # half written / unreadable
    write_json_atomic(path, ALL_QUARANTINED)
    assert read_cleanse_metrics(path, "2025-01-01") == ALL_QUARANTINED
    assert read_cleanse_metrics(path, "2025-01-02") is None  # another date's figures
    started = datetime(2025, 1, 2, 2, 0, 7, 400000, tzinfo=timezone.utc)  # same second: still this run's
    assert read_cleanse_metrics(path, "2025-01-01", not_before=started) == ALL_QUARANTINED
    later = datetime(2025, 1, 3, 2, 0, tzinfo=timezone.utc)  # written by an earlier run of the date
    assert read_cleanse_metrics(path, "2025-01-01", not_before=later) is None


def test_ratio_with_a_zero_denominator_is_none():
    from washline.report import ratio

    assert ratio(1, 4) == 0.25 and ratio(0, 4) == 0.0 and ratio(2, 3) == 0.6667
    assert ratio(0, 0) is None and ratio(3, 0) is None and ratio(None, 5) is None and ratio(1, None) is None


def test_quarantined_share_is_a_ratio_of_the_rows_in():
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE})
    assert s["quarantined_share"] == 0.1
    assert "quarantined      1 (10.00%)  column_count 1" in render(s)
    # a night with no rows in (header-only files): the share is undefined, not 0
    empty = {"rows_in": 0, "rows_curated": 0, "rows_quarantined": 0, "quarantined_by_reason": {}}
    s = build_summary("2025-01-01", "r1", {"cleanse": None}, cleanse_metrics={**empty, "ds": "2025-01-01"})
    assert s["rows"]["in"] == 0 and s["quarantined_share"] is None
    assert json.loads(json.dumps(s))["quarantined_share"] is None  # JSON null
    text = render(s)
    assert "quarantined      0 (n/a)" in text and "None" not in text
    # cleanse never ran: no share, and no "(n/a)" after a "-" count
    s = build_summary("2025-01-01", "r1", {})
    assert s["quarantined_share"] is None and "quarantined      -\n" in render(s) + "\n"


@pytest.mark.parametrize("pairwise, shown", [
    ({"precision": None, "recall": 0.0, "f1": None, "tp": 0, "predicted_pairs": 0, "true_pairs": 7},
     "precision n/a  recall 0.0000  F1 n/a"),
    ({"precision": 0.0, "recall": None, "f1": None, "tp": 0, "predicted_pairs": 3, "true_pairs": 0},
     "precision 0.0000  recall n/a  F1 n/a"),
    ({"precision": 0.9, "recall": 0.8, "f1": 0.847, "tp": 4, "predicted_pairs": 5, "true_pairs": 5},
     "precision 0.9000  recall 0.8000  F1 0.8470"),
])
def test_undefined_pairwise_metrics_print_as_n_a(pairwise, shown):
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE, "link": {**LINK, "pairwise": pairwise}})
    assert s["pairwise"] == pairwise
    text = render(s)
    assert f"pairwise         {shown}" in text and "None" not in text


def test_demo_summary_prints_n_a_for_null_metrics(tmp_path, monkeypatch, capsys):
    """``python -m washline.demo summary`` on a run_summary.json whose recall is null."""
    from washline.demo import main
    from washline.paths import RunPaths

    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    link = {**LINK, "pairwise": {"precision": 0.0, "recall": None, "f1": None, "tp": 0,
                                 "predicted_pairs": 2, "true_pairs": 0}}
    s = build_summary("2025-01-01", "r1", {"cleanse": CLEANSE, "link": link, "load_staging": LOAD,
                                           "check_integrity": INTEGRITY, "check_quality": QUALITY,
                                           "publish": {"rows": {"published_records": 9}, "seconds": 0.2}})
    write_json_atomic(RunPaths.for_run("2025-01-01", root=tmp_path).summary, s)
    assert main(["summary", "--ds", "2025-01-01"]) == 0
    out = capsys.readouterr().out
    assert "precision 0.0000  recall n/a  F1 n/a" in out and "(10.00%)" in out
    assert main(["summary", "--ds", "2025-01-01", "--json"]) == 0
    assert '"recall": null' in capsys.readouterr().out


#: FEBRL4 split over two nights: no true pair inside either night, every pair in the registry after night 2
NIGHT_NO_TRUE_PAIR = {"precision": 0.0, "recall": None, "f1": None, "tp": 0, "predicted_pairs": 3, "true_pairs": 0}
REGISTRY_AFTER_2 = {"precision": 0.999, "recall": 0.9992, "f1": 0.9991, "tp": 4996, "predicted_pairs": 5001,
                    "true_pairs": 5000, "references": 10000, "members": 10000}
REGISTRY_LINK = {"enabled": True, "rebuild": False, "complete": {"ds": "2025-01-02", "base_ds": "2025-01-01"}}


def test_registry_pairwise_is_shown_beside_the_night_s_own_with_the_reason_for_each_n_a():
    link = {**LINK, "pairwise": NIGHT_NO_TRUE_PAIR, "registry_pairwise": REGISTRY_AFTER_2, "registry": REGISTRY_LINK}
    s = build_summary("2025-01-02", "r2", {"cleanse": CLEANSE, "link": link})
    assert s["registry_pairwise"] == REGISTRY_AFTER_2 and s["pairwise"] == NIGHT_NO_TRUE_PAIR
    lines = render(s).splitlines()
    night = next(i for i, line in enumerate(lines) if line.startswith("  pairwise "))
    assert "precision 0.0000  recall n/a  F1 n/a" in lines[night]
    assert lines[night + 1].strip().startswith("recall and F1 n/a: no true pair")
    assert lines[night + 2].startswith("  entity pairwise  precision 0.9990  recall 0.9992  F1 0.9991")
    assert "after 2025-01-02" in lines[night + 2] and "10,000 references with truth" in lines[night + 2]
    assert "None" not in "\n".join(lines)
    # the n/a figures are exactly the undefined ones, each with its reason
    assert set(pairwise_undefined(NIGHT_NO_TRUE_PAIR)) == {"recall", "f1"}
    assert pairwise_undefined(REGISTRY_AFTER_2, "registry") == {}
    assert pairwise_note(REGISTRY_AFTER_2, "registry") is None


def test_a_night_without_labelled_references_says_so_while_the_registry_figure_stands():
    link = {**LINK, "pairwise": None, "registry_pairwise": REGISTRY_AFTER_2, "registry": REGISTRY_LINK}
    text = render(build_summary("2025-01-02", "r2", {"cleanse": CLEANSE, "link": link}))
    assert "pairwise         precision n/a  recall n/a  F1 n/a" in text
    assert "precision, recall and F1 n/a: no reference of this night carries truth" in text
    assert "entity pairwise  precision 0.9990" in text


@pytest.mark.parametrize("pw, undefined, reason", [
    (None, {"precision", "recall", "f1"}, "no reference in the registry carries truth"),
    ({"precision": None, "recall": 0.0, "f1": None}, {"precision", "f1"}, "no predicted pair"),
    ({"precision": None, "recall": None, "f1": None}, {"precision", "recall", "f1"}, "no true pair"),
])
def test_pairwise_undefined_names_each_undefined_figure(pw, undefined, reason):
    gaps = pairwise_undefined(pw, "registry")
    assert set(gaps) == undefined and reason in gaps["f1"]
    assert reason in pairwise_note(pw, "registry")
    with pytest.raises(ValueError, match="scope"):
        pairwise_undefined(pw, "week")


def test_without_truth_no_pairwise_line_is_printed():
    link = {**LINK, "pairwise": None, "registry_pairwise": None, "registry": REGISTRY_LINK}
    s = build_summary("2025-01-02", "r2", {"cleanse": CLEANSE, "link": link})
    text = render(s)
    assert s["pairwise"] is None and s["registry_pairwise"] is None
    assert "pairwise" not in text and "n/a" not in text
    # a summary written before registry_pairwise existed still renders
    del s["registry_pairwise"]
    assert "entity pairwise" not in render({**s, "pairwise": NIGHT_NO_TRUE_PAIR})


def test_demo_summary_prints_the_registry_figure(tmp_path, monkeypatch, capsys):
    from washline.demo import main
    from washline.paths import RunPaths

    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    link = {**LINK, "pairwise": NIGHT_NO_TRUE_PAIR, "registry_pairwise": REGISTRY_AFTER_2, "registry": REGISTRY_LINK}
    write_json_atomic(RunPaths.for_run("2025-01-02", root=tmp_path).summary,
                      build_summary("2025-01-02", "r2", {"cleanse": CLEANSE, "link": link}))
    assert main(["summary", "--ds", "2025-01-02"]) == 2  # not published
    out = capsys.readouterr().out
    assert "entity pairwise  precision 0.9990  recall 0.9992  F1 0.9991" in out
    assert "recall and F1 n/a: no true pair" in out
