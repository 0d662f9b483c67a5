"""Splink 5 on Spark: the second peer of ``benchmarks/scale.py``, run in its own venv.

    make -C benchmarks splink-spark-venv          # benchmarks/.venv-splink-spark (requirements-splink-spark.txt)
    benchmarks/.venv-splink-spark/bin/python benchmarks/splink_spark.py --input /tmp/synth_100k.csv [--cores 2]

Spark version: **PySpark 4.2.0, the product's version** (``requirements.txt``). Splink 5.0.0 ships
its similarity jar twice, ``scala-udf-similarity-0.1.2_spark3.x.jar`` (Scala 2.12) and
``scala-udf-similarity-0.2.1_spark4.x.jar`` (Scala 2.13), and ``similarity_jar_location()`` picks
the one for the installed pyspark's major version; on Spark 4.2.0 the Spark 4 jar loads and all
eight of Splink's Java functions register (``jaro_winkler``, ``damerau_levenshtein``, ...), so no
Spark 3.5 venv is needed and the string comparisons run as Splink wrote them (``check_jar``).

The model is the DuckDB peer's, unchanged: ``linkage_quality.run_splink`` (comparisons and
blocking rules of ``linkage_quality._aligned_model`` for CSVs, ``_dwm_model`` for DWM layouts,
u by random sampling, m by EM, clusters at p >= 0.9) with the ``DuckDBAPI`` it builds replaced by
the ``SparkAPI`` below, so the two Splink runs differ only in backend. ``linkage_quality.SCAN``
is set to the one threshold, as ``scale.py`` does for the DuckDB peer.

Spark set up as Splink's documentation recommends for its Spark backend (the Spark example
notebook ``deduplicate_1k_synthetic`` and the topic guide "Optimising Spark jobs"), see
``spark_conf``:

* the similarity jar on ``spark.jars`` (``splink.backends.spark.similarity_jar_location()``);
  ``SparkAPI`` registers its functions when it is built;
* ``spark.default.parallelism`` and ``spark.sql.shuffle.partitions`` about 5× the cores
  (10 on ``local[2]``);
* ``spark.sql.codegen.wholeStage`` off, as in the example notebook;
* a checkpoint folder (``SparkContext.setCheckpointDir``, a temporary folder removed at the end)
  and ``break_lineage_method="parquet"``, the guide's recommendation and Splink's default:
  each intermediate table Splink breaks lineage on is written there as Parquet and read back;
* ``num_partitions_on_repartition`` = the cores: the guide sizes it so that each file of
  ``predict()``'s output is about 100 MB, and at the sizes ``scale.py`` runs here that output is
  far below 100 MB, so the floor is one partition per core;
* ``spark.driver.memory`` 4g, washline's ``python -m hdwm`` default (``HDWM_DRIVER_MEMORY``), so
  both JVMs get the same heap; master ``local[<cores>]``.

Prints progress on stderr and, as its last stdout line, one JSON object: ``precision``,
``recall``, ``f1`` (pairwise, of the clusters at p >= 0.9; None when undefined), ``clusters``,
``seconds`` (load + train + predict + cluster, Spark start excluded; ``scale.py`` times the whole
process), ``spark_version``, ``jar`` (file name of the similarity jar), ``conf`` (the settings above).
Exits 2 on a missing input file (argparse-style message).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
#: Splink's rough rule for the Spark backend: default parallelism about 5x the CPUs.
PARTITIONS_PER_CORE = 5
#: washline's ``python -m hdwm`` driver heap (``spark_jobs/hdwm/__main__.py``), given to this JVM too.
DRIVER_MEMORY = "4g"
#: The Java functions Splink registers from its jar (``splink.internals.spark.jar_location.get_scala_udfs``).
JAR_FUNCTIONS = ("jaro_sim", "jaro_winkler", "jaccard", "cosine_distance", "Dmetaphone", "DmetaphoneAlt",
                 "QgramTokeniser", "damerau_levenshtein")


def spark_conf(cores: int, jar: str, driver_memory: str = DRIVER_MEMORY) -> dict[str, str]:
    """Spark settings of the peer on ``local[cores]`` with Splink's similarity ``jar`` (a path).

    Raises ValueError for fewer than one core or an empty jar path."""
    if not isinstance(cores, int) or cores < 1:
        raise ValueError(f"cores must be a whole number >= 1, got {cores!r}")
    if not jar:
        raise ValueError("the similarity jar path is empty")
    parts = str(PARTITIONS_PER_CORE * cores)
    return {
        "spark.master": f"local[{cores}]",
        "spark.jars": jar,
        "spark.driver.memory": driver_memory,
        "spark.default.parallelism": parts,
        "spark.sql.shuffle.partitions": parts,
        "spark.sql.codegen.wholeStage": "false",
        "spark.ui.showConsoleProgress": "false",
    }


def check_jar(spark) -> None:
    """Raise RuntimeError unless every function of ``JAR_FUNCTIONS`` is registered in ``spark``
    (SparkAPI only logs a warning when the jar is missing; the comparisons would then fail
    late, or a fallback would change the model)."""
    have = {f.name.lower() for f in spark.catalog.listFunctions()}  # the catalog lower-cases names
    missing = [f for f in JAR_FUNCTIONS if f.lower() not in have]
    if missing:
        raise RuntimeError(f"Splink's similarity jar did not register {missing} on Spark {spark.version}")


def run(path: Path, fmt: str = "csv", truth: Path | None = None, cores: int = 2) -> dict:
    """Splink on Spark on ``path``: the DuckDB peer's ``linkage_quality.run_splink`` on a SparkAPI."""
    import pyspark
    import splink
    from pyspark.sql import SparkSession
    from splink import SparkAPI
    from splink.backends.spark import similarity_jar_location

    sys.path.insert(0, str(BENCH))
    import linkage_quality as lq

    lq.SCAN = (lq.THRESHOLD,)  # the figure that counts: clusters at p >= 0.9, no oracle scan
    jar = similarity_jar_location()
    conf = spark_conf(cores, jar)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("splink-spark-peer")
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    checkpoints = tempfile.mkdtemp(prefix="splink-spark-checkpoints-")
    spark.sparkContext.setCheckpointDir(checkpoints)
    try:
        api = SparkAPI(spark_session=spark, break_lineage_method="parquet", num_partitions_on_repartition=cores)
        check_jar(spark)
        duckdb_api = splink.DuckDBAPI
        splink.DuckDBAPI = lambda: api  # run_splink builds its backend by this name at call time
        try:
            print(f"[splink-spark] Spark {pyspark.__version__}, jar {Path(jar).name}, {path}",
                  file=sys.stderr, flush=True)
            m = lq.run_splink(path, fmt, truth)
        finally:
            splink.DuckDBAPI = duckdb_api
    finally:
        spark.stop()
        shutil.rmtree(checkpoints, ignore_errors=True)
    m.pop("best", None)  # the one-threshold scan: the same figures as m
    return {**m, "spark_version": pyspark.__version__, "jar": Path(jar).name, "conf": conf}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Splink 5 on Spark (local[N]) on one file: the scale.py peer")
    ap.add_argument("--input", required=True, type=Path, help="CSV with rec_id, truth_entity and FEBRL columns")
    ap.add_argument("--format", default="csv", choices=["csv", "dwm"])
    ap.add_argument("--truth", type=Path, help="truth file (DWM layouts only)")
    ap.add_argument("--cores", type=int, default=2)
    a = ap.parse_args(argv)
    if not a.input.is_file():
        ap.error(f"no such input file: {a.input}")
    if a.format == "dwm" and a.truth is None:
        ap.error("--format dwm needs --truth")
    if a.cores < 1:
        ap.error("--cores must be at least 1")
    t0 = time.time()
    m = run(a.input, a.format, a.truth, a.cores)
    print(f"[splink-spark] done in {time.time() - t0:.1f}s f1={m['f1']}", file=sys.stderr, flush=True)
    print(json.dumps(m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
