"""Load one logical date's Spark output into the staging tables.

The load streams Parquet record batches (``pyarrow.dataset``), so no Python
process holds a whole table, and runs in ONE transaction: delete the date's
slice from every staging table, insert the new rows, verify the counts, commit.
A rerun of a date therefore replaces that date's slice and touches no other.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from pathlib import Path
from typing import Any, Iterator

from washline.staging.dialects import (
    STAGING_TABLES,
    ddl_statements,
    get_db_hook,
    placeholder,
    quote_ident,
    table_columns,
)

log = logging.getLogger(__name__)

#: Columns the loader supplies itself; every other table column must come from Parquet.
LOADER_COLUMNS = ("ds", "load_id")
BATCH_ROWS = 5_000


class SchemaDriftError(ValueError):
    """The Spark output's columns differ from the staging table's columns."""


def begin(conn: Any, dialect: str) -> None:
    """Start an explicit transaction (SQLite's driver otherwise autocommits DDL)."""
    if dialect == "sqlite":
        conn.isolation_level = None
        conn.execute("BEGIN IMMEDIATE")


def ensure_schema(conn: Any, dialect: str) -> None:
    """Create the staging and published tables if missing (idempotent DDL)."""
    cur = conn.cursor()
    for stmt in ddl_statements(dialect):
        cur.execute(stmt)
    if dialect != "sqlite":
        conn.commit()


def _arrow_dataset(path: Path):
    import pyarrow.dataset as pads

    if not path.exists():
        raise FileNotFoundError(f"Spark output {path} does not exist; did the upstream task run for this date?")
    return pads.dataset(str(path), format="parquet")


def check_columns(table: str, table_cols: list[str], parquet_cols: list[str], source: Path) -> list[str]:
    """Return the Parquet columns to insert, in table order.

    Raises:
        SchemaDriftError: naming the table and every missing or extra column.
    """
    wanted = [c for c in table_cols if c not in LOADER_COLUMNS]
    have = [c.lower() for c in parquet_cols if c.lower() != "ds"]
    missing = [c for c in wanted if c not in have]
    extra = [c for c in have if c not in wanted]
    if missing or extra:
        raise SchemaDriftError(
            f"schema drift loading {source} into {table}: "
            f"missing column(s) {missing or '-'}, unexpected column(s) {extra or '-'}"
        )
    return wanted


def _rows(dataset, columns: list[str], ds: str, load_id: str, dialect: str) -> Iterator[list[tuple]]:
    lower = {name.lower(): name for name in dataset.schema.names}
    for batch in dataset.to_batches(columns=[lower[c] for c in columns], batch_size=BATCH_ROWS):
        out = []
        for row in zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns))):
            if dialect == "sqlite":
                row = tuple(v.isoformat() if isinstance(v, (dt.date, dt.datetime)) else v for v in row)
            out.append((ds, load_id, *row))
        yield out


def load_slice(conn_id: str, ds: str, sources: dict[str, Path], load_id: str) -> dict[str, Any]:
    """Replace the ``ds`` slice of each staging table with the Parquet at ``sources[table]``.

    Args:
        conn_id: Airflow connection of the staging database.
        ds: logical date ``YYYY-MM-DD``.
        sources: staging table name → Parquet folder written by Spark.
        load_id: identifier of this load (the Airflow run id), stored on every row.

    Returns:
        ``{"rows": {table: n}, "seconds": s, "dialect": d}``.

    Raises:
        SchemaDriftError: a Parquet folder's columns do not match its table.
        FileNotFoundError: a Parquet folder is missing.
        RuntimeError: a count check after the insert failed (the transaction
            is rolled back, the previous slice stays).
    """
    unknown = set(sources) - set(STAGING_TABLES)
    if unknown:
        raise ValueError(f"not staging tables: {sorted(unknown)}")
    started = time.monotonic()
    hook, dialect = get_db_hook(conn_id)
    conn = hook.get_conn()
    counts: dict[str, int] = {}
    try:
        ensure_schema(conn, dialect)
        datasets = {table: _arrow_dataset(path) for table, path in sources.items()}
        begin(conn, dialect)
        cur = conn.cursor()
        p = placeholder(dialect)
        for table, dataset in datasets.items():
            cols = check_columns(table, table_columns(cur, table, dialect), dataset.schema.names, sources[table])
            qt = quote_ident(table, dialect)
            cur.execute(f"DELETE FROM {qt} WHERE ds = {p}", (ds,))
            all_cols = [*LOADER_COLUMNS, *cols]
            insert = (
                f"INSERT INTO {qt} ({', '.join(quote_ident(c, dialect) for c in all_cols)}) "
                f"VALUES ({', '.join([p] * len(all_cols))})"
            )
            n = 0
            for rows in _rows(dataset, cols, ds, load_id, dialect):
                cur.executemany(insert, rows)
                n += len(rows)
            cur.execute(f"SELECT COUNT(*) FROM {qt} WHERE ds = {p}", (ds,))
            in_db = cur.fetchone()[0]
            if in_db != n:
                raise RuntimeError(f"{table}: inserted {n} rows for ds={ds} but the table holds {in_db}")
            counts[table] = n
            log.info("staged %d rows into %s for ds=%s", n, table, ds)
        conn.commit()
    except BaseException:
        conn.rollback()
        log.error("staging load for ds=%s rolled back; the previous slice is unchanged", ds)
        raise
    finally:
        conn.close()
    return {"rows": counts, "seconds": round(time.monotonic() - started, 2), "dialect": dialect, "load_id": load_id}
