"""Publish (write-audit-publish): copy one date's audited staging slice to the
published tables atomically.

One transaction, on every engine: check that the staging slice has exactly one
load id across the three staging tables and that staging and published tables
have the same columns; then for each table delete the date's published rows
and ``INSERT … SELECT`` the staging rows; verify the counts; record the publish
in ``publish_log``; commit. If any statement fails, or the process is killed,
the database rolls the transaction back and the published tables are exactly
as they were (readers never see a half-written slice: the new rows become
visible only at commit).

On a registry night (``with_entities=True``) the same transaction also moves the
entity registry forward: ``entity_members`` and ``entities`` are replaced whole by
the staged state of the date (they are the full state, not a per-date slice),
``entity_changes`` gets the date's rows replaced, and the staged states of earlier
dates are pruned from ``staging_entity_members`` / ``staging_entities`` (a full
state per date would grow staging by the whole registry every night); see
:func:`entity_publish_plan`.

The statements are written once with ``:name`` binds (:func:`publish_plan`)
and compiled by SQLAlchemy for the driver of each dialect
(:func:`washline.staging.dialects.render`); the SQL Server and Oracle
renderings are kept as reviewed files under ``tests/expected/staging/``.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import Any

from washline.paths import validate_ds
from washline.staging.dialects import (
    ENTITY_STAGING_TABLES,
    ENTITY_TABLES,
    PUBLISHED_TABLES,
    STAGING_TABLES,
    connect,
    get_db_hook,
    qualify,
    quote_ident,
    raise_if_locked,
    render,
    table_columns,
    validate_schema,
)
from washline.staging.load import SchemaDriftError, begin, ensure_schema

log = logging.getLogger(__name__)


class NothingToPublish(RuntimeError):
    """The staging slice for the date is empty or has more than one load id."""


@dataclass(frozen=True)
class Step:
    """One statement of the publish transaction: ``sql`` with ``:name`` binds."""

    name: str
    sql: str


def publish_plan(dialect: str, columns: dict[str, list[str]], schema: str | None = None) -> list[Step]:
    """The statements of one publish, in order (binds ``:ds``, ``:load_id``, …).

    Args:
        dialect: target dialect.
        columns: staging table → its column list (table order).
        schema: schema of all tables, or ``None``.
    """
    q = lambda t: qualify(t, dialect, schema)  # noqa: E731
    steps = [
        Step("load_ids", "SELECT DISTINCT load_id FROM "
             + q("staging_records") + " WHERE ds = :ds"),
    ]
    for staging in STAGING_TABLES:
        published = PUBLISHED_TABLES[staging]
        steps.append(Step(f"other_load_ids:{staging}",
                          f"SELECT COUNT(*) FROM {q(staging)} WHERE ds = :ds AND load_id <> :load_id"))
        steps.append(Step(f"staged:{staging}", f"SELECT COUNT(*) FROM {q(staging)} WHERE ds = :ds"))
    for staging in STAGING_TABLES:
        published = PUBLISHED_TABLES[staging]
        cols = ", ".join(quote_ident(c, dialect) for c in columns[staging])
        steps.append(Step(f"delete:{published}", f"DELETE FROM {q(published)} WHERE ds = :ds"))
        steps.append(Step(f"insert:{published}",
                          f"INSERT INTO {q(published)} ({cols}) SELECT {cols} FROM {q(staging)} WHERE ds = :ds"))
        steps.append(Step(f"count:{published}", f"SELECT COUNT(*) FROM {q(published)} WHERE ds = :ds"))
    log_table = q("publish_log")
    steps.append(Step("delete:publish_log", f"DELETE FROM {log_table} WHERE ds = :ds AND load_id = :load_id"))
    steps.append(Step(
        "insert:publish_log",
        f"INSERT INTO {log_table} (ds, load_id, published_at, records, links, clusters) "
        "VALUES (:ds, :load_id, :published_at, :records, :links, :clusters)",
    ))
    return steps


def entity_publish_plan(dialect: str, columns: dict[str, list[str]], schema: str | None = None) -> list[Step]:
    """The registry statements of a publish, run inside the slice's transaction
    after :func:`publish_plan`'s slice steps (binds ``:ds``, ``:load_id``).

    Args:
        dialect: target dialect.
        columns: published entity table → its columns (the contract columns,
            all present in the staging table).
        schema: schema of all tables, or ``None``.
    """
    q = lambda t: qualify(t, dialect, schema)  # noqa: E731
    steps = []
    for staging in ENTITY_STAGING_TABLES:
        steps.append(Step(f"other_load_ids:{staging}",
                          f"SELECT COUNT(*) FROM {q(staging)} WHERE ds = :ds AND load_id <> :load_id"))
        steps.append(Step(f"staged:{staging}", f"SELECT COUNT(*) FROM {q(staging)} WHERE ds = :ds"))
    for staging, published in ENTITY_TABLES.items():
        cols = ", ".join(quote_ident(c, dialect) for c in columns[published])
        whole = published != "entity_changes"  # members and entities are the full state
        where = "" if whole else " WHERE ds = :ds"
        steps.append(Step(f"delete:{published}", f"DELETE FROM {q(published)}{where}"))
        steps.append(Step(f"insert:{published}",
                          f"INSERT INTO {q(published)} ({cols}) SELECT {cols} FROM {q(staging)} WHERE ds = :ds"))
        steps.append(Step(f"count:{published}", f"SELECT COUNT(*) FROM {q(published)}{where}"))
    for staging in ("staging_entity_members", "staging_entities"):
        steps.append(Step(f"prune:{staging}", f"DELETE FROM {q(staging)} WHERE ds < :ds"))
    return steps


def _execute(cur: Any, step: Step, dialect: str, params: dict[str, Any]) -> Any:
    """Run one step (module-level so a test can slow a step down and kill the process)."""
    sql, bound = render(step.sql, dialect, {k: v for k, v in params.items() if f":{k}" in step.sql})
    cur.execute(sql, bound)
    return cur


def publish_slice(conn_id: str, ds: str, *, schema: str | None = None,
                  with_entities: bool = False) -> dict[str, Any]:
    """Atomically replace the ``ds`` slice of every published table with staging's.

    Args:
        conn_id: Airflow connection of the staging database.
        ds: logical date ``YYYY-MM-DD``.
        schema: schema of the tables (validated, quoted); ``None`` = default.
        with_entities: also publish the staged registry version of ``ds`` in
            the same transaction (:func:`entity_publish_plan`): its staging
            rows must come from the slice's load.

    Returns:
        ``{"rows": {published_table: n}, "load_id": id, "seconds": s, "dialect": d}``;
        on a registry night ``rows`` also holds ``entity_members``, ``entities``
        (whole tables) and ``entity_changes`` (the date's rows).

    Raises:
        NothingToPublish: the staging slice is empty or mixes load ids, or (with
            ``with_entities``) the staged registry version is empty or from another load.
        SchemaDriftError: a staging and its published table differ in columns.
        StagingUnreachable: no connection after the retries.
        StagingLocked: SQLite stayed locked for the whole busy timeout.
        RuntimeError: a count check failed. In every case the transaction is
            rolled back and the published tables are unchanged.
    """
    validate_ds(ds)
    started = time.monotonic()
    hook, dialect = get_db_hook(conn_id)
    schema = validate_schema(schema, dialect)
    conn = connect(hook, dialect, conn_id)
    counts: dict[str, int] = {}
    try:
        ensure_schema(conn, dialect, schema)
        begin(conn, dialect)
        cur = conn.cursor()
        columns: dict[str, list[str]] = {}
        for staging in STAGING_TABLES:
            published = PUBLISHED_TABLES[staging]
            s_cols = table_columns(cur, staging, dialect, schema)
            p_cols = table_columns(cur, published, dialect, schema)
            if sorted(s_cols) != sorted(p_cols):
                missing = sorted(set(s_cols) - set(p_cols))
                extra = sorted(set(p_cols) - set(s_cols))
                raise SchemaDriftError(
                    f"schema drift between {staging} and {published}: {published} lacks column(s) "
                    f"{missing or '-'} and has extra column(s) {extra or '-'}; nothing published",
                    published, (missing or extra)[0],
                )
            columns[staging] = s_cols
        plan = {step.name: step for step in publish_plan(dialect, columns, schema)}
        if with_entities:
            entity_columns = _entity_columns(cur, dialect, schema)
            plan.update({step.name: step for step in entity_publish_plan(dialect, entity_columns, schema)})
        params: dict[str, Any] = {"ds": ds}
        load_ids = [r[0] for r in _execute(cur, plan["load_ids"], dialect, params).fetchall()]
        if len(load_ids) != 1:
            raise NothingToPublish(
                f"staging slice ds={ds} has load ids {load_ids}; expected exactly one. Nothing published."
            )
        params["load_id"] = load_ids[0]
        staged: dict[str, int] = {}
        for staging in STAGING_TABLES:
            other = _execute(cur, plan[f"other_load_ids:{staging}"], dialect, params).fetchone()[0]
            if other:
                raise NothingToPublish(
                    f"{staging} ds={ds} has {other} row(s) from a load other than {load_ids[0]!r}; "
                    "the slice is not one load. Nothing published."
                )
            staged[staging] = _execute(cur, plan[f"staged:{staging}"], dialect, params).fetchone()[0]
        for staging in STAGING_TABLES:
            published = PUBLISHED_TABLES[staging]
            _execute(cur, plan[f"delete:{published}"], dialect, params)
            _execute(cur, plan[f"insert:{published}"], dialect, params)
            counts[published] = _execute(cur, plan[f"count:{published}"], dialect, params).fetchone()[0]
            if counts[published] != staged[staging]:
                raise RuntimeError(
                    f"{published} holds {counts[published]} rows for ds={ds} after publish, "
                    f"staging has {staged[staging]}; rolled back"
                )
        if with_entities:
            counts.update(_publish_entities(cur, plan, dialect, params))
        now = dt.datetime.now(dt.timezone.utc)
        params.update({
            # SQLite keeps ISO text; SQL Server DATETIME2 and Oracle TIMESTAMP take naive UTC.
            "published_at": now.isoformat() if dialect == "sqlite" else
            (now.replace(tzinfo=None) if dialect in ("mssql", "oracle") else now),
            "records": counts["published_records"], "links": counts["published_links"],
            "clusters": counts["published_clusters"],
        })
        _execute(cur, plan["delete:publish_log"], dialect, params)
        _execute(cur, plan["insert:publish_log"], dialect, params)
        conn.commit()
    except BaseException as exc:
        try:
            conn.rollback()
        finally:
            log.error("publish of ds=%s failed and was rolled back: %s. The published tables are unchanged; "
                      "the staging slice ds=%s is left for inspection.", ds, exc, ds)
            raise_if_locked(exc, conn_id, dialect, hook, f"the publish of ds={ds}")
        raise
    finally:
        conn.close()
    log.info("published ds=%s load_id=%s: %s", ds, load_ids[0], counts)
    return {"rows": counts, "load_id": load_ids[0], "seconds": round(time.monotonic() - started, 2),
            "dialect": dialect}


def _entity_columns(cur: Any, dialect: str, schema: str | None) -> dict[str, list[str]]:
    """Published entity table → its columns; each must be the spec's contract
    columns, all present in the staging table.

    Raises:
        SchemaDriftError: a published entity table differs from the spec, or
            its staging table lacks one of its columns.
    """
    from washline.staging.spec import TABLES

    out = {}
    for staging, published in ENTITY_TABLES.items():
        p_cols = table_columns(cur, published, dialect, schema)
        s_cols = table_columns(cur, staging, dialect, schema)
        want = TABLES[published].column_names
        if sorted(p_cols) != sorted(want) or set(want) - set(s_cols):
            odd = sorted(set(p_cols) ^ set(want)) or sorted(set(want) - set(s_cols))
            raise SchemaDriftError(
                f"schema drift in the entity registry tables: {published} has columns {p_cols}, the spec "
                f"declares {want} and {staging} has {s_cols}; nothing published", published, odd[0])
        out[published] = want
    return out


def _publish_entities(cur: Any, plan: dict[str, Step], dialect: str, params: dict[str, Any]) -> dict[str, int]:
    """Run the registry steps of an open publish transaction; returns published counts."""
    staged: dict[str, int] = {}
    ds, load_id = params["ds"], params["load_id"]
    for staging in ENTITY_STAGING_TABLES:
        other = _execute(cur, plan[f"other_load_ids:{staging}"], dialect, params).fetchone()[0]
        if other:
            raise NothingToPublish(
                f"{staging} ds={ds} has {other} row(s) from a load other than {load_id!r}; the registry "
                "version is not the slice's load. Nothing published.")
        staged[staging] = _execute(cur, plan[f"staged:{staging}"], dialect, params).fetchone()[0]
    for staging in ("staging_entity_members", "staging_entities"):
        if not staged[staging]:
            raise NothingToPublish(
                f"{staging} holds no rows for ds={ds}: the registry version of the date was not staged "
                "(publishing it would empty the published registry). Nothing published.")
    counts: dict[str, int] = {}
    for staging, published in ENTITY_TABLES.items():
        _execute(cur, plan[f"delete:{published}"], dialect, params)
        _execute(cur, plan[f"insert:{published}"], dialect, params)
        counts[published] = _execute(cur, plan[f"count:{published}"], dialect, params).fetchone()[0]
        if counts[published] != staged[staging]:
            raise RuntimeError(f"{published} holds {counts[published]} rows after publishing ds={ds}, "
                               f"{staging} has {staged[staging]}; rolled back")
    for staging in ("staging_entity_members", "staging_entities"):
        _execute(cur, plan[f"prune:{staging}"], dialect, params)
    return counts
