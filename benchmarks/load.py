"""Staging load speed: washline's ``load_slice`` against ``psql \\copy`` of the same data.

Writes N synthetic curated records (the exact curated schema, FEBRL-like
values) as Parquet, then in ONE run:

1. PostgreSQL, ``load_slice`` (Parquet batches → Arrow CSV → psycopg 3
   ``COPY FROM STDIN``, one transaction, slice delete + count check included)
   into schema ``bench_load`` of a throwaway database;
2. PostgreSQL, ``psql -c "\\copy … FROM 'records.csv' (FORMAT csv)"`` of the same rows (CSV
   written beforehand, not timed) into an identical empty table in schema
   ``bench_copy`` (same DDL, primary key and index);
3. SQLite, ``load_slice`` into a fresh file (batched ``executemany``).

Prints a Markdown table and a JSON line. The throwaway database
``washline_bench_<pid>`` on 127.0.0.1:5432 (trust auth, user postgres) is
dropped at the end.

    .venv/bin/python benchmarks/load.py --rows 1000000
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]

PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}


def write_records(folder: Path, n: int, ds: str, files: int = 4) -> None:
    """``n`` curated rows in ``files`` Parquet files (as Spark would write them)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    given = np.array(["JOHN", "MARY", "ALEXANDER", "CHLOE", "LIAM", "ZOE", "NOAH", "OLIVIA"])
    surname = np.array(["SMITH", "NGUYEN", "WILLIAMS", "BROWN", "O'NEILL", "TAYLOR", "JONES", "LEE"])
    streets = np.array(["MAIN STREET", "GEORGE ST", "PITT STREET", "CHURCH ROAD", "HIGH ST, UNIT 4"])
    suburbs = np.array(["PARRAMATTA", "BONDI", "NEWTOWN", "ST KILDA", "FITZROY"])
    states = np.array(["NSW", "VIC", "QLD", "WA", "SA"])
    per = -(-n // files)
    for f in range(files):
        lo, hi = f * per, min(n, (f + 1) * per)
        k = hi - lo
        if k <= 0:
            break
        ids = np.arange(lo, hi)
        dob = np.datetime64("1940-01-01") + rng.integers(0, 25_000, k).astype("timedelta64[D]")
        table = pa.table({
            "record_id": pa.array([f"rec-{i}-org" for i in ids]),
            "source": pa.array(["febrl"] * k),
            "truth_entity": pa.array([str(i) for i in ids]),
            "given_name": pa.array(given[rng.integers(0, len(given), k)]),
            "surname": pa.array(surname[rng.integers(0, len(surname), k)]),
            "street_number": pa.array(rng.integers(1, 999, k).astype(str)),
            "address_1": pa.array(streets[rng.integers(0, len(streets), k)]),
            "address_2": pa.array([None if i % 3 else "FLAT 2" for i in ids], pa.string()),
            "suburb": pa.array(suburbs[rng.integers(0, len(suburbs), k)]),
            "postcode": pa.array(rng.integers(2000, 7999, k).astype(str)),
            "state": pa.array(states[rng.integers(0, len(states), k)]),
            "date_of_birth": pa.array(dob.astype("datetime64[D]"), pa.date32()),
            "soc_sec_id": pa.array(rng.integers(1_000_000, 9_999_999, k).astype(str)),
            "ds": pa.array([ds] * k),
            "source_file": pa.array([f"file:///data/landing/febrl/{ds}/part-{f:05d}.csv"] * k),
            "line_number": pa.array(ids + 2, pa.int64()),
        })
        pq.write_table(table, folder / f"part-{f:05d}.parquet")


def write_csv_for_copy(parquet: Path, csv_path: Path, ds: str, load_id: str) -> None:
    """The same rows as CSV in table column order (ds, load_id first), for ``\\copy``."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.dataset as pads

    from washline.staging.spec import TABLES

    cols = [c for c in TABLES["staging_records"].column_names if c not in ("ds", "load_id")]
    with pacsv.CSVWriter(str(csv_path), pa.schema(
            [("ds", pa.string()), ("load_id", pa.string())] + [(c, pads.dataset(str(parquet)).schema.field(c).type) for c in cols]),
            write_options=pacsv.WriteOptions(include_header=False)) as writer:
        for batch in pads.dataset(str(parquet)).to_batches(columns=cols, batch_size=50_000):
            n = batch.num_rows
            writer.write_batch(pa.RecordBatch.from_arrays(
                [pa.array([ds] * n), pa.array([load_id] * n), *batch.columns], names=["ds", "load_id", *cols]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()

    import psycopg

    from washline.staging.dialects import ddl_statements
    from washline.staging.load import load_slice

    ds, load_id = "2025-01-01", "bench"
    work = Path(tempfile.mkdtemp(prefix="washline-bench-"))
    db = f"washline_bench_{os.getpid()}"
    admin = psycopg.connect(dbname="postgres", autocommit=True, **PG)
    results: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        write_records(work / "curated", args.rows, ds)
        write_csv_for_copy(work / "curated", work / "records.csv", ds, load_id)
        prep = time.monotonic() - t0
        admin.execute(f'CREATE DATABASE "{db}"')
        os.environ["AIRFLOW_CONN_BENCH_PG"] = json.dumps(
            {"conn_type": "postgres", "host": PG["host"], "port": PG["port"], "login": PG["user"], "schema": db})
        with psycopg.connect(dbname=db, autocommit=True, **PG) as c:
            c.execute('CREATE SCHEMA "bench_copy"')
            for stmt in ddl_statements("postgres", "bench_copy"):
                c.execute(stmt)

        # 1. washline load_slice into PostgreSQL. Airflow is imported first (a task
        #    process has it loaded already); connection, DDL check, slice delete,
        #    COPY, count check and commit are all timed.
        from washline.staging.dialects import get_db_hook

        get_db_hook("bench_pg")
        t0 = time.monotonic()
        out = load_slice("bench_pg", ds, {"staging_records": work / "curated"}, load_id, schema="bench_load")
        results["pg_load_slice_s"] = time.monotonic() - t0
        results["pg_load_copy_phase_s"] = out["table_seconds"]["staging_records"]
        assert out["rows"]["staging_records"] == args.rows, out

        # 2. psql \copy of the same rows as CSV into an identical table
        copy_cmd = (f"\\copy \"bench_copy\".staging_records FROM '{work / 'records.csv'}' (FORMAT csv)")
        t0 = time.monotonic()
        subprocess.run(["psql", "-h", PG["host"], "-p", str(PG["port"]), "-U", PG["user"], "-d", db,
                        "-v", "ON_ERROR_STOP=1", "-q", "-c", copy_cmd], check=True)
        results["pg_psql_copy_s"] = time.monotonic() - t0
        with psycopg.connect(dbname=db, **PG) as c:
            n_copy = c.execute('SELECT COUNT(*) FROM "bench_copy".staging_records').fetchone()[0]
            n_load = c.execute('SELECT COUNT(*) FROM "bench_load".staging_records').fetchone()[0]
            same = c.execute(
                'SELECT COUNT(*) FROM (SELECT * FROM "bench_copy".staging_records EXCEPT '
                'SELECT * FROM "bench_load".staging_records) d').fetchone()[0]
        assert n_copy == n_load == args.rows and same == 0, (n_copy, n_load, same)

        # 3. SQLite
        if not args.skip_sqlite:
            os.environ["AIRFLOW_CONN_BENCH_SQLITE"] = json.dumps({"conn_type": "sqlite", "host": str(work / "s.db")})
            t0 = time.monotonic()
            out = load_slice("bench_sqlite", ds, {"staging_records": work / "curated"}, load_id)
            results["sqlite_load_slice_s"] = time.monotonic() - t0
            results["sqlite_load_insert_phase_s"] = out["table_seconds"]["staging_records"]
            assert out["rows"]["staging_records"] == args.rows
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.close()
        shutil.rmtree(work, ignore_errors=True)

    n = args.rows
    rate = {k[:-2] + "_rows_per_s": round(n / v) for k, v in results.items()}
    ratio = results["pg_psql_copy_s"] / results["pg_load_slice_s"]
    print(f"\n{n:,} curated rows (data prep {prep:.1f}s, not timed)\n")
    print("| path | seconds | rows/s |\n|---|---|---|")
    labels = {"pg_load_slice_s": "PostgreSQL `load_slice` (Parquet → Arrow CSV → COPY, 1 txn)",
              "pg_load_copy_phase_s": "  of which delete + COPY + count of the table",
              "pg_psql_copy_s": "PostgreSQL `psql \\copy` of the same rows as CSV",
              "sqlite_load_slice_s": "SQLite `load_slice` (batched executemany, 1 txn)",
              "sqlite_load_insert_phase_s": "  of which delete + inserts + count of the table"}
    for key, secs in results.items():
        print(f"| {labels[key]} | {secs:.2f} | {n / secs:,.0f} |")
    print(f"\nload_slice / \\copy throughput: {ratio:.2f}x (target >= 0.5x)")
    print(json.dumps({"rows": n, **{k: round(v, 3) for k, v in results.items()}, **rate,
                      "ratio_vs_copy": round(ratio, 3), "at": dt.datetime.now(dt.timezone.utc).isoformat()}))
    return 0 if ratio >= 0.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
