"""Command line for the demo: land FEBRL input and print a run's summary.

    python -m washline.demo land --dataset febrl3 --ds 2025-01-01
    python -m washline.demo summary --ds 2025-01-01

Paths come from ``$WASHLINE_DATA`` (default ``<repo>/data``), as in the DAG.
"""

from __future__ import annotations

import argparse
import json
import sys

from washline.paths import RunPaths, data_root, validate_ds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="washline.demo", description=__doc__.splitlines()[1])
    sub = parser.add_subparsers(dest="command", required=True)
    land = sub.add_parser("land", help="write a FEBRL data set into landing/febrl/<ds>/")
    land.add_argument("--dataset", default="febrl3", choices=["febrl1", "febrl3"])
    land.add_argument("--ds", required=True, type=validate_ds)
    land.add_argument("--landing", default=None, help="landing root (default <data root>/landing)")
    summary = sub.add_parser("summary", help="print the run summary of a logical date")
    summary.add_argument("--ds", required=True, type=validate_ds)
    summary.add_argument("--json", action="store_true", help="print the raw JSON")
    args = parser.parse_args(argv)

    if args.command == "land":
        from washline.landing import land_febrl

        root = RunPaths.for_run(args.ds, args.landing or "landing").landing
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
