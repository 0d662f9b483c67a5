"""Readers for the command line: DWM sample files, CSV, truth files.

``read_dwm`` / ``read_csv_refs`` / ``read_truth`` read into pandas on the
driver (tests and benchmarks); ``spark_read_dwm`` / ``spark_read_csv_refs`` /
``spark_read_truth`` read the same files with Spark into the same columns,
which is what ``python -m hdwm`` uses, so an input never has to fit in the
driver. The Airflow path (``spark_jobs/link.py``) reads Parquet with Spark.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd


def _lines(path: str | Path) -> list[str]:
    """Text lines of ``path`` with CR, LF or CRLF endings (all three accepted)."""
    raw = Path(path).read_bytes().decode("utf-8", errors="replace")
    return [ln for ln in raw.replace("\r\n", "\n").replace("\r", "\n").split("\n") if ln.strip()]


def read_dwm(path: str | Path) -> pd.DataFrame:
    """Read a DWM sample file (header line; RecID first; unaligned comma fields).

    Returns:
        pandas DataFrame (``record_id`` str, ``text`` str = the fields after RecID joined by ``,``).

    Raises:
        ValueError: empty file or a line without a RecID.
    """
    lines = _lines(path)
    if not lines:
        raise ValueError(f"{path}: empty DWM file")
    ids, texts = [], []
    for n, ln in enumerate(lines[1:], start=2):
        rid, _, rest = ln.partition(",")
        rid = rid.strip()
        if not rid:
            raise ValueError(f"{path}:{n}: line without a RecID")
        ids.append(rid)
        texts.append(rest)
    return pd.DataFrame({"record_id": ids, "text": texts})


def read_csv_refs(path: str | Path) -> pd.DataFrame:
    """Read a CSV with a header: the column named ``record_id`` (or ``rec_id``,
    ``RecID``), else the first column = record id; a ``truth_entity``
    column (if any) is the truth; every other column is reference text
    (joined by spaces, empty cells skipped)."""
    df = pd.read_csv(io.StringIO("\n".join(_lines(path))), dtype=str, keep_default_na=False)
    named = [c for c in df.columns if str(c).strip().lower() in ("record_id", "rec_id", "recid")]
    idc = named[0] if named else df.columns[0]
    attrs = [c for c in df.columns if c not in (idc, "truth_entity")]
    if df.empty:
        cols = ["record_id", "text"] + (["truth_entity"] if "truth_entity" in df.columns else [])
        return pd.DataFrame(columns=cols, dtype=object)
    out = pd.DataFrame({"record_id": df[idc].str.strip()})
    out["text"] = df[attrs].apply(lambda r: " ".join(v for v in r if v), axis=1) if attrs else ""
    if "truth_entity" in df.columns:
        out["truth_entity"] = df["truth_entity"].replace("", None)
    return out


def read_truth(path: str | Path) -> pd.DataFrame:
    """Read a ``RecID,IdTruth`` file → pandas (``record_id``, ``truth_entity``)."""
    rows = list(csv.reader(_lines(path)))
    body = rows[1:] if rows and not rows[0][0].strip().isdigit() and rows[0][0].strip().lower().startswith("rec") else rows
    return pd.DataFrame(
        [(r[0].strip(), r[1].strip()) for r in body if len(r) >= 2],
        columns=["record_id", "truth_entity"],
    ).drop_duplicates("record_id")


# -- the same readers on Spark (``python -m hdwm``): the input never passes through the driver ----------
#
# Lines end in CR, LF or CRLF (Hadoop's line reader and Python's universal newlines accept all three);
# blank lines are skipped; text is UTF-8. Each reader returns a lazy DataFrame after the checks that
# need the data (one or two Spark jobs).


def first_line(path: str | Path) -> str | None:
    """The first non-blank line of ``path`` without its line ending (read on the
    driver, line by line: only the header is read), or None when there is none.

    Raises:
        FileNotFoundError / OSError: the file cannot be opened.
    """
    with open(path, encoding="utf-8", errors="replace", newline=None) as fh:
        for ln in fh:
            if ln.strip():
                return ln.rstrip("\r\n")
    return None


def _numbered_lines(spark, path: str | Path):
    """(``n`` long, ``value`` string): the non-blank lines of ``path``, ``n``
    increasing in file order (``monotonically_increasing_id``; not contiguous)."""
    from pyspark.sql import functions as F

    lines = spark.read.text(str(path)).select(F.monotonically_increasing_id().alias("n"), "value")
    return lines.filter(F.col("value").rlike(r"\S")).localCheckpoint(eager=True)


def _strip(col):
    """Column ``col`` without leading and trailing whitespace (``str.strip``; ``F.trim`` only cuts spaces)."""
    from pyspark.sql import functions as F

    return F.regexp_replace(col, r"^\s+|\s+$", "")


def _without_first(lines):
    """``lines`` (from ``_numbered_lines``) without the first line (the header)."""
    from pyspark.sql import functions as F

    first = lines.agg(F.min("n").alias("n")).first()["n"]
    return lines if first is None else lines.filter(F.col("n") != first)


def spark_read_dwm(spark, path: str | Path):
    """``read_dwm`` on Spark: DataFrame (``record_id`` string, ``text`` string = the fields after RecID).

    Raises:
        ValueError: an empty file, or lines without a RecID (the count and the first one).
    """
    from pyspark.sql import functions as F

    if first_line(path) is None:
        raise ValueError(f"{path}: empty DWM file")
    body = _without_first(_numbered_lines(spark, path))
    cut = F.instr("value", ",")
    refs = body.select(
        "n",
        _strip(F.when(cut > 0, F.expr("substring(value, 1, instr(value, ',') - 1)")).otherwise(F.col("value")))
        .alias("record_id"),
        F.when(cut > 0, F.expr("substring(value, instr(value, ',') + 1)")).otherwise(F.lit("")).alias("text"),
    )
    bad = refs.filter(F.col("record_id") == "")
    if bad.take(1):
        row = bad.orderBy("n").first()
        n_bad = bad.count()
        raise ValueError(f"{path}: {n_bad} line(s) without a RecID, the first: {row['text'][:60]!r}")
    return refs.select("record_id", "text")


#: internal name of the column that catches fields beyond the header's (a ragged row)
_EXTRA = "_washline_extra_field"


def spark_read_csv_refs(spark, path: str | Path):
    """``read_csv_refs`` on Spark: DataFrame (``record_id``, ``text``[, ``truth_entity``]).

    The header (read on the driver) names the columns: ``record_id`` (or
    ``rec_id``, ``RecID``), else the first column, is the id; ``truth_entity``
    is the truth (empty = null); every other column is text, joined by
    spaces, empty cells skipped. Quoted fields (``"a, b"``, doubled quotes) as
    in pandas. A row with fewer fields than the header has empty ones.

    Raises:
        ValueError: an empty file, or rows with more fields than the header
            (the message says "fields"; ``python -m hdwm`` then hints at the DWM layout).
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    head = first_line(path)
    if head is None:
        raise ValueError(f"{path}: no header line (the file is empty)")
    names = [h.strip() for h in next(csv.reader([head]))]
    cols = [f"c{i}" for i in range(len(names))]
    schema = T.StructType([T.StructField(c, T.StringType()) for c in cols + [_EXTRA]])
    df = spark.read.csv(str(path), schema=schema, header=True, enforceSchema=True, mode="PERMISSIVE",
                        quote='"', escape='"', multiLine=False, encoding="UTF-8")
    ragged = df.filter(F.col(_EXTRA).isNotNull())
    if ragged.take(1):
        raise ValueError(f"{path}: {ragged.count()} row(s) have more fields than the {len(names)} of the header, "
                         f"e.g. the row of {ragged.first()[cols[0]]!r}")
    named = [c for c, h in zip(cols, names) if h.lower() in ("record_id", "rec_id", "recid")]
    idc = named[0] if named else cols[0]
    truth = [c for c, h in zip(cols, names) if h == "truth_entity" and c != idc]
    attrs = [c for c in cols if c != idc and c not in truth]

    def nonempty(c):
        return F.when(F.col(c) != "", F.col(c))

    out = [_strip(F.coalesce(F.col(idc), F.lit(""))).alias("record_id"),
           F.concat_ws(" ", *[nonempty(c) for c in attrs]).alias("text") if attrs else F.lit("").alias("text")]
    if truth:
        out.append(nonempty(truth[0]).alias("truth_entity"))
    return df.select(*out)


def spark_read_truth(spark, path: str | Path):
    """``read_truth`` on Spark: DataFrame (``record_id``, ``truth_entity``), one
    row per record id (the first); a first line ``RecID,…`` is a header.
    Lines with fewer than two comma-separated fields are ignored."""
    from pyspark.sql import functions as F
    from pyspark.sql import Window

    head = first_line(path)
    lines = _numbered_lines(spark, path)
    if head is not None:
        first = next(csv.reader([head]), [""])[0].strip()
        if not first.isdigit() and first.lower().startswith("rec"):
            lines = _without_first(lines)
    rows = lines.select("n", F.from_csv("value", "a string, b string").alias("r")).select(
        "n", _strip(F.col("r.a")).alias("record_id"), _strip(F.col("r.b")).alias("truth_entity"))
    return (rows.filter(F.col("truth_entity").isNotNull() & F.col("record_id").isNotNull())
            .withColumn("_k", F.row_number().over(Window.partitionBy("record_id").orderBy("n")))
            .filter(F.col("_k") == 1).select("record_id", "truth_entity"))
