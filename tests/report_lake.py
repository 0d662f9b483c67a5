"""A night's lake as the report task finds it, fabricated with pyarrow (shapes
of the link job's contract, see spark_jobs/link.py), for the report and
review page tests:

    lake/linked/<ds>/metrics.json          iterations (mu per iteration)
    lake/linked/<ds>/clusters/             cluster_id, cluster_size, quality, iteration
    lake/linked/<ds>/pairs/                source_a, record_id_a, source_b, record_id_b, score,
                                           iteration, accepted, agreeing, conflicting
    lake/curated/<ds>/                     record_id, source, ds, given_name, surname, date_of_birth
    lake/reports/<ds>/run_summary.json     (washline.report.build_summary of the XComs below)
    lake/reports/<ds>/gx/<run>/gx/uncommitted/data_docs/local_site/index.html
"""

from __future__ import annotations

import json
from pathlib import Path

from washline.paths import RunPaths
from washline.report import build_summary, write_json_atomic

RUN_ID = "manual__2025-01-02T02:00:00+00:00"
PEOPLE = {  # record_id -> (given_name, surname, date_of_birth)
    "r1": ("KRISTEN", "WHITE", "1976-12-01"), "r2": ("KRISTEN", "WHITE", "1976-12-01"),
    "r3": ("KRISTEN", "REID", "1983-08-01"), "r4": ("MATTHEW", "APTED", "1959-08-25"),
    "r5": ("MATTHEW", "APTED", "1954-01-30"), "r6": ("JOHN", "SMITH", "1970-01-01"),
}
#: (a, b, score, iteration, accepted)
PAIRS = [("r1", "r2", 0.97, 1, True), ("r1", "r3", 0.52, 1, True), ("r4", "r5", 0.47, 1, False),
         ("r3", "r6", 0.41, 1, False), ("r2", "r3", 0.61, 2, True), ("r5", "r6", 0.58, 2, False)]
ITERATIONS = [
    {"iteration": 1, "mu": 0.5, "epsilon": 0.2, "references": 6, "blocks": 4, "largest_block": 3,
     "pairs_compared": 9, "links": 2, "clusters": 1, "accepted_clusters": 1, "mean_quality": 0.81, "seconds": 1.5},
    {"iteration": 2, "mu": 0.6, "epsilon": 0.2, "references": 3, "blocks": 2, "largest_block": 2,
     "pairs_compared": 3, "links": 1, "clusters": 1, "accepted_clusters": 1, "mean_quality": 0.9, "seconds": 0.7},
]
EXPECTATIONS = [
    {"suite": "staging_records", "expectation": "expect_column_values_to_not_be_null", "column": "record_id",
     "severity": "critical", "status": "PASS", "unexpected_count": 0, "unexpected_percent": 0.0, "element_count": 6,
     "observed_value": None, "sample": [], "exception": None},
    {"suite": "staging_records", "expectation": "expect_column_values_to_match_regex", "column": "postcode",
     "severity": "warning", "status": "FAIL", "unexpected_count": 2, "unexpected_percent": 33.3,
     "element_count": 6, "observed_value": None, "sample": ["12", "x"], "exception": None},
]


def tokens(rid: str) -> set[str]:
    g, s, d = PEOPLE[rid]
    return {g, s, d.replace("-", "")}


def write_parquet(folder: Path, rows: list[dict], schema=None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / "part-00000.parquet")
    (folder / "_SUCCESS").write_text("")


def link_files(paths: RunPaths, source: str = "febrl") -> None:
    """The link job's outputs of the night (no registry)."""
    import pyarrow as pa

    paths.linked.mkdir(parents=True, exist_ok=True)
    (paths.link_metrics).write_text(json.dumps({"ds": paths.ds, "references": 6, "clusters": 3,
                                                "iterations": ITERATIONS}))
    write_parquet(paths.linked / "clusters", [
        {"cluster_id": "r1", "cluster_size": 3, "quality": 0.8, "iteration": 1},
        {"cluster_id": "r4", "cluster_size": 1, "quality": 1.0, "iteration": 0},
        {"cluster_id": "r5", "cluster_size": 1, "quality": 1.0, "iteration": 0},
        {"cluster_id": "r6", "cluster_size": 1, "quality": 1.0, "iteration": 0}])
    schema = pa.schema([("source_a", pa.string()), ("record_id_a", pa.string()), ("source_b", pa.string()),
                        ("record_id_b", pa.string()), ("score", pa.float64()), ("iteration", pa.int32()),
                        ("accepted", pa.bool_()), ("agreeing", pa.list_(pa.string())),
                        ("conflicting", pa.list_(pa.string()))])
    write_parquet(paths.linked / "pairs", [
        {"source_a": source, "record_id_a": a, "source_b": source, "record_id_b": b, "score": sc, "iteration": it,
         "accepted": acc, "agreeing": sorted(tokens(a) & tokens(b)), "conflicting": sorted(tokens(a) ^ tokens(b))}
        for a, b, sc, it, acc in PAIRS], schema)
    write_parquet(paths.curated, [
        {"record_id": rid, "source": source, "ds": paths.ds, "given_name": g, "surname": s, "date_of_birth": d}
        for rid, (g, s, d) in PEOPLE.items()])


def data_docs(paths: RunPaths, run_id: str = RUN_ID) -> Path:
    index = paths.data_docs(run_id) / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text("<html><body>GX Data Docs</body></html>")
    return index


def published_night(root: Path, ds: str = "2025-01-02", run_id: str = RUN_ID, rows_in: int = 7,
                    f1: float | None = 0.9) -> tuple[RunPaths, dict]:
    """A night that published: link outputs, Data Docs and the run summary written."""
    paths = RunPaths.for_run(ds, root=root)
    link_files(paths)
    index = data_docs(paths, run_id)
    results = {
        "cleanse": {"rows_in": rows_in, "rows_curated": 6, "rows_quarantined": rows_in - 6,
                    "quarantined_by_reason": {"column_count": rows_in - 6, "malformed": 0},
                    "fixed_by_rule": {"bad_date": 1}, "task_seconds": 12.0},
        "link": {"clusters": 4, "singletons": 3, "largest_cluster": 3, "task_seconds": 20.0,
                 "pairwise": None if f1 is None else {"precision": 1.0, "recall": 0.8, "f1": f1}},
        "load_staging": {"rows": {"staging_records": 6}, "seconds": 0.5},
        "check_integrity": {"engine": "sqlite", "database": "w.db", "mode": "full", "verdict": "PASS",
                            "findings": [], "duration_s": 0.05},
        "check_quality": {"status": "WARN", "expectations": EXPECTATIONS, "seconds": 2.0, "data_docs": str(index)},
        "publish": {"rows": {"published_records": 6}, "seconds": 0.1},
    }
    summary = build_summary(ds, run_id, results)
    write_json_atomic(paths.summary, summary)
    return paths, summary


def failed_night(root: Path, ds: str = "2025-01-03", stale_link_files: bool = True) -> tuple[RunPaths, dict]:
    """A night whose link task failed (cleanse ran); with ``stale_link_files``
    an earlier run of the date left its link outputs behind."""
    paths = RunPaths.for_run(ds, root=root)
    if stale_link_files:
        link_files(paths)
    results = {"cleanse": {"rows_in": 10, "rows_curated": 10, "rows_quarantined": 0,
                           "quarantined_by_reason": {}, "task_seconds": 3.0}}
    summary = build_summary(ds, "scheduled__" + ds, results, {"link": "link: job exited 1 (OutOfMemoryError)"})
    write_json_atomic(paths.summary, summary)
    return paths, summary
