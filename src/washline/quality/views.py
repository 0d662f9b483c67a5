"""The per-run database views over the slice queries: name, create, drop.

What it owns: :func:`view_name` (``wlgx_<suite>_<yyyymmdd>_<8 hex>``),
:func:`slice_views` (a context manager that creates one view per suite
through the Airflow connection's hook and drops them when the block ends,
also on error) and :class:`SliceViewsRefused` (the connection may not create
views; the runner then falls back to GX query assets).
"""

from __future__ import annotations

import logging
import secrets
from contextlib import contextmanager
from typing import Any, Iterator

from washline.paths import validate_ds
from washline.quality.slices import query_for

log = logging.getLogger("washline.quality.runner")

#: Per-run views (see :func:`slice_views`): ``wlgx_<suite>_<yyyymmdd>_<8 hex>``.
VIEW_PREFIX = "wlgx"


def view_name(suite: str, ds: str, token: str) -> str:
    """``wlgx_<suite>_<yyyymmdd>_<token>``: the per-run view of one suite's slice.

    The random ``token`` (8 hex digits per run) keeps two runs apart, of the
    same or of different dates, so concurrent validations never share a view.

    Raises:
        ValueError: the name is not a plain identifier of at most 63
            characters (:data:`washline.staging.dialects.IDENTIFIER`).
    """
    from washline.staging.dialects import IDENTIFIER

    validate_ds(ds)
    name = f"{VIEW_PREFIX}_{suite}_{ds.replace('-', '')}_{token}".lower()
    if not IDENTIFIER.match(name):
        raise ValueError(f"view name {name!r} is not a plain identifier ({IDENTIFIER.pattern})")
    return name


class SliceViewsRefused(RuntimeError):
    """The staging connection may not create the per-run views (message says why)."""


@contextmanager
def slice_views(conn_id: str, ds: str, dialect: str, suites: list[str], schema: str | None = None,
                token: str | None = None, registry: bool = False) -> Iterator[dict[str, str]]:
    """Create one view per suite over the ``ds`` slice for the block, then drop them.

    Each view is :func:`query_for`'s query (restricted to ``ds``, joins
    included; ``registry``: a registry night's) under :func:`view_name`, in ``schema`` (None = default), created
    and committed through the Airflow connection's own hook so that GX's
    separate SQLAlchemy connection sees it. GX then validates a *table*
    asset over the view and reads the column names from the catalogue
    (``Inspector.get_columns``) instead of running the slice query and
    fetching every row (``column_reflection_fallback`` on a query asset).

    The views are dropped when the block ends, also on error; a drop that
    fails is logged as a warning naming the view (PostgreSQL waits at most
    30 s for its lock). A process killed mid-run leaves ``wlgx_*`` views
    behind: they hold no data and can be dropped by hand.

    Yields:
        ``{suite: view name}`` (unqualified, lower case).

    Raises:
        SliceViewsRefused: a CREATE VIEW failed (e.g. no privilege); views
            created before it are dropped.
        ValueError: bad ``ds``, ``schema`` or suite name.
    """
    from washline.staging.dialects import connect, get_db_hook, qualify

    token = token or secrets.token_hex(4)
    names = {suite: view_name(suite, ds, token) for suite in suites}
    statements = {suite: f"CREATE VIEW {qualify(names[suite], dialect, schema)} AS "
                         f"{query_for(suite, ds, dialect, schema, registry)}" for suite in suites}
    hook, _ = get_db_hook(conn_id)
    conn = connect(hook, dialect, conn_id)
    created: list[str] = []
    try:
        cur = conn.cursor()
        try:
            for suite in suites:
                cur.execute(statements[suite])
                created.append(names[suite])
                conn.commit()  # one view per transaction: what exists is what `created` lists
        except Exception as exc:
            conn.rollback()
            raise SliceViewsRefused(f"cannot create the per-run view {names[suite]} for {suite}: "
                                    f"{type(exc).__name__}: {exc}") from exc
        log.info("GX slice views for ds=%s: %s", ds, ", ".join(names.values()))
        yield names
    finally:
        _drop_views(conn, dialect, schema, created)
        conn.close()


def _drop_views(conn: Any, dialect: str, schema: str | None, views: list[str]) -> None:
    from washline.staging.dialects import qualify

    cur = conn.cursor()
    if dialect == "postgres" and views:
        try:
            cur.execute("SET lock_timeout = '30s'")
        except Exception:  # noqa: BLE001 - only a guard against waiting forever
            conn.rollback()
    for name in views:
        try:
            cur.execute(f"DROP VIEW {qualify(name, dialect, schema)}")
            conn.commit()
        except Exception as exc:  # noqa: BLE001 - reported; the view holds no data
            log.warning("could not drop the GX slice view %s (drop it by hand): %s: %s",
                        qualify(name, dialect, schema), type(exc).__name__, exc)
            try:
                conn.rollback()
            except Exception:  # noqa: BLE001
                pass
