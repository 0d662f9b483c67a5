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
entity registry forward (:func:`entity_publish_plan`), in one of two modes that
the load chose (:func:`washline.registry.publish_mode`) and recorded in
``staging_entity_versions``:

* ``incremental``: staging holds the night's delta (the own layers of a format-2
  version); ``entity_members`` and ``entities`` are upserted by it
  (``INSERT … ON CONFLICT … DO UPDATE`` on PostgreSQL and SQLite, ``MERGE`` on
  SQL Server and Oracle), entities staged with ``removed = 1`` are deleted, and
  the night's ``entity_changes`` rows are replaced. Chosen only when the database
  holds exactly the night's ``base_ds``; the publish checks that again inside its
  transaction (:class:`NothingToPublish` when another publish moved it since).
* ``full``: staging holds the merged version; ``entity_members`` and ``entities``
  are replaced whole. Chosen on the first night, when the database records no
  version, holds another one than the base (the lake was rolled back, or a
  publish was skipped), for a format-1 version, and on a rerun.

Either way the tables are then reconciled with the version's manifest
(``entity_members`` rows = ``references_total``, ``entities`` rows =
``entities_total``; otherwise rolled back) and ``entity_registry_state`` is set to
the version (one row: ``ds``, ``base_ds``, mode and reason, totals,
``published_at``), in the same transaction. Staged dates before ``ds`` are pruned.
A full publish counts the tables. An incremental one never reads the whole
registry: its rows are the held version's totals (from ``entity_registry_state``,
reconciled when that version was published) plus the staged keys the tables
lacked, minus the removed entities they held, each counted by key before the
upsert; so a night's publish costs what the night changed (``benchmarks/publish_scale.py``).
Rows changed in the published tables outside a publish are not noticed by it.

A rerun of a published date: the database holds ``d`` itself, not ``d``'s base,
so the rerun publishes in full. The alternative, keeping the base's record to
replay the rerun's delta as an upsert, is wrong whenever the rerun's delta
differs from the first run's (a reference the first run added and the rerun
does not would stay published): the database cannot undo the first run's
delta without the base's rows. A full publish of the merged version is correct
whatever the first run did, and a rerun of an unchanged version leaves every
published table identical (tested). The cost is one full publish per rerun.

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
from washline.registry import FULL, INCREMENTAL
from washline.staging.load import SchemaDriftError, begin, ensure_schema

log = logging.getLogger(__name__)

#: The columns of ``staging_entity_versions`` a publish reads (besides ``ds``, ``load_id``).
VERSION_COLUMNS = ("base_ds", "publish_mode", "reason", "held_ds", "references_total", "entities_total")


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


def upsert_sql(dialect: str, target: str, source_select: str, columns: list[str], key: tuple[str, ...]) -> str:
    """One statement that inserts the rows of ``source_select`` into ``target``
    and, for a row whose ``key`` is there already, updates its other columns.

    PostgreSQL and SQLite: ``INSERT … SELECT … ON CONFLICT (key) DO UPDATE SET
    c = excluded.c`` (the key must be the table's primary key or a unique
    constraint: the spec's, :mod:`washline.staging.spec`). SQL Server:
    ``MERGE … WITH (HOLDLOCK)`` ending in ``;`` (T-SQL requires it). Oracle:
    ``MERGE INTO … USING (…) ON (…)`` (no key column is updated: Oracle refuses
    that).

    Args:
        target: the quoted (qualified) table.
        source_select: a ``SELECT`` of exactly ``columns`` (``:name`` binds allowed).
        columns: the column names, in ``source_select``'s order.
        key: the key columns (a subset of ``columns``).
    """
    q = lambda c: quote_ident(c, dialect)  # noqa: E731
    missing = [k for k in key if k not in columns]
    if missing or not key:
        raise ValueError(f"upsert key {key} must be among the columns {columns}")
    cols = ", ".join(q(c) for c in columns)
    rest = [c for c in columns if c not in key]
    if dialect in ("postgres", "sqlite"):
        sets = ", ".join(f"{q(c)} = excluded.{q(c)}" for c in rest)
        action = f"DO UPDATE SET {sets}" if rest else "DO NOTHING"
        return f"INSERT INTO {target} ({cols}) {source_select} ON CONFLICT ({', '.join(q(k) for k in key)}) {action}"
    if dialect not in ("mssql", "oracle"):
        raise ValueError(f"unknown dialect {dialect!r}")
    on = " AND ".join(f"tgt.{q(k)} = src.{q(k)}" for k in key)
    sets = ", ".join(f"tgt.{q(c)} = src.{q(c)}" for c in rest)
    values = ", ".join(f"src.{q(c)}" for c in columns)
    matched = f" WHEN MATCHED THEN UPDATE SET {sets}" if rest else ""
    if dialect == "mssql":
        return (f"MERGE INTO {target} WITH (HOLDLOCK) AS tgt USING ({source_select}) AS src ON ({on})"
                f"{matched} WHEN NOT MATCHED BY TARGET THEN INSERT ({cols}) VALUES ({values});")
    return (f"MERGE INTO {target} tgt USING ({source_select}) src ON ({on})"
            f"{matched} WHEN NOT MATCHED THEN INSERT ({cols}) VALUES ({values})")


