"""Least privilege on the target databases.

No Docker engine runs here, so the init steps of the compose stack are held to
their content: the SQL Server script run by ``sqlserver-init`` and the Oracle
first-start script (run for real with a stand-in ``sqlplus`` that records what
it is fed). ``.env.example`` never logs in as ``sa`` or ``system``, and the
integrity modules' privilege errors (recorded ORA- / SQL Server errors through
``check()``) name the same grants as the init scripts and the README table.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from dotenv import dotenv_values

from washline.integrity import mssql, oracle
from washline.integrity.report import Verdict

ROOT = Path(__file__).resolve().parents[2]
MSSQL_INIT = ROOT / "sql" / "mssql" / "init" / "01_washline_login.sql"
ORACLE_INIT = ROOT / "sql" / "oracle" / "init" / "01_washline_user.sh"
CASES = ROOT.parent / "shared" / "cases" / "integrity"
#: what the Oracle user may be granted, and nothing else
ORACLE_GRANTS = {
    "GRANT CREATE SESSION TO washline",
    "GRANT CREATE TABLE TO washline",
    "GRANT CREATE VIEW TO washline",
    "GRANT SELECT ON SYS.V_$DATABASE_BLOCK_CORRUPTION TO washline",
    "GRANT EXECUTE ON SYS.DBMS_HM TO washline",
    "GRANT SELECT ON SYS.V_$HM_RUN TO washline",
    "GRANT SELECT ON SYS.V_$HM_FINDING TO washline",
}
BROAD = re.compile(r"\b(ANY|DBA|RESOURCE|CONNECT|SYSDBA|SYSADMIN|SELECT_CATALOG_ROLE|CONTROL\s+SERVER|"
                   r"ALTER\s+SERVER\s+ROLE|sp_addsrvrolemember|sp_addrolemember|securityadmin|serveradmin)\b", re.I)


def env_example() -> dict[str, str]:
    return {k: v or "" for k, v in dotenv_values(ROOT / ".env.example").items()}


def services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yaml").read_text())["services"]


def sql_statements(text: str) -> list[str]:
    """The script's statements without comments, whitespace collapsed."""
    body = re.sub(r"--[^\n]*", "", text)
    return [" ".join(part.split()) for part in re.split(r";|\bGO\b", body) if part.strip()]


