"""A class-data-sharing archive for the suite's short-lived Spark JVMs (test-suite plumbing, not product).

Every ``spark-submit`` the suite starts (a test's own and each one of a DAG run) loads the same ten
thousand and more Spark classes before it does any work. A dynamic AppCDS archive
(``-XX:ArchiveClassesAtExit``, JDK 13+) of the classes a small Spark job loads lets those JVMs map
them instead: measured on the cleanse job of a 400-row night through ``spark-submit`` on a 2-core box,
18.3 s -> 13.1 s of CPU and 21 s -> 15.8 s of wall. Results do not depend on it (the same classes,
loaded from the archive instead of the jars).

The archive is built once per JDK and pyspark install (about 40 s, by the first ``make test`` that
runs Spark; :func:`ensure_archive`) under ``.venv/spark-cds/``, named after a key of the ``java``
binary and the jars it archives, so an upgraded JDK or pyspark never maps a stale one (the JVM would
refuse it with a warning). ``tests/conftest.py`` adds ``-XX:SharedArchiveFile`` to the JVM options of
the suite's short-lived drivers only when the archive is there; without it nothing changes.
``WASHLINE_TEST_CDS=0`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: a small Spark job touching what the washline jobs use: CSV and Parquet I/O, joins, aggregates,
#: windows, a pandas UDF through Arrow, a local checkpoint
_JOB = r'''
import sys
from pyspark.sql import SparkSession, Window, functions as F
import pandas as pd

spark = (SparkSession.builder.appName("washline-cds").config("spark.ui.enabled", "false")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.adaptive.enabled", "true").getOrCreate())
out = sys.argv[1]
df = spark.createDataFrame([(f"r{i}", f"NAME{i % 7} STREET {i % 3}", i % 5) for i in range(200)],
                           "record_id string, text string, k int")
df.write.mode("overwrite").csv(out + "/csv", header=True)
df = spark.read.csv(out + "/csv", header=True, schema="record_id string, text string, k int")
tokens = df.select("record_id", F.explode(F.split("text", " ")).alias("token")).localCheckpoint(eager=True)
freq = tokens.groupBy("token").agg(F.count(F.lit(1)).alias("freq"))
pairs = tokens.alias("a").join(tokens.alias("b"), "token").where(F.col("a.record_id") < F.col("b.record_id"))
w = Window.partitionBy("k").orderBy("record_id")
ranked = df.withColumn("rank", F.row_number().over(w)).withColumn("n", F.count(F.lit(1)).over(Window.partitionBy("k")))


@F.pandas_udf("double")
def score(a: pd.Series) -> pd.Series:
    return a.str.len().astype("float64")


scored = df.withColumn("score", score("text")).join(freq.hint("broadcast"), F.col("text").contains(F.col("token")), "left")
scored.write.mode("overwrite").parquet(out + "/parquet")
spark.read.parquet(out + "/parquet").agg(F.sum("score"), F.countDistinct("record_id")).collect()
pairs.groupBy("a.record_id").count().collect()
ranked.where("rank = 1").collect()
spark.stop()
'''


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path() -> Path | None:
    """Where the archive of this JDK and pyspark install lives (None without java or pyspark)."""
    java = _java()
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        spec = None
    if java is None or spec is None or not spec.origin:
        return None
    jars = Path(spec.origin).parent / "jars"
    key = hashlib.sha1()
    for path in [java, *sorted(java.parent.parent.rglob("libjvm.so")), *sorted(jars.glob("*.jar"))]:
        st = path.stat()
        key.update(f"{path}|{st.st_size}|{int(st.st_mtime)}\n".encode())
    return REPO / ".venv" / "spark-cds" / f"spark-{key.hexdigest()[:16]}.jsa"


def enabled() -> bool:
    return os.environ.get("WASHLINE_TEST_CDS", "1") != "0"


def existing_archive() -> Path | None:
    path = archive_path() if enabled() else None
    return path if path is not None and path.is_file() else None


def ensure_archive(jvm_opts: str) -> Path | None:
    """Build the archive unless it is there (one small spark-submit with ``jvm_opts``); None when it
    cannot be built (the suite then runs without it, as before)."""
    if not enabled():
        return None
    path = archive_path()
    if path is None or path.is_file():
        return path
    submit = Path(sys.executable).parent / "spark-submit"
    if not submit.exists():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    with tempfile.TemporaryDirectory(prefix="washline-cds-") as work:
        script = Path(work) / "job.py"
        script.write_text(_JOB)
        env = dict(os.environ, SPARK_SUBMIT_OPTS=f"{jvm_opts} -XX:ArchiveClassesAtExit={tmp}",
                   PYSPARK_PYTHON=sys.executable)
        try:
            proc = subprocess.run([str(submit), "--master", "local[2]", str(script), str(Path(work) / "out")],
                                  env=env, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired):
            tmp.unlink(missing_ok=True)
            return None
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        print(f"tests/spark_cds.py: no class-data-sharing archive (exit {proc.returncode}):\n"
              + proc.stderr[-2000:], file=sys.stderr)
        return None
    os.replace(tmp, path)
    return path
