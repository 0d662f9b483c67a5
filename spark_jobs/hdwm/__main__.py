"""Command line: ``python -m hdwm --input FILE --format dwm|csv [--truth FILE]
[--profile NAME_OR_PATH] [--set KEY=VALUE ...] [--out DIR] [--checkpoint-dir DIR]
[--event-log DIR]``.

Prints the metrics JSON alone on stdout (progress lines ``[hdwm] ...`` go
to stderr), so ``python -m hdwm ... | jq .`` works. With ``--out`` writes
``links/`` and ``clusters/`` Parquet and ``metrics.json`` like the Airflow job.
The input is read with Spark (``hdwm.readers.spark_read_*``), never into the
driver. ``--set`` overrides one profile parameter (``--set iterationShortcut=false``;
a YAML value). ``--event-log DIR`` writes Spark's event log there
(``benchmarks/scale.py`` reads the shuffle bytes of each stage from it).
``metrics["stages"]`` holds the wall seconds of each stage (start-up, read,
tokens+frequencies, correction, blocking, scoring, components, quality,
summary, write).

Exit status 2 on bad arguments, profile errors and input mistakes (missing,
empty or unparseable file, duplicate record ids, an unusable truth file),
with a one-line ``error: ...`` on stderr. A missing or empty file is found
before Spark starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    t0 = time.time()
    ap = argparse.ArgumentParser(prog="python -m hdwm", description="HDWM record linkage on Spark")
    ap.add_argument("--input", required=True)
    ap.add_argument("--format", choices=["dwm", "csv"], default="dwm")
    ap.add_argument("--truth", help="RecID,IdTruth file")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a profile parameter (YAML value), e.g. iterationShortcut=false")
    ap.add_argument("--out")
    ap.add_argument("--checkpoint-dir")
    ap.add_argument("--event-log", help="write Spark's event log into this folder")
    a = ap.parse_args(argv)

    from .config import ProfileError, load_profile

    try:
        profile = _with_overrides(load_profile(a.profile), a.set)
    except ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problem = _check_files(a)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from .pipeline import StageClock, clusters_of, run_linkage
    from .spark import get_spark, tune_for_input

    # local mode: the driver JVM is also the executor, so its heap holds the
    # shuffles and local checkpoints (Spark's 1g default spills heavily at 1M
    # references). $HDWM_DRIVER_MEMORY overrides; ignored if a JVM already runs.
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": os.environ.get("HDWM_DRIVER_MEMORY", "4g")}
    if a.event_log:
        os.makedirs(a.event_log, exist_ok=True)
        conf.update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": os.path.abspath(a.event_log),
                     "spark.eventLog.compress": "false"})
    owned = SparkSession.getActiveSession() is None  # stop only a session this call started
    spark = get_spark("hdwm-cli", conf)
    spark.sparkContext.setLogLevel("WARN")
    clock = StageClock(spark)
    clock.seconds["start-up"] = round(time.time() - t0, 2)
    try:
        with clock("read"):
            refs, info, problem = _read_inputs(spark, a)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        tune_for_input(spark, info["references"])
        ckpt = a.checkpoint_dir or tempfile.mkdtemp(prefix="hdwm-ckpt-")
        links, metrics = run_linkage(spark, refs, profile, ckpt)
        if a.out:
            with clock("write"):
                links.write.mode("overwrite").parquet(os.path.join(a.out, "links"))
                clusters_of(links).write.mode("overwrite").parquet(os.path.join(a.out, "clusters"))
        stages = dict(clock.seconds)
        for k, v in metrics.get("stages", {}).items():
            stages[k] = round(stages.get(k, 0.0) + v, 2)
        metrics = {"input": os.path.abspath(a.input), "profile": profile.name, **metrics, "stages": stages,
                   "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions"))}
        if a.out:
            from jobcontract import write_json_atomic

            write_json_atomic(os.path.join(a.out, "metrics.json"), metrics)
        if "truth_labelled" in info:
            metrics["truth_labelled"] = info["truth_labelled"]
        metrics["wall_seconds"] = round(time.time() - t0, 2)
        print(json.dumps(metrics, indent=2))
        return 0
    finally:
        if owned:
            spark.stop()


def _with_overrides(profile, pairs: list[str]):
    """``profile`` with ``KEY=VALUE`` overrides (values parsed as YAML), validated.

    Raises:
        hdwm.config.ProfileError: a malformed pair, an unknown key or an invalid value.
    """
    import yaml
    from pydantic import ValidationError

    from .config import LinkageProfile, ProfileError

    if not pairs:
        return profile
    data = profile.model_dump()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key.strip() not in LinkageProfile.model_fields:
            raise ProfileError(f"--set {pair!r}: expected KEY=VALUE with KEY a profile parameter")
        data[key.strip()] = yaml.safe_load(value)
    try:
        return LinkageProfile(**data)
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'profile'}: {e['msg']}" for e in exc.errors())
        raise ProfileError(f"--set: invalid linkage profile: {msgs}") from None


def _check_files(a) -> str | None:
    """The mistakes found before Spark starts: a missing, unreadable or empty
    input or truth file (one-line problem), else None."""
    from .readers import first_line

    for what, path in (("input file", a.input), ("truth file", a.truth)):
        if path is None:
            continue
        try:
            head = first_line(path)
        except FileNotFoundError:
            return f"{what} {path} does not exist"
        except OSError as exc:
            return f"cannot read {what} {path}: {exc}"
        if head is None and what == "input file":
            return f"{path} is not a readable {a.format} file: the file is empty"
        if head is None:
            return f"truth file {path} has no RecID,IdTruth rows (comma separated, one per reference)"
    return None


def _read_inputs(spark, a):
    """Read ``--input`` (and ``--truth``) with Spark into (``record_id``,
    ``text``[, ``truth_entity``]) and check them.

    Returns:
        ``(refs, info, None)`` with ``refs`` a checkpointed DataFrame and
        ``info`` = {``references``[, ``truth_labelled``]}, or
        ``(None, None, one-line problem)`` for a user mistake: a missing or
        unreadable file, a file with no records, a CSV that does not parse
        (with a hint when it looks like the DWM layout), duplicate record
        ids, or a truth file with no usable row. A truth file that labels only
        some references is accepted with a warning on stderr.
    """
    from pyspark.sql import functions as F

    from .readers import spark_read_csv_refs, spark_read_dwm, spark_read_truth

    problem = _check_files(a)
    if problem:
        return None, None, problem
    try:
        refs = spark_read_dwm(spark, a.input) if a.format == "dwm" else spark_read_csv_refs(spark, a.input)
    except ValueError as exc:
        hint = " (ragged rows: is it the DWM layout? try --format dwm)" if a.format == "csv" and "fields" in str(exc) else ""
        return None, None, f"{a.input} is not a readable {a.format} file: {str(exc).strip()}{hint}"
    refs = refs.localCheckpoint(eager=True)
    # bytes that are not UTF-8 stay in Spark's strings as they are and reach Python as U+FFFD
    # (nothing is dropped): counted and said, not silent (is_valid_utf8: Spark 4)
    replaced = ~F.expr("is_valid_utf8(coalesce(record_id, ''))") | ~F.expr("is_valid_utf8(coalesce(text, ''))")
    row = refs.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("record_id").alias("d"),
                   F.count(F.when(replaced, 1)).alias("u")).first()
    n, distinct = int(row["n"]), int(row["d"])
    if n == 0:
        return None, None, f"{a.input} holds no records (empty or header only)"
    if distinct != n:
        shown = ", ".join(repr(r["record_id"]) for r in refs.groupBy("record_id").count()
                          .filter(F.col("count") > 1).orderBy("record_id").limit(5).collect())
        return None, None, (f"record ids must be unique: {n - distinct} repeated row(s) in {a.input}, e.g. {shown} "
                            f"(with --format csv the record id is the first column, or the column named record_id)")
    info = {"references": n}
    if row["u"]:
        info["not_utf8_references"] = int(row["u"])
        print(f"warning: {row['u']} of {n} references in {a.input} hold bytes that are not UTF-8; they are read "
              f"as U+FFFD (the replacement character) and linked as they are; re-encode the file as UTF-8 "
              f"to keep those letters", file=sys.stderr)
    if a.truth:
        truth = spark_read_truth(spark, a.truth).localCheckpoint(eager=True)
        if not truth.take(1):
            return None, None, f"truth file {a.truth} has no RecID,IdTruth rows (comma separated, one per reference)"
        refs = refs.drop("truth_entity").join(truth, "record_id", "left")
    if "truth_entity" in refs.columns:
        refs = refs.localCheckpoint(eager=True)
        labelled = refs.filter(F.col("truth_entity").isNotNull()).count()
        info["truth_labelled"] = labelled
        if labelled == 0:
            return None, None, "no reference has a truth label (record ids of the truth file and the input do not match)"
        if labelled < n:
            print(f"warning: only {labelled} of {n} references have a truth label; pairwise metrics "
                  f"count only the {labelled} labelled references (pairs with an unlabelled one are left out)",
                  file=sys.stderr)
    return refs, info, None


if __name__ == "__main__":
    raise SystemExit(main())
