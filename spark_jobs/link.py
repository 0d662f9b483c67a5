"""spark-submit entry point: link one day's curated references with HDWM.

    spark-submit spark_jobs/link.py --curated DIR --out DIR --ds YYYY-MM-DD \
        --profile NAME_OR_PATH [--checkpoint-dir DIR]

Input ``--curated``: Parquet of cleansed references with ``record_id``
(string, unique), ``source``, ``truth_entity`` (nullable), ``ds``,
``source_file``, ``line_number`` and any attribute columns. The reference
text is every other column in file order, cast to string (DATE/TIMESTAMP as
``yyyyMMdd``), nulls skipped, joined by spaces.

Output (all overwritten on rerun):
* ``<out>/links/`` Parquet: ``record_id`` string, ``cluster_id`` string
  (smallest record_id of the cluster), ``iteration`` int (0 = leftover
  singleton), ``mu`` double (null for singletons), ``quality`` double,
  ``cluster_size`` int – one row per input record.
* ``<out>/clusters/`` Parquet: ``cluster_id, cluster_size, quality, iteration``.
* ``<out>/metrics.json`` (written atomically): ds, profile, references,
  clusters, singletons, largest_cluster, iterations[], pairwise (null without
  truth), seconds. It is deleted when the job starts and written last, so
  its presence means ``links/`` and ``clusters/`` are complete: a job killed
  mid-write (``links/`` half written) leaves no metrics.json, and the rerun
  overwrites both folders.

Exit status: 0 on success, 2 on bad arguments/profile, 1 on any other error
(raised after logging).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

try:  # editable install or --py-files
    import hdwm  # noqa: F401

    _HDWM_FROM_SCRIPT_DIR = False
except ImportError:  # run as a plain script from the repo
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import hdwm  # noqa: F401

    _HDWM_FROM_SCRIPT_DIR = True

META_COLUMNS = ("record_id", "source", "truth_entity", "ds", "source_file", "line_number")


def reference_text(df):
    """The ``text`` Column: attribute columns (all but META_COLUMNS) cast to
    string, dates as yyyyMMdd, nulls skipped, joined with spaces."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    parts = []
    for f in df.schema.fields:
        if f.name in META_COLUMNS:
            continue
        if isinstance(f.dataType, (T.DateType, T.TimestampType, T.TimestampNTZType)):
            parts.append(F.date_format(F.col(f.name), "yyyyMMdd"))
        else:
            parts.append(F.col(f.name).cast("string"))
    if not parts:
        return F.lit("")
    return F.concat_ws(" ", *parts)


def write_json_atomic(path: str, payload: dict) -> None:
    """Write JSON to ``path`` via a temp file in the same folder + os.replace."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, sort_keys=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def ship_hdwm(spark) -> None:
    """When ``hdwm`` was only found beside this script (no install, no
    ``--py-files``), zip it and ``addPyFile`` it so Python workers (pandas
    UDFs) can import it too."""
    import tempfile
    import zipfile

    pkg = Path(hdwm.__file__).resolve().parent
    zpath = Path(tempfile.mkdtemp(prefix="hdwm-pyfiles-")) / "hdwm.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for f in pkg.rglob("*.py"):
            zf.write(f, f.relative_to(pkg.parent))
    spark.sparkContext.addPyFile(str(zpath))


def run(curated: str, out: str, ds: str, profile_name: str, checkpoint_dir: str | None = None, spark=None) -> dict:
    """Link ``curated`` into ``out``; returns the metrics dict written to metrics.json.

    Raises:
        hdwm.config.ProfileError: unknown or invalid profile.
        ValueError: input without ``record_id`` or with duplicate ids.
    """
    from pyspark.sql import functions as F

    from hdwm.config import load_profile
    from hdwm.pipeline import clusters_of, run_linkage
    from hdwm.spark import get_spark

    t0 = time.time()
    profile = load_profile(profile_name)
    # The completion marker goes first: until it is rewritten, out/ is not a result.
    Path(out, "metrics.json").unlink(missing_ok=True)
    spark = spark or get_spark(f"washline-link-{ds}")
    if _HDWM_FROM_SCRIPT_DIR:
        ship_hdwm(spark)
    df = spark.read.parquet(curated)
    if "record_id" not in df.columns:
        raise ValueError(f"{curated}: no record_id column")
    cols = [F.col("record_id").cast("string").alias("record_id"), reference_text(df).alias("text")]
    if "truth_entity" in df.columns:
        cols.append(F.col("truth_entity").cast("string").alias("truth_entity"))
    refs = df.select(*cols)
    own_ckpt = checkpoint_dir is None
    ckpt = checkpoint_dir or os.path.join(out, "_checkpoint")
    print(f"[link] ds={ds} curated={curated} out={out} profile={profile.name} checkpoint={ckpt}", flush=True)
    links, metrics = run_linkage(spark, refs, profile, ckpt)
    links.write.mode("overwrite").parquet(os.path.join(out, "links"))
    clusters_of(links).write.mode("overwrite").parquet(os.path.join(out, "clusters"))
    payload = {"ds": ds, "profile": profile.name, **metrics, "seconds": round(time.time() - t0, 2)}
    write_json_atomic(os.path.join(out, "metrics.json"), payload)
    if own_ckpt:
        shutil.rmtree(ckpt, ignore_errors=True)
    print(f"[link] wrote {out}/links, {out}/clusters, {out}/metrics.json "
          f"({payload['references']} references, {payload['clusters']} clusters, "
          f"pairwise={payload['pairwise']}, {payload['seconds']}s)", flush=True)
    return payload


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="washline HDWM link job")
    ap.add_argument("--curated", required=True, help="Parquet folder of cleansed references")
    ap.add_argument("--out", required=True, help="output folder for links/, clusters/, metrics.json")
    ap.add_argument("--ds", required=True, help="logical date YYYY-MM-DD")
    ap.add_argument("--profile", default="default", help="profile name (include/config/<name>.yaml) or YAML path")
    ap.add_argument("--checkpoint-dir", default=None)
    a = ap.parse_args(argv)
    from hdwm.config import ProfileError

    try:
        run(a.curated, a.out, a.ds, a.profile, a.checkpoint_dir)
    except ProfileError as exc:
        print(f"[link] error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
