"""washline cleanse job: landing CSV -> curated Parquet + quarantine Parquet + metrics.

Usage (spark-submit; Airflow's ``SparkJobOperator`` builds this)::

    spark-submit spark_jobs/cleanse.py --landing ROOT --ds YYYY-MM-DD \\
        --curated DIR --quarantine DIR --metrics FILE [--sources-config PATH]

Exit codes:
    0  success (curated, quarantine and metrics written)
    1  unexpected error (Spark or I/O; traceback in the log)
    2  bad arguments or configuration: malformed ``--ds``, invalid
       ``sources.yaml``, a landing folder for the date whose source is not
       declared there (the message names it), or **schema drift**: a file
       whose header adds, lacks, renames or repeats a column (the message
       names every such file, relative to the landing root, and column)
    3  no input: no ``<ROOT>/<source>/<ds>/*.csv`` at all ("no input for <ds> in <ROOT>")
    4  count invariant violated (rows_in != rows_curated + rows_quarantined);
       nothing is trusted, the metrics file is not written

Exit codes and the error file are ``jobcontract``'s (shared with the operator).
On a documented failure (exit 2, 3 or 4) the one-line message is also written
to ``<metrics stem>.error.json`` beside ``--metrics`` (``{"exit_code", "error"}``),
so Airflow's ``SparkJobOperator`` can quote it in the run summary; a run that
succeeds removes that file.

What it does, for each ``<ROOT>/<source>/<ds>/*.csv`` of a declared source:

1. Reads the files as lines (``spark.read.text``), so every line keeps its
   file (``_metadata.file_path``) and its 1-based physical line number (the
   header is line 1). Line numbers are exact across file splits: each split's
   lines are counted and offset by the lines of the earlier splits of the same
   file. By default a record is one line (a quoted field that spans a line
   break is quarantined line by line as ``malformed`` / ``column_count``,
   never dropped). A source declaring ``csv: {multiline: true}`` reads RFC 4180
   records instead: a line break inside a quoted field continues the record,
   which keeps the number of its first line (``merge_multiline_records``).
2. Checks each file's header against the declared columns
   (``sourcecontract.compare_header``: trimmed, case-insensitive, BOM ignored,
   order free: each file is parsed by its own header). The source's optional
   ``column_map`` (file name -> declared column) and ``ignore_columns`` (extra
   columns dropped on purpose) from ``sources.yaml`` apply first. The rule:

   * the header matches (after mapping): the file flows;
   * it is a header (at least half of its fields are known names) but a
     column is added, missing, renamed or repeated: **schema drift**, the
     job fails with exit 2 before anything is written, e.g. ``schema drift
     in febrl/2025-01-01/part-2.csv: unexpected column 'email' (declared:
     rec_id, given_name, ...)``. Drift is a change of contract, not a bad
     row: quarantining every row would hide it and publish a partial night;
   * the first line is not recognisable as a header at all (a file without
     a header, garbage): the file is quarantined whole (``bad_header``, its
     first line included), so nothing is lost and other files still flow.
3. Parses each line with ``from_csv`` and the declared schema (every column a
   string) in PERMISSIVE mode with a corrupt-record column: a line with the
   wrong number of fields is quarantined as ``column_count``, an unbalanced
   quote as ``malformed``. Blank lines are skipped and counted
   (``blank_lines_skipped``); they are not rows.
4. Cleans each column by its declared type (``cleansing``: trim/collapse
   whitespace, UPPER-CASE text, dates, postcodes, phones). A value that cannot
   be cleaned (impossible date, bad postcode or phone) becomes null; the row is
   kept and the fix is counted in ``fixed_by_rule``.
5. Quarantines rows with no record id (``missing_record_id``) and every extra
   copy of a record id already seen in the source (``duplicate_record_id``;
   the copy with the smallest (source_file, line_number) is kept).
6. Writes curated and quarantine Parquet (mode overwrite: a rerun replaces
   that date's slice; the quarantine is written even when empty), re-reads
   their counts, asserts ``rows_in == rows_curated + rows_quarantined`` and
   finally writes the metrics JSON atomically (its presence marks success).

Progress: ``[cleanse] <event>: key=value ... (seconds)`` lines on stderr
(``hdwm.progress``; under spark-submit they reach the Airflow task log): the
files found, each source once read, each landing file with rows read /
curated / quarantined by reason and a running total, the write, the totals.

Nothing proportional to the input is collected to the driver: only counts,
one header line per file and one row per quarantine reason.

Limitations: the landing root is listed with the driver's file system (a
local or shared mount; not s3a://). Files are read as UTF-8.
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

try:  # spark-submit runs this file as a script: make `hdwm` importable.
    import hdwm
except ImportError:  # pragma: no cover - depends on how the job is launched
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import hdwm

import cleansing as C
import jobcontract
import sourcecontract
from sourcecontract import SourceConfigError, SourceSpec
from hdwm.progress import Progress
from jobcontract import EXIT_CONFIG, EXIT_ERROR, EXIT_INVARIANT, EXIT_NO_INPUT, EXIT_OK, error_path  # noqa: F401
from jobcontract import write_json_atomic as atomic_write_json

RAW_MAX_CHARS = 2_000
CORRUPT = "_corrupt_record"
SOURCES_FILE = "sources.yaml"

CURATED_FIXED_HEAD = ("record_id", "source", "truth_entity")
CURATED_FIXED_TAIL = ("ds", "source_file", "line_number")
QUARANTINE_COLUMNS = ("ds", "source", "source_file", "line_number", "raw", "reason", "detail")
QUARANTINE_DDL = (
    "ds STRING, source STRING, source_file STRING, line_number BIGINT, raw STRING, reason STRING, detail STRING"
)

#: Runtime SQL settings the job relies on.
JOB_CONF = {
    # Never prune from_csv's schema: the corrupt-record check must see every field.
    "spark.sql.optimizer.enableCsvExpressionOptimization": "false",
}

log = logging.getLogger("washline.cleanse")


class CleanseError(Exception):
    """A failure with a documented exit code and a one-line message."""

    exit_code = EXIT_ERROR


class ConfigError(CleanseError):
    exit_code = EXIT_CONFIG


class NoInputError(CleanseError):
    exit_code = EXIT_NO_INPUT


class InvariantError(CleanseError):
    exit_code = EXIT_INVARIANT


class HeaderDriftError(ConfigError):
    """A landing file's CSV header adds, lacks, renames or repeats a declared column
    (exit 2; the message starts ``schema drift in <file>``). Not to be confused with
    ``washline.staging.load.SchemaDriftError``: a staging table whose columns differ
    from the spec, on the Airflow side."""


# ---------------------------------------------------------------------------
# Arguments, configuration and input discovery (driver-side, no Spark)
# ---------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cleanse.py", description="Cleanse one logical date of landing CSV into curated Parquet."
    )
    parser.add_argument("--landing", required=True, help="landing root holding <source>/<ds>/*.csv")
    parser.add_argument("--ds", required=True, help="logical date, YYYY-MM-DD")
    parser.add_argument("--curated", required=True, help="output folder for curated Parquet (overwritten)")
    parser.add_argument("--quarantine", required=True, help="output folder for quarantine Parquet (overwritten)")
    parser.add_argument("--metrics", required=True, help="output metrics JSON file (written atomically)")
    parser.add_argument(
        "--sources-config",
        default=None,
        help="sources.yaml (or its folder); default $WASHLINE_CONFIG_DIR/sources.yaml, "
        "else <repo>/include/config/sources.yaml",
    )
    return parser.parse_args(argv)


def validate_ds(ds: str) -> str:
    """``jobcontract.validate_ds`` of ``--ds``; raises ConfigError (exit 2)."""
    try:
        return jobcontract.validate_ds(ds, "--ds")
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def find_sources_config(explicit: str | None = None) -> Path:
    """Locate ``sources.yaml``: ``explicit`` (file or folder), else
    ``$WASHLINE_CONFIG_DIR``, else ``include/config`` of the repo that holds the
    ``hdwm`` package (or this script). Never relative to the working directory.

    Raises:
        ConfigError: an explicit location does not exist, or none is found.
    """

    def as_file(p: Path) -> Path:
        return p / SOURCES_FILE if p.is_dir() else p

    if explicit:
        path = as_file(Path(explicit).expanduser())
        if not path.is_file():
            raise ConfigError(f"--sources-config {explicit!r}: no such file {path}")
        return path.resolve()
    env = os.environ.get("WASHLINE_CONFIG_DIR")
    if env:
        path = as_file(Path(env).expanduser())
        if not path.is_file():
            raise ConfigError(f"WASHLINE_CONFIG_DIR={env!r}: no {SOURCES_FILE} there")
        return path.resolve()
    candidates = [
        Path(hdwm.__file__).resolve().parents[2] / "include" / "config" / SOURCES_FILE,
        Path(__file__).resolve().parents[1] / "include" / "config" / SOURCES_FILE,
    ]
    for path in candidates:
        if path.is_file():
            return path
    raise ConfigError(f"cannot find {SOURCES_FILE}; tried {[str(p) for p in candidates]}; pass --sources-config")


def discover_inputs(landing: Path, ds: str, sources: dict[str, SourceSpec]) -> dict[str, list[Path]]:
    """Map each declared source that has a ``<landing>/<source>/<ds>/`` folder
    to its sorted ``*.csv`` files (possibly empty).

    Hidden folders (``.x``, ``_x``) are ignored.

    Raises:
        ConfigError: a folder for ``ds`` exists for an undeclared source.
    """
    found: dict[str, list[Path]] = {}
    undeclared: list[str] = []
    if not landing.is_dir():
        return found
    for entry in sorted(landing.iterdir()):
        if not entry.is_dir() or entry.name.startswith((".", "_")):
            continue
        day = entry / ds
        if not day.is_dir():
            continue
        if entry.name not in sources:
            undeclared.append(entry.name)
            continue
        found[entry.name] = sorted(p for p in day.glob("*.csv") if p.is_file())
        others = sorted(
            p.name for p in day.iterdir() if p.is_file() and p.suffix != ".csv" and not p.name.startswith((".", "_"))
        )
        if others:
            log.warning("%s/%s: ignoring non-CSV files %s", entry.name, ds, others)
    if undeclared:
        raise ConfigError(
            f"landing folder(s) for {ds} with undeclared source(s) {undeclared} in {landing}: "
            f"declare them in {SOURCES_FILE} or remove them (declared: {sorted(sources)})"
        )
    return found


def check_header(line: str | None, spec: SourceSpec) -> sourcecontract.HeaderCheck | None:
    """Split a file's first line as CSV and compare it with ``spec``
    (:func:`sourcecontract.compare_header`); None for a file with no line."""
    if line is None:
        return None
    if len(line) > MAX_HEADER_CHARS:
        # no header is this long (and csv's field limit is 128 KiB): not a header, quarantine the file
        return sourcecontract.HeaderCheck(False, None, (
            f"first line is not a header ({len(line):,} characters, more than {MAX_HEADER_CHARS:,}; "
            f"starts {line[:60]!r}); expected the declared columns {spec.column_names}",))
    try:
        fields = next(csv.reader([line.lstrip("\ufeff")], delimiter=spec.delimiter, quotechar=spec.quote), [])
    except csv.Error as exc:
        return sourcecontract.HeaderCheck(False, None, (
            f"first line is not a header (not parseable as CSV: {exc}; starts {line[:60]!r}); "
            f"expected the declared columns {spec.column_names}",))
    return sourcecontract.compare_header(fields, spec)


#: A first line longer than this (characters) is not a header: the file is quarantined as ``bad_header``.
MAX_HEADER_CHARS = 16_384


def read_first_line(path: Path, limit: int = 1 << 20) -> str | None:
    """The first line of a file as Spark's line reader sees it (ends at LF,
    CRLF or a lone CR; bytes that are not UTF-8 become U+FFFD), read from at
    most ``limit`` bytes; None for an empty file."""
    with open(path, "rb") as fh:
        head = fh.read(limit)
    if not head:
        return None
    return re.split(r"\r\n|\r|\n", head.decode("utf-8", errors="replace"), maxsplit=1)[0]


def relative_name(path: str | Path, landing: Path | None) -> str:
    """``path`` (a local path or ``file:`` URI) relative to the landing root,
    for messages; the bare file name when it is outside it."""
    from urllib.parse import unquote, urlparse

    text = str(path)
    if text.startswith("file:"):
        text = unquote(urlparse(text).path)
    p = Path(text)
    if landing is not None:
        try:
            return p.resolve().relative_to(landing.resolve()).as_posix()
        except ValueError:
            pass
    return p.name


def drift_message(problems: dict[str, tuple[str, ...]], spec: SourceSpec) -> str:
    """One message for every drifted file of a source: file, findings, the
    declared columns and how to accept the change."""
    parts = [f"schema drift in {name}: {'; '.join(found)}" for name, found in sorted(problems.items())]
    return (
        f"{' | '.join(parts)} (declared for source {spec.name!r}: {', '.join(spec.column_names)}). "
        f"If the change is intended, map renamed columns with column_map or drop extra ones with "
        f"ignore_columns in {SOURCES_FILE}; else fix the feed"
    )


def check_headers(inputs: dict[str, list[Path]], sources: dict[str, SourceSpec], landing: Path) -> None:
    """Driver-side header check of every input file, before Spark starts.

    Raises:
        HeaderDriftError: a file's header drifted (every drifted file is named).
    """
    messages = []
    for name, files in inputs.items():
        drifted = {}
        for path in files:
            result = check_header(read_first_line(path), sources[name])
            if result is not None and result.is_header and result.problems:
                drifted[relative_name(path, landing)] = result.problems
        if drifted:
            messages.append(drift_message(drifted, sources[name]))
    if messages:
        raise HeaderDriftError(" || ".join(messages))


def _local_uri(path: str) -> str:
    """Absolute ``file://`` URI for a local path; URIs (``s3a://``, ...) pass through."""
    if "://" in path:
        return path
    return "file://" + str(Path(path).expanduser().resolve())


