"""Publish (write-audit-publish): copy one date's audited staging slice to the
published tables atomically.

One transaction: for each table, delete the date's published rows and insert
the staging rows; record the publish in ``publish_log``; commit. If any
statement fails or the process dies, the database rolls back and the published
tables are exactly as they were.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

from washline.staging.dialects import (
    PUBLISHED_TABLES,
    get_db_hook,
    placeholder,
    quote_ident,
    table_columns,
)
from washline.staging.load import begin, ensure_schema

log = logging.getLogger(__name__)


class NothingToPublish(RuntimeError):
    """The staging slice for the date is empty or has more than one load id."""


def publish_slice(conn_id: str, ds: str) -> dict[str, Any]:
    """Atomically replace the ``ds`` slice of every published table with staging's.

    Returns:
        ``{"rows": {published_table: n}, "load_id": id, "seconds": s}``.

    Raises:
        NothingToPublish: the staging slice is empty or mixes load ids.
    """
    started = time.monotonic()
    hook, dialect = get_db_hook(conn_id)
    conn = hook.get_conn()
    p = placeholder(dialect)
    counts: dict[str, int] = {}
    try:
        ensure_schema(conn, dialect)
        begin(conn, dialect)
        cur = conn.cursor()
        cur.execute(f"SELECT DISTINCT load_id FROM {quote_ident('staging_records', dialect)} WHERE ds = {p}", (ds,))
        load_ids = [r[0] for r in cur.fetchall()]
        if len(load_ids) != 1:
            raise NothingToPublish(
                f"staging slice ds={ds} has load ids {load_ids}; expected exactly one. Nothing published."
            )
        for staging, published in PUBLISHED_TABLES.items():
            cols = ", ".join(quote_ident(c, dialect) for c in table_columns(cur, staging, dialect))
            qp, qs = quote_ident(published, dialect), quote_ident(staging, dialect)
            cur.execute(f"DELETE FROM {qp} WHERE ds = {p}", (ds,))
            cur.execute(f"INSERT INTO {qp} ({cols}) SELECT {cols} FROM {qs} WHERE ds = {p}", (ds,))
            cur.execute(f"SELECT COUNT(*) FROM {qp} WHERE ds = {p}", (ds,))
            counts[published] = cur.fetchone()[0]
        log_table = quote_ident("publish_log", dialect)
        cur.execute(f"DELETE FROM {log_table} WHERE ds = {p} AND load_id = {p}", (ds, load_ids[0]))
        now = dt.datetime.now(dt.timezone.utc)
        cur.execute(
            f"INSERT INTO {log_table} (ds, load_id, published_at, records, links, clusters) "
            f"VALUES ({', '.join([p] * 6)})",
            (ds, load_ids[0], now.isoformat() if dialect == "sqlite" else now,
             counts["published_records"], counts["published_links"], counts["published_clusters"]),
        )
        conn.commit()
    except BaseException:
        conn.rollback()
        log.error("publish of ds=%s rolled back; published tables are unchanged", ds)
        raise
    finally:
        conn.close()
    log.info("published ds=%s load_id=%s: %s", ds, load_ids[0], counts)
    return {"rows": counts, "load_id": load_ids[0], "seconds": round(time.monotonic() - started, 2)}
