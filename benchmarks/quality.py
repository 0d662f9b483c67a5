"""Speed of the GX staging validation on a 1M-row PostgreSQL slice.

    .venv/bin/python benchmarks/quality.py [--rows 1000000] [--host 127.0.0.1] [--port 5432] [--dump-sql FILE]

Creates a throwaway database ``washline_bench_quality_<pid>`` on the local
PostgreSQL (trust auth, user ``postgres``), builds the staging tables from
``sql/postgres/staging.sql``, generates with ``generate_series`` one slice of
``--rows`` references (pairs share a cluster, every 10th reference is a
singleton) plus a second date of 10% of that size (so the slice restriction
matters), then measures in the same run:

* ``gx``: ``washline.quality.runner.validate_slice`` over the three suites
  (seconds, number of SQL statements GX sent, their summed seconds, and the
  statements that bring slice rows to the client, ``sqlcapture.row_reads``: no
  aggregate and not ``LIMIT 0``, e.g. a query asset's column reflection or a
  sample-value query; ``--dump-sql FILE`` writes every statement);
* ``hand_sql``: the equivalent hand-written counts (one aggregate query per
  table computing every expectation's count), seconds.

Prints a JSON document and a one-line summary; drops the database at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))
DS, OTHER = "2025-01-01", "2025-01-02"

GENERATE = """
INSERT INTO staging_records (ds, load_id, record_id, source, given_name, surname, postcode, state,
                             date_of_birth, soc_sec_id, source_file, line_number)
SELECT %(ds)s::text, 'bench', 'rec-' || g, 'febrl', 'NAME' || (g %% 977), 'SURNAME' || (g %% 1913),
       lpad((g %% 9000 + 1000)::text, 4, '0'), (ARRAY['NSW','VIC','QLD','WA','SA','TAS','ACT','NT'])[g %% 8 + 1],
       DATE '1950-01-01' + (g %% 20000), lpad((g %% 10000000)::text, 7, '0'), 'part-0000.csv', g + 1
FROM generate_series(0, %(n)s - 1) g;
INSERT INTO staging_links (ds, load_id, record_id, source, cluster_id, iteration, mu, quality, cluster_size)
SELECT %(ds)s::text, 'bench', 'rec-' || g, 'febrl',
       CASE WHEN g %% 10 = 9 THEN 'rec-' || g ELSE 'rec-' || (g - g %% 10 + (g %% 10) / 2 * 2) END,
       1, 0.6, 1.0, CASE WHEN g %% 10 = 9 THEN 1 ELSE 2 END
FROM generate_series(0, %(n)s - 1) g;
INSERT INTO staging_clusters (ds, load_id, cluster_id, cluster_size, quality, iteration)
SELECT %(ds)s::text, 'bench', cluster_id, COUNT(*), 1.0, 1 FROM staging_links WHERE ds = %(ds)s::text GROUP BY cluster_id;
"""

#: Every count the suites compute, written by hand: one aggregate per table.
HAND_SQL = {
    "staging_records": """