# ---------------------------------------------------------------------------
# Spark stages
# ---------------------------------------------------------------------------


def read_numbered_lines(spark, files: list[Path]):
    """Lines of ``files`` with ``source_file`` and exact 1-based ``line_number``.

    ``monotonically_increasing_id`` is contiguous inside a Spark partition and a
    file split never spans partitions, so ``id - min(id)`` per (file, split) is
    the line's index in its split; the lines of earlier splits of the same file
    (a running sum over the small per-split count table) give the offset.

    Returns:
        ``(numbered, persisted, files_info)``: the DataFrame (source_file,
        line_number, value), the cached base to unpersist when done, and per
        file ``{"lines", "blank", "header"}`` (header = its first line).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    lines = (
        spark.read.text([_local_uri(str(p)) for p in files])
        .select(
            F.col("value"),
            F.col("_metadata.file_path").alias("source_file"),
            F.col("_metadata.file_block_start").alias("_split"),
            F.monotonically_increasing_id().alias("_mid"),
        )
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    # One row per file split (not per line): small enough to bring to the driver.
    # It also carries each split's first line (line 1 = the header for split 0)
    # and its blank-line count, so no other pass is needed for those.
    splits = (
        lines.groupBy("source_file", "_split")
        .agg(
            F.count(F.lit(1)).alias("_n"),
            F.min("_mid").alias("_first"),
            # at most MAX_HEADER_CHARS + 1 characters: a longer first line is not a header anyway
            F.min_by(F.substring("value", 1, MAX_HEADER_CHARS + 1), "_mid").alias("_head"),
            F.sum(F.when(C.is_blank_col(F.col("value")), 1).otherwise(0)).alias("_blank"),
        )
        .collect()
    )
    offsets, files_info = [], {}
    for row in sorted(splits, key=lambda r: (r["source_file"], r["_split"])):
        info = files_info.setdefault(row["source_file"], {"lines": 0, "blank": 0, "header": None})
        offsets.append((row["source_file"], row["_split"], row["_first"], info["lines"]))
        if info["lines"] == 0:
            info["header"] = row["_head"]
        info["lines"] += row["_n"]
        info["blank"] += row["_blank"] or 0
    table = spark.createDataFrame(offsets, "source_file STRING, _split BIGINT, _first BIGINT, _before BIGINT")
    numbered = lines.join(F.broadcast(table), ["source_file", "_split"]).select(
        "source_file",
        (F.col("_before") + F.col("_mid") - F.col("_first") + 1).cast("long").alias("line_number"),
        "value",
    )
    return numbered, lines, files_info


def merge_multiline_records(numbered, files_info: dict[str, dict[str, Any]], spec: SourceSpec):
    """Join physical lines into RFC 4180 records, for ``csv: {multiline: true}``.

    A line whose count of unescaped quote characters is odd opens (or closes)
    a quoted field; a record starts at a line when the quotes of all earlier
    lines of its file are balanced, and takes every line up to the one that
    balances them. Doubled quotes (``""``, RFC 4180) count twice and so never
    change the balance; when ``escape`` differs from ``quote`` a quote right
    after the escape character is not counted. The lines are joined with
    ``\n`` (a CRLF inside a field becomes LF). A quoted field that is never
    closed makes one record from its line to the end of the file, which
    from_csv then marks corrupt: it is quarantined as ``malformed`` with its
    first line number and raw text, never dropped; its detail names the
    last line it took, so the records swallowed after the open quote are
    visible (the raw text keeps only the first ``RAW_MAX_CHARS``).

    Args:
        numbered: (source_file, line_number, value) physical lines, as from
            :func:`read_numbered_lines`.
        files_info: per file ``{"lines", "blank", "header"}``; replaced by the
            same figures counted in records.

    Returns:
        ``(records, files_info, cached)``: DataFrame (source_file,
        line_number = the record's first line, last_line = its last
        physical line, value = its text, persisted),
        the per-file record counts, and ``records`` again to unpersist.

    Each file's lines are ordered in one window partition (one task per file).
    """
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    value = F.col("value")
    if spec.escape and spec.escape != spec.quote:
        pattern = f"(?<!{re.escape(spec.escape)}){re.escape(spec.quote)}"
    else:
        pattern = re.escape(spec.quote)
    odd = (F.regexp_count(value, F.lit(pattern)) % 2).cast("long")
    by_line = Window.partitionBy("source_file").orderBy("line_number")
    before = F.coalesce(F.sum("_odd").over(by_line.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0))
    starts = numbered.withColumn("_odd", odd).withColumn("_start", (before % 2) == 0)
    grouped = starts.withColumn(
        "_record", F.max(F.when(F.col("_start"), F.col("line_number"))).over(
            by_line.rowsBetween(Window.unboundedPreceding, 0))
    )
    records = (
        grouped.groupBy("source_file", "_record")
        .agg(F.array_sort(F.collect_list(F.struct("line_number", "value"))).alias("_lines"),
             F.max("line_number").alias("last_line"))
        .select(
            "source_file",
            F.col("_record").alias("line_number"),
            "last_line",
            F.array_join(F.transform("_lines", lambda x: x["value"]), "\n").alias("value"),
        )
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    counts = records.groupBy("source_file").agg(
        F.count(F.lit(1)).alias("records"),
        F.sum(F.when(C.is_blank_col(F.col("value")), 1).otherwise(0)).alias("blank"),
    ).collect()
    merged = {path: dict(info) for path, info in files_info.items()}
    for row in counts:
        merged[row["source_file"]].update(lines=row["records"], blank=row["blank"] or 0)
    return records, merged, records


def classify_source(spark, spec: SourceSpec, files: list[Path], ds: str, landing: Path | None = None,
                    progress: Progress | None = None):
    """Parse, clean and classify one source's lines.

    Each file is parsed by its own header's layout (``column_map`` renames and
    ``ignore_columns`` drops applied), so a file may order its columns freely.

    Raises:
        HeaderDriftError: a file's header drifted (normally already caught by
            :func:`check_headers` before Spark started; names are relative
            to ``landing``).

    Returns:
        dict with ``classified`` (one row per input row: quarantine columns,
        curated columns and fix flags; persisted), ``rows_in``,
        ``blank_lines``, ``bad_headers`` (file -> detail), ``fix_flags``
        (flag column -> (column, rule)), ``cached`` (DataFrames to unpersist),
        ``file_rows`` / ``file_blank`` (``source_file`` as Spark names it ->
        rows in / blank lines skipped, for every file that has a line).

    With ``progress``, one line once the source's files are read (the first
    Spark pass): files, physical lines (records for a multiline source), blank lines.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    t_read = time.monotonic()
    numbered, base, files_info = read_numbered_lines(spark, files)
    cached = [base]
    if spec.multiline:
        numbered, files_info, records = merge_multiline_records(numbered, files_info, spec)
        cached.append(records)
    else:
        numbered = numbered.withColumn("last_line", F.col("line_number"))
    if progress is not None:
        progress.say(f"source {spec.name}: read", {
            "files": len(files), "records" if spec.multiline else "lines": sum(i["lines"] for i in files_info.values()),
            "blank": sum(i["blank"] for i in files_info.values())}, stage_seconds=time.monotonic() - t_read)

    accounting = _file_accounting(files_info, spec, landing)
    if accounting["drifted"]:
        for df in cached:
            df.unpersist()
        raise HeaderDriftError(drift_message(accounting["drifted"], spec))
    bad_headers = accounting["bad_headers"]
    bad_file = F.col("source_file").isin(list(bad_headers)) if bad_headers else F.lit(False)
    good_header_line = (F.col("line_number") == 1) & ~bad_file
    blank = C.is_blank_col(F.col("value"))
    # Blank lines are not rows; a bad-header file is quarantined line by line (blank ones too).
    parsed = _parse_by_layout(numbered.filter(~good_header_line & (~blank | bad_file)), spec,
                              accounting["layouts"], bad_headers)
    record_id, cleaned_cols, fix_flags = _cleaned_columns(spec)
    reason, detail = _quarantine_reason(spec, bad_headers, bad_file, record_id)
    rows = parsed.select(
        F.lit(ds).alias("ds"),
        F.lit(spec.name).alias("source"),
        "source_file",
        "line_number",
        # bytes that are not UTF-8 are stored as U+FFFD: Parquet strings must be valid UTF-8
        # (pyarrow/pandas refuse to read them otherwise); the landing file keeps the original bytes
        F.make_valid_utf8(F.substring(F.col("value"), 1, RAW_MAX_CHARS)).alias("raw"),
        reason.alias("reason"),
        detail.alias("detail"),
        record_id.alias("record_id"),
        C.truth_entity_col(record_id, spec.truth_pattern).alias("truth_entity"),
        *cleaned_cols,
    )
    ok = _mark_duplicates(rows.filter(F.col("reason").isNull()))
    classified = rows.filter(F.col("reason").isNotNull()).unionByName(ok).persist(StorageLevel.MEMORY_AND_DISK)
    return {
        "classified": classified,
        "rows_in": sum(accounting["file_rows"].values()),
        "blank_lines": accounting["blank_lines"],
        "bad_headers": bad_headers,
        "fix_flags": fix_flags,
        "cached": [*cached, classified],
        "file_rows": accounting["file_rows"],
        "file_blank": accounting["file_blank"],
    }


