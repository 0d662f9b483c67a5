"""The entity registry against a known truth: demo and benchmark inputs only.

When the curated references carry ``truth_entity`` (FEBRL and the other
benchmark sets do; production feeds do not), the link job measures the whole
registry after the night, not only the night's own clusters: for FEBRL4 split
over two nights, no true pair lies inside either night (each person has one
record in part A and one in part B), so the night's own recall is undefined,
while the registry after night 2 holds every pair.

This is history-sized work: every member of the new registry version is
joined to the truth of every curated night so far. Production inputs have no
``truth_entity`` column and never pay for it.

Sources:

* members: ``hdwm.registry.read_version(spark, registry, ds).members`` (the
  format-agnostic reader of a registry version);
* truth of earlier nights: ``<curated root>/<d>/`` Parquet (``source``,
  ``record_id``, ``truth_entity``, as the cleanse job writes it) for every
  folder named ``YYYY-MM-DD`` before ``ds`` that holds Parquet files;
* truth of the night: the night's references as the link job read them.
"""

from __future__ import annotations

import re
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .metrics import registry_pairwise

_NIGHT = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TRUTH_COLUMNS = ("source", "record_id", "truth_entity")


def curated_nights(curated_root, ds: str) -> list[Path]:
    """The curated nights before ``ds``: folders of ``curated_root`` named
    ``YYYY-MM-DD`` (earlier than ``ds``) holding at least one ``*.parquet``
    file, oldest first. A missing root gives none."""
    root = Path(curated_root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir()
                  if p.is_dir() and _NIGHT.match(p.name) and p.name < ds and any(p.glob("*.parquet")))


def history_truth(spark: SparkSession, curated_root, ds: str, night: DataFrame | None = None,
                  source_col: str = "source") -> DataFrame:
    """The truth labels of every curated night up to ``ds``.

    Args:
        curated_root: the folder of the curated nights (``lake/curated``).
        ds: the night (YYYY-MM-DD); folders of later dates are ignored.
        night: the night's own references (``source``, ``record_id``,
            ``truth_entity``); None: ``<curated_root>/<ds>/`` is read instead.
        source_col: the source column's name in the curated Parquet.

    Returns:
        DataFrame(``source``, ``record_id``, ``truth_entity``: strings, the
        label non-null), one row per (source, record_id): a reference sent on
        several nights keeps the label of the latest. A night whose Parquet
        has no ``truth_entity`` column gives no row.
    """
    schema = T.StructType([T.StructField(source_col, T.StringType()), T.StructField("record_id", T.StringType()),
                           T.StructField("truth_entity", T.StringType())])
    folders = curated_nights(curated_root, ds)
    frames = [spark.read.schema(schema).parquet(str(p)).withColumnRenamed(source_col, "source")
              .withColumn("_night", F.lit(p.name)) for p in folders]
    if night is None:
        own = Path(curated_root) / ds
        if own.is_dir() and any(own.glob("*.parquet")):
            frames.append(spark.read.schema(schema).parquet(str(own)).withColumnRenamed(source_col, "source")
                          .withColumn("_night", F.lit(ds)))
    else:
        frames.append(night.select(*(F.col(c).cast("string").alias(c) for c in TRUTH_COLUMNS))
                      .withColumn("_night", F.lit(ds)))
    if not frames:
        return spark.createDataFrame([], "source string, record_id string, truth_entity string")
    labels = reduce(DataFrame.unionByName, frames).filter(F.col("truth_entity").isNotNull())
    latest = Window.partitionBy("source", "record_id").orderBy(F.col("_night").desc())
    return (labels.withColumn("_rank", F.row_number().over(latest)).filter(F.col("_rank") == 1)
            .select(*TRUTH_COLUMNS))


def registry_pairwise_after(spark: SparkSession, registry, ds: str, curated_root, night: DataFrame | None = None,
                            source_col: str = "source") -> dict | None:
    """The pairwise figures of registry version ``ds`` against the truth of
    every curated night up to ``ds`` (``hdwm.metrics.registry_pairwise`` over
    ``read_version(...).members`` and :func:`history_truth`). History-sized:
    call it only when the input carries ``truth_entity``.

    Returns:
        ``{precision, recall, f1, tp, predicted_pairs, true_pairs, references,
        members}`` (None where undefined, see ``hdwm.metrics``); None when no
        member carries truth.

    Raises:
        hdwm.registry.RegistryError: version ``ds`` is missing or incomplete.
        ValueError: see ``hdwm.metrics.registry_pairwise``.
    """
    from .registry import read_version

    members = read_version(spark, registry, ds).members
    return registry_pairwise(members, history_truth(spark, curated_root, ds, night, source_col))
