"""Command line for the demo: land FEBRL input, run a night, print a run's summary.

    python -m washline.demo land --dataset febrl3 --ds 2025-01-01
    python -m washline.demo night --dataset febrl4a --ds 2025-01-01   # land + airflow dags test + summary
    python -m washline.demo summary --ds 2025-01-01

``make demo`` runs two nights with ``night``: FEBRL4 part A as source
``febrl4a`` on 2025-01-01, part B as source ``febrl4b`` on 2025-01-02; the
summary of night 2 says how many references were new, how many joined
existing entities, and how many merges and splits the night made. FEBRL
carries truth, so each summary also gives the entity registry's pairwise
precision, recall and F1 after the night, over every reference in it (all
nights so far), beside the night's own figures; a figure that is undefined
reads "n/a" with the reason (in FEBRL4 each person has one record per part, so
no true pair lies inside one night and the night's own recall is undefined).

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
    land.add_argument("--dataset", default="febrl3", choices=["febrl1", "febrl3", "febrl4a", "febrl4b"])
    land.add_argument("--exclusive", action="store_true",
                      help="remove the date's landing folders of every other source (the night holds this set only)")
    land.add_argument("--ds", required=True, type=_ds, help="logical date, YYYY-MM-DD (a real calendar date)")
    land.add_argument(
        "--landing", default=None, type=_landing,
        help=("landing root; must be inside the data root ($WASHLINE_DATA, default <repo>/data; "
              f"now {data_root()}): relative paths are taken from the data root, paths that "
              "escape it (e.g. ../../etc) are refused (default <data root>/landing)").replace("%", "%%"))
    night = sub.add_parser("night", help="land a data set exclusively for a date, run washline_nightly for it "
                                         "with `airflow dags test`, print the summary")
    night.add_argument("--dataset", required=True, choices=["febrl1", "febrl3", "febrl4a", "febrl4b"])
    night.add_argument("--ds", required=True, type=_ds, help="logical date, YYYY-MM-DD")
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
        written = land_febrl(args.dataset, args.ds, root, exclusive=args.exclusive)
        print(f"landed {args.dataset} for {args.ds}: {len(written)} file(s) under {written[0].parent}")
        return 0
    if args.command == "night":
        return run_night(args.dataset, args.ds)
    return show_summary(args.ds, as_json=args.json)


def show_summary(ds: str, as_json: bool = False) -> int:
    """Print the run summary of ``ds``; 0 when published, 2 when not, 1 without a summary."""
    from washline.report import render

    path = RunPaths.for_run(ds, root=data_root()).summary
    if not path.exists():
        print(f"no run summary for {ds} at {path}", file=sys.stderr)
        return 1
    payload = json.loads(path.read_text())
    print(json.dumps(payload, indent=2) if as_json else render(payload))
    print(f"\n(summary file: {path})")
    html = path.with_name("report.html")
    if html.exists():
        print(f"(report: {html})")
    return 0 if payload.get("published") else 2


def run_night(dataset: str, ds: str) -> int:
    """One demo night: land ``dataset`` alone for ``ds``, run ``airflow dags
    test washline_nightly <ds>`` (log: ``<data root>/demo-<ds>.log``), print
    the summary.

    A date before an already published registry version is not rerun (the
    link job would refuse it: relinking it would fork the registry); its last
    summary is printed instead. Start over with ``rm -rf data/lake data/staging``.

    Returns:
        0 on success (or a kept night), else non-zero with the log's tail printed.
    """
    import subprocess

    from washline.landing import land_febrl
    from washline.registry import published_after

    paths = RunPaths.for_run(ds)
    later = published_after(paths)
    if later:
        print(f"{ds}: the entity registry is already published up to {later[-1]}; rerunning {ds} would fork it "
              f"(start over: rm -rf {paths.lake} {paths.root / 'staging'}). Its last summary:")
        show_summary(ds)
        return 0
    # the SQLite staging database of the default connection lives here; after `rm -rf data/staging`
    # (starting over) nothing else would create its folder again
    (paths.root / "staging").mkdir(parents=True, exist_ok=True)
    written = land_febrl(dataset, ds, paths.landing, exclusive=True)
    print(f"landed {dataset} for {ds}: {len(written)} file(s) under {written[0].parent}", flush=True)
    log_path = paths.root / f"demo-{ds}.log"
    airflow = Path(sys.executable).with_name("airflow")
    with log_path.open("w") as log:
        done = subprocess.run([str(airflow), "dags", "test", "washline_nightly", ds], stdout=log,
                              stderr=subprocess.STDOUT)
    if done.returncode != 0:
        print("\n".join(log_path.read_text(errors="replace").splitlines()[-60:]))
        print(f"demo night {ds} failed; full log: {log_path}")
        return done.returncode
    status = show_summary(ds)
    print(f"(log: {log_path})")
    return status


if __name__ == "__main__":
    sys.exit(main())
