"""The load and publish code paths for SQL Server and Oracle, through the
providers' real ``MsSqlHook`` and ``OracleHook`` (picked from the connection
type), with a recording DB-API connection in place of the server.

The recorder answers the few queries the code reads (column lists, counts,
load ids) from what it was sent, so the tests check the statements, the bulk
path used, the bind style and the transaction boundaries.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from staging_data import write_slice
from washline.staging.dialects import StagingUnreachable, ddl_statements
from washline.staging.load import ValueTooLongError, load_slice
from washline.staging.publish import publish_slice
from washline.staging.spec import TABLES

SECRET = "s3cr3t-Pa55"


def _table(sql: str) -> str:
    m = re.search(r"(?:FROM|INTO)\s+(\S+)", sql, re.I)
    return m.group(1).split(".")[-1].strip('"[]').lower()


class RecordingCursor:
    def __init__(self, conn: "RecordingConnection"):
        self.conn, self.description, self._rows = conn, None, []

    def execute(self, sql: str, params: Any = None) -> None:
        self.conn.log.append(("execute", sql, params))
        self.description, self._rows = None, []
        rows = self.conn.rows
        if "WHERE 1 = 0" in sql:
            names = TABLES[_table(sql)].column_names
            self.description = [((n.upper() if self.conn.dialect == "oracle" else n), None) for n in names]
        elif sql.startswith("SELECT COUNT(*)"):
            self._rows = [(0 if "<>" in sql else rows.get(_table(sql), 0),)]
        elif sql.startswith("SELECT DISTINCT load_id"):
            self._rows = [("run-1",)] if rows.get("staging_records") else []
        elif sql.startswith("DELETE"):
            rows[_table(sql)] = 0
        elif sql.startswith("INSERT INTO") and " SELECT " in sql:
            rows[_table(sql)] = rows.get(re.search(r" FROM (\S+)", sql).group(1).split(".")[-1].strip('"[]').lower(), 0)

    def executemany(self, sql: str, seq: list) -> None:
        self.conn.log.append(("executemany", sql, len(seq)))
        self.conn.first_rows.setdefault(_table(sql), seq[0])
        self.conn.rows[_table(sql)] = self.conn.rows.get(_table(sql), 0) + len(seq)

    def fetchone(self):
        return self._rows[0] if self._rows else None

    def fetchall(self):
        return list(self._rows)

    def close(self):
        pass


class RecordingConnection:
    def __init__(self, dialect: str, bulk: bool):
        self.dialect, self.log, self.rows, self.first_rows = dialect, [], {}, {}
        if bulk:
            self.bulk_copy = self._bulk_copy

    def _bulk_copy(self, table_name, elements, column_ids=None, batch_size=1000, tablock=False,
                   check_constraints=False, fire_triggers=False):
        elements = list(elements)
        self.log.append(("bulk_copy", table_name, column_ids, len(elements), check_constraints))
        self.first_rows.setdefault(_table("FROM " + table_name), elements[0])
        name = table_name.split(".")[-1].strip("[]")
        self.rows[name] = self.rows.get(name, 0) + len(elements)

    def cursor(self):
        return RecordingCursor(self)

    def commit(self):
        self.log.append(("commit",))

    def rollback(self):
        self.log.append(("rollback",))

    def close(self):
        self.log.append(("close",))


@pytest.fixture(params=["mssql", "oracle"])
def recorded(request, monkeypatch):
    dialect = request.param
    conn = {"conn_type": dialect, "host": "db.example.invalid", "port": 1433 if dialect == "mssql" else 1521,
            "login": "washline", "password": SECRET, "schema": "washline"}
    monkeypatch.setenv("AIRFLOW_CONN_REC_STAGING", json.dumps(conn))
    if dialect == "mssql":
        from airflow.providers.microsoft.mssql.hooks.mssql import MsSqlHook as Hook
    else:
        from airflow.providers.oracle.hooks.oracle import OracleHook as Hook
    recorder = RecordingConnection(dialect, bulk=dialect == "mssql")
    seen_hooks = []

    def get_conn(self):
        seen_hooks.append(type(self).__name__)
        return recorder

    monkeypatch.setattr(Hook, "get_conn", get_conn)
    return dialect, recorder, seen_hooks


def test_load_and_publish_through_the_provider_hook(recorded, tmp_path):
    dialect, rec, seen = recorded
    result = load_slice("rec_staging", "2025-01-01", write_slice(tmp_path, "2025-01-01", n=6), "run-1",
                        schema="washline")
    assert seen == [{"mssql": "MsSqlHook", "oracle": "OracleHook"}[dialect]]
    assert result["rows"] == {"staging_records": 6, "staging_links": 6, "staging_clusters": 3}
    ops = [entry[0] for entry in rec.log]
    ddl = ddl_statements(dialect, "washline")
    assert [e[1] for e in rec.log[: len(ddl)]] == ddl  # the reviewed DDL file, schema-qualified
    # then one zero-row probe per column added after release (present here: no ALTER), and the DDL commits on its own
    from washline.staging.load import ADDED_COLUMNS

    probes = rec.log[len(ddl): len(ddl) + len(ADDED_COLUMNS)]
    assert [(e[0], e[1].endswith("WHERE 1 = 0")) for e in probes] == [("execute", True)] * len(ADDED_COLUMNS)
    assert ops[len(ddl) + len(ADDED_COLUMNS)] == "commit"
    assert ops[-2:] == ["commit", "close"] and ops.count("commit") == 2 and "rollback" not in ops
    if dialect == "mssql":
        bulk = [e for e in rec.log if e[0] == "bulk_copy"]
        assert [b[1] for b in bulk] == ["[washline].[staging_records]", "[washline].[staging_links]",
                                        "[washline].[staging_clusters]"]
        assert bulk[0][2] == list(range(1, 18)) and all(b[4] for b in bulk)  # check_constraints on
        deletes = [e for e in rec.log if e[0] == "execute" and e[1].startswith("DELETE")]
        assert deletes[0][1] == "DELETE FROM [washline].[staging_records] WHERE ds = %(ds)s"
        assert deletes[0][2] == {"ds": "2025-01-01"}
    else:
        many = [e for e in rec.log if e[0] == "executemany"]
        assert many[0][1].startswith('INSERT INTO "WASHLINE"."STAGING_RECORDS" ("DS", "LOAD_ID", "RECORD_ID"')
        assert many[0][1].endswith("VALUES (" + ", ".join(f":{i}" for i in range(1, 18)) + ")")
    first = rec.first_rows["staging_records"]
    assert first[:3] == ("2025-01-01", "run-1", "rec-0") and str(first[13]) == "1980-01-01"

    rec.log.clear()
    out = publish_slice("rec_staging", "2025-01-01", schema="washline")
    assert out["rows"] == {"published_records": 6, "published_links": 6, "published_clusters": 3}
    statements = [e[1] for e in rec.log if e[0] == "execute"]
    q = (lambda t: f"[washline].[{t}]") if dialect == "mssql" else (lambda t: f'"WASHLINE"."{t.upper()}"')
    delete_i = statements.index(f"DELETE FROM {q('published_records')} WHERE ds = "
                                + ("%(ds)s" if dialect == "mssql" else ":ds"))
    assert statements[delete_i + 1].startswith(f"INSERT INTO {q('published_records')} (")
    assert [e[0] for e in rec.log][-2:] == ["commit", "close"]
    log_insert = [e for e in rec.log if e[0] == "execute" and "publish_log" in e[1].lower() and "INSERT" in e[1]]
    assert log_insert[0][2]["records"] == 6 and log_insert[0][2]["published_at"].tzinfo is None


def test_bad_value_rolls_back_before_any_row_is_sent(recorded, tmp_path):
    dialect, rec, _ = recorded
    day = write_slice(tmp_path, "2025-01-01", n=4)
    import pyarrow.parquet as pq

    path = day["staging_records"] / "part-00000.parquet"
    table = pq.read_table(path)
    pq.write_table(table.set_column(table.schema.get_field_index("postcode"), "postcode",
                                    __import__("pyarrow").array(["2000", "2000", "9" * 17, "2000"])), path)
    with pytest.raises(ValueTooLongError, match=r"staging_records\.postcode: 17 characters, the column holds 16"):
        load_slice("rec_staging", "2025-01-01", day, "run-1")
    ops = [e[0] for e in rec.log]
    assert ops[-2:] == ["rollback", "close"] and ops.count("commit") == 1  # only the DDL commit
    assert not any(e[0] in ("bulk_copy", "executemany") for e in rec.log)


def test_unreachable_server_retries_then_fails_without_the_password(monkeypatch, caplog):
    monkeypatch.setenv("AIRFLOW_CONN_REC_STAGING", json.dumps(
        {"conn_type": "mssql", "host": "db.example.invalid", "login": "washline", "password": SECRET}))
    from airflow.providers.microsoft.mssql.hooks.mssql import MsSqlHook

    calls = []

    def refuse(self):
        calls.append(1)
        raise OSError(f"Adaptive Server connection failed (login washline/{SECRET})")

    monkeypatch.setattr(MsSqlHook, "get_conn", refuse)
    monkeypatch.setenv("WASHLINE_STAGING_CONNECT_DELAY", "0.01")
    with caplog.at_level("DEBUG"), pytest.raises(StagingUnreachable, match="rec_staging.*mssql at db.example.invalid.*3 attempt") as err:
        publish_slice("rec_staging", "2025-01-01")
    assert len(calls) == 3
    assert SECRET not in str(err.value) and "***" in str(err.value)
    assert SECRET not in caplog.text
