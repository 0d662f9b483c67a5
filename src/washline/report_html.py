"""The night's HTML report: ``lake/reports/<ds>/report.html`` (and its review
page ``review.html``, see :mod:`washline.review`).

Written by the ``report`` task on every run, published or not, from the run
summary (``run_summary.json``, :mod:`washline.report`) and the files the night
left in the lake, each read only when the summary says its task succeeded (a
file left by an earlier run of the date is not this run's):

* ``lake/linked/<ds>/metrics.json``: the HDWM iterations (mu, epsilon, counts, seconds);
* ``lake/linked/<ds>/clusters/`` (Parquet ``cluster_size``): the cluster size distribution;
* ``lake/linked/<ds>/pairs/`` (Parquet ``score, iteration, accepted``): the score histogram;
* ``lake/reports/<d>/run_summary.json`` of the nights up to ``ds``: the 30-night trend.

The page is self-contained: charts are inline SVG drawn by matplotlib
(:mod:`washline.report_charts`), the style sheet is inline, there is no script
and no reference to anything outside the reports folder, so it opens from a
file, offline. Links are relative (``gx/<run>/…/index.html`` for that run's
Data Docs, ``review.html``, ``run_summary.json``), so they work both from the
file and through the Airflow plugin (:mod:`washline.web`), which serves the
reports folder.

    python -m washline.report_html --ds 2025-01-02     # (re)write one night's pages from its files
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import jobcontract
from washline.paths import DS_PATTERN, RunPaths

log = logging.getLogger(__name__)

REPORT_FILE = "report.html"
TREND_NIGHTS = 30
TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass
class NightFiles:
    """What the night left in the lake, for the report (None = not available,
    with the reason in ``missing``)."""

    metrics: dict[str, Any] | None = None
    sizes: dict[int, int] | None = None
    scores: dict[str, list[float]] | None = None  # {"accepted": [...], "close_calls": [...]}
    pair_iterations: list[int] = field(default_factory=list)  # iterations the pairs come from
    missing: dict[str, str] = field(default_factory=dict)


def trend_point(summary: Mapping[str, Any]) -> dict[str, Any]:
    """One night of the trend, from its run summary: ``ds``, ``published``,
    ``rows_in``, ``new_entities``, ``merges``, ``quarantined_share``, ``f1``
    (the night's own pairwise F1; None without truth or where undefined),
    ``registry_f1`` (the entity registry's pairwise F1 after the night, over
    every reference with truth; None likewise), ``f1_why`` / ``registry_f1_why``
    (why that F1 is undefined when truth is known; None when it is defined or
    no truth is known), ``seconds`` (sum over the tasks that ran; None when none did)."""
    from washline.report import pairwise_undefined

    reg = summary.get("registry") or {}
    night_pw, reg_pw = summary.get("pairwise"), summary.get("registry_pairwise")
    truth = night_pw is not None or reg_pw is not None
    secs = [v for v in (summary.get("seconds") or {}).values() if isinstance(v, (int, float))]
    return {
        "ds": summary.get("ds"),
        "published": bool(summary.get("published")),
        "rows_in": (summary.get("rows") or {}).get("in"),
        "new_entities": reg.get("new_entities"),
        "merges": reg.get("merges"),
        "quarantined_share": summary.get("quarantined_share"),
        "f1": (summary.get("pairwise") or {}).get("f1"),
        "registry_f1": (reg_pw or {}).get("f1"),
        "f1_why": pairwise_undefined(night_pw, "night").get("f1") if truth else None,
        "registry_f1_why": pairwise_undefined(reg_pw, "registry").get("f1") if reg_pw is not None else None,
        "seconds": round(sum(secs), 1) if secs else None,
    }


def load_history(reports_root: Path, summary: Mapping[str, Any], limit: int = TREND_NIGHTS) -> list[dict[str, Any]]:
    """The trend points of the last ``limit`` nights up to and including the
    summary's ``ds`` (oldest first), read from ``<reports_root>/<d>/run_summary.json``;
    the given summary stands for its own night. Unreadable summaries are skipped."""
    ds = summary["ds"]
    points = {ds: trend_point(summary)}
    try:
        folders = [p for p in reports_root.iterdir() if p.is_dir() and DS_PATTERN.match(p.name) and p.name < ds]
    except OSError:
        folders = []
    for folder in sorted(folders, key=lambda p: p.name, reverse=True):  # newest first
        if len(points) >= limit:
            break
        try:
            other = json.loads((folder / "run_summary.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(other, dict) and other.get("ds") == folder.name:
            points[folder.name] = trend_point(other)
    return [points[d] for d in sorted(points)]


def read_parquet_columns(folder: Path, columns: list[str]):
    """A Spark-written Parquet folder (``part-*.parquet``; ``_SUCCESS`` and
    hidden files ignored) as a pyarrow Table of ``columns``.

    Raises:
        OSError / pyarrow.ArrowInvalid: missing folder or unreadable files.
    """
    import pyarrow.parquet as pq

    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist")
    return pq.read_table(folder, columns=columns)


def iteration_mus(metrics: Mapping[str, Any] | None) -> dict[int, float]:
    """Iteration number → its mu, from the link job's ``metrics.json`` ``iterations``."""
    out: dict[int, float] = {}
    for it in (metrics or {}).get("iterations") or []:
        if isinstance(it, Mapping) and isinstance(it.get("mu"), (int, float)) and it.get("iteration") is not None:
            out[int(it["iteration"])] = float(it["mu"])
    return out


def read_night_files(paths: RunPaths, summary: Mapping[str, Any]) -> NightFiles:
    """Read the link job's outputs of the night, if this run's link task succeeded.

    Never raises: a missing or unreadable piece is recorded in ``missing``
    (piece → reason) and left None.
    """
    night = NightFiles()
    if summary.get("clusters") is None:
        why = "the link task did not succeed in this run"
        night.missing.update(metrics=why, sizes=why, scores=why)
        return night
    try:
        metrics = json.loads(paths.link_metrics.read_text())
        night.metrics = metrics if isinstance(metrics, dict) and metrics.get("ds") == paths.ds else None
        if night.metrics is None:
            night.missing["metrics"] = f"{paths.link_metrics} is not this date's"
    except (OSError, ValueError) as exc:
        night.missing["metrics"] = f"{paths.link_metrics}: {exc}"
    try:
        import pyarrow.compute as pc

        counts = pc.value_counts(read_parquet_columns(paths.linked / "clusters", ["cluster_size"])["cluster_size"])
        night.sizes = {int(v["values"]): int(v["counts"]) for v in counts.to_pylist() if v["values"] is not None}
    except Exception as exc:  # noqa: BLE001 - a chart is left out, the report still gets written
        night.missing["sizes"] = f"clusters/: {exc}"
    try:
        table = read_parquet_columns(paths.linked / "pairs", ["score", "accepted", "iteration"])
        scores = table["score"].to_pylist()
        accepted = table["accepted"].to_pylist()
        night.scores = {"accepted": [s for s, a in zip(scores, accepted) if a and s is not None],
                        "close_calls": [s for s, a in zip(scores, accepted) if not a and s is not None]}
        night.pair_iterations = sorted({int(i) for i in table["iteration"].to_pylist() if i is not None})
    except Exception as exc:  # noqa: BLE001
        night.missing["scores"] = f"pairs/: {exc}"
    return night


def pairwise_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's pairwise figures against the truth, one row per scope: the
    entity registry after the night (every reference in it with truth, all
    nights so far; only when the night used the registry) first, then the
    night's own clusters. Each row: ``scope`` (``registry`` / ``night``),
    ``label``, ``pw`` (the figures; {} when no reference of the scope carries
    truth), ``why`` (figure → why it is undefined, see
    :func:`washline.report.pairwise_undefined`) and ``note`` (one line, None
    when all are defined). Empty when no truth is known at all."""
    from washline.report import pairwise_note, pairwise_undefined

    night, registry = summary.get("pairwise"), summary.get("registry_pairwise")
    if night is None and registry is None:
        return []
    rows = []
    if registry is not None:
        version = (summary.get("registry") or {}).get("version") or summary.get("ds")
        rows.append({"scope": "registry", "pw": registry, "card": f"entity pairwise F1 after {version}",
                     "label": f"entity registry after {version} ({registry.get('references', 0):,} references "
                              f"with truth, every night so far)"})
    rows.append({"scope": "night", "pw": night or {}, "card": "pairwise F1 of this night's clusters",
                 "label": "this night's clusters (its references with truth)"})
    for row in rows:
        pw = None if row["scope"] == "night" and night is None else row["pw"]
        row["why"] = pairwise_undefined(pw, row["scope"])
        row["note"] = pairwise_note(pw, row["scope"])
    return rows


def _relative_link(target: str | None, base: Path) -> str | None:
    """``target`` (an absolute path) relative to ``base`` when it lies inside it, else None."""
    if not target:
        return None
    try:
        return Path(target).resolve().relative_to(base.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def _environment():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True)

    def num(value: Any, digits: int = 0) -> str:
        if value is None or isinstance(value, jinja2.Undefined):
            return "–"
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, int):
            return f"{value:,}"
        if isinstance(value, float):
            return f"{value:,.{digits}f}"
        return str(value)

    def ratio(value: Any, percent: bool = False) -> str:
        if not isinstance(value, (int, float)):
            return "n/a"
        return f"{value:.2%}" if percent else f"{value:.4f}"

    env.filters["num"] = num
    env.filters["ratio"] = ratio
    return env


def render_report(summary: Mapping[str, Any], night: NightFiles, history: list[dict[str, Any]],
                  reports_dir: Path, review_link: str | None = "review.html") -> str:
    """The report page as HTML text.

    Args:
        summary: the night's run summary (see :func:`washline.report.build_summary`).
        night: the link outputs (:func:`read_night_files`).
        history: trend points, oldest first (:func:`load_history`).
        reports_dir: the night's reports folder; links inside it are made relative.
        review_link: relative link to the review page (None: no review page).
    """
    from washline import report_charts as charts

    registry = summary.get("registry")
    mus = iteration_mus(night.metrics)
    figures = {
        "rows": (charts.rows_chart(summary.get("rows") or {}), "no row counts: the cleanse task did not run"),
        "sizes": (charts.size_distribution_chart(night.sizes or {}, "entity" if registry else "cluster"),
                  night.missing.get("sizes", "no clusters")),
        "scores": (charts.score_histogram((night.scores or {}).get("accepted", []),
                                          (night.scores or {}).get("close_calls", []),
                                          {i: m for i, m in mus.items() if i in night.pair_iterations} or mus),
                   night.missing.get("scores", "no scored pairs")),
        "seconds": (charts.seconds_chart(summary.get("seconds") or {}), "no task reported its seconds"),
        "trend": (charts.trend_chart(history), "no earlier night"),
    }
    checks = summary.get("checks") or {}
    data_docs = _relative_link(checks.get("data_docs"), reports_dir)
    page = _environment().get_template("report.html.j2").render(
        s=summary, rows=summary.get("rows") or {}, checks=checks, registry=registry,
        pairwise_rows=pairwise_rows(summary), figures=figures, metrics=night.metrics, missing=night.missing,
        iterations=(night.metrics or {}).get("iterations") or [], history=history,
        integrity=checks.get("integrity_report"), expectations=checks.get("expectations"),
        data_docs=data_docs, review_link=review_link,
        generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
    )
    return page


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, readable by the api-server's
    user too (``jobcontract.write_text_atomic``)."""
    return jobcontract.write_text_atomic(path, text)


def write_report(paths: RunPaths, summary: Mapping[str, Any]) -> Path:
    """Write ``report.html`` (and ``review.html``) of the night into ``paths.reports``.

    The review page is written first; when it cannot be (e.g. unreadable
    pairs), the report says so and links to nothing.

    Returns:
        The path of ``report.html``.
    """
    from washline.review import write_review

    review_link: str | None = None
    try:
        review = write_review(paths, summary)
        review_link = review.name
    except Exception:  # noqa: BLE001 - the report matters more than the review page
        log.exception("could not write the review page of ds=%s", paths.ds)
    night = read_night_files(paths, summary)
    history = load_history(paths.lake / "reports", summary)
    html = render_report(summary, night, history, paths.reports, review_link)
    return write_text_atomic(paths.reports / REPORT_FILE, html)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="washline.report_html", description="(Re)write a night's report.html")
    parser.add_argument("--ds", required=True)
    args = parser.parse_args(argv)
    paths = RunPaths.for_run(args.ds)
    try:
        summary = json.loads(paths.summary.read_text())
    except (OSError, ValueError) as exc:
        parser.exit(1, f"no readable run summary for {args.ds}: {exc}\n")
    print(write_report(paths, summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