def entity_publish_plan(dialect: str, columns: dict[str, list[str]], schema: str | None = None,
                        mode: str = FULL) -> list[Step]:
    """The registry statements of a publish, run inside the slice's transaction
    after :func:`publish_plan`'s slice steps (binds ``:ds``, ``:load_id``,
    ``:published_at``).

    ``full``: ``entity_members`` and ``entities`` are replaced by the staged
    merged version (entities with ``removed = 0``), ``entity_changes`` rows of
    dates from ``ds`` on are replaced by the night's (later dates belong to a
    version the lake was rolled back from). ``incremental``: the staged delta is
    upserted (:func:`upsert_sql`, keyed by each table's primary key from the
    spec), entities staged with ``removed = 1`` are deleted, and the night's
    ``entity_changes`` rows are replaced. A full publish then counts
    ``entity_members`` and ``entities``; an incremental one counts, before its
    upserts, the staged keys the tables lack (``new:<table>``) and the removed
    entities they hold (``removed:entities``), and adds them to the held
    version's totals (the ``held`` step). Both record the version in
    ``entity_registry_state`` and prune earlier staged dates.

    Args:
        dialect: target dialect.
        columns: published entity table → its columns (the contract columns,
            all present in the staging table).
        schema: schema of all tables, or ``None``.
        mode: ``full`` or ``incremental`` (:data:`washline.registry.FULL` / ``INCREMENTAL``).
    """
    from washline.staging.spec import TABLES

    if mode not in (FULL, INCREMENTAL):
        raise ValueError(f"publish mode {mode!r} is neither {FULL!r} nor {INCREMENTAL!r}")
    q = lambda t: qualify(t, dialect, schema)  # noqa: E731
    version_cols = ", ".join(quote_ident(c, dialect) for c in VERSION_COLUMNS)
    steps = [
        Step("version", f"SELECT {version_cols} FROM {q('staging_entity_versions')} "
                        "WHERE ds = :ds AND load_id = :load_id"),
        Step("held", f"SELECT ds, references_total, entities_total FROM {q('entity_registry_state')}"),
    ]
    for staging in ENTITY_STAGING_TABLES:
        steps.append(Step(f"other_load_ids:{staging}",
                          f"SELECT COUNT(*) FROM {q(staging)} WHERE ds = :ds AND load_id <> :load_id"))
        steps.append(Step(f"staged:{staging}", f"SELECT COUNT(*) FROM {q(staging)} WHERE ds = :ds"))
    for staging, published in ENTITY_TABLES.items():
        cols = ", ".join(quote_ident(c, dialect) for c in columns[published])
        live = " AND removed = 0" if published == "entities" else ""
        select = f"SELECT {cols} FROM {q(staging)} WHERE ds = :ds{live}"
        if published == "entity_changes":
            since = "ds >= :ds" if mode == FULL else "ds = :ds"
            steps.append(Step(f"delete:{published}", f"DELETE FROM {q(published)} WHERE {since}"))
            steps.append(Step(f"insert:{published}", f"INSERT INTO {q(published)} ({cols}) {select}"))
            steps.append(Step(f"count:{published}", f"SELECT COUNT(*) FROM {q(published)} WHERE ds = :ds"))
            continue
        if mode == FULL:
            steps.append(Step(f"delete:{published}", f"DELETE FROM {q(published)}"))
            steps.append(Step(f"insert:{published}", f"INSERT INTO {q(published)} ({cols}) {select}"))
            steps.append(Step(f"count:{published}", f"SELECT COUNT(*) FROM {q(published)}"))
            continue
        # incremental: the rows the delta adds and removes, counted by key before the statements
        # (index probes per staged row), so the totals reconcile without reading the whole table
        key = " AND ".join(f"p.{k} = s.{k}" for k in TABLES[published].primary_key)
        staged_live = " AND s.removed = 0" if published == "entities" else ""
        steps.append(Step(f"new:{published}", f"SELECT COUNT(*) FROM {q(staging)} s WHERE s.ds = :ds{staged_live} "
                                              f"AND NOT EXISTS (SELECT 1 FROM {q(published)} p WHERE {key})"))
        if published == "entities":
            steps.append(Step("removed:entities", f"SELECT COUNT(*) FROM {q(staging)} s WHERE s.ds = :ds "
                                                  f"AND s.removed = 1 AND EXISTS "
                                                  f"(SELECT 1 FROM {q(published)} p WHERE {key})"))
        steps.append(Step(f"upsert:{published}", upsert_sql(dialect, q(published), select, columns[published],
                                                            TABLES[published].primary_key)))
        if published == "entities":
            steps.append(Step("delete_removed:entities",
                              f"DELETE FROM {q(published)} WHERE entity_id IN "
                              f"(SELECT entity_id FROM {q(staging)} WHERE ds = :ds AND removed = 1)"))
    state_cols = ", ".join(quote_ident(c, dialect) for c in (*VERSION_COLUMNS, "ds", "load_id"))
    steps.append(Step("delete:entity_registry_state", f"DELETE FROM {q('entity_registry_state')}"))
    steps.append(Step("insert:entity_registry_state",
                      f"INSERT INTO {q('entity_registry_state')} ({state_cols}, {quote_ident('published_at', dialect)}) "
                      f"SELECT {state_cols}, :published_at FROM {q('staging_entity_versions')} "
                      "WHERE ds = :ds AND load_id = :load_id"))
    for staging in ("staging_entity_members", "staging_entities", "staging_entity_versions"):
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
            the same transaction (:func:`entity_publish_plan`, in the mode the
            load recorded in ``staging_entity_versions``): its staging rows
            must come from the slice's load.

    Returns:
        ``{"rows": {published_table: n}, "load_id": id, "seconds": s, "dialect": d}``;
        on a registry night ``rows`` also holds ``entity_members``, ``entities``
        (whole tables: counted on a full publish, the held totals plus the
        delta's new rows minus its removed ones on an incremental one) and
        ``entity_changes`` (the date's rows), and
        ``registry`` is ``{"mode": "incremental" | "full", "reason", "base_ds",
        "held_ds"}`` (the path taken and why).

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
        entity_columns = _entity_columns(cur, dialect, schema) if with_entities else {}
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
        now = dt.datetime.now(dt.timezone.utc)
        # SQLite keeps ISO text; SQL Server DATETIME2 and Oracle TIMESTAMP take naive UTC.
        params["published_at"] = (now.isoformat() if dialect == "sqlite" else
                                  (now.replace(tzinfo=None) if dialect in ("mssql", "oracle") else now))
        if with_entities:
            registry = _publish_entities(cur, dialect, schema, entity_columns, params)
            counts.update(registry.pop("rows"))
        params.update({"records": counts["published_records"], "links": counts["published_links"],
                       "clusters": counts["published_clusters"]})
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
    out = {"rows": counts, "load_id": load_ids[0], "seconds": round(time.monotonic() - started, 2),
           "dialect": dialect}
    if with_entities:
        out["registry"] = registry
    return out


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


def _publish_entities(cur: Any, dialect: str, schema: str | None, columns: dict[str, list[str]],
                      params: dict[str, Any]) -> dict[str, Any]:
    """Run the registry steps of an open publish transaction.

    Returns:
        ``{"rows": {published table: rows}, "mode", "reason", "base_ds", "held_ds"}``
        (``entity_changes``: the date's rows; the others: whole tables).

    Raises:
        NothingToPublish: no staged version row of the load, staged rows of
            another load, an empty staged version on a full publish, or an
            incremental delta whose base is not the version the database holds
            now (the load must run again).
        RuntimeError: a table does not reconcile with the version's totals
            after the statements (rolled back by the caller).
    """
    ds, load_id = params["ds"], params["load_id"]
    probe = {s.name: s for s in entity_publish_plan(dialect, columns, schema, FULL)}
    staged: dict[str, int] = {}
    for staging in ENTITY_STAGING_TABLES:
        other = _execute(cur, probe[f"other_load_ids:{staging}"], dialect, params).fetchone()[0]
        if other:
            raise NothingToPublish(
                f"{staging} ds={ds} has {other} row(s) from a load other than {load_id!r}; the registry "
                "version is not the slice's load. Nothing published.")
        staged[staging] = _execute(cur, probe[f"staged:{staging}"], dialect, params).fetchone()[0]
    row = _execute(cur, probe["version"], dialect, params).fetchone()
    if row is None:
        raise NothingToPublish(
            f"staging_entity_versions holds no row of load {load_id!r} for ds={ds}: the registry version was not "
            "staged with the slice (run load_staging again). Nothing published.")
    version = dict(zip(VERSION_COLUMNS, row))
    held = _execute(cur, probe["held"], dialect, params).fetchall()
    held_ds = held[0][0] if len(held) == 1 else None
    mode = version["publish_mode"]
    if mode == INCREMENTAL and held_ds != version["base_ds"]:
        raise NothingToPublish(
            f"the staged registry delta of ds={ds} applies to ds={version['base_ds']}, but the database now holds "
            f"{('ds=' + held_ds) if held_ds else 'no recorded version'} (published since the load?); run "
            "load_staging again, it then stages the whole version. Nothing published.")
    plan = {s.name: s for s in entity_publish_plan(dialect, columns, schema, mode)}
    if mode == FULL:
        for staging in ("staging_entity_members", "staging_entities"):
            if not staged[staging] and version["references_total"]:
                raise NothingToPublish(
                    f"{staging} holds no rows for ds={ds}: the registry version of the date was not "
                    "staged (publishing it would empty the published registry). Nothing published.")
    log.info("registry ds=%s: %s publish (%s)", ds, mode, version["reason"])
    counts: dict[str, int] = {}
    # incremental: the held version's totals (reconciled when it was published) plus what the delta adds
    # minus what it removes, so that a night costs what it changes, not the size of the registry
    before = {"entity_members": int(held[0][1]), "entities": int(held[0][2])} if mode == INCREMENTAL else {}
    for staging, published in ENTITY_TABLES.items():
        if f"new:{published}" in plan:
            counts[published] = before[published] + int(
                _execute(cur, plan[f"new:{published}"], dialect, params).fetchone()[0])
        if f"removed:{published}" in plan:
            counts[published] -= int(_execute(cur, plan[f"removed:{published}"], dialect, params).fetchone()[0])
        for name in (f"delete:{published}", f"insert:{published}", f"upsert:{published}", f"delete_removed:{published}"):
            if name in plan:
                _execute(cur, plan[name], dialect, params)
        if f"count:{published}" in plan:
            counts[published] = _execute(cur, plan[f"count:{published}"], dialect, params).fetchone()[0]
    expected = {"entity_members": version["references_total"], "entities": version["entities_total"],
                "entity_changes": staged["staging_entity_changes"]}
    wrong = {t: (counts[t], int(n)) for t, n in expected.items() if counts[t] != int(n)}
    if wrong:
        raise RuntimeError(
            f"the published registry does not reconcile after the {mode} publish of ds={ds}: "
            + "; ".join(f"{t} holds {got} rows, the version has {want}" for t, (got, want) in wrong.items())
            + "; rolled back")
    _execute(cur, plan["delete:entity_registry_state"], dialect, params)
    _execute(cur, plan["insert:entity_registry_state"], dialect, params)
    for staging in ("staging_entity_members", "staging_entities", "staging_entity_versions"):
        _execute(cur, plan[f"prune:{staging}"], dialect, params)
    return {"rows": counts, "mode": mode, "reason": version["reason"], "base_ds": version["base_ds"],
            "held_ds": held_ds}


def held_registry(conn_id: str, schema: str | None = None) -> str | None:
    """The registry version (``ds``) the published tables hold, from
    ``entity_registry_state``; None when none is recorded (a new database, or
    one published before the state was recorded). Creates missing tables.

    Raises:
        StagingUnreachable: no connection after the retries.
    """
    hook, dialect = get_db_hook(conn_id)
    schema = validate_schema(schema, dialect)
    conn = connect(hook, dialect, conn_id)
    try:
        ensure_schema(conn, dialect, schema)
        cur = conn.cursor()
        cur.execute(f"SELECT ds FROM {qualify('entity_registry_state', dialect, schema)}")
        rows = cur.fetchall()
        conn.rollback()
    finally:
        conn.close()
    return rows[0][0] if len(rows) == 1 else None
