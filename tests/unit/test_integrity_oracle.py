"""Oracle ANALYZE / V$DATABASE_BLOCK_CORRUPTION handling.

No Oracle server runs on this machine; ``check()`` is driven by a DB-API
stand-in that raises the recorded ORA- errors (shared/cases/integrity)."""

from __future__ import annotations

import sys

import pytest

from washline.integrity import oracle
from washline.integrity.report import Verdict

VIEW_COLS = ["FILE#", "BLOCK#", "BLOCKS", "CORRUPTION_CHANGE#", "CORRUPTION_TYPE"]


def test_analyze_command_quotes_and_refuses_bad_names():
    assert oracle.build_analyze("staging_links") == 'ANALYZE TABLE "STAGING_LINKS" VALIDATE STRUCTURE CASCADE ONLINE'
    assert oracle.build_analyze("t", owner="stg") == 'ANALYZE TABLE "STG"."T" VALIDATE STRUCTURE CASCADE ONLINE'
    with pytest.raises(ValueError):
        oracle.build_analyze('t" ; drop table x --')


@pytest.mark.parametrize("code", ["ORA-01498", "ORA-01499"])
def test_corruption_codes_are_fail(code):
    verdict, finding, text = oracle.classify_error(code, f"{code}: failure", "T")
    assert verdict is Verdict.FAIL and finding.code == code and text is None


@pytest.mark.parametrize("code,grant", [("ORA-00942", "SELECT_CATALOG_ROLE"), ("ORA-01031", "ANALYZE ANY")])
def test_privilege_errors_are_error_naming_the_grant(code, grant):
    verdict, finding, text = oracle.classify_error(code, f"{code}: nope")
    assert verdict is Verdict.ERROR and finding is None and grant in text


def test_view_media_and_logical():
    findings, blocks = oracle.parse_block_corruption(VIEW_COLS, [(4, 35, 1, 0, "CHECKSUM"), (7, 88, 2, 99, "LOGICAL")])
    assert [f.code for f in findings] == ["MEDIA", "LOGICAL"] and blocks == 3
    assert findings[0].location == "4:35"


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


class Hook:
    """OracleHook stand-in: statement prefix → rows or exception."""

    def __init__(self, script, extra=None):
        self.script, self.sent = script, []
        self.connection = type("C", (), {"extra_dejson": extra or {}})()

    def get_conn(self):
        hook = self

        class Cur:
            description = None

            def execute(self, sql, params=None):
                hook.sent.append(sql)
                for prefix, out in hook.script:
                    if sql.startswith(prefix):
                        if isinstance(out, Exception):
                            raise out
                        self.rows = out
                        self.description = [(c,) for c in VIEW_COLS]
                        return
                raise AssertionError(sql)

            def fetchone(self):
                return self.rows[0]

            def fetchall(self):
                return self.rows

        class Conn:
            call_timeout = 0

            def cursor(self):
                return Cur()

            def close(self):
                pass

        return Conn()


BASE = [("SELECT SYS_CONTEXT", [("FREEPDB1", "WASHLINE")]), ("SELECT COUNT(*)", [(1,)])]


def test_check_cross_reference_failure_is_fail_and_view_still_read():
    hook = Hook(BASE + [('ANALYZE TABLE "STAGING_LINKS"', RuntimeError("ORA-01499: table/index cross reference failure - see trace file")),
                        ("ANALYZE", []), ("SELECT FILE#", [])])
    report = oracle.check(hook, tables=["staging_records", "staging_links"])
    assert report.verdict is Verdict.FAIL and report.findings[0].obj == "STAGING_LINKS"
    assert report.command.count("ANALYZE TABLE") == 2 and oracle.VIEW in report.command


def test_check_without_view_privilege_is_error():
    hook = Hook(BASE + [("ANALYZE", []), ("SELECT FILE#", RuntimeError("ORA-00942: table or view does not exist"))])
    report = oracle.check(hook, tables=["staging_records"])
    assert report.verdict is Verdict.ERROR and "SELECT_CATALOG_ROLE" in report.error


def test_configured_rman_runs_first_and_a_failure_is_error():
    hook = Hook(BASE, extra={"rman_validate_command": [sys.executable, "-c", "raise SystemExit(1)"]})
    report = oracle.check(hook, tables=[])
    assert report.verdict is Verdict.ERROR and "RMAN" in report.error and hook.sent == []
