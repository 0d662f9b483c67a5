"""DBCC CHECKDB command building, option refusal and TABLERESULTS rules.

No SQL Server runs on this machine, so ``check()`` is driven by a small
DB-API stand-in that replays recorded result sets (shared/cases/integrity)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from washline.integrity import mssql, validate_request
from washline.integrity.report import Verdict

CASES = Path(__file__).resolve().parents[3] / "shared" / "cases" / "integrity"
COLS = list(mssql.COLUMNS_2012)


def row(error, level, text, *, obj=0, index=-1, file=0, page=0, repair=None, partition=0, alloc_unit=0):
    values = dict.fromkeys(COLS, 0)
    values.update({"Error": error, "Level": level, "State": 1, "MessageText": text, "RepairLevel": repair,
                   "ObjectId": obj, "IndexId": index, "File": file, "Page": page, "PartitionId": partition,
                   "AllocUnitId": alloc_unit, "DbId": 7, "Allocation": 1})
    return [values[c] for c in COLS]


SUMMARY_0 = row(8989, 10, "CHECKDB found 0 allocation errors and 0 consistency errors in database 'S'.")


def evaluate(rows):
    return mssql.evaluate(mssql.rows_to_dicts(COLS, rows))


def test_command_has_fixed_options_and_switches_in_order():
    opts = mssql.CheckDbOptions(data_purity=True, extended_logical_checks=True, tablock=True, maxdop=4, noindex=True)
    assert mssql.build_command("Staging]DB", opts) == (
        "DBCC CHECKDB ([Staging]]DB], NOINDEX) WITH NO_INFOMSGS, ALL_ERRORMSGS, TABLERESULTS, "
        "DATA_PURITY, EXTENDED_LOGICAL_CHECKS, TABLOCK, MAXDOP = 4")
    assert mssql.build_command("S", mssql.CheckDbOptions(physical_only=True)) == \
        "DBCC CHECKDB ([S]) WITH NO_INFOMSGS, ALL_ERRORMSGS, TABLERESULTS, PHYSICAL_ONLY"


@pytest.mark.parametrize("bad", [{"data_purity": True}, {"extended_logical_checks": True}])
def test_physical_only_refuses_logical_options_before_running(bad):
    with pytest.raises(mssql.InvalidOptions, match="PHYSICAL_ONLY cannot be combined"):
        mssql.build_command("S", mssql.CheckDbOptions(physical_only=True, **bad))
    with pytest.raises(ValueError, match="PHYSICAL_ONLY"):
        validate_request("mssql", "physical_only", bad)
    with pytest.raises(ValueError, match="SQL Server only"):
        validate_request("sqlite", "full", bad)


def test_maxdop_range_and_unknown_option():
    with pytest.raises(mssql.InvalidOptions):
        mssql.CheckDbOptions(maxdop=65).validate()
    with pytest.raises(ValueError, match="unknown integrity option"):
        validate_request(None, "full", {"repair_allow_data_loss": True})


def test_64bit_ids_survive():
    rec = mssql.rows_to_dicts(COLS, [row(8939, 16, "x", obj=5, index=1, partition=72057594046119936,
                                         alloc_unit=2**63 - 1)])[0]
    assert rec["partitionid"] == 72057594046119936 and rec["allocunitid"] == 2**63 - 1


def test_error_rows_decide_not_the_summary():
    result = evaluate([SUMMARY_0, row(824, 24, "incorrect checksum … page (1:184)", file=1, page=184)])
    assert result["verdict"] is Verdict.FAIL
    assert result["findings"][0].severity == "CRITICAL" and result["findings"][0].location == "1:184"
    # the counts stay SQL Server's (0/0); the row it did not count is reported beside them
    assert (result["allocation_errors"], result["consistency_errors"], result["error_rows"]) == (0, 0, 1)
    assert result["count_notes"] == ["the 8989 summary counts 0 allocation and 0 consistency error(s) (0 in all) "
                                     "but 1 error row was returned, 1 of them at severity 20 or more (824)"]


def test_no_rows_at_all_is_a_clean_database_under_no_infomsgs():
    # NO_INFOMSGS suppresses every severity-10 message, the 0/0 8989 row included
    result = evaluate([])
    assert result["verdict"] is Verdict.PASS and result["error"] is None
    assert (result["allocation_errors"], result["consistency_errors"], result["count_notes"]) == (0, 0, [])


def test_clean_check_returns_no_result_set_and_passes():
    hook = ReplayHook([("SELECT DB_NAME()", [(["name"], [("StagingDB",)])]),
                       ("DBCC CHECKDB", []),  # a completed statement with no result set at all
                       ("DBCC DBINFO", [(["ParentObject", "Object", "Field", "VALUE"],
                                         [("DBINFO", "x", "dbi_dbccLastKnownGood", "2025-01-01 02:13:07.450")])])])
    report = mssql.check(hook, mode="physical_only")
    assert report.verdict is Verdict.PASS and report.error is None and report.findings == []
    assert "NO_INFOMSGS" in report.command and report.last_known_good == "2025-01-01T02:13:07.450"


def test_missing_summary_is_error_even_with_clean_rows():
    result = evaluate([row(2593, 10, "There are 9 rows in 1 pages for object \"t\".", obj=5, index=1)])
    assert result["verdict"] is Verdict.ERROR and "8989" in result["error"]


def test_2508_alone_is_warn_but_with_an_error_row_is_fail():
    warn = row(2508, 16, "RSVD page count … Run DBCC UPDATEUSAGE.", obj=5, index=0)
    assert evaluate([warn, SUMMARY_0])["verdict"] is Verdict.WARN
    assert evaluate([warn, row(8928, 16, "Page (1:9) could not be processed.", obj=5, index=1, file=1, page=9),
                     SUMMARY_0])["verdict"] is Verdict.FAIL


def test_index_only_finding_carries_repair_rebuild_when_server_gives_none():
    result = evaluate([row(8951, 16, "missing index row", obj=5, index=2), SUMMARY_0])
    assert result["verdict"] is Verdict.FAIL
    assert result["findings"][0].repair_level == "REPAIR_REBUILD"
    assert result["minimum_repair_level"] == "REPAIR_REBUILD"
    heap = evaluate([row(8928, 16, "heap page", obj=5, index=0, file=1, page=9), SUMMARY_0])
    assert heap["findings"][0].repair_level is None


def test_worst_repair_level_wins():
    result = evaluate([row(8951, 16, "a", obj=5, index=2, repair="repair_rebuild"),
                       row(8928, 16, "b", obj=5, index=1, repair="repair_allow_data_loss", file=1, page=3),
                       SUMMARY_0])
    assert result["minimum_repair_level"] == "REPAIR_ALLOW_DATA_LOSS"


def test_legacy_column_names_are_accepted():
    legacy_names = [{"ObjectId": "Id", "IndexId": "IndId"}.get(c, c) for c in mssql.COLUMNS_LEGACY]
    values = [8928, 16, 1, "Page (1:9) could not be processed.", None, 0, 7, 5, 2, 1, 1, 1, 9, 0, 0, 0, 0, 1]
    rec = mssql.rows_to_dicts(legacy_names, [values])[0]
    assert rec["objectid"] == 5 and rec["indexid"] == 2 and rec["page"] == 9
    with pytest.raises(ValueError, match="23 or 18"):
        mssql.rows_to_dicts(None, [[1, 2, 3]])


def test_dbinfo_last_known_good():
    cols = ["ParentObject", "Object", "Field", "VALUE"]
    assert mssql.parse_dbinfo(cols, [["DBINFO", "x", "dbi_dbccLastKnownGood", "2025-01-01 02:13:07.450"]]) == \
        "2025-01-01T02:13:07.450"
    assert mssql.parse_dbinfo(cols, [["DBINFO", "x", "dbi_dbccLastKnownGood", "1900-01-01 00:00:00.000"]]) == "never"
    assert mssql.parse_dbinfo(cols, [["DBINFO", "x", "dbi_version", "957"]]) is None


# ---------------------------------------------------------------- check() flow


class ReplayCursor:
    """DB-API cursor replaying result sets per statement prefix."""

    def __init__(self, script, sent):
        self.script, self.sent, self.sets = script, sent, []

    def execute(self, sql, params=None):
        self.sent.append(sql)
        for prefix, outcome in self.script:
            if sql.startswith(prefix):
                if isinstance(outcome, Exception):
                    raise outcome
                self.sets = list(outcome)
                return
        raise AssertionError(f"unexpected statement {sql}")

    @property
    def description(self):
        return [(c,) for c in self.sets[0][0]] if self.sets else None

    def fetchall(self):
        return self.sets[0][1]

    def fetchone(self):
        return self.sets[0][1][0]

    def nextset(self):
        self.sets = self.sets[1:]
        return bool(self.sets) or None


class ReplayHook:
    def __init__(self, script):
        self.script, self.sent = script, []

    def get_conn(self):
        hook = self

        class Conn:
            def cursor(self):
                return ReplayCursor(hook.script, hook.sent)

            def close(self):
                pass

        return Conn()


def case(name):
    path = CASES / f"{name}.json"
    if not path.exists():
        pytest.skip(f"{path} missing")
    return json.loads(path.read_text())


def test_check_runs_checkdb_then_dbinfo_and_reports_last_known_good():
    c = case("mssql_northwind_page_corruption")
    hook = ReplayHook([
        ("SELECT DB_NAME()", [(["name"], [("NORTHWND",)])]),
        ("DBCC CHECKDB", [(c["columns"], c["rows"])]),
        ("DBCC DBINFO", [(["ParentObject", "Object", "Field", "VALUE"],
                          [("DBINFO", "x", "dbi_dbccLastKnownGood", "1900-01-01 00:00:00.000")])]),
    ])
    report = mssql.check(hook, mode="full", options=mssql.CheckDbOptions(maxdop=2))
    assert hook.sent[1] == "DBCC CHECKDB ([NORTHWND]) WITH NO_INFOMSGS, ALL_ERRORMSGS, TABLERESULTS, MAXDOP = 2"
    assert report.verdict is Verdict.FAIL and report.command == hook.sent[1]
    assert report.last_known_good == "never" and report.pages == ["1:295"]
    assert report.minimum_repair_level == "REPAIR_ALLOW_DATA_LOSS"


def test_killed_session_or_timeout_is_error():
    hook = ReplayHook([("SELECT DB_NAME()", [(["name"], [("S",)])]),
                       ("DBCC CHECKDB", OSError("DB-Lib error message 20003: Adaptive Server connection timed out"))])
    report = mssql.check(hook, mode="physical_only")
    assert report.verdict is Verdict.ERROR and "timed out" in report.error
    assert "PHYSICAL_ONLY" in report.command
    assert any("logical checks" in c for c in report.coverage)


def test_invalid_combination_sends_nothing():
    hook = ReplayHook([])
    with pytest.raises(mssql.InvalidOptions):
        mssql.check(hook, mode="physical_only", options=mssql.CheckDbOptions(data_purity=True))
    assert hook.sent == []


# ---------------------------------------------------------------- SQL Server's own figures

LOCAL = Path(__file__).resolve().parent / "integrity_cases"


def local_case(name):
    return json.loads((LOCAL / f"{name}.json").read_text())


def test_counts_are_the_8989_row_with_its_8990_and_8954_breakdown():
    rows = [row(8905, 16, "Extent (1:1200) in database ID 7 is marked allocated in the GAM, but no SGAM or IAM "
                          "has allocated it.", file=1, page=1200),
            row(8928, 16, "Page (1:9) could not be processed.", obj=5, index=1, file=1, page=9),
            row(8939, 16, "Test failed.", obj=5, index=1, file=1, page=9),
            row(8954, 10, "CHECKDB found 1 allocation errors and 0 consistency errors not associated with any single "
                          "object."),
            row(8990, 10, "CHECKDB found 0 allocation errors and 2 consistency errors in table 'dbo.Order Details' "
                          "(object ID 5).", obj=5),
            row(8989, 10, "CHECKDB found 1 allocation errors and 2 consistency errors in database 'O''Brien 2'.")]
    result = evaluate(rows)
    assert (result["allocation_errors"], result["consistency_errors"], result["error_rows"]) == (1, 2, 3)
    assert [(c.scope, c.table, c.object_id, c.allocation_errors, c.consistency_errors)
            for c in result["object_counts"]] == [("no single object", None, None, 1, 0),
                                                  ("table", "dbo.Order Details", 5, 0, 2)]
    assert result["count_notes"] == [] and result["verdict"] is Verdict.FAIL


def test_a_breakdown_that_does_not_add_up_is_reported_beside_the_total():
    rows = [row(8928, 16, "a", obj=5, index=1, file=1, page=9), row(8939, 16, "b", obj=5, index=1, file=1, page=9),
            row(8990, 10, "CHECKDB found 0 allocation errors and 1 consistency errors in table 't' (object ID 5).",
                obj=5),
            row(8989, 10, "CHECKDB found 0 allocation errors and 2 consistency errors in database 'S'.")]
    result = evaluate(rows)
    assert (result["allocation_errors"], result["consistency_errors"]) == (0, 2)
    assert result["count_notes"] == ["the 8990 per-table and 8954 rows add up to 0 allocation and 1 consistency "
                                     "error(s); the 8989 summary says 0 and 2"]


def test_more_rows_than_the_summary_counts_keeps_the_summary_and_says_so():
    case = local_case("mssql2019_summary_1_2_with_four_error_rows")
    result = mssql.evaluate(mssql.rows_to_dicts(case["columns"], case["rows"]))
    assert (result["allocation_errors"], result["consistency_errors"], result["error_rows"]) == (1, 2, 4)
    assert result["count_notes"] == ["the 8989 summary counts 1 allocation and 2 consistency error(s) (3 in all) but "
                                     "4 error rows were returned, 1 of them at severity 20 or more (824)"]
    assert result["verdict"] is Verdict.FAIL


def test_summary_text_not_understood_never_passes():
    german = row(8989, 10, "CHECKDB hat 0 Zuordnungsfehler und 0 Konsistenzfehler in der StagingDB-Datenbank gefunden.")
    result = evaluate([german])
    assert result["verdict"] is Verdict.ERROR and "us_english" in result["error"]
    assert "not understood" in result["count_notes"][0]
    result = evaluate([row(8928, 16, "Page (1:9) could not be processed.", obj=5, index=1, file=1, page=9), german])
    assert result["verdict"] is Verdict.FAIL and result["error_rows"] == 1 and "not understood" in result["count_notes"][0]


@pytest.mark.parametrize("columns", [
    COLS[:-1],                                                     # Allocation missing
    COLS + ["Extra"],                                              # an unknown column
    ["ParentObject", "Object", "Field", "VALUE"],                  # DBCC DBINFO's shape
    ["Error", "MessageText"],                                      # a look-alike with an Error column
    [c for c in COLS if c not in ("DbFragId",)],                   # neither layout
])
def test_columns_of_another_shape_are_refused(columns):
    with pytest.raises(mssql.UnexpectedColumns, match="not a DBCC CHECKDB TABLERESULTS result set"):
        mssql.rows_to_dicts(columns, [[0] * len(columns)])


def test_non_integer_error_or_width_mismatch_is_refused():
    bad = row(8989, 10, "x")
    bad[0] = "eight"
    with pytest.raises(mssql.UnexpectedColumns, match="non-integer"):
        mssql.rows_to_dicts(COLS, [bad])
    with pytest.raises(mssql.UnexpectedColumns, match="22 values for 23 columns"):
        mssql.rows_to_dicts(COLS, [SUMMARY_0[:-1]])


def test_a_result_set_of_another_shape_makes_the_check_error():
    hook = ReplayHook([
        ("SELECT DB_NAME()", [(["name"], [("S",)])]),
        ("DBCC CHECKDB", [(COLS, [SUMMARY_0]), (["Error", "Text"], [(8928, "Page (1:9) could not be processed.")])]),
        ("DBCC DBINFO", []),
    ])
    report = mssql.check(hook)
    assert report.verdict is Verdict.ERROR and report.findings == []
    assert "not a DBCC CHECKDB TABLERESULTS result set" in report.error and "['Text']" in report.error


@pytest.mark.parametrize("name", ["mssql2008_summary_2_1_with_four_error_rows", "mssql2008_summary_clean_but_824",
                                  "mssql2008_clean_infomsgs"])
def test_sql_server_2008_rows_through_check(name):
    """SQL Server 2008 R2 names its columns Id and IndId and returns 18 of them."""
    c = local_case(name)
    assert "Id" in c["columns"] and "ObjectId" not in c["columns"] and len(c["columns"]) == 18
    hook = ReplayHook([("SELECT DB_NAME()", [(["name"], [("StagingDB",)])]),
                       ("DBCC CHECKDB", [(c["columns"], c["rows"])]), ("DBCC DBINFO", OSError("no sysadmin"))])
    report = mssql.check(hook, mode="physical_only" if "PHYSICAL_ONLY" in c["options"] else "full")
    exp = c["expected"]
    assert report.verdict.value == exp["verdict"], report.render()
    assert (report.allocation_errors, report.consistency_errors, report.error_rows) == \
        (exp["allocation_errors"], exp["consistency_errors"], exp["error_rows"])
    assert report.counts_reconcile is exp["counts_reconcile"]
    text = report.render()
    if not exp["counts_reconcile"]:
        assert "figures do not reconcile" in report.summary()
        assert all(f"counts disagree: {n}" in text for n in report.count_notes)
    out = report.to_dict()
    json.dumps(out)
    assert out["counts_reconcile"] is exp["counts_reconcile"] and out["error_rows"] == exp["error_rows"]


def test_history_row_carries_sql_servers_counts():
    from washline.integrity import history

    c = local_case("mssql2008_summary_2_1_with_four_error_rows")
    report = mssql.report_from_records(mssql.rows_to_dicts(c["columns"], c["rows"]), database="StagingDB",
                                       mode="full", command="DBCC CHECKDB", started=mssql.utcnow(), options=[],
                                       coverage=[])
    values = dict(zip(history.COLUMNS, history.row_values(report, "mssql")))
    assert (values["allocation_errors"], values["consistency_errors"], values["findings"]) == (2, 1, 4)