SELECT COUNT(*), COUNT(*) FILTER (WHERE r.record_id IS NULL), COUNT(*) - COUNT(DISTINCT r.record_id),
       COUNT(*) FILTER (WHERE l.cluster_id IS NULL), COUNT(*) FILTER (WHERE COALESCE(l.n, 0) <> 1),
       COUNT(*) FILTER (WHERE r.record_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
       COUNT(*) FILTER (WHERE r.postcode !~ '^[0-9]{4}$'),
       COUNT(*) FILTER (WHERE TO_CHAR(r.date_of_birth, 'YYYY-MM-DD') !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
       COUNT(*) FILTER (WHERE r.soc_sec_id !~ '^[0-9]{7}$'),
       COUNT(*) FILTER (WHERE r.source NOT IN ('febrl')),
       COUNT(*) FILTER (WHERE r.state NOT IN ('ACT','NSW','NT','QLD','SA','TAS','VIC','WA')),
       COUNT(*) FILTER (WHERE r.surname IS NULL)
FROM staging_records r
LEFT JOIN (SELECT record_id, MIN(cluster_id) AS cluster_id, COUNT(*) AS n FROM staging_links
           WHERE ds = %(ds)s GROUP BY record_id) l ON l.record_id = r.record_id
WHERE r.ds = %(ds)s""",
    "staging_links": """
SELECT COUNT(*), COUNT(*) FILTER (WHERE l.cluster_id IS NULL), COUNT(*) - COUNT(DISTINCT l.record_id),
       COUNT(*) FILTER (WHERE c.cluster_id IS NULL), COUNT(*) FILTER (WHERE r.record_id IS NULL),
       COUNT(*) FILTER (WHERE l.cluster_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$')
FROM staging_links l
LEFT JOIN (SELECT DISTINCT cluster_id FROM staging_clusters WHERE ds = %(ds)s) c ON c.cluster_id = l.cluster_id
LEFT JOIN (SELECT DISTINCT record_id FROM staging_records WHERE ds = %(ds)s) r ON r.record_id = l.record_id
WHERE l.ds = %(ds)s""",
    "staging_clusters": """
SELECT COUNT(*), COUNT(*) - COUNT(DISTINCT c.cluster_id),
       COUNT(*) FILTER (WHERE c.cluster_size NOT BETWEEN 1 AND 50),
       COUNT(*) FILTER (WHERE c.cluster_size <> COALESCE(l.n, 0)),
       AVG(CASE WHEN c.cluster_size = 1 THEN 1.0 ELSE 0.0 END)
FROM staging_clusters c
LEFT JOIN (SELECT cluster_id, COUNT(*) AS n FROM staging_links WHERE ds = %(ds)s GROUP BY cluster_id) l
       ON l.cluster_id = c.cluster_id
WHERE c.ds = %(ds)s""",
}

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5432)
    parser.add_argument("--dump-sql", type=Path, help="write every statement GX sent (JSON) to this file")
    args = parser.parse_args(argv)

    import psycopg

    from sqlcapture import capture_sql, row_reads

    from washline.quality import runner
    from washline.staging.dialects import ddl_statements

    name = f"washline_bench_quality_{os.getpid()}"
    admin = psycopg.connect(host=args.host, port=args.port, user="postgres", dbname="postgres", autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(host=args.host, port=args.port, user="postgres", dbname=name, autocommit=True) as c:
            for stmt in ddl_statements("postgres"):
                c.execute(stmt)
            t0 = time.perf_counter()
            for ds, n in ((DS, args.rows), (OTHER, max(1, args.rows // 10))):
                for stmt in GENERATE.split(";"):
                    if stmt.strip():
                        c.execute(stmt, {"ds": ds, "n": n})
            generate_s = time.perf_counter() - t0
            clusters = c.execute("SELECT COUNT(*) FROM staging_clusters WHERE ds = %s", (DS,)).fetchone()[0]

        os.environ["AIRFLOW_CONN_BENCH_QUALITY"] = json.dumps(
            {"conn_type": "postgres", "host": args.host, "port": args.port, "login": "postgres", "schema": name})
        with tempfile.TemporaryDirectory() as tmp, capture_sql() as statements:
            summary = runner.validate_slice("bench_quality", DS, args.rows, Path(tmp) / "docs",
                                            expected_cluster_rows=clusters)
        sql_seconds = round(sum(st["seconds"] for st in statements), 3)
        # What marks a statement as reading the slice: the per-run view names, or
        # (query assets) the slice queries' opening text.
        relations = summary.get("views") or [" ".join(runner.query_for(s, DS, "postgres").split())[:60]
                                             for s in runner.SLICE_QUERIES]
        reads = row_reads(statements, relations)
        if args.dump_sql:
            args.dump_sql.write_text(json.dumps(statements, indent=1))
        slowest = sorted(statements, key=lambda s: -s["seconds"])[:5]

        with psycopg.connect(host=args.host, port=args.port, user="postgres", dbname=name) as c:
            t0 = time.perf_counter()
            hand = {table: list(c.execute(sql, {"ds": DS}).fetchone()) for table, sql in HAND_SQL.items()}
            hand_s = time.perf_counter() - t0
        result = {
            "rows": args.rows, "clusters": clusters, "generate_seconds": round(generate_s, 2),
            "gx": {"status": summary["status"], "seconds": summary["seconds"],
                   "sql_statements": len(statements), "sql_seconds": sql_seconds,
                   "row_reads": reads, "slowest": [{"seconds": s["seconds"], "sql": " ".join(s["sql"].split())[:160]}
                                                   for s in slowest],
                   "error": summary.get("error")},
            "hand_sql": {"seconds": round(hand_s, 2), "counts": {k: [float(x) if x is not None else None for x in v]
                                                                   for k, v in hand.items()}},
            "load_average": os.getloadavg(),
        }
        print(json.dumps(result, indent=2, default=str))
        print(f"\n{args.rows:,} rows: GX {summary['seconds']:.1f} s ({summary['status']}, "
              f"{len(statements)} statements, {sql_seconds:.1f} s in SQL, "
              f"{len(reads)} row-fetching statement(s)); hand-written SQL {hand_s:.1f} s")
        return 0 if summary["status"] == "PASS" else 1
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    sys.exit(main())
