"""Spark session construction shared by every washline Spark job and the tests.

The session is always UTC (a non-UTC session shifts timestamps that cross a
pandas UDF) and has Arrow enabled with a deliberate batch size, so pandas UDFs
receive bounded batches.
"""

from __future__ import annotations

import os
from typing import Mapping

#: Rows per Arrow record batch handed to a pandas UDF. 10,000 rows of token
#: arrays stay well under 50 MB per batch on the inputs washline targets.
ARROW_MAX_RECORDS_PER_BATCH = 10_000

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_MAX_RECORDS_PER_BATCH),
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
}


def get_spark(app_name: str, conf: Mapping[str, str] | None = None):
    """Return the active SparkSession, or build one with washline's defaults.

    Under ``spark-submit`` the master and resources come from the command line
    (the Airflow ``spark_default`` connection); settings given there, and in
    ``conf``, win over ``DEFAULT_CONF`` (all of which are runtime SQL settings). Outside spark-submit (tests, ``python -m hdwm``) the
    master is ``$WASHLINE_SPARK_MASTER`` or ``local[2]``.

    Args:
        app_name: Spark application name, shown in the Spark UI and master.
        conf: extra Spark settings applied on top of the defaults.

    Returns:
        pyspark.sql.SparkSession
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if "SPARK_SUBMIT_PROCESSED" not in os.environ and not os.environ.get("SPARK_ENV_LOADED"):
        builder = builder.master(os.environ.get("WASHLINE_SPARK_MASTER", "local[2]"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # A default applies only where nobody chose a value: settings passed to
    # spark-submit (--conf, the Airflow connection) or in ``conf`` win.
    submitted = spark.sparkContext.getConf()
    for key, value in DEFAULT_CONF.items():
        if key not in (conf or {}) and not submitted.contains(key):
            spark.conf.set(key, value)
    return spark