def _file_accounting(files_info: dict[str, dict[str, Any]], spec: SourceSpec,
                     landing: Path | None) -> dict[str, Any]:
    """Each file's header against ``spec`` and its row accounting, from the per-split table (no Spark pass).

    Returns:
        ``{"layouts": {layout: [files]}, "bad_headers": {file: detail},
        "drifted": {file relative to landing: problems}, "file_rows": {file:
        rows in}, "file_blank": {file: blank lines}, "blank_lines": int}``. A
        file whose first line is no header counts every line (header and blank
        ones too) as a row, all quarantined; files with no line are absent.
    """
    out: dict[str, Any] = {"layouts": {}, "bad_headers": {}, "drifted": {}, "file_rows": {}, "file_blank": {},
                           "blank_lines": 0}
    for path, info in files_info.items():
        result = check_header(info["header"], spec)
        if result is not None and result.is_header and result.problems:
            out["drifted"][relative_name(path, landing)] = result.problems
        elif result is None or not result.is_header:
            out["bad_headers"][path] = result.problems[0] if result else "file has no header line"
            out["file_rows"][path] = info["lines"]
        else:
            out["layouts"].setdefault(result.layout, []).append(path)
            out["file_rows"][path] = info["lines"] - 1 - info["blank"]
            out["file_blank"][path] = info["blank"]
            out["blank_lines"] += info["blank"]
    return out


