"""Load one logical date's Spark output into the staging tables.

The load streams Parquet record batches (``pyarrow.dataset``, ``BATCH_ROWS``
rows at a time), so no Python process holds a whole table, and runs in ONE
transaction: delete the date's slice from every staging table, write the new
rows through the engine's bulk path, verify the counts, commit. A rerun of a
date therefore replaces that date's slice and touches no other date.

Bulk path per dialect (all inside the same transaction):

============  =========================================================
sqlite        ``executemany`` of batches after ``BEGIN IMMEDIATE``
postgres      psycopg 3 ``cursor.copy("COPY … FROM STDIN (FORMAT csv)")``
              fed with CSV that Arrow writes per batch (C++, no Python rows)
mssql         pymssql ``Connection.bulk_copy`` (TDS bulk load) per batch
oracle        python-oracledb array DML: ``executemany`` of a batch
============  =========================================================

No JDBC jar and no Maven download are involved. Before a batch is written it
is checked against the table contract (:mod:`washline.staging.spec`): every
column present with a compatible type (:class:`SchemaDriftError`), no NULL in
a NOT NULL column (:class:`NullKeyError`), no text longer than its column
(:class:`ValueTooLongError`). Each error names the table and column; the
transaction is rolled back, so the staging slice stays as it was for
inspection and nothing is published (publish runs only after a good load).
"""

from __future__ import annotations

import io
import logging
import time
from pathlib import Path
from typing import Any, Iterator

from washline.paths import validate_ds
from washline.staging.dialects import (
    ENTITY_STAGING_TABLES,
    STAGING_TABLES,
    connect,
    ddl_statements,
    get_db_hook,
    markers,
    qualify,
    quote_ident,
    raise_if_locked,
    render,
    table_columns,
    validate_schema,
)
from washline.staging.spec import TABLES, Col

log = logging.getLogger(__name__)

#: Columns the loader supplies itself; every other table column must come from Parquet.
LOADER_COLUMNS = ("ds", "load_id")
#: Tables whose Spark output may be a folder without data files (0 rows that night).
MAY_BE_EMPTY = ("staging_entity_changes",)
#: Rows per Arrow batch (and per executemany / COPY chunk / bulk-copy call).
BATCH_ROWS = 50_000


class StagingLoadError(ValueError):
    """Bad input for a staging table; ``table`` and ``column`` name where."""

    def __init__(self, message: str, table: str, column: str | None = None):
        super().__init__(message)
        self.table = table
        self.column = column


class SchemaDriftError(StagingLoadError):
    """The Spark output's columns or types differ from the staging table's."""


class ValueTooLongError(StagingLoadError):
    """A text value is longer than its staging column allows."""


class NullKeyError(StagingLoadError):
    """A NULL in a NOT NULL (key) column."""


def begin(conn: Any, dialect: str) -> None:
    """Start an explicit transaction. SQLite's driver would otherwise
    autocommit; ``BEGIN IMMEDIATE`` also takes the write lock up front. The
    other drivers open a transaction implicitly with the first statement."""
    if dialect == "sqlite":
        conn.isolation_level = None
        conn.execute("BEGIN IMMEDIATE")


def ensure_schema(conn: Any, dialect: str, schema: str | None = None) -> None:
    """Create the staging and published tables if missing (idempotent DDL from
    ``sql/<dialect>/staging.sql``); on PostgreSQL also the schema. Commits.

    On PostgreSQL the DDL runs under a transaction-level advisory lock
    (``pg_advisory_xact_lock``, released at the commit): two sessions running
    ``CREATE TABLE IF NOT EXISTS`` at the same instant otherwise race in the
    catalogue and one fails with a ``UniqueViolation`` on
    ``pg_type_typname_nsp_index`` (two dates' first loads into a new database).
    """
    cur = conn.cursor()
    if dialect == "postgres":
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('washline_staging_ddl'))")
    if schema and dialect == "postgres":
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(schema, dialect)}")
    for stmt in ddl_statements(dialect, schema):
        cur.execute(stmt)
    for table, column in ADDED_COLUMNS:
        if column not in table_columns(cur, table, dialect, schema):
            cur.execute(add_column_sql(table, column, dialect, schema))
            log.info("added column %s to %s (created before the column existed)", column, table)
    if dialect != "sqlite":
        conn.commit()


