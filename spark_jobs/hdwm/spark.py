"""Spark session construction shared by every washline Spark job and the tests.

Settings for small machines (washline's target is a 2-4 core box or a few
home PCs), each chosen on purpose; a setting given to ``spark-submit`` (the
Airflow ``spark_default`` connection, ``--conf``) or in ``conf`` always wins:

* UTC session time zone: a non-UTC session shifts timestamps that cross a
  pandas UDF.
* Arrow on, with bounded batches (``ARROW_MAX_RECORDS_PER_BATCH`` rows and at
  most ``ARROW_MAX_BYTES_PER_BATCH`` bytes): a pandas UDF (the pair scorer,
  the consistency regrouping) holds one batch per Python worker, so the
  Python side stays small whatever the input size.
* Adaptive query execution with partition coalescing by size
  (``ADVISORY_PARTITION_BYTES``, ``parallelismFirst`` off) but never below
  one partition per core (``minPartitionNum`` = the default parallelism):
  the initial shuffle partition count can then be generous for large inputs
  while the small stages of a small input (most of HDWM's stages) run as one
  task per core instead of many near-empty ones, each costing scheduling
  time. Few bytes can still be much work (the pair scorer is a Python UDF),
  so one task per core is the floor: measured at 100k references, letting
  AQE coalesce to a single task put scoring and closure on one core.
* Shuffle partitions scaled to the input (``shuffle_partitions_for``, set by
  ``tune_for_input`` once the reference count is known): one partition per
  ``REFS_PER_SHUFFLE_PARTITION`` references, at least one per core.
* Memory: ``spark.memory.fraction`` 0.7 (Spark: 0.6) because the JVM's own
  objects are few (the Python workers hold the UDF data, outside the heap),
  and ``spark.memory.storageFraction`` 0.3 (Spark: 0.5) because every frozen
  frame is a MEMORY_AND_DISK local checkpoint that can move to disk, while a
  join or sort that runs out of execution memory spills in many small files.
  These two are read when the JVM starts, so they only apply to a session
  this function creates (under ``spark-submit``: unless given there).
"""

from __future__ import annotations

import math
import os
import time
from typing import Mapping

#: Rows per Arrow record batch handed to a pandas UDF. 10,000 rows of token
#: arrays stay well under 50 MB per batch on the inputs washline targets.
ARROW_MAX_RECORDS_PER_BATCH = 10_000
#: ... and never more than this many bytes (a batch of unusually long references).
ARROW_MAX_BYTES_PER_BATCH = 32 * 2**20
#: AQE coalesces shuffle partitions to about this size (Spark: 64 MB); smaller
#: keeps each task's share of a 2-4 GB heap low when two or four run at once.
ADVISORY_PARTITION_BYTES = 32 * 2**20
#: One shuffle partition per this many references (before AQE coalescing):
#: 5,000 references -> one per core, 1M -> 40.
REFS_PER_SHUFFLE_PARTITION = 25_000
MIN_PARTITIONS_KEY = "spark.sql.adaptive.coalescePartitions.minPartitionNum"
#: Marker set on a session whose shuffle partitions washline chose (nobody set
#: them); only then does ``tune_for_input`` change them.
AUTO_PARTITIONS_KEY = "washline.shufflePartitions.auto"

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_MAX_RECORDS_PER_BATCH),
    "spark.sql.execution.arrow.maxBytesPerBatch": str(ARROW_MAX_BYTES_PER_BATCH),
    # until tune_for_input knows the input: a few tasks per core
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": str(ADVISORY_PARTITION_BYTES),
}

#: Settings read when the SparkContext starts (not runtime SQL settings).
STARTUP_CONF: dict[str, str] = {
    "spark.memory.fraction": "0.7",
    "spark.memory.storageFraction": "0.3",
}


def _submitted_conf():
    """The settings ``spark-submit`` passed (None outside spark-submit).

    Under spark-submit the Python driver is started by the JVM
    (``PYSPARK_GATEWAY_PORT``), whose system properties hold every ``--conf``;
    connecting to the gateway starts nothing.
    """
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf()