def _parse_by_layout(rows, spec: SourceSpec, layouts: dict[tuple[str | None, ...], list[str]],
                     bad_headers: dict[str, str]):
    """``rows`` parsed with ``from_csv`` (PERMISSIVE, corrupt-record column), each file by its header's layout.

    Bad-header files are parsed as declared (every line is quarantined anyway).
    Returns ``source_file, line_number, last_line, value``, the declared
    columns, the corrupt record and ``_n_fields`` (the layout's field count).
    """
    from pyspark.sql import functions as F

    names = spec.column_names
    options = {
        "mode": "PERMISSIVE",
        "columnNameOfCorruptRecord": CORRUPT,
        "sep": spec.delimiter,
        "quote": spec.quote,
        "escape": spec.escape,
    }
    groups = list(layouts.items())
    declared_layout = tuple(names)
    if bad_headers:
        groups.append((declared_layout, list(bad_headers)))
    if not groups:
        groups = [(declared_layout, [])]
    parsed = None
    for layout, group_files in groups:
        fields_ddl = [f"`{n}` STRING" if n else f"`_ignored_{i}` STRING" for i, n in enumerate(layout)]
        ddl = ", ".join(fields_ddl) + f", `{CORRUPT}` STRING"
        part = rows if len(groups) == 1 else rows.filter(F.col("source_file").isin(group_files))
        part = part.withColumn("_r", F.from_csv(F.col("value"), ddl, options)).select(
            "source_file", "line_number", "last_line", "value", *[F.col("_r").getField(n).alias(n) for n in names],
            F.col("_r").getField(CORRUPT).alias(CORRUPT), F.lit(len(layout)).alias("_n_fields"),
        )
        parsed = part if parsed is None else parsed.unionByName(part)
    return parsed