#: Columns added to a table after it was first released, with a default of 0:
#: ``CREATE TABLE IF NOT EXISTS`` leaves an older table as it is, so
#: :func:`ensure_schema` adds them (staged entities' ``removed`` flag).
ADDED_COLUMNS = (("staging_entities", "removed"),)


def add_column_sql(table: str, column: str, dialect: str, schema: str | None = None) -> str:
    """``ALTER TABLE`` adding a NOT NULL integer column of the spec with default 0, per dialect."""
    from washline.staging.spec import sa_type, sqlalchemy_dialect

    col = TABLES[table].col(column)
    if col.kind not in ("int32", "int64") or col.nullable:
        raise ValueError(f"{table}.{column}: only NOT NULL integer columns are added with a default")
    typ = sa_type(col, dialect).compile(dialect=sqlalchemy_dialect(dialect))
    target, name = qualify(table, dialect, schema), quote_ident(column, dialect)
    if dialect == "oracle":
        return f"ALTER TABLE {target} ADD ({name} {typ} DEFAULT 0 NOT NULL)"
    if dialect == "mssql":
        return f"ALTER TABLE {target} ADD {name} {typ} NOT NULL DEFAULT 0"
    return f"ALTER TABLE {target} ADD COLUMN {name} {typ} NOT NULL DEFAULT 0"


def _arrow_dataset(path: Any):
    """A ``pyarrow.dataset`` over a Parquet folder, or over an Arrow table
    (e.g. the merged registry version a full publish stages)."""
    import pyarrow as pa
    import pyarrow.dataset as pads

    if isinstance(path, pa.Table):
        return pads.dataset(path)
    if not Path(path).exists():
        raise FileNotFoundError(f"Spark output {path} does not exist; did the upstream task run for this date?")
    return pads.dataset(str(path), format="parquet", exclude_invalid_files=False,
                        ignore_prefixes=["_", "."])


def _type_ok(col: Col, arrow_type) -> bool:
    import pyarrow.types as pt

    if pt.is_null(arrow_type):
        return col.nullable
    if pt.is_boolean(arrow_type):
        return col.kind in ("int32", "int64")  # a flag, stored as 0/1
    if col.kind == "str":
        return pt.is_string(arrow_type) or pt.is_large_string(arrow_type) or getattr(pt, "is_string_view", lambda t: False)(arrow_type)
    if col.kind == "date":
        return pt.is_date(arrow_type)
    if col.kind == "int64":
        return pt.is_signed_integer(arrow_type) or arrow_type in _small_unsigned()
    if col.kind == "int32":
        return arrow_type in _int32_types()
    if col.kind == "float64":
        return pt.is_floating(arrow_type)
    if col.kind == "timestamp":
        return pt.is_timestamp(arrow_type)
    return False


def _small_unsigned():
    import pyarrow as pa

    return (pa.uint8(), pa.uint16(), pa.uint32())


def _int32_types():
    import pyarrow as pa

    return (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())


