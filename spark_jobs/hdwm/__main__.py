"""Command line: ``python -m hdwm --input FILE --format dwm|csv [--truth FILE]
[--profile NAME_OR_PATH] [--out DIR] [--checkpoint-dir DIR]``.

Prints the metrics JSON alone on stdout (progress lines ``[hdwm] ...`` go
to stderr), so ``python -m hdwm ... | jq .`` works. With ``--out`` writes
``links/`` and ``clusters/`` Parquet and ``metrics.json`` like the Airflow job.
Exit status 2 on bad arguments, profile errors and input mistakes (missing,
empty or unparseable file, duplicate record ids, an unusable truth file),
with a one-line ``error: ...`` on stderr.
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
    pdf, problem = _read_inputs(a, read_dwm, read_csv_refs, read_truth)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2

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
    if "truth_labelled" in pdf.attrs:
        metrics["truth_labelled"] = pdf.attrs["truth_labelled"]
    print(json.dumps(metrics, indent=2))
    spark.stop()
    return 0


def _read_inputs(a, read_dwm, read_csv_refs, read_truth):
    """Read ``--input`` (and ``--truth``) into pandas (``record_id``, ``text``
    [, ``truth_entity``]) and check them before Spark starts.

    Returns:
        ``(frame, None)`` or ``(None, one-line problem)`` for a user mistake:
        a missing or unreadable file, an empty file or one with no records,
        a CSV that does not parse (with a hint when it looks like the DWM
        layout), duplicate record ids, or a truth file with no usable row.
        A truth file that labels only some references is accepted with a
        warning on stderr, and ``frame.attrs["truth_labelled"]`` counts them.
    """
    try:
        pdf = read_dwm(a.input) if a.format == "dwm" else read_csv_refs(a.input)
    except FileNotFoundError:
        return None, f"input file {a.input} does not exist"
    except OSError as exc:
        return None, f"cannot read input file {a.input}: {exc}"
    except ValueError as exc:  # includes pandas' ParserError and EmptyDataError
        hint = " (ragged rows: is it the DWM layout? try --format dwm)" if a.format == "csv" and "fields" in str(exc) else ""
        return None, f"{a.input} is not a readable {a.format} file: {str(exc).strip()}{hint}"
    if len(pdf) == 0:
        return None, f"{a.input} holds no records (empty or header only)"
    dup = pdf["record_id"][pdf["record_id"].duplicated()]
    if len(dup):
        shown = ", ".join(repr(x) for x in dup.unique()[:5])
        return None, (f"record ids must be unique: {len(dup)} repeated row(s) in {a.input}, e.g. {shown} "
                      f"(with --format csv the record id is the first column, or the column named record_id)")
    if a.truth:
        try:
            truth = read_truth(a.truth)
        except FileNotFoundError:
            return None, f"truth file {a.truth} does not exist"
        except (OSError, ValueError) as exc:
            return None, f"cannot read truth file {a.truth}: {exc}"
        if len(truth) == 0:
            return None, f"truth file {a.truth} has no RecID,IdTruth rows (comma separated, one per reference)"
        pdf = pdf.drop(columns=["truth_entity"], errors="ignore").merge(truth, on="record_id", how="left")
    if "truth_entity" in pdf.columns:
        labelled = int(pdf["truth_entity"].notna().sum())
        pdf.attrs["truth_labelled"] = labelled
        if labelled == 0:
            return None, "no reference has a truth label (record ids of the truth file and the input do not match)"
        if labelled < len(pdf):
            print(f"warning: only {labelled} of {len(pdf)} references have a truth label; pairwise metrics "
                  f"count only the {labelled} labelled references (pairs with an unlabelled one are left out)",
                  file=sys.stderr)
    return pdf, None


if __name__ == "__main__":
    raise SystemExit(main())
