"""Command line: the integrity checks outside Airflow.

    python -m washline.integrity (--conn-uri URI | --conn-id ID) [--physical-only] [--json]
                                 [--table T ...] [--timeout SECONDS]

``URI`` is SQLAlchemy form: ``sqlite:////abs/path.db``,
``postgresql://user@host:5432/db``, ``mssql+pymssql://user@host:1433/db``,
``oracle+oracledb://user@host:1521/?service_name=FREEPDB1``. A password in
argv is visible to other users through ``ps``: prefer ``--conn-id`` or put
the URI in the environment variable ``WASHLINE_INTEGRITY_URI`` and pass
``--conn-uri env``. Passwords are never printed.

Exit codes (like ``pg_amcheck``): 0 PASS or WARN, 2 FAIL, 1 ERROR — a usage
error is also 1 (the check did not run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

EXIT = {"PASS": 0, "WARN": 0, "FAIL": 2, "ERROR": 1}
SCHEMES = {"sqlite": "sqlite", "postgresql": "postgres", "postgres": "postgres", "mssql": "mssql",
           "oracle": "oracle"}
URI_ENV = "WASHLINE_INTEGRITY_URI"


class UsageError(ValueError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 1 (ERROR), never 2 (FAIL)
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def connection_from_uri(uri: str) -> dict[str, Any]:
    """Airflow connection fields (``conn_type``, host, …) from a SQLAlchemy URI.

    Raises:
        UsageError: unknown scheme or a relative SQLite path.
    """
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+", 1)[0].lower()
    if scheme not in SCHEMES:
        raise UsageError(f"unsupported URI scheme {parts.scheme!r}; use sqlite, postgresql, mssql+pymssql or oracle+oracledb")
    conn_type = SCHEMES[scheme]
    if conn_type == "sqlite":
        path = unquote(parts.path)[1:] if parts.path.startswith("//") else ""
        if not path.startswith("/"):
            raise UsageError("SQLite URI must hold an absolute path: sqlite:////abs/path.db")
        return {"conn_type": "sqlite", "host": path}
    query = dict(parse_qsl(parts.query))
    pw = unquote(parts.password or "") or None
    conn: dict[str, Any] = {"conn_type": conn_type, "host": parts.hostname or "", "login": unquote(parts.username or ""),
                            "password": pw}
    if parts.port:
        conn["port"] = parts.port
    db = unquote(parts.path.lstrip("/"))
    if conn_type == "oracle":
        if db:
            conn["extra"] = {"service_name": db}
        if query.get("service_name"):
            conn["extra"] = {"service_name": query["service_name"]}
    elif db:
        conn["schema"] = db
    return {k: v for k, v in conn.items() if v not in (None, "")}


CLI_CONN_ID = "washline_integrity_cli"


def register_uri(uri: str) -> str:
    """Expose the URI to Airflow as connection ``washline_integrity_cli``
    (``AIRFLOW_CONN_WASHLINE_INTEGRITY_CLI`` in this process's environment
    only, JSON form; nothing is written to disk) and return that id."""
    os.environ["AIRFLOW_CONN_" + CLI_CONN_ID.upper()] = json.dumps(connection_from_uri(uri))
    return CLI_CONN_ID


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m washline.integrity", description=__doc__.split("\n\n")[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--conn-uri", help=f"SQLAlchemy URI, or 'env' to read ${URI_ENV}")
    target.add_argument("--conn-id", help="Airflow connection id")
    parser.add_argument("--physical-only", action="store_true", help="PHYSICAL_ONLY / quick_check / no heapallindexed")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--table", action="append", help="table to check (PostgreSQL, Oracle); repeatable")
    parser.add_argument("--timeout", type=float, help="seconds per check/statement; reaching it is ERROR")
    args = parser.parse_args(argv)
    mode = "physical_only" if args.physical_only else "full"

    from washline.integrity import run_check

    try:
        if args.conn_id:
            report = run_check(args.conn_id, mode, args.table, timeout_s=args.timeout)
        else:
            uri = os.environ.get(URI_ENV, "") if args.conn_uri == "env" else args.conn_uri
            if not uri:
                raise UsageError(f"--conn-uri env given but ${URI_ENV} is empty")
            report = run_check(register_uri(uri), mode, args.table, timeout_s=args.timeout)
    except Exception as exc:  # could not start the check: ERROR
        print(f"integrity check could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.render())
    return EXIT[report.verdict.value]


# Run only as ``python -m washline.integrity`` (spec name checked: Airflow's plugin
# loader may import this file under the bare name "__main__").
if __name__ == "__main__" and (__spec__ is None or __spec__.name == "washline.integrity.__main__"):
    sys.exit(main())