def check_columns(table: str, table_cols: list[str], parquet_schema: Any, source: Path) -> list[str]:
    """Return the Parquet columns to insert, in table order.

    ``parquet_schema`` is a ``pyarrow.Schema`` (or, for callers that only
    know names, a list of column names: then only presence is checked).
    Column names compare case-insensitively; a ``ds`` column in the Parquet
    is ignored (the loader writes the run's ``ds``), and so are the table's
    ``lake_only`` columns (e.g. the registry members' ``text`` and ``attributes``).

    Raises:
        SchemaDriftError: naming the table and every missing or extra column,
            or a column whose Arrow type does not fit the table's type.
    """
    names = list(parquet_schema) if isinstance(parquet_schema, list) else list(parquet_schema.names)
    wanted = [c for c in table_cols if c not in LOADER_COLUMNS]
    spec = TABLES.get(table)
    skip = {"ds", *(spec.lake_only if spec is not None else ())}
    have = [c.lower() for c in names if c.lower() not in skip]
    missing = [c for c in wanted if c not in have]
    extra = [c for c in have if c not in wanted]
    if missing or extra:
        raise SchemaDriftError(
            f"schema drift loading {source} into {table}: "
            f"missing column(s) {missing or '-'}, unexpected column(s) {extra or '-'}",
            table, (missing or extra)[0],
        )
    if spec is not None and not isinstance(parquet_schema, list):
        by_lower = {n.lower(): n for n in names}
        for name in wanted:
            col = spec.col(name)
            arrow_type = parquet_schema.field(by_lower[name]).type
            if not _type_ok(col, arrow_type):
                want = f"{col.kind}({col.length})" if col.length else col.kind
                raise SchemaDriftError(
                    f"schema drift loading {source} into {table}: column {name} has type {arrow_type} "
                    f"in the Spark output but the table expects {want}", table, name,
                )
    return wanted


def check_batch(table: str, batch: Any, columns: list[str], source: Path, key_of: list[str]) -> None:
    """Check one Arrow batch against the table contract before it is written.

    Raises:
        NullKeyError: a NULL in a NOT NULL column (the first offending row is named).
        ValueTooLongError: a string longer than its column (row, length and limit named).
    """
    import pyarrow.compute as pc

    spec = TABLES[table]
    for i, name in enumerate(columns):
        col = spec.col(name)
        arr = batch.column(i)
        if not col.nullable and arr.null_count:
            row = pc.index(pc.is_null(arr), True).as_py()
            raise NullKeyError(
                f"NULL in NOT NULL column {table}.{name} ({'part of the primary key' if name in spec.primary_key else 'required'}) "
                f"from {source}: {arr.null_count} row(s) in this batch, first at batch row {row} "
                f"({_describe_row(batch, columns, key_of, row)})", table, name,
            )
        if col.kind == "str" and col.length and len(arr) and arr.null_count < len(arr):
            lengths = pc.utf8_length(arr)
            longest = pc.max(lengths).as_py()
            if longest is not None and longest > col.length:
                row = pc.index(pc.greater(lengths, col.length), True).as_py()
                raise ValueTooLongError(
                    f"value too long for {table}.{name}: {longest} characters, the column holds {col.length} "
                    f"(from {source}, first at batch row {row}: {_describe_row(batch, columns, key_of, row)})",
                    table, name,
                )


def _describe_row(batch: Any, columns: list[str], key_of: list[str], row: int) -> str:
    parts = []
    for name in key_of:
        if name in columns:
            parts.append(f"{name}={batch.column(columns.index(name))[row].as_py()!r}")
    return ", ".join(parts) or "no key columns"


def _batches(dataset: Any, table: str, columns: list[str], source: Path) -> Iterator[Any]:
    """Record batches of ``columns`` (table order, table names), each checked."""
    import pyarrow as pa

    lower = {name.lower(): name for name in dataset.schema.names}
    key_of = [c for c in TABLES[table].primary_key if c not in LOADER_COLUMNS]
    for batch in dataset.to_batches(columns=[lower[c] for c in columns], batch_size=BATCH_ROWS):
        if batch.num_rows == 0:
            continue
        arrays = [a.cast(pa.int8()) if pa.types.is_boolean(a.type) else a for a in batch.columns]
        batch = pa.RecordBatch.from_arrays(arrays, names=columns)
        check_batch(table, batch, columns, source, key_of)
        yield batch


def _with_slice_columns(batch: Any, ds: str, load_id: str) -> Any:
    import pyarrow as pa

    n = batch.num_rows
    return pa.RecordBatch.from_arrays(
        [pa.array([ds] * n, pa.string()), pa.array([load_id] * n, pa.string()), *batch.columns],
        names=[*LOADER_COLUMNS, *batch.schema.names],
    )


def _python_rows(batch: Any, dialect: str) -> list[tuple]:
    """Rows of a batch as tuples of Python values (dates as ISO text on SQLite)."""
    import pyarrow as pa
    import pyarrow.types as pt

    cols = []
    for arr in batch.columns:
        if dialect == "sqlite" and pt.is_date(arr.type):
            arr = arr.cast(pa.string())
        cols.append(arr.to_pylist())
    return list(zip(*cols))