def _cleaned_columns(spec: SourceSpec):
    """``(record_id column, cleaned attribute columns and fix flags, {flag column: (column, rule)})``."""
    from pyspark.sql import functions as F

    record_id = C.whitespace_col(F.col(spec.record_id))
    cleaned_cols = []
    fix_flags: dict[str, tuple[str, str]] = {}
    for col_spec in spec.columns:
        value, fixes = C.clean_column(F.col(col_spec.name), col_spec)
        if col_spec.name != spec.record_id:
            cleaned_cols.append(value.cast(col_spec.spark_type).alias(col_spec.name))
        for rule, flag in fixes.items():
            flag_name = f"_fix__{col_spec.name}__{rule}"
            fix_flags[flag_name] = (col_spec.name, rule)
            cleaned_cols.append(flag.alias(flag_name))
    return record_id, cleaned_cols, fix_flags


def _quarantine_reason(spec: SourceSpec, bad_headers: dict[str, str], bad_file, record_id):
    """``(reason, detail)`` columns of a parsed row: the first quarantine reason
    that applies (``C.QUARANTINE_REASONS`` order, duplicates aside) and its
    one-line detail; both null for a row that may be curated."""
    from pyspark.sql import functions as F

    names = spec.column_names
    corrupt = F.col(CORRUPT).isNotNull()
    quote_char = re.escape(spec.quote)
    quotes = F.size(F.split(F.col("value"), quote_char, -1)) - 1
    fields = F.size(F.split(F.col("value"), re.escape(spec.delimiter), -1))
    n_fields = F.col("_n_fields")
    header_detail = F.lit(None).cast("string")
    for path, problem in bad_headers.items():
        header_detail = F.when(F.col("source_file") == path, F.lit(problem)).otherwise(header_detail)
    bad_bytes = ~F.is_valid_utf8(F.col("value")) | F.col("value").contains("\ufffd")
    control = F.col("value").rlike("[\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F]")
    longest = F.greatest(*[F.coalesce(F.length(F.col(n)), F.lit(0)) for n in names]) if len(names) > 1 else F.length(F.col(names[0]))
    too_long = longest > C.MAX_FIELD_CHARS
    reason = (
        F.when(bad_file, F.lit("bad_header"))
        .when(corrupt & (quotes % 2 == 1), F.lit("malformed"))
        .when(corrupt, F.lit("column_count"))
        .when(bad_bytes, F.lit("encoding"))
        .when(control, F.lit("control_char"))
        .when(too_long, F.lit("field_too_long"))
        .when(record_id.isNull(), F.lit("missing_record_id"))
    )
    last_line = F.col("last_line")
    detail = (
        F.when(bad_file, header_detail)
        .when(corrupt & (quotes % 2 == 1), F.format_string(
            "unbalanced quote: the quoted field is never closed, so this one record runs from line %d to the "
            "end of the file (line %d, %d physical lines; every record after the open quote is in it)",
            F.col("line_number"), last_line, last_line - F.col("line_number") + 1)
            if spec.multiline else
            F.lit("unbalanced quote (a quoted field spanning lines needs csv: {multiline: true} for the source)"))
        .when(
            corrupt & (quotes == 0),
            F.format_string("expected %d fields, found %d", n_fields, fields),
        )
        .when(corrupt, F.format_string("expected %d fields", n_fields))
        .when(bad_bytes, F.lit("bytes that are not UTF-8 (shown as U+FFFD); re-export the file as UTF-8"))
        .when(control, F.lit("NUL or other control character in the line"))
        .when(too_long, F.format_string(f"a field of %d characters (limit {C.MAX_FIELD_CHARS})", longest))
        .when(record_id.isNull(), F.lit(f"{spec.record_id} is empty"))
    )
    if spec.multiline:  # a quarantined record of several lines says which lines it took
        spans = (last_line > F.col("line_number")) & ~(corrupt & (quotes % 2 == 1))
        detail = F.when(spans & detail.isNotNull(), F.format_string(
            "%s (a record on lines %d-%d)", detail, F.col("line_number"), last_line)).otherwise(detail)
    return reason, detail