def test_env_example_never_logs_in_as_sa_or_system():
    env = env_example()
    logins = {k: json.loads(v).get("login") for k, v in env.items() if k.startswith("AIRFLOW_CONN_")}
    assert logins["AIRFLOW_CONN_WASHLINE_STAGING_MSSQL"] == "washline"
    assert logins["AIRFLOW_CONN_WASHLINE_STAGING_ORACLE"] == "washline"
    bad = {k: v for k, v in logins.items() if str(v).lower() in ("sa", "system", "sys")}
    assert not bad, f"connections logging in as an administrator: {bad}"
    mssql_conn = json.loads(env["AIRFLOW_CONN_WASHLINE_STAGING_MSSQL"])
    assert mssql_conn["password"] == env["MSSQL_WASHLINE_PASSWORD"] != env["MSSQL_SA_PASSWORD"]
    # SQL Server's password policy (CHECK_POLICY = ON): 8+ characters from 3 of 4 classes
    pw = env["MSSQL_WASHLINE_PASSWORD"]
    classes = sum(bool(re.search(p, pw)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    assert len(pw) >= 8 and classes >= 3


def test_sqlserver_init_creates_a_login_that_owns_only_the_washline_database():
    text = MSSQL_INIT.read_text()
    statements = sql_statements(text)
    assert "IF DB_ID(N'washline') IS NULL CREATE DATABASE washline" in statements
    create = next(s for s in statements if "CREATE LOGIN washline" in s)
    assert "PASSWORD = N'$(WASHLINE_MSSQL_PASSWORD)'" in create and "DEFAULT_DATABASE = washline" in create
    assert "CHECK_POLICY = ON" in create
    assert "ALTER AUTHORIZATION ON DATABASE::washline TO washline" in statements
    # nothing server-wide and no other database
    assert not [s for s in statements if BROAD.search(s)], [s for s in statements if BROAD.search(s)]
    assert not [s for s in statements if re.match(r"(GRANT|EXEC)\b", s, re.I)]
    assert {s.split()[1].lower() for s in statements if s.upper().startswith("USE ")} == {"washline"}
    # no password in the file; the compose service feeds it from the environment
    env = env_example()
    assert env["MSSQL_WASHLINE_PASSWORD"] not in text and env["MSSQL_SA_PASSWORD"] not in text
    init = services()["sqlserver-init"]
    cmd = init["entrypoint"]
    script = cmd[cmd.index("-i") + 1]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in init["volumes"]}
    assert (ROOT / mounts[str(Path(script).parent)] / Path(script).name).resolve() == MSSQL_INIT
    assert "WASHLINE_MSSQL_PASSWORD" in init["environment"] and not any("PASSWORD" in a for a in cmd)


def test_oracle_init_grants_only_what_washline_uses(tmp_path):
    """Run the first-start script with a stand-in ``sqlplus`` that records its
    argv and stdin: the user gets exactly ``ORACLE_GRANTS`` (the ``$`` of the
    view survives the shell), the password goes in on stdin, never in argv."""
    mode = ORACLE_INIT.stat().st_mode
    assert mode & stat.S_IXUSR, "gvenzl/oracle-free sources (not runs) a .sh that is not executable"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sqlplus"
    fake.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp_path}/argv\ncat > {tmp_path}/stdin\n')
    fake.chmod(0o755)
    sentinel = "Pw-123-sentinel"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "ORACLE_APP_PASSWORD": sentinel}
    proc = subprocess.run([str(ORACLE_INIT)], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    argv, fed = (tmp_path / "argv").read_text(), (tmp_path / "stdin").read_text()
    assert sentinel not in argv and argv.split() == ["-s", "-L", "/", "as", "sysdba"]
    # sqlplus reads one command a line (SQL ends with ';')
    statements = [line.strip().rstrip(";") for line in fed.splitlines() if line.strip()]
    assert statements[:3] == ["WHENEVER SQLERROR EXIT SQL.SQLCODE", "SET DEFINE OFF",
                              "ALTER SESSION SET CONTAINER = FREEPDB1"]
    assert (f'CREATE USER washline IDENTIFIED BY "{sentinel}" DEFAULT TABLESPACE USERS QUOTA UNLIMITED ON USERS'
            in statements) and statements[-1] == "EXIT"
    assert {s for s in statements if s.startswith("GRANT")} == ORACLE_GRANTS
    assert not [s for s in statements if BROAD.search(s)]
    # a password with "&" reaches CREATE USER as it is: SQL*Plus substitution is off before it
    # (with it on, "&x" prompts for a value and reads the next line of the script as the answer)
    amp = "Pw&grant-1"
    proc = subprocess.run([str(ORACLE_INIT)], env=dict(env, ORACLE_APP_PASSWORD=amp), capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    fed = [line.strip().rstrip(";") for line in (tmp_path / "stdin").read_text().splitlines() if line.strip()]
    create = next(i for i, s in enumerate(fed) if s.startswith("CREATE USER"))
    assert "SET DEFINE OFF" in fed[:create] and f'IDENTIFIED BY "{amp}"' in fed[create]
    # a double quote would end the quoted password: refused before sqlplus runs
    (tmp_path / "stdin").unlink()
    proc = subprocess.run([str(ORACLE_INIT)], env=dict(env, ORACLE_APP_PASSWORD='Pw"x'), capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode != 0 and "double quote" in proc.stderr and not (tmp_path / "stdin").exists()
    # without the password it stops before sqlplus
    proc = subprocess.run([str(ORACLE_INIT)], env={"PATH": env["PATH"]}, capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "ORACLE_APP_PASSWORD" in proc.stderr
    # compose mounts the folder where the image runs first-start scripts, without APP_USER
    ora = services()["oracle"]
    assert "./sql/oracle/init:/container-entrypoint-initdb.d:ro" in ora["volumes"]
    assert "APP_USER" not in ora["environment"] and "ORACLE_APP_PASSWORD" in ora["environment"]


# -- the privilege errors of the integrity checks name the grants of the init scripts --

class OracleReplay:
    """OracleHook stand-in: statement prefix -> rows or the recorded exception."""

    def __init__(self, script):
        self.script, self.sent = script, []
        self.connection = type("C", (), {"extra_dejson": {}})()

    def get_conn(self):
        hook = self

        class Cur:
            description = None

            def execute(self, sql, params=None):
                hook.sent.append(sql)
                out = next(o for p, o in hook.script if sql.startswith(p))
                if isinstance(out, Exception):
                    raise out
                self.rows = out

            def fetchone(self):
                return self.rows[0]

            def fetchall(self):
                return self.rows

        return type("Conn", (), {"call_timeout": 0, "cursor": lambda s: Cur(), "close": lambda s: None})()


def test_oracle_missing_view_grant_names_the_grant_the_init_script_gives():
    path = CASES / "oracle_insufficient_privileges.json"
    if not path.exists():
        pytest.skip(f"{path} missing")
    case = json.loads(path.read_text())
    hook = OracleReplay([("SELECT SYS_CONTEXT", [("FREEPDB1", "WASHLINE")]), ("SELECT COUNT(*)", [(1,)]),
                         ("ANALYZE", []), ("SELECT FILE#", RuntimeError(case["error"]["message"]))])
    report = oracle.check(hook, tables=["staging_records"])
    assert report.verdict.value == case["expected"]["verdict"] == "ERROR"
    grant = "GRANT SELECT ON SYS.V_$DATABASE_BLOCK_CORRUPTION"
    assert grant in report.error and f"{grant} TO washline" in ORACLE_GRANTS
    # ANALYZE: the message says ownership suffices, which is what the init script relies on
    text = oracle.classify_error("ORA-01031", "ORA-01031: insufficient privileges", "STAGING_RECORDS")[2]
    assert "must own them" in text and not any("ANALYZE" in g for g in ORACLE_GRANTS)


def test_mssql_missing_permission_names_the_ownership_the_init_script_gives():
    import pymssql

    class Cursor:
        def execute(self, sql, params=None):
            if sql.startswith("DBCC CHECKDB"):
                raise pymssql.OperationalError(
                    2571, b"User 'washline' does not have permission to run DBCC CHECKDB for database 'washline'.")
            self.row = ("washline",)

        def fetchone(self):
            return self.row

    class Hook:
        def get_conn(self):
            return type("Conn", (), {"cursor": lambda s: Cursor(), "close": lambda s: None})()

    report = mssql.check(Hook())
    assert report.verdict is Verdict.ERROR and "does not have permission" in report.error
    assert "missing privilege" in report.error and "db_owner" in report.error
    statement = re.search(r"ALTER AUTHORIZATION ON DATABASE::<database> TO <login>", report.error).group(0)
    filled = statement.replace("<database>", "washline").replace("<login>", "washline")
    assert filled in sql_statements(MSSQL_INIT.read_text())
    # a message that only carries "Msg 916" text is named too; other errors are left as they are
    assert "missing privilege" in mssql.describe_error(RuntimeError("Msg 916, Level 14: not able to access"))
    assert "missing privilege" not in mssql.describe_error(OSError("Adaptive Server connection timed out"))


def test_readme_table_lists_the_same_grants():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Grants each check needs"):]
    section = section[: section.index("\n## ") if "\n## " in section else len(section)]
    for grant in ORACLE_GRANTS:
        assert grant.removesuffix(" TO washline") in section, grant
    assert "ALTER AUTHORIZATION ON DATABASE::washline TO washline" in section
    assert "QUOTA UNLIMITED ON USERS" in section
