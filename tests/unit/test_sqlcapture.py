"""benchmarks/sqlcapture.py: which captured statements read rows (sqlparse), and the LIMIT they carry.
The capture itself runs around real GX validations in tests/integration/test_quality.py."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("sql, params, limit", [
    ("SELECT a FROM v WHERE a IS NULL LIMIT %(param_1)s::INTEGER", {"param_1": 0}, 0),
    ("SELECT a FROM v WHERE a = ? LIMIT ? OFFSET ?", ("x", 5, 0), 5),
    ("SELECT a FROM v WHERE a = ? LIMIT ?", ("x", 5), 5),
    ("SELECT a FROM v WHERE a = :p LIMIT :param_1", {"p": 1, "param_1": 7}, 7),
    ("SELECT a FROM v LIMIT 20", (), 20),
    ("SELECT a FROM v", (), None),
    ("SELECT a FROM (SELECT a FROM v LIMIT 3) x", (), None),  # a subquery's LIMIT is not the statement's
    ("SELECT a FROM v WHERE a = ? AND b = ? LIMIT ?", ("x", "y", 9), 9),
    ("SELECT a FROM v WHERE a = %s LIMIT %s", ("x", 4), 4),
])
def test_bound_limit(sqlcapture, sql, params, limit):
    assert sqlcapture.bound_limit(sql, params) == limit


def test_row_reads_flags_row_fetches_not_aggregates(sqlcapture):
    v = "wlgx_staging_records_20250101_0a1b2c3d"
    statements = [
        {"sql": f"SELECT * FROM (SELECT r.ds FROM x) AS {v}", "seconds": 9.4, "limit": None},  # reflection read
        {"sql": f"SELECT postcode AS unexpected_values FROM (SELECT * FROM {v}) AS anon_1 LIMIT %(p)s",
         "seconds": 2.0, "limit": 5},
        {"sql": f"SELECT postcode AS unexpected_values FROM (SELECT * FROM {v}) AS anon_1 LIMIT %(p)s",
         "seconds": 0.001, "limit": 0},
        {"sql": f"SELECT count(*) AS n FROM (SELECT * FROM {v}) AS anon_1", "seconds": 1.0, "limit": None},
        {"sql": f'SELECT "U".unexpected_count FROM (SELECT sum(c) AS unexpected_count FROM {v}) AS "U"',
         "seconds": 1.0, "limit": None},
        {"sql": f"SELECT 1 FROM {v} LIMIT %(param_1)s", "seconds": 0.001, "limit": 1},
        {"sql": "SELECT a FROM other_table", "seconds": 1.0, "limit": None},
        {"sql": f"SELECT anon_1.n FROM (SELECT COUNT(*) AS n FROM {v}) anon_1", "seconds": 1.0, "limit": None},
        {"sql": f"SELECT a, (b) FROM {v} WHERE c IN (SELECT max(c) FROM {v})", "seconds": 3.0, "limit": None},
    ]
    reads = sqlcapture.row_reads(statements, [v])
    assert [(r["seconds"], r["limit"]) for r in reads] == [(9.4, None), (2.0, 5), (3.0, None)]