def _mark_duplicates(ok):
    """``ok`` (rows with no reason yet) with every copy of a record id after the
    first by (source_file, line_number) marked ``duplicate_record_id``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    first = Window.partitionBy("record_id").orderBy("source_file", "line_number")
    rank = F.row_number().over(first)
    ok = (
        ok.withColumn("_rank", rank)
        .withColumn("_kept_file", F.first("source_file").over(first))
        .withColumn("_kept_line", F.first("line_number").over(first))
    )
    dup = F.col("_rank") > 1
    return ok.withColumn("reason", F.when(dup, F.lit("duplicate_record_id"))).withColumn(
        "detail",
        F.when(
            dup,
            F.format_string(
                "duplicate of %s kept at %s:%d", F.col("record_id"), F.col("_kept_file"), F.col("_kept_line")
            ),
        ),
    ).drop("_rank", "_kept_file", "_kept_line")


def _count(spark, uri: str) -> int:
    return spark.read.parquet(uri).count()


def prepare(args: argparse.Namespace, progress: Progress | None = None) -> dict[str, Any]:
    """Driver-side checks before any Spark work: ``ds``, ``sources.yaml``,
    input discovery and curated column types. With ``progress``, one line
    with the date, the configuration and the files found per source.

    Raises:
        ConfigError, NoInputError: see the module's exit codes.
    """
    ds = validate_ds(args.ds)
    config_path = find_sources_config(args.sources_config)
    try:
        sources = sourcecontract.load_sources(config_path)
    except SourceConfigError as exc:
        raise ConfigError(str(exc)) from exc
    landing = Path(args.landing).expanduser().resolve()
    inputs = discover_inputs(landing, ds, sources)
    n_files = sum(len(v) for v in inputs.values())
    if n_files == 0:
        raise NoInputError(f"no input for {ds} in {landing}")
    check_headers(inputs, sources, landing)  # schema drift fails here, before a JVM starts
    if progress is not None:
        progress.say("start", ds=ds, sources_config=config_path, landing=landing,
                     files={name: len(files) for name, files in inputs.items()},
                     bytes=sum(p.stat().st_size for files in inputs.values() for p in files))

    # Curated columns: fixed head, attributes in order of first appearance, fixed tail.
    attr_types: dict[str, str] = {}
    for name in inputs:
        for col in sources[name].attributes:
            previous = attr_types.setdefault(col.name, col.spark_type)
            if previous != col.spark_type:
                raise ConfigError(f"column {col.name!r} is {previous} in one source and {col.spark_type} in {name!r}")
    return {"ds": ds, "config_path": config_path, "sources": sources, "landing": landing,
            "inputs": inputs, "n_files": n_files, "attr_types": attr_types}


def run(spark, args: argparse.Namespace, plan: dict[str, Any] | None = None,
        progress: Progress | None = None) -> dict[str, Any]:
    """Run the job for ``args`` on ``spark``; return the metrics dict.

    Progress (``[cleanse] ...`` lines on stderr, ``hdwm.progress``): per
    source, once its files are read; per landing file (name relative to the
    landing root), once its source is classified: rows read, curated,
    quarantined by reason, blank lines, and the running total over the files
    so far; the write of curated and quarantine Parquet with the counts read
    back; and the final totals. Spark reads a source's files together, so a
    file's line comes when its source's pass ends, not while Spark reads it.

    Raises:
        ConfigError, NoInputError, InvariantError: see the module's exit codes.
    """
    started = time.monotonic()
    progress = progress or Progress("cleanse")
    plan = plan or prepare(args, progress)
    ds, sources, landing, inputs = plan["ds"], plan["sources"], plan["landing"], plan["inputs"]

    for key, value in JOB_CONF.items():
        spark.conf.set(key, value)

    tally = Tally(plan["n_files"])
    curated_parts, quarantine_parts, cached = [], [], []
    try:
        for name, files in inputs.items():
            if not files:
                tally.by_source[name] = {"files": 0, "rows_in": 0, "rows_curated": 0, "rows_quarantined": 0}
                progress.say(f"source {name}: no file for {ds}")
                continue
            curated_part, quarantine_part = _cleanse_source(spark, sources[name], files, ds, landing, progress,
                                                            tally, cached)
            curated_parts.append(curated_part)
            quarantine_parts.append(quarantine_part)
        curated = _curated_frame(spark, curated_parts, plan["attr_types"])
        quarantine = spark.createDataFrame([], QUARANTINE_DDL)
        for part in quarantine_parts:
            quarantine = quarantine.unionByName(part)

        curated_uri, quarantine_uri = _local_uri(args.curated), _local_uri(args.quarantine)
        with progress.stage("write curated and quarantine Parquet") as written:
            curated.write.mode("overwrite").parquet(curated_uri)
            quarantine.write.mode("overwrite").parquet(quarantine_uri)
            rows_curated, rows_quarantined = _count(spark, curated_uri), _count(spark, quarantine_uri)
            written.update(curated=rows_curated, quarantined=rows_quarantined)
    finally:
        for frame in cached:
            frame.unpersist()

    tally.check_written(rows_curated, rows_quarantined)
    metrics = {
        "ds": ds,
        "sources": sorted(inputs),
        "files": plan["n_files"],
        "rows_in": tally.rows_in,
        "rows_curated": rows_curated,
        "rows_quarantined": rows_quarantined,
        "quarantined_by_reason": tally.reasons,
        "fixed_by_rule": tally.fixed_by_rule,
        "fixed_by_column": tally.fixed_by_column,
        "blank_lines_skipped": tally.blank,
        "by_source": tally.by_source,
        "landing": str(landing),
        "curated": args.curated,
        "quarantine": args.quarantine,
        "sources_config": str(plan["config_path"]),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 3),
    }
    atomic_write_json(Path(args.metrics).expanduser().resolve(), metrics)
    progress.say("done", ds=ds, files=plan["n_files"], rows_in=metrics["rows_in"], curated=rows_curated,
                 quarantined=rows_quarantined, by_reason={k: v for k, v in tally.reasons.items() if v},
                 fixed_by_rule={k: v for k, v in tally.fixed_by_rule.items() if v}, blank_lines_skipped=tally.blank,
                 metrics=args.metrics)
    return metrics


class Tally:
    """The job's counts as its sources are classified: what ``metrics.json`` reports
    (``reasons``, ``fixed_by_rule``, ``fixed_by_column``, ``by_source``,
    ``rows_in``, ``blank``), and the running total of the per-file progress lines."""

    def __init__(self, n_files: int) -> None:
        self.n_files = n_files
        self.reasons: dict[str, int] = {r: 0 for r in C.QUARANTINE_REASONS}
        self.fixed_by_rule: dict[str, int] = {r: 0 for r in C.FIX_RULES}
        self.fixed_by_column: dict[str, dict[str, int]] = {}
        self.by_source: dict[str, dict[str, Any]] = {}
        self.rows_in = self.blank = self.files_done = 0
        self.running: dict[str, Any] = {"files": f"0/{n_files}", "read": 0, "curated": 0, "quarantined": 0}

    def add_counts(self, name: str, agg: list, flags: dict[str, tuple[str, str]],
                   landing: Path | None) -> tuple[dict[str, dict[str, Any]], int, int]:
        """Add one source's ``(source_file, reason, n, fix flags...)`` rows.

        Returns:
            ``(per file relative to landing: {"curated", "quarantined",
            "by_reason"}, curated rows, quarantined rows)`` of the source.
        """
        curated = quarantined = 0
        per_file: dict[str, dict[str, Any]] = {}
        for row in agg:
            counts = per_file.setdefault(relative_name(row["source_file"], landing),
                                         {"curated": 0, "quarantined": 0, "by_reason": {}})
            n = int(row["n"])
            if row["reason"] is None:
                curated += n
                counts["curated"] += n
                for flag, (column, rule) in flags.items():
                    hits = int(row[flag] or 0)
                    self.fixed_by_rule[rule] = self.fixed_by_rule.get(rule, 0) + hits
                    if hits:
                        per_col = self.fixed_by_column.setdefault(f"{name}.{column}", {})
                        per_col[rule] = per_col.get(rule, 0) + hits
            else:
                quarantined += n
                counts["quarantined"] += n
                counts["by_reason"][row["reason"]] = counts["by_reason"].get(row["reason"], 0) + n
                self.reasons[row["reason"]] = self.reasons.get(row["reason"], 0) + n
        return per_file, curated, quarantined

    def file_done(self, read: int, counts: dict[str, Any]) -> dict[str, Any]:
        """Count one more landing file; returns the running total after it."""
        self.files_done += 1
        self.running["files"] = f"{self.files_done}/{self.n_files}"
        self.running["read"] += read
        self.running["curated"] += counts["curated"]
        self.running["quarantined"] += counts["quarantined"]
        return dict(self.running)

    def check_written(self, rows_curated: int, rows_quarantined: int) -> None:
        """The counts read back from Parquet against the classified ones and ``rows_in``.

        Raises:
            InvariantError: they differ (exit 4).
        """
        expected_curated = sum(s["rows_curated"] for s in self.by_source.values())
        expected_quarantined = sum(s["rows_quarantined"] for s in self.by_source.values())
        if (rows_curated, rows_quarantined) != (expected_curated, expected_quarantined):
            raise InvariantError(
                f"written counts (curated {rows_curated}, quarantined {rows_quarantined}) differ from "
                f"classified counts ({expected_curated}, {expected_quarantined})"
            )
        if self.rows_in != rows_curated + rows_quarantined:
            raise InvariantError(
                f"rows_in {self.rows_in} != rows_curated {rows_curated} + rows_quarantined {rows_quarantined}"
            )


def _cleanse_source(spark, spec: SourceSpec, files: list[Path], ds: str, landing: Path, progress: Progress,
                    tally: Tally, cached: list):
    """Classify one source (:func:`classify_source`), count it into ``tally``
    with one small collect, say its and its files' progress lines, and check
    its row invariant. The DataFrames to unpersist are added to ``cached``.

    Returns:
        ``(curated part, quarantine part)`` DataFrames of the source.

    Raises:
        HeaderDriftError, InvariantError: see the module's exit codes.
    """
    from pyspark.sql import functions as F

    name = spec.name
    t_source = time.monotonic()
    result = classify_source(spark, spec, files, ds, landing, progress)
    cached.extend(result["cached"])
    classified = result["classified"]
    flags = result["fix_flags"]
    # One small row per (file, reason) (null = curated) with fix counts: the only collect.
    agg = (
        classified.groupBy("source_file", "reason")
        .agg(F.count(F.lit(1)).alias("n"), *[F.sum(F.col(f).cast("long")).alias(f) for f in flags])
        .collect()
    )
    per_file, src_curated, src_quarantined = tally.add_counts(name, agg, flags, landing)
    progress.say(f"source {name}: classified", {
        "files": len(files), "rows_in": result["rows_in"], "curated": src_curated,
        "quarantined": src_quarantined, "blank_lines_skipped": result["blank_lines"]},
        stage_seconds=time.monotonic() - t_source)
    file_rows = {relative_name(k, landing): v for k, v in result["file_rows"].items()}
    file_blank = {relative_name(k, landing): v for k, v in result["file_blank"].items()}
    for rel in sorted(relative_name(p, landing) for p in files):
        counts = per_file.get(rel, {"curated": 0, "quarantined": 0, "by_reason": {}})
        total = tally.file_done(file_rows.get(rel, 0), counts)
        progress.say(f"file {rel}", {
            "read": file_rows.get(rel, 0), "curated": counts["curated"], "quarantined": counts["quarantined"],
            "by_reason": dict(sorted(counts["by_reason"].items())), "blank": file_blank.get(rel, 0),
            **({} if rel in file_rows else {"empty": True}), "total": total})
    tally.by_source[name] = {
        "files": len(files),
        "rows_in": result["rows_in"],
        "rows_curated": src_curated,
        "rows_quarantined": src_quarantined,
        "blank_lines_skipped": result["blank_lines"],
        "bad_header_files": sorted(result["bad_headers"]),
    }
    tally.rows_in += result["rows_in"]
    tally.blank += result["blank_lines"]
    for path, problem in result["bad_headers"].items():
        log.warning("  %s: %s: whole file quarantined: %s", name, relative_name(path, landing), problem)
    if result["rows_in"] != src_curated + src_quarantined:
        raise InvariantError(
            f"{name}: rows_in {result['rows_in']} != curated {src_curated} + quarantined {src_quarantined}"
        )
    good = classified.filter(F.col("reason").isNull())
    curated = good.select(*CURATED_FIXED_HEAD, *[c.name for c in spec.attributes], *CURATED_FIXED_TAIL)
    return curated, classified.filter(F.col("reason").isNotNull()).select(*QUARANTINE_COLUMNS)


def _curated_frame(spark, parts: list, attr_types: dict[str, str]):
    """The sources' curated parts as one DataFrame with the job's column order
    (an empty one of the same schema when no source had a row)."""
    curated = parts[0] if parts else None
    for part in parts[1:]:
        curated = curated.unionByName(part, allowMissingColumns=True)
    if curated is None:  # declared folders exist but hold no files with rows
        ddl = ", ".join(
            [f"{c} STRING" for c in CURATED_FIXED_HEAD]
            + [f"`{c}` {t.upper()}" for c, t in attr_types.items()]
            + ["ds STRING", "source_file STRING", "line_number BIGINT"]
        )
        curated = spark.createDataFrame([], ddl)
    return curated.select(*CURATED_FIXED_HEAD, *attr_types, *CURATED_FIXED_TAIL)


def _setup_logging() -> None:
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)


def main(argv: list[str] | None = None, spark=None) -> int:
    """Entry point. Returns the exit code (see the module docstring).

    ``spark``: an existing session (tests); by default ``hdwm.spark.get_spark``
    returns the active session or builds one. The session is never stopped here.
    """
    _setup_logging()
    progress = Progress("cleanse")
    args = parse_args(argv)
    failure = error_path(args.metrics)
    failure.unlink(missing_ok=True)  # never report a previous attempt's error
    try:
        plan = prepare(args, progress)  # fail fast on arguments, config and input, before a JVM starts
        if spark is None:
            from hdwm.spark import get_spark

            spark = get_spark("washline-cleanse", JOB_CONF)
            # Keep the job's story readable in the Airflow task log.
            spark.sparkContext.setLogLevel(os.environ.get("WASHLINE_SPARK_LOG_LEVEL", "WARN"))
            progress.say("Spark session ready", master=spark.sparkContext.master)
        run(spark, args, plan, progress)
    except NoInputError as exc:
        log.error("%s", exc)
        _write_error(failure, exc)
        return exc.exit_code
    except CleanseError as exc:
        log.error("cleanse failed (exit %d): %s", exc.exit_code, exc)
        _write_error(failure, exc)
        return exc.exit_code
    return EXIT_OK


def _write_error(path: Path, exc: CleanseError) -> None:
    try:
        atomic_write_json(path, {"exit_code": exc.exit_code, "error": str(exc)})
    except OSError as err:  # the exit code still tells the story
        log.warning("could not write %s: %s", path, err)


if __name__ == "__main__":
    code = main()
    try:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
    finally:
        sys.exit(code)