def _stage_registry_version(cur: Any, dialect: str, schema: str | None, ds: str, load_id: str,
                            version: dict[str, Any]) -> None:
    """Replace the date's row of ``staging_entity_versions`` (see :func:`load_slice`)."""
    cols = [c for c in TABLES["staging_entity_versions"].column_names]
    row = {**{k: version.get(k) for k in cols}, "ds": ds, "load_id": load_id}
    row["reason"] = (row["reason"] or "")[:500] or None
    target = qualify("staging_entity_versions", dialect, schema)
    cur.execute(*render(f"DELETE FROM {target} WHERE ds = :ds", dialect, {"ds": ds}))
    names = ", ".join(quote_ident(c, dialect) for c in cols)
    cur.execute(*render(f"INSERT INTO {target} ({names}) VALUES ({', '.join(':' + c for c in cols)})",
                        dialect, row))


# -- writers: each returns the number of rows written -------------------------

def _write_executemany(cur: Any, dialect: str, target: str, all_cols: list[str], batches, ds, load_id) -> int:
    insert = (f"INSERT INTO {target} ({', '.join(quote_ident(c, dialect) for c in all_cols)}) "
              f"VALUES ({', '.join(markers(dialect, len(all_cols)))})")
    n = 0
    for batch in batches:
        rows = _python_rows(_with_slice_columns(batch, ds, load_id), dialect)
        cur.executemany(insert, rows)
        n += len(rows)
    return n


def _write_postgres_copy(cur: Any, target: str, all_cols: list[str], batches, ds, load_id) -> int:
    import pyarrow.csv as pacsv

    options = pacsv.WriteOptions(include_header=False)
    cols = ", ".join(quote_ident(c, "postgres") for c in all_cols)
    n = 0
    # CSV: an unquoted empty field is NULL, a quoted "" is the empty string;
    # Arrow writes nulls and empty strings exactly that way.
    with cur.copy(f"COPY {target} ({cols}) FROM STDIN (FORMAT csv)") as copy:
        for batch in batches:
            buf = io.BytesIO()
            pacsv.write_csv(_with_slice_columns(batch, ds, load_id), buf, options)
            copy.write(buf.getbuffer())
            n += batch.num_rows
    return n


def _write_mssql_bulk(conn: Any, target: str, column_ids: list[int], batches, ds, load_id) -> int:
    n = 0
    for batch in batches:
        rows = _python_rows(_with_slice_columns(batch, ds, load_id), "mssql")
        conn.bulk_copy(target, rows, column_ids=column_ids, batch_size=len(rows), check_constraints=True)
        n += len(rows)
    return n


def write_table(conn: Any, cur: Any, dialect: str, target: str, table_cols: list[str], cols: list[str],
                batches, ds: str, load_id: str) -> int:
    """Write checked batches into ``target`` with the dialect's bulk path."""
    all_cols = [*LOADER_COLUMNS, *cols]
    if dialect == "postgres" and hasattr(cur, "copy"):
        return _write_postgres_copy(cur, target, all_cols, batches, ds, load_id)
    if dialect == "mssql" and hasattr(conn, "bulk_copy"):
        column_ids = [table_cols.index(c) + 1 for c in all_cols]
        return _write_mssql_bulk(conn, target, column_ids, batches, ds, load_id)
    return _write_executemany(cur, dialect, target, all_cols, batches, ds, load_id)