def get_spark(app_name: str, conf: Mapping[str, str] | None = None):
    """Return the active SparkSession, or build one with washline's defaults.

    Under ``spark-submit`` the master and resources come from the command line
    (the Airflow ``spark_default`` connection); settings given there, and in
    ``conf``, win over ``DEFAULT_CONF`` and ``STARTUP_CONF``. Outside
    spark-submit (tests, ``python -m hdwm``) the master is
    ``$WASHLINE_SPARK_MASTER`` or ``local[2]``.

    Args:
        app_name: Spark application name, shown in the Spark UI and master.
        conf: extra Spark settings applied on top of the defaults.

    Returns:
        pyspark.sql.SparkSession
    """
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    builder = SparkSession.builder.appName(app_name)
    if "SPARK_SUBMIT_PROCESSED" not in os.environ and not os.environ.get("SPARK_ENV_LOADED"):
        builder = builder.master(os.environ.get("WASHLINE_SPARK_MASTER", "local[2]"))
    submitted = _submitted_conf()
    for key, value in STARTUP_CONF.items():
        if key not in conf and not (submitted is not None and submitted.contains(key)):
            builder = builder.config(key, value)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # A default applies only where nobody chose a value: settings passed to
    # spark-submit (--conf, the Airflow connection) or in ``conf`` win.
    started = spark.sparkContext.getConf()
    defaults = dict(DEFAULT_CONF)
    # coalescing keeps one partition per core (see the module docstring)
    defaults[MIN_PARTITIONS_KEY] = str(spark.sparkContext.defaultParallelism)
    for key, value in defaults.items():
        if key not in conf and not started.contains(key):
            spark.conf.set(key, value)
            if key == "spark.sql.shuffle.partitions":
                spark.conf.set(AUTO_PARTITIONS_KEY, "true")
    return spark


def shuffle_partitions_for(n_refs: int, cores: int) -> int:
    """Shuffle partitions for linking ``n_refs`` references on ``cores`` cores:
    ``ceil(n_refs / REFS_PER_SHUFFLE_PARTITION)``, at least ``cores`` (every
    core busy), at most ``32 × cores`` (AQE coalesces what is too small)."""
    cores = max(1, int(cores))
    return int(min(32 * cores, max(cores, math.ceil(max(0, n_refs) / REFS_PER_SHUFFLE_PARTITION))))


def tune_for_input(spark, n_refs: int) -> int:
    """Set ``spark.sql.shuffle.partitions`` for an input of ``n_refs``
    references (``shuffle_partitions_for`` with the session's default
    parallelism as cores), unless somebody chose the value (``spark-submit
    --conf``, ``get_spark(conf=…)``). Returns the partitions in effect."""
    cores = spark.sparkContext.defaultParallelism
    if spark.conf.get(AUTO_PARTITIONS_KEY, "false") == "true":
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions_for(n_refs, cores)))
    return int(spark.conf.get("spark.sql.shuffle.partitions"))


#: A table joined with every reference's tokens (the token frequencies, the
#: correction map) is broadcast when it has at most this many rows: about
#: 80 MB of (token, count) rows. A frozen frame carries no size estimate, so
#: Spark's ``autoBroadcastJoinThreshold`` never picks one itself.
BROADCAST_MAX_ROWS = 2_000_000


def broadcast_if_small(df, rows: int):
    """``df`` with a broadcast hint when ``rows`` (its row count, which the
    caller knows) is at most ``BROADCAST_MAX_ROWS``, else ``df`` unchanged.

    At a million references the frequencies hold about 575,000 tokens; joined
    without the hint, each of the references' 12 million token rows is
    shuffled by token, and shuffled again to be collected per reference."""
    from pyspark.sql import functions as F

    return F.broadcast(df) if rows <= BROADCAST_MAX_ROWS else df


def freeze(df, reliable: bool = False):
    """Materialise the DataFrame ``df`` once and cut its lineage; returns the new DataFrame.

    The one way the engine stores an intermediate frame (pipeline, closure,
    incremental linkage).

    A local checkpoint (executor storage, MEMORY_AND_DISK) computes the plan
    exactly once. A reliable ``checkpoint`` (only with ``reliable`` and a
    checkpoint dir) runs the plan, then a second job that recomputes it to
    write the files – washline measured that double work as a third of the
    FEBRL3 link time. Only the closure asks for it (every
    ``ccCheckpointInterval`` rounds, ``hdwm.closure.connected_components``),
    to keep its round-by-round lineage short. Every other frame of the
    engine is a local checkpoint, so losing the executor that holds one
    fails the job, and the Airflow retry of the link task reruns it from the
    start (the proven recovery, ``docs/reliability.md``, production nights).
    """
    t0 = time.perf_counter() if os.environ.get(PROFILE_FREEZE_ENV) else None
    if reliable and df.sparkSession.sparkContext.getCheckpointDir():
        # local first, so the reliable write reads the stored blocks instead
        # of recomputing the plan
        out = df.localCheckpoint(eager=True).checkpoint(eager=True)
    else:
        out = df.localCheckpoint(eager=True)
    if t0 is not None:
        _profile_line(time.perf_counter() - t0)
    return out


#: set (to anything) to log each ``freeze``'s wall seconds and its caller's file:line to stderr
#: (``[freeze] incremental.py:1395 in scored_candidates 12.3s``): where a job's time goes, for
#: benchmarks; off by default
PROFILE_FREEZE_ENV = "HDWM_PROFILE_FREEZE"


def _profile_line(seconds: float) -> None:
    import inspect
    import sys

    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame and frame.f_back else None
    where = (f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno} in {caller.f_code.co_name}"
             if caller else "?")
    print(f"[freeze] {where} {seconds:.2f}s", file=sys.stderr, flush=True)
