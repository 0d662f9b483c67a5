"""Command line for the demo: land FEBRL input and print a run's summary.

    python -m washline.demo land --dataset febrl3 --ds 2025-01-01
    python -m washline.demo summary --ds 2025-01-01

Paths come from ``$WASHLINE_DATA`` (default ``<repo>/data``), as in the DAG.
Bad arguments (a date that is not YYYY-MM-DD, a landing path outside the data
root) end with one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from washline.paths import ParamError, RunPaths, data_root, resolve_under_root, validate_ds


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _ds(value: str) -> str:
    """argparse type for ``--ds``: a real calendar date written YYYY-MM-DD; the
    error says why not (e.g. "day is out of range for month")."""
    try:
        return validate_ds(value)
    except ParamError as exc:
        why = f": {exc.__cause__}" if exc.__cause__ is not None and str(exc.__cause__) else ""
        raise argparse.ArgumentTypeError(f"{value} is not a valid YYYY-MM-DD date{why}") from exc


def _landing(value: str) -> Path:
    """argparse type for ``--landing``: a folder inside the data root."""
    try:
        return resolve_under_root(value)
    except ParamError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="washline.demo", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    land = sub.add_parser("land", help="write a FEBRL data set into landing/febrl/<ds>/")
    land.add_argument("--dataset", default="febrl3", choices=["febrl1", "febrl3"])
    land.add_argument("--ds", required=True, type=_ds, help="logical date, YYYY-MM-DD (a real calendar date)")
    land.add_argument(
        "--landing", default=None, type=_landing,
        help=("landing root; must be inside the data root ($WASHLINE_DATA, default <repo>/data; "
              f"now {data_root()}): relative paths are taken from the data root, paths that "
              "escape it (e.g. ../../etc) are refused (default <data root>/landing)").replace("%", "%%"))
    summary = sub.add_parser("summary", help="print the run summary of a logical date")
    summary.add_argument("--ds", required=True, type=_ds, help="logical date, YYYY-MM-DD")
    summary.add_argument("--json", action="store_true", help="print the raw JSON")
    args = parser.parse_args(argv)

    if args.command == "land":
        from washline.landing import land_febrl

        try:
            root = RunPaths.for_run(args.ds, args.landing or "landing").landing
        except ParamError as exc:  # e.g. $WASHLINE_DATA changed under us; never a traceback
            land.error(str(exc))
        written = land_febrl(args.dataset, args.ds, root)
        print(f"landed {args.dataset} for {args.ds}: {len(written)} file(s) under {root / 'febrl' / args.ds}")
        return 0

    from washline.report import render

    path = RunPaths.for_run(args.ds, root=data_root()).summary
    if not path.exists():
        print(f"no run summary for {args.ds} at {path}", file=sys.stderr)
        return 1
    payload = json.loads(path.read_text())
    print(json.dumps(payload, indent=2) if args.json else render(payload))
    print(f"\n(summary file: {path})")
    return 0 if payload.get("published") else 2


if __name__ == "__main__":
    sys.exit(main())