def load_slice(conn_id: str, ds: str, sources: dict[str, Any], load_id: str, *,
               schema: str | None = None, registry_version: dict[str, Any] | None = None) -> dict[str, Any]:
    """Replace the ``ds`` slice of each staging table with the Parquet at ``sources[table]``.

    Args:
        conn_id: Airflow connection of the staging database (its type picks the dialect).
        ds: logical date ``YYYY-MM-DD``.
        sources: staging table name → Parquet folder written by Spark; the
            three slice tables and, on a registry night, the entity staging
            tables (``ENTITY_STAGING_TABLES``), all in the one transaction.
        load_id: identifier of this load (the Airflow run id), stored on every row.
        schema: database schema holding the tables (validated, quoted);
            ``None`` = the connection's default. Not supported on SQLite.
        registry_version: on a registry night, the row of
            ``staging_entity_versions`` for the date (``base_ds``,
            ``publish_mode``, ``reason``, ``held_ds``, ``references_total``,
            ``entities_total``): what the entity tables hold and how publish
            applies them. Replaced in the same transaction.

    Returns:
        ``{"rows": {table: n}, "seconds": s, "table_seconds": {table: s},
        "dialect": d, "load_id": id}``.

    Raises:
        SchemaDriftError / NullKeyError / ValueTooLongError: bad input, naming
            table and column (rolled back; the previous slice stays).
        FileNotFoundError: a Parquet folder is missing.
        StagingUnreachable: no connection after the retries.
        StagingLocked: SQLite stayed locked by another connection for the
            whole busy timeout (nothing changed; retried by Airflow).
        RuntimeError: a count check after the insert failed (rolled back).
    """
    validate_ds(ds)
    unknown = set(sources) - set(STAGING_TABLES) - set(ENTITY_STAGING_TABLES)
    if unknown:
        raise ValueError(f"not staging tables: {sorted(unknown)}")
    if not isinstance(load_id, str) or not load_id or len(load_id) > 250:
        raise ValueError(f"load_id must be a non-empty string of at most 250 characters, got {load_id!r}")
    started = time.monotonic()
    hook, dialect = get_db_hook(conn_id)
    schema = validate_schema(schema, dialect)
    datasets = {table: _arrow_dataset(path) for table, path in sources.items()}
    labels = {table: (f"the merged registry version of ds={ds} ({table})" if not isinstance(src, (str, Path))
                      else Path(src)) for table, src in sources.items()}
    conn = connect(hook, dialect, conn_id)
    counts: dict[str, int] = {}
    table_seconds: dict[str, float] = {}
    try:
        ensure_schema(conn, dialect, schema)
        begin(conn, dialect)
        cur = conn.cursor()
        for table, dataset in datasets.items():
            t0 = time.monotonic()
            table_cols = table_columns(cur, table, dialect, schema)
            target = qualify(table, dialect, schema)
            cur.execute(*render(f"DELETE FROM {target} WHERE ds = :ds", dialect, {"ds": ds}))
            if table in MAY_BE_EMPTY and not getattr(dataset, "files", True):
                n = 0  # e.g. a night that changed no entity: Spark may write no part file at all
            else:
                cols = check_columns(table, table_cols, dataset.schema, labels[table])
                n = write_table(conn, cur, dialect, target, table_cols, cols,
                                _batches(dataset, table, cols, labels[table]), ds, load_id)
            cur.execute(*render(f"SELECT COUNT(*) FROM {target} WHERE ds = :ds", dialect, {"ds": ds}))
            in_db = cur.fetchone()[0]
            if in_db != n:
                raise RuntimeError(f"{table}: wrote {n} rows for ds={ds} but the table holds {in_db}")
            counts[table] = n
            table_seconds[table] = round(time.monotonic() - t0, 3)
            log.info("staged %d rows into %s for ds=%s (%s, %.2fs)", n, table, ds, dialect, table_seconds[table])
        if registry_version is not None:
            _stage_registry_version(cur, dialect, schema, ds, load_id, registry_version)
        conn.commit()
    except BaseException as exc:
        try:
            conn.rollback()
        finally:
            log.error(
                "staging load of ds=%s (load_id=%s) failed and was rolled back: %s. The staging slice ds=%s "
                "is left exactly as it was before this load, for inspection; nothing was published.",
                ds, load_id, exc, ds,
            )
            raise_if_locked(exc, conn_id, dialect, hook, f"the load of ds={ds}")
        raise
    finally:
        conn.close()
    return {"rows": counts, "seconds": round(time.monotonic() - started, 2), "table_seconds": table_seconds,
            "dialect": dialect, "load_id": load_id}
