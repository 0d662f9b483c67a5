"""Command line: ``python -m hdwm --input FILE --format dwm|csv [--truth FILE]
[--profile NAME_OR_PATH] [--out DIR] [--checkpoint-dir DIR]``.

Prints the metrics JSON on stdout (last line block). With ``--out`` writes
``links/`` and ``clusters/`` Parquet and ``metrics.json`` like the Airflow job.
Exit status 2 on bad arguments / profile errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hdwm", description="HDWM record linkage on Spark")
    ap.add_argument("--input", required=True)
    ap.add_argument("--format", choices=["dwm", "csv"], default="dwm")
    ap.add_argument("--truth", help="RecID,IdTruth file")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--out")
    ap.add_argument("--checkpoint-dir")
    a = ap.parse_args(argv)

    from .config import ProfileError, load_profile
    from .readers import read_csv_refs, read_dwm, read_truth

    try:
        profile = load_profile(a.profile)
    except ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pdf = read_dwm(a.input) if a.format == "dwm" else read_csv_refs(a.input)
    if a.truth:
        truth = read_truth(a.truth)
        pdf = pdf.drop(columns=["truth_entity"], errors="ignore").merge(truth, on="record_id", how="left")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from .pipeline import clusters_of, run_linkage
    from .spark import get_spark

    # local mode: the driver JVM is also the executor, so its heap holds the
    # shuffles and local checkpoints (Spark's 1g default spills heavily at 1M
    # references). $HDWM_DRIVER_MEMORY overrides; ignored if a JVM already runs.
    spark = get_spark("hdwm-cli", {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                   "spark.driver.memory": os.environ.get("HDWM_DRIVER_MEMORY", "4g")})
    spark.sparkContext.setLogLevel("WARN")
    schema = "record_id string, text string" + (", truth_entity string" if "truth_entity" in pdf.columns else "")
    refs = spark.createDataFrame(pdf.astype(object).where(pdf.notna(), None), schema)
    ckpt = a.checkpoint_dir or tempfile.mkdtemp(prefix="hdwm-ckpt-")
    links, metrics = run_linkage(spark, refs, profile, ckpt)
    metrics = {"input": os.path.abspath(a.input), "profile": profile.name, **metrics}
    if a.out:
        links.write.mode("overwrite").parquet(os.path.join(a.out, "links"))
        clusters_of(links).write.mode("overwrite").parquet(os.path.join(a.out, "clusters"))
        tmp = os.path.join(a.out, ".metrics.json.tmp")
        with open(tmp, "w") as fh:
            json.dump(metrics, fh, indent=2)
        os.replace(tmp, os.path.join(a.out, "metrics.json"))
    print(json.dumps(metrics, indent=2))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
