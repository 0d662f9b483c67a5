"""What SQL a block of code sends through SQLAlchemy, and which of it reads table rows.

Measurement only: ``benchmarks/quality.py`` and the GX tests use it around
``washline.quality.runner.validate_slice``; the product never imports it (a
validation in production attaches no listener).

* :func:`capture_sql` records every statement SQLAlchemy sends while its block
  runs (process-wide listeners on ``Engine``, removed when the block ends);
* :func:`bound_limit` reads the row limit of a statement (``LIMIT n``, literal
  or a bound parameter);
* :func:`row_reads` picks the statements that bring rows of the slice to the
  client (no aggregate, not ``LIMIT 0``, not GX's ``SELECT 1`` probe).

Statements are read with sqlparse (its token tree keeps parentheses grouped,
so "the outer select list" and "the first derived table" need no depth count).

Load it from a test with ``importlib`` (``tests/conftest.py``'s ``sqlcapture``
fixture) or from a benchmark script beside it (``import sqlcapture``).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator

import sqlparse
from sqlparse import tokens as T
from sqlparse.sql import Function, Identifier, Parenthesis, Statement, TokenList

#: Aggregate functions: a statement whose outer select list computes one reads no rows.
AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "stddev", "variance"})


@contextmanager
def capture_sql() -> Iterator[list[dict[str, Any]]]:
    """Collect every SQL statement SQLAlchemy sends while the block runs.

    Yields a list that fills with ``{"sql": text, "seconds": wall seconds,
    "limit": :func:`bound_limit` of the statement}`` (to count GX's queries and
    spot statements that read the slice's rows: see :func:`row_reads`).
    Parameter values themselves are not kept. The listeners are process-wide:
    statements of other threads in the block are collected too.
    """
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    statements: list[dict[str, Any]] = []

    def before(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001
        conn.info.setdefault("sqlcapture_t0", []).append(time.perf_counter())

    def after(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001
        t0 = conn.info.get("sqlcapture_t0", [time.perf_counter()]).pop()
        statements.append({"sql": statement, "seconds": round(time.perf_counter() - t0, 4),
                           "limit": bound_limit(statement, parameters)})

    event.listen(Engine, "before_cursor_execute", before)
    event.listen(Engine, "after_cursor_execute", after)
    try:
        yield statements
    finally:
        event.remove(Engine, "before_cursor_execute", before)
        event.remove(Engine, "after_cursor_execute", after)


def _parse(sql: str) -> Statement:
    return sqlparse.parse(sql)[0]


def _code(tokens) -> list:
    """``tokens`` without whitespace and comments."""
    return [t for t in tokens if not t.is_whitespace and t.ttype not in T.Comment]


def bound_limit(statement: str, parameters: Any) -> int | None:
    """The row limit of ``statement``'s outer ``LIMIT`` (a literal or a bound parameter), else None.

    Reads ``%(name)s`` / ``%s`` (PostgreSQL), ``:name`` (Oracle) and ``?``
    (SQLite, positional: the marker's position among the statement's markers)
    placeholders; a cast after the marker (``%(p)s::INTEGER``) is ignored.
    A ``LIMIT`` inside a subquery does not count, and SQL Server's ``TOP`` is
    not recognised (None).
    """
    parsed = _parse(statement)
    tokens = _code(parsed.tokens)
    limits = [i for i, t in enumerate(tokens) if t.ttype is T.Keyword and t.normalized == "LIMIT"]
    if not limits or limits[-1] + 1 >= len(tokens):
        return None
    value = tokens[limits[-1] + 1]
    marker = _code(value.flatten())[0] if isinstance(value, TokenList) else value
    text = marker.value
    try:
        if marker.ttype in T.Number.Integer:
            return int(text)
        if marker.ttype is not T.Name.Placeholder:
            return None
        if text.startswith("%(") and text.endswith(")s"):
            return int(parameters[text[2:-2]])
        if text.startswith(":"):
            return int(parameters[text[1:]])
        positional = [t for t in parsed.flatten() if t.ttype is T.Name.Placeholder and t.value in ("?", "%s")]
        index = next(i for i, t in enumerate(positional) if t is marker)
        return int(list(parameters)[index])
    except (KeyError, IndexError, TypeError, ValueError, StopIteration):
        return None


def _select_list(statement: Statement) -> list:
    """The outer statement's tokens between ``SELECT`` and ``FROM`` (empty if it is not a SELECT)."""
    tokens = _code(statement.tokens)
    if not tokens or tokens[0].ttype is not T.DML or tokens[0].normalized != "SELECT":
        return []
    out = []
    for t in tokens[1:]:
        if t.ttype is T.Keyword and t.normalized == "FROM":
            break
        out.append(t)
    return out


def _derived_table(statement: Statement) -> Statement | None:
    """The subquery of the outer ``FROM (SELECT …) alias``, parsed, or None."""
    tokens = _code(statement.tokens)
    for i, t in enumerate(tokens[:-1]):
        if t.ttype is T.Keyword and t.normalized == "FROM":
            source = tokens[i + 1]
            inner = source if isinstance(source, Parenthesis) else (
                source.tokens[0] if isinstance(source, Identifier) and isinstance(source.tokens[0], Parenthesis)
                else None)
            if inner is None:
                return None
            return _parse("".join(str(x) for x in inner.tokens[1:-1]))
    return None


def _aggregates(tokens) -> bool:
    """Whether an aggregate function is called anywhere in ``tokens``."""
    for t in tokens:
        if isinstance(t, Function) and (t.get_name() or "").lower() in AGGREGATES:
            return True
        if isinstance(t, TokenList) and _aggregates(t.tokens):
            return True
    return False


def row_reads(statements: list[dict[str, Any]], relations: list[str]) -> list[dict[str, Any]]:
    """Statements that bring rows of the slice to the client.

    A statement counts when it names one of ``relations`` (the per-run view
    names, or the slice queries' text for query assets), computes no
    aggregate in its outer select list or in the select list of its outer
    derived table (``SELECT x.n FROM (SELECT sum(…) AS n …) x`` reads one
    row), is not limited to zero rows (``LIMIT 0``) and is not GX's
    ``SELECT 1 … LIMIT 1`` existence probe of a table asset: GX's column
    reflection of a query asset (the whole query, every row fetched) and its
    ``partial_unexpected_list`` queries (``… LIMIT 5``) are such reads.

    Args:
        statements: :func:`capture_sql` entries.
        relations: strings whose presence marks a statement as reading the slice.

    Returns:
        ``[{"sql": first 200 characters, whitespace collapsed, "seconds", "limit"}]``.
    """
    out = []
    for st in statements:
        sql = " ".join(st["sql"].split())
        if not any(r in sql for r in relations):
            continue
        statement = _parse(sql)
        select = _select_list(statement)
        if not select:
            continue
        inner = _derived_table(statement)
        if _aggregates(select) or (inner is not None and _aggregates(_select_list(inner))):
            continue
        if st.get("limit") == 0:
            continue
        if len(select) == 1 and select[0].value == "1" and st.get("limit") == 1:
            continue  # GX's existence probe of a table asset: one constant, no slice values
        out.append({"sql": sql[:200], "seconds": st["seconds"], "limit": st.get("limit")})
    return out
