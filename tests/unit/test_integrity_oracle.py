"""Oracle ANALYZE / V$DATABASE_BLOCK_CORRUPTION / Health Monitor handling.

No Oracle server runs on this machine. ``check()`` is driven through the
provider's real ``OracleHook`` (apache-airflow-providers-oracle): the hook
reads its Airflow connection and builds the DSN as in production, and only
``oracledb.connect`` is replaced by a stand-in that replays recorded result
rows and raises the recorded ORA- / PLS- errors (shared/cases/integrity and
tests/unit/integrity_cases), recording every statement and bind value sent."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path

import oracledb
import pytest
from airflow.providers.oracle.hooks.oracle import OracleHook

from washline.integrity import oracle, oracle_hm
from washline.integrity.report import Verdict

VIEW_COLS = list(oracle.VIEW_COLUMNS)
LOCAL = Path(__file__).resolve().parent / "integrity_cases"
CONN_ID = "washline_oracle_rec"
HM_CASES = sorted(LOCAL.glob("oracle_hm_*.json"))


def test_analyze_command_quotes_and_refuses_bad_names():
    assert oracle.build_analyze("staging_links") == 'ANALYZE TABLE "STAGING_LINKS" VALIDATE STRUCTURE CASCADE ONLINE'
    assert oracle.build_analyze("t", owner="stg") == 'ANALYZE TABLE "STG"."T" VALIDATE STRUCTURE CASCADE ONLINE'
    with pytest.raises(ValueError):
        oracle.build_analyze('t" ; drop table x --')


@pytest.mark.parametrize("code", ["ORA-01498", "ORA-01499"])
def test_corruption_codes_are_fail(code):
    verdict, finding, text = oracle.classify_error(code, f"{code}: failure", "T")
    assert verdict is Verdict.FAIL and finding.code == code and text is None


def test_ora_01578_keeps_the_block_as_location():
    verdict, finding, _ = oracle.classify_error(
        "ORA-01578", "ORA-01578: ORACLE data block corrupted (file # 7, block # 88)", "STAGING_RECORDS")
    assert verdict is Verdict.FAIL and finding.location == "7:88"


@pytest.mark.parametrize("code,grant", [("ORA-00942", "SELECT_CATALOG_ROLE"), ("ORA-01031", "ANALYZE ANY")])
def test_privilege_errors_are_error_naming_the_grant(code, grant):
    verdict, finding, text = oracle.classify_error(code, f"{code}: nope")
    assert verdict is Verdict.ERROR and finding is None and grant in text


def test_view_media_and_logical():
    findings, blocks = oracle.parse_block_corruption(VIEW_COLS, [(4, 35, 1, 0, "CHECKSUM"), (7, 88, 2, 99, "LOGICAL")])
    assert [f.code for f in findings] == ["MEDIA", "LOGICAL"] and blocks == 3
    assert findings[0].location == "4:35"
    # any column order and case, CON_ID allowed; by position only for the five selected columns
    findings, blocks = oracle.parse_block_corruption(["con_id", "block#", "file#", "corruption_type", "blocks",
                                                      "corruption_change#"], [(3, 35, 4, "CHECKSUM", 1, 0)])
    assert findings[0].location == "4:35" and blocks == 1
    assert oracle.parse_block_corruption(None, [(4, 35, 1, 0, "CHECKSUM")])[1] == 1
    # python-oracledb may give NUMBER as float or Decimal (fetch_decimals)
    from decimal import Decimal

    findings, blocks = oracle.parse_block_corruption(VIEW_COLS, [(Decimal("7"), 88.0, Decimal("8"), 0, "ALL ZERO")])
    assert findings[0].location == "7:88" and blocks == 8


@pytest.mark.parametrize("columns,rows", [
    (["OWNER", "SEGMENT_NAME", "FILE_ID", "BLOCK_ID", "BLOCKS"], [("WASHLINE", "STAGING_RECORDS", 7, 80, 8)]),
    (VIEW_COLS[:4], [(4, 35, 1, 0)]),                                  # a column short
    (VIEW_COLS + ["EXTRA"], [(4, 35, 1, 0, "CHECKSUM", 1)]),           # an unknown column
    (VIEW_COLS, [(None, None, 1, 0, "CHECKSUM")]),                     # right names, no block
    (VIEW_COLS, [(4, 35.5, 1, 0, "CHECKSUM")]),                        # not a block number
    (VIEW_COLS, [(4, 35, 1, 0)]),                                      # row narrower than its columns
    (None, [(4, 35, 1)]),                                              # by position, wrong width
])
def test_a_result_of_another_shape_is_refused_not_read(columns, rows):
    with pytest.raises(oracle.UnexpectedResult, match="V\\$DATABASE_BLOCK_CORRUPTION"):
        oracle.parse_block_corruption(columns, rows)


def test_error_code_from_text_and_from_oracledb_error_object():
    assert oracle.error_code(RuntimeError("ORA-01499: table/index cross reference failure")) == "ORA-01499"

    class Err:
        full_code = "ORA-00942"
        message = "table or view does not exist"

    assert oracle.error_code(Exception(Err())) == "ORA-00942"


def test_rman_command_failure_is_reported(tmp_path):
    ok = [sys.executable, "-c", "print('Finished validate')"]
    oracle.run_rman(ok, timeout_s=30)
    with pytest.raises(oracle.OracleCheckError, match="exited 3"):
        oracle.run_rman([sys.executable, "-c", "import sys; print('RMAN-03009'); sys.exit(3)"], 30)
    with pytest.raises(oracle.OracleCheckError, match="list of strings"):
        oracle.run_rman("rman target /", 30)


# ------------------------------------------------------------ Health Monitor: statements and parsing

def test_run_check_is_one_plsql_call_with_binds_only():
    assert oracle_hm.RUN_CHECK_SQL == (
        "BEGIN SYS.DBMS_HM.RUN_CHECK(check_name => :check_name, run_name => :run_name, "
        "timeout => :timeout, input_params => :input_params); END;")
    assert oracle_hm.RUN_QUERY == "SELECT RUN_ID, CHECK_NAME, STATUS, ERROR_NUMBER FROM V$HM_RUN WHERE NAME = :run_name"
    assert oracle_hm.FINDING_QUERY == (
        "SELECT FINDING_ID, PARENT_ID, NAME, TYPE, PRIORITY, STATUS, DESCRIPTION, DAMAGE_DESCRIPTION "
        "FROM V$HM_FINDING WHERE RUN_ID = :run_id ORDER BY FINDING_ID")
    name = oracle_hm.run_name(oracle_hm.DATA_BLOCK, dt.datetime(2025, 3, 9, 2, 30, 5, tzinfo=dt.timezone.utc), "a1f0")
    assert name == "WL_DBI_20250309023005_A1F0" and len(name) <= 30
    assert oracle_hm.run_binds(oracle_hm.DATA_BLOCK, name, 90.7, oracle_hm.block_params(7, "88")) == {
        "check_name": "Data Block Integrity Check", "run_name": name, "timeout": 90,
        "input_params": "BLC_DF_NUM=7;BLC_BL_NUM=88"}
    assert oracle_hm.run_binds(oracle_hm.DICTIONARY, name)["timeout"] is None


def test_run_names_are_unique_and_inputs_are_validated():
    names = {oracle_hm.run_name(oracle_hm.DB_STRUCTURE) for _ in range(50)}
    assert len(names) > 40 and all(re.fullmatch(r"WL_DSI_\d{14}_[0-9A-F]{4}", n) for n in names)
    for bad in [(0, 88), (7, -1), ("7; DROP", 1), (True, 1), (None, 3)]:
        with pytest.raises(ValueError):
            oracle_hm.block_params(*bad)
    with pytest.raises(ValueError, match="unknown Health Monitor check"):
        oracle_hm.run_name("Redo Integrity Check")


FCOLS = list(oracle_hm.FINDING_COLUMNS)


def finding(fid, kind, priority, status, description, parent=0, name="F", damage=None):
    return (fid, parent, name, kind, priority, status, description, damage)


@pytest.mark.parametrize("kind,priority,status,severity", [
    ("FAILURE", "CRITICAL", "OPEN", "CRITICAL"),
    ("FAILURE", "HIGH", "OPEN", "ERROR"),
    ("FAILURE", "LOW", "OPEN", "WARNING"),
    ("FAILURE", "HIGH", "CLOSED", "WARNING"),
    ("FAILURE", "MEDIUM", "OPEN", "ERROR"),       # a priority washline does not know: a failure is a failure
    ("INFORMATIONAL", "LOW", "OPEN", "INFO"),
    ("informational", None, "OPEN", "INFO"),
])
def test_finding_mapping(kind, priority, status, severity):
    found = oracle_hm.parse_findings(FCOLS, [finding(1, kind, priority, status, "d")], oracle_hm.DB_STRUCTURE, "R")
    assert [f.severity for f in found] == [severity]
    verdict = oracle.report_from(found, 0, database="d", mode="full", command="", started=dt.datetime.now(dt.timezone.utc),
                                 coverage=[]).verdict
    assert verdict is {"CRITICAL": Verdict.FAIL, "ERROR": Verdict.FAIL, "WARNING": Verdict.WARN,
                       "INFO": Verdict.PASS}[severity]


def test_parent_is_folded_into_its_child_which_takes_the_higher_priority():
    rows = [finding(10, "FAILURE", "CRITICAL", "OPEN", "Datafile 7 contains one or more corrupt blocks"),
            finding(11, "FAILURE", "LOW", "OPEN", "Block 88 in datafile 7: 'x.dbf' is media corrupt", parent=10,
                    name="Media Block Corruption", damage="Object T owned by W might be unavailable"),
            finding(12, "FAILURE", "HIGH", "OPEN", "Block 90 in datafile 7: 'x.dbf' is media corrupt", parent=10)]
    found = oracle_hm.parse_findings(FCOLS, rows, oracle_hm.DATA_BLOCK, "WL_DBI_X")
    assert [(f.code, f.severity, f.location) for f in found] == [
        ("Media Block Corruption", "CRITICAL", "7:88"), ("F", "CRITICAL", "7:90")]
    assert found[0].message == ("Data Block Integrity Check, run WL_DBI_X: FAILURE LOW OPEN: Block 88 in datafile 7: "
                                "'x.dbf' is media corrupt; damage: Object T owned by W might be unavailable; "
                                "part of: Datafile 7 contains one or more corrupt blocks")


@pytest.mark.parametrize("columns,rows,match", [
    (FCOLS[:-1], [], "missing \\['DAMAGE_DESCRIPTION'\\]"),
    (FCOLS + ["CON_ID"], [], "unexpected \\['CON_ID'\\]"),
    (["ID", "TYPE", "NAME", "VALUE"], [(1, "RUN", "CHECK_MASK", "ALL")], "V\\$HM_FINDING result has columns"),
    (FCOLS, [finding(1, "RECOMMENDATION", "HIGH", "OPEN", "d")], "neither FAILURE nor INFORMATIONAL"),
    (FCOLS, [(1, 0, "F")], "3 values for 8 columns"),
])
def test_findings_of_another_shape_are_refused(columns, rows, match):
    with pytest.raises(oracle_hm.UnexpectedResult, match=match):
        oracle_hm.parse_findings(columns, rows, oracle_hm.DICTIONARY, "R")


RCOLS = list(oracle_hm.RUN_COLUMNS)


def test_run_status_other_than_completed_is_an_error():
    assert oracle_hm.parse_run(RCOLS, [(5, "Dictionary Integrity Check", "COMPLETED", 0)], "R", oracle_hm.DICTIONARY) == 5
    for status, number in [("TIMEDOUT", 0), ("ERROR", 51001), ("INTERRUPTED", None), ("COMPLETED", 600)]:
        with pytest.raises(oracle_hm.HealthMonitorError, match=status):
            oracle_hm.parse_run(RCOLS, [(5, "Dictionary Integrity Check", status, number)], "R", oracle_hm.DICTIONARY)
    with pytest.raises(oracle_hm.UnexpectedResult, match="0 row"):
        oracle_hm.parse_run(RCOLS, [], "R", oracle_hm.DICTIONARY)
    with pytest.raises(oracle_hm.UnexpectedResult, match="of check"):
        oracle_hm.parse_run(RCOLS, [(5, "Redo Integrity Check", "COMPLETED", 0)], "R", oracle_hm.DICTIONARY)


def test_plan_by_mode_and_connection_extra():
    runs, cov = oracle_hm.plan({}, "full", [(7, 88), (7, 88), (4, 35)])
    assert runs == [(oracle_hm.DB_STRUCTURE, None), (oracle_hm.DICTIONARY, None),
                    (oracle_hm.DATA_BLOCK, "BLC_DF_NUM=7;BLC_BL_NUM=88"), (oracle_hm.DATA_BLOCK, "BLC_DF_NUM=4;BLC_BL_NUM=35")]
    assert cov == []
    runs, cov = oracle_hm.plan({"health_monitor_blocks": [[9, 12]]}, "physical_only", [])
    assert runs == [(oracle_hm.DB_STRUCTURE, None), (oracle_hm.DATA_BLOCK, "BLC_DF_NUM=9;BLC_BL_NUM=12")]
    assert any("Dictionary Integrity Check (a logical check: full mode only)" in c for c in cov)
    runs, cov = oracle_hm.plan({"health_monitor": False}, "full", [(7, 88)])
    assert runs == [] and "health_monitor" in cov[0]
    runs, cov = oracle_hm.plan({"health_monitor": [oracle_hm.DICTIONARY]}, "full", [(7, 88)])
    assert runs == [(oracle_hm.DICTIONARY, None)] and len(cov) == 2
    runs, cov = oracle_hm.plan({}, "full", [(1, b) for b in range(1, 40)])
    assert len([r for r in runs if r[0] == oracle_hm.DATA_BLOCK]) == oracle_hm.MAX_BLOCKS
    assert any("23 more named block(s)" in c for c in cov)
    for bad in [{"health_monitor": "yes"}, {"health_monitor": ["Redo Integrity Check"]},
                {"health_monitor_blocks": [7, 88]}, {"health_monitor_blocks": [["a", 1]]}]:
        with pytest.raises(ValueError):
            oracle_hm.plan(bad, "full", [])


# ------------------------------------------------------------ check() through the real OracleHook


class Replay:
    """What the patched ``oracledb.connect`` returns. ``script`` maps a
    statement prefix to an outcome, or a list of outcomes used in turn (the
    last one repeats): ``(columns, rows)``, None (no result set) or an exception."""

    def __init__(self, script):
        self.script = [(prefix, list(out) if isinstance(out, list) else [out]) for prefix, out in script]
        self.sent: list[tuple[str, object]] = []
        self.connect_kwargs: dict = {}
        self.call_timeout = 0
        self.closed = False

    def cursor(self):
        return ReplayCursor(self)

    def close(self):
        self.closed = True


class ReplayCursor:
    def __init__(self, conn):
        self.conn, self.description, self.rows = conn, None, []

    def execute(self, sql, params=None):
        self.conn.sent.append((sql, params))
        for prefix, outcomes in self.conn.script:
            if sql.startswith(prefix):
                out = outcomes.pop(0) if len(outcomes) > 1 else outcomes[0]
                if isinstance(out, Exception):
                    raise out
                cols, self.rows = out if out is not None else (None, [])
                self.description = [(c, None, None, None, None, None, None) for c in cols] if cols else None
                return
        raise AssertionError(f"unexpected statement {sql}")

    def fetchone(self):
        return self.rows[0]

    def fetchall(self):
        return list(self.rows)


@pytest.fixture
def through_hook(monkeypatch):
    """``make(script, extra)`` -> (OracleHook, Replay) for the connection ``washline_oracle_rec``."""

    def make(script, extra=None):
        conn = {"conn_type": "oracle", "host": "oracle.example.invalid", "port": 1521, "login": "washline",
                "password": "rec-secret",  # secret-scan: allow (a fake password the replay checks)
                "extra": {"service_name": "FREEPDB1", **(extra or {})}}
        monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))
        replay = Replay(script)

        def connect(**kwargs):
            replay.connect_kwargs = kwargs
            return replay

        monkeypatch.setattr(oracledb, "connect", connect)
        return OracleHook(oracle_conn_id=CONN_ID), replay

    return make


DB = ("SELECT SYS_CONTEXT", (["DB", "U"], [("FREEPDB1", "WASHLINE")]))
TABLE_EXISTS = ("SELECT COUNT(*)", (["N"], [(1,)]))
RUN_OK = ("BEGIN SYS.DBMS_HM.RUN_CHECK", None)
CLEAN_VIEW = ("SELECT FILE#", (VIEW_COLS, []))


def run_rows(check, status="COMPLETED", run_id=1):
    return RCOLS, [(run_id, check, status, 0)]


def no_findings():
    return FCOLS, []


def test_full_check_sends_analyze_view_and_each_health_monitor_call_with_binds(through_hook):
    hook, rec = through_hook([
        DB, TABLE_EXISTS,
        ('ANALYZE TABLE "STAGING_RECORDS"', RuntimeError("ORA-01578: ORACLE data block corrupted (file # 7, block # 88)")),
        ("ANALYZE", None),
        ("SELECT FILE#", (VIEW_COLS, [(4, 35, 1, 0, "CHECKSUM")])),
        RUN_OK,
        ("SELECT RUN_ID", [run_rows(oracle_hm.DB_STRUCTURE, run_id=11), run_rows(oracle_hm.DICTIONARY, run_id=12),
                           run_rows(oracle_hm.DATA_BLOCK, run_id=13), run_rows(oracle_hm.DATA_BLOCK, run_id=14)]),
        ("SELECT FINDING_ID", [no_findings(), no_findings(),
                               (FCOLS, [finding(131, "FAILURE", "HIGH", "OPEN",
                                                "Block 88 in datafile 7: '/o/staging01.dbf' is media corrupt",
                                                name="Media Block Corruption")]),
                               no_findings()]),
    ])
    report = oracle.check(hook, mode="full", tables=["staging_records", "staging_links"], timeout_s=120)
    # the provider's hook built the connection from the Airflow connection
    assert rec.connect_kwargs["user"] == "washline" and rec.connect_kwargs["password"] == "rec-secret"
    assert rec.connect_kwargs["dsn"] == oracledb.makedsn("oracle.example.invalid", 1521, service_name="FREEPDB1")
    assert rec.call_timeout == 120_000 and rec.closed
    calls = [(sql, params) for sql, params in rec.sent if sql == oracle_hm.RUN_CHECK_SQL]
    assert [(p["check_name"], p["input_params"], p["timeout"]) for _, p in calls] == [
        ("DB Structure Integrity Check", None, 120), ("Dictionary Integrity Check", None, 120),
        ("Data Block Integrity Check", "BLC_DF_NUM=7;BLC_BL_NUM=88", 120),   # named by ORA-01578
        ("Data Block Integrity Check", "BLC_DF_NUM=4;BLC_BL_NUM=35", 120)]   # named by the view
    names = [p["run_name"] for _, p in calls]
    assert len(set(names)) == 4 and all(re.fullmatch(r"WL_(DSI|DIC|DBI)_\d{14}_[0-9A-F]{4}", n) for n in names)
    # each run is looked up by its own name, and its findings by the run id V$HM_RUN gave
    assert [p for sql, p in rec.sent if sql == oracle_hm.RUN_QUERY] == [{"run_name": n} for n in names]
    assert [p for sql, p in rec.sent if sql == oracle_hm.FINDING_QUERY] == [{"run_id": i} for i in (11, 12, 13, 14)]
    assert report.verdict is Verdict.FAIL
    assert [(f.code, f.location) for f in report.findings] == [
        ("ORA-01578", "7:88"), ("MEDIA", "4:35"), ("Media Block Corruption", "7:88")]
    assert report.consistency_errors == 3 and report.pages == ["7:88", "4:35"]
    assert report.command.count("SYS.DBMS_HM.RUN_CHECK") == 4 and "BLC_DF_NUM=7;BLC_BL_NUM=88" in report.command


def test_physical_only_leaves_out_the_dictionary_check_and_says_so(through_hook):
    hook, rec = through_hook([DB, CLEAN_VIEW, RUN_OK, ("SELECT RUN_ID", run_rows(oracle_hm.DB_STRUCTURE)),
                              ("SELECT FINDING_ID", no_findings())])
    report = oracle.check(hook, mode="physical_only", tables=[])
    assert report.verdict is Verdict.PASS
    assert [p["check_name"] for sql, p in rec.sent if sql == oracle_hm.RUN_CHECK_SQL] == ["DB Structure Integrity Check"]
    assert any("Dictionary Integrity Check" in c for c in report.coverage)
    assert any("none tonight" in c for c in report.coverage)


def test_health_monitor_can_be_switched_off_in_the_connection_extra(through_hook):
    hook, rec = through_hook([DB, CLEAN_VIEW], extra={"health_monitor": False})
    report = oracle.check(hook, tables=[])
    assert report.verdict is Verdict.PASS and not any("DBMS_HM" in sql for sql, _ in rec.sent)
    assert any("health_monitor" in c for c in report.coverage)


def test_bad_health_monitor_extra_is_error_before_any_health_monitor_call(through_hook):
    hook, rec = through_hook([DB, CLEAN_VIEW], extra={"health_monitor": "yes"})
    report = oracle.check(hook, tables=[])
    assert report.verdict is Verdict.ERROR and "health_monitor must be" in report.error
    assert not any("DBMS_HM" in sql for sql, _ in rec.sent)


@pytest.mark.parametrize("failing,stage_grant", [
    ("BEGIN SYS.DBMS_HM.RUN_CHECK", "GRANT EXECUTE ON SYS.DBMS_HM TO <user>"),
    ("SELECT RUN_ID", "GRANT SELECT ON SYS.V_$HM_RUN TO <user>"),
    ("SELECT FINDING_ID", "GRANT SELECT ON SYS.V_$HM_FINDING TO <user>"),
])
def test_missing_health_monitor_privilege_is_error_naming_the_grant(through_hook, failing, stage_grant):
    errors = {"BEGIN SYS.DBMS_HM.RUN_CHECK": RuntimeError(
        "ORA-06550: line 1, column 7:\nPLS-00201: identifier 'SYS.DBMS_HM' must be declared\n"
        "ORA-06550: line 1, column 7:\nPL/SQL: Statement ignored")}
    script = [DB, CLEAN_VIEW, RUN_OK, ("SELECT RUN_ID", run_rows(oracle_hm.DB_STRUCTURE)),
              ("SELECT FINDING_ID", no_findings())]
    script = [(p, errors.get(p, RuntimeError("ORA-00942: table or view does not exist")) if p == failing else o)
              for p, o in script]
    hook, _ = through_hook(script)
    report = oracle.check(hook, tables=[])
    assert report.verdict is Verdict.ERROR and stage_grant in report.error and "missing privilege" in report.error
    assert "\n" not in report.error and not report.findings


def test_a_view_result_of_another_shape_is_error_not_invented_findings(through_hook):
    hook, rec = through_hook([DB, ("SELECT FILE#", (["OWNER", "SEGMENT_NAME", "FILE_ID", "BLOCK_ID", "BLOCKS"],
                                                    [("WASHLINE", "STAGING_RECORDS", 7, 80, 8)]))])
    report = oracle.check(hook, tables=[])
    assert report.verdict is Verdict.ERROR and report.findings == [] and report.corrupt_blocks == 0
    assert "V$DATABASE_BLOCK_CORRUPTION result has columns" in report.error and "None" not in report.error
    assert not any("DBMS_HM" in sql for sql, _ in rec.sent)


@pytest.mark.parametrize("path", HM_CASES, ids=lambda p: p.stem)
def test_recorded_health_monitor_runs_through_the_hook(through_hook, path):
    """Each recorded Health Monitor run (tests/unit/integrity_cases/oracle_hm_*.json), replayed
    behind the real OracleHook, gives the recorded verdict and figures."""
    case = json.loads(path.read_text())
    hm, expected = case["health_monitor"], case["expected"]
    run_out = (hm["run"]["columns"], hm["run"]["rows"]) if "run" in hm else None
    find_out = (hm["findings"]["columns"], hm["findings"]["rows"]) if "findings" in hm else None
    script = [DB, CLEAN_VIEW, RUN_OK, ("SELECT RUN_ID", run_out), ("SELECT FINDING_ID", find_out)]
    if "error" in hm:
        failing = {"run_check": "BEGIN SYS.DBMS_HM.RUN_CHECK", "views": "SELECT RUN_ID"}[hm["error"]["stage"]]
        script = [(p, RuntimeError(hm["error"]["message"]) if p == failing else o) for p, o in script]
    extra = {"health_monitor": [hm["check"]]}
    if hm["input_params"]:
        file_no, block_no = re.fullmatch(r"BLC_DF_NUM=(\d+);BLC_BL_NUM=(\d+)", hm["input_params"]).groups()
        extra["health_monitor_blocks"] = [[int(file_no), int(block_no)]]
    hook, rec = through_hook(script, extra=extra)
    report = oracle.check(hook, mode="full", tables=[])
    assert report.verdict.value == expected["verdict"], report.render()
    call = [p for sql, p in rec.sent if sql == oracle_hm.RUN_CHECK_SQL]
    assert [(p["check_name"], p["input_params"]) for p in call] == [(hm["check"], hm["input_params"])]
    assert len(report.findings) == expected["findings"]
    if "error_contains" in expected:
        assert expected["error_contains"] in report.error
    for key in ("severity", "consistency_errors", "pages"):
        if key in expected:
            assert getattr(report, key) == expected[key], report.render()


def test_recorded_view_privilege_error_still_names_its_grant(through_hook):
    hook, _ = through_hook([DB, ("ANALYZE", None), TABLE_EXISTS,
                            ("SELECT FILE#", RuntimeError("ORA-00942: table or view does not exist"))])
    report = oracle.check(hook, tables=["staging_records"])
    assert report.verdict is Verdict.ERROR and "SELECT_CATALOG_ROLE" in report.error
    assert "V_$DATABASE_BLOCK_CORRUPTION" in report.error


def test_configured_rman_runs_first_and_a_failure_is_error(through_hook):
    hook, rec = through_hook([DB], extra={"rman_validate_command": [sys.executable, "-c", "raise SystemExit(1)"]})
    report = oracle.check(hook, tables=[])
    assert report.verdict is Verdict.ERROR and "RMAN" in report.error and rec.sent == []


def test_health_monitor_grant_messages_are_the_grants_the_init_script_gives():
    script = (Path(__file__).resolve().parents[2] / "sql" / "oracle" / "init" / "01_washline_user.sh").read_text()
    granted = {line.strip().rstrip(";").replace("\\$", "$") for line in script.splitlines()
               if line.strip().startswith("GRANT ")}
    named = set(re.findall(r"GRANT [A-Z]+ ON SYS\.[A-Z_$]+ TO <user>", " ".join(oracle_hm.GRANTS.values())))
    assert named == {"GRANT EXECUTE ON SYS.DBMS_HM TO <user>", "GRANT SELECT ON SYS.V_$HM_RUN TO <user>",
                     "GRANT SELECT ON SYS.V_$HM_FINDING TO <user>"}
    assert {g.replace("<user>", "washline") for g in named} <= granted
