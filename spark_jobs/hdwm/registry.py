"""The entity registry: versioned, persistent entities across nights (issue 13).

Lake layout (``WASHLINE_DATA/lake/entities/``), one folder per logical date;
everything under ``ds=<d>/`` is replaced whole when d is linked again::

    ds=<d>/members/       Parquet  source, record_id, entity_id, first_seen_ds,
                                   last_changed_ds, text, attributes map<string,string>
                                   (one row per reference ever published up to d)
    ds=<d>/entities/      Parquet  entity_id, member_count int, first_seen_ds,
                                   last_changed_ds, golden_record (JSON object)
    ds=<d>/changes/       Parquet  ds, entity_id, change (new|grow|merge|split|update),
                                   from_entity_ids (sorted, comma separated), member_count int
                                   (d's changes only)
    ds=<d>/frequencies/   Parquet  token, freq long: raw token counts over all members
                                   (previous version + the night's counts, never recounted)
    ds=<d>/tokens/        Parquet  source, record_id, tokens array<string>: every member's
                                   tokeniser output (optional; written by a night, see below)
    ds=<d>/_COMPLETE.json written last; without it the version is incomplete and ignored
    ds=<d>/_PUBLISHED.json / _REJECTED.json   written by the Airflow publish / report task
    .published-ds=<d>/    the published version of d while d is linked again (``stash_published``)

A version is written into a temporary sibling folder (``.ds=<d>.tmp-<pid>``)
with ``_COMPLETE.json`` last, then renamed over ``ds=<d>``: readers see the
old version or the new one, never a mixture.

Stored tokens: a night reads the registry's tokens from ``tokens/`` instead of
tokenising every member's text again (the part that grew with the history,
benchmarks/README.md), but only when ``_COMPLETE.json``'s
``tokens_fingerprint`` equals ``hdwm.tokenizer.tokens_fingerprint`` of the
night's profile (same tokeniser settings and code). A version without the
part or with another fingerprint is tokenised from ``text`` as before; the
part is a cache of ``text``, never a source of truth.

Which version a night d links against (``resolve_base``):

* base = the latest ``ds=<p>`` with ``_PUBLISHED.json`` (and ``_COMPLETE.json``), p < d;
  none -> the empty registry (night 1).
* refused (``RegistryOrderError``, the link job exits 2) when a published q > d
  exists (relinking d would fork the registry: run the full rebuild), or when a
  date p with base < p < d is pending: it has ``lake/curated/<p>`` (or
  ``landing/<source>/<p>``) and neither ``_PUBLISHED.json`` nor ``_REJECTED.json``.

Rerun of a published date d (allowed while no later date is published): before
the new version is written, the published one is moved aside to
``.published-ds=<d>/`` (``stash_published``), markers included. The Airflow
publish task deletes it after its commit; when the rerun does not publish, the
report task moves it back (``washline.registry.restore_published``), so the lake
says what the published tables hold: d's earlier publish, and the next date
links against it.

Entity ids: ``E`` + the first 16 hex characters of
``sha1("<ds minted>|<smallest ref_key of the new cluster>")`` – minted once,
deterministic (a rerun mints the same ids), never a record id. A reference's
engine key is ``ref_key = source + "|" + record_id`` (split on the first
``|``; source names match ``[A-Za-z0-9_-]+``).

Golden record (survivorship rule): per attribute, the most frequent non-null
value among the entity's members; ties go to the value of the most recently
changed member, i.e. the largest ``(last_changed_ds, source, record_id)``.
Written as a JSON object with the attribute names sorted. An entity whose
members did not change but whose golden record did (a member sent again with
other values, or a tie now going to a more recent member) gets an ``update``
change row and ``last_changed_ds`` = the night; change rows therefore cover
every change of a published ``entities`` row, not only membership.

Full rebuild (command line)::

    python -m hdwm.registry rebuild --registry lake/entities --ds D --out DIR \\
        [--profile default] [--decisions FILE] [--publish-as-version D2]

relinks every member of version D (all references of all nights up to D) in one
batch with the same engine and profile, writes ``DIR/partition/`` (source,
record_id, entity_id of the incremental registry, rebuilt_cluster) and
``DIR/rebuild_report.json`` (pairwise precision/recall/F1 of the rebuilt
partition against the incremental one, treating the incremental entities as
the truth, plus counts). ``--publish-as-version D2`` (D2 > D) also writes the
rebuild as registry version D2 based on D: entity ids are kept by the same
rules as a night (oldest id survives a merge, the larger part keeps its id on
a split) and every difference is recorded in ``changes/`` as merges and
splits. D2 gets ``_COMPLETE.json`` but no ``_PUBLISHED.json`` (this command
reaches no staging database), so no night links against it; the DAG's
``rebuild`` Param publishes a rebuild. Exit 2 on a missing/incomplete version
or a bad argument.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

import jobcontract
from jobcontract import write_json_atomic

from .progress import reporter

log = logging.getLogger("hdwm.registry")

SOURCE_PATTERN = re.compile(r"^[A-Za-z0-9_-]+$")
DS_PATTERN = jobcontract.DS_PATTERN
COMPLETE = "_COMPLETE.json"
PUBLISHED = "_PUBLISHED.json"
REJECTED = "_REJECTED.json"
PARTS = ("members", "entities", "changes", "frequencies")

MEMBERS_SCHEMA = T.StructType([
    T.StructField("source", T.StringType(), False),
    T.StructField("record_id", T.StringType(), False),
    T.StructField("entity_id", T.StringType(), False),
    T.StructField("first_seen_ds", T.StringType(), False),
    T.StructField("last_changed_ds", T.StringType(), False),
    T.StructField("text", T.StringType(), True),
    T.StructField("attributes", T.MapType(T.StringType(), T.StringType()), True),
])
ENTITIES_SCHEMA = T.StructType([
    T.StructField("entity_id", T.StringType(), False),
    T.StructField("member_count", T.IntegerType(), False),
    T.StructField("first_seen_ds", T.StringType(), False),
    T.StructField("last_changed_ds", T.StringType(), False),
    T.StructField("golden_record", T.StringType(), True),
])
CHANGES_SCHEMA = T.StructType([
    T.StructField("ds", T.StringType(), False),
    T.StructField("entity_id", T.StringType(), False),
    T.StructField("change", T.StringType(), False),
    T.StructField("from_entity_ids", T.StringType(), False),
    T.StructField("member_count", T.IntegerType(), False),
])
FREQ_SCHEMA = T.StructType([
    T.StructField("token", T.StringType(), False),
    T.StructField("freq", T.LongType(), False),
])
TOKENS_SCHEMA = T.StructType([
    T.StructField("source", T.StringType(), False),
    T.StructField("record_id", T.StringType(), False),
    T.StructField("tokens", T.ArrayType(T.StringType(), True), False),
])
SCHEMAS = {"members": MEMBERS_SCHEMA, "entities": ENTITIES_SCHEMA, "changes": CHANGES_SCHEMA,
           "frequencies": FREQ_SCHEMA, "tokens": TOKENS_SCHEMA}
SORT_KEYS = {"members": ["source", "record_id"], "entities": ["entity_id"], "changes": ["entity_id", "change"],
             "frequencies": ["token"], "tokens": ["source", "record_id"]}
#: the optional part: a cache of the members' tokens (module doc, "Stored tokens")
TOKENS = "tokens"


class RegistryOrderError(RuntimeError):
    """Night d cannot be linked now: a later date is already published, or an
    earlier date is still pending. Permanent (the link job exits 2)."""


class RegistryError(RuntimeError):
    """A registry version is missing, incomplete or malformed (exit 2)."""


# ---------------------------------------------------------------- keys and ids

def ref_key_col(source: str | Column = "source", record_id: str | Column = "record_id") -> Column:
    """Column ``source || '|' || record_id`` (the engine's opaque key)."""
    s = F.col(source) if isinstance(source, str) else source
    r = F.col(record_id) if isinstance(record_id, str) else record_id
    return F.concat(s, F.lit("|"), r)


def split_ref_key(col: str | Column = "ref_key") -> tuple[Column, Column]:
    """(source, record_id) Columns of a ref_key, split on the FIRST ``|``."""
    c = F.col(col) if isinstance(col, str) else col
    return F.substring_index(c, "|", 1), c.substr(F.instr(c, "|") + 1, F.length(c))


def mint_id_col(ds: str | Column, min_ref_key: str | Column) -> Column:
    """Column ``'E' + sha1(ds || '|' || min_ref_key)[:16]`` (lower-case hex)."""
    d = F.lit(ds) if isinstance(ds, str) and DS_PATTERN.match(ds) else (F.col(ds) if isinstance(ds, str) else ds)
    k = F.col(min_ref_key) if isinstance(min_ref_key, str) else min_ref_key
    return F.concat(F.lit("E"), F.substring(F.sha1(F.concat(d, F.lit("|"), k)), 1, 16))


def mint_id(ds: str, min_ref_key: str) -> str:
    """Python twin of ``mint_id_col`` (for tests and tools)."""
    import hashlib

    return "E" + hashlib.sha1(f"{ds}|{min_ref_key}".encode("utf-8")).hexdigest()[:16]


def check_sources(df: DataFrame, col: str = "source") -> None:
    """Raise ValueError naming the offending values when a source name is null
    or not a plain identifier ``[A-Za-z0-9_-]+`` (it is part of the ref_key)."""
    bad = (df.filter(F.col(col).isNull() | ~F.col(col).rlike(SOURCE_PATTERN.pattern))
           .select(F.col(col).alias("s")).distinct().limit(5).collect())
    if bad:
        shown = ", ".join(repr(r.s) for r in bad)
        raise ValueError(f"source names must match [A-Za-z0-9_-]+ (they key the references); got {shown}")


# ---------------------------------------------------------------- versions on disk

def version_dir(registry: str | os.PathLike, ds: str) -> Path:
    return Path(registry) / f"ds={ds}"


def versions(registry: str | os.PathLike) -> list[str]:
    """Sorted ds of every ``ds=<d>`` folder (complete or not; temp siblings excluded)."""
    root = Path(registry)
    if not root.is_dir():
        return []
    out = []
    for p in root.iterdir():
        if p.is_dir() and p.name.startswith("ds=") and DS_PATTERN.match(p.name[3:]):
            out.append(p.name[3:])
    return sorted(out)


def is_complete(registry, ds: str) -> bool:
    return (version_dir(registry, ds) / COMPLETE).is_file()


def is_published(registry, ds: str) -> bool:
    """Published = ``_PUBLISHED.json`` and ``_COMPLETE.json`` (a marker on an
    incomplete folder is ignored with a warning)."""
    d = version_dir(registry, ds)
    if not (d / PUBLISHED).is_file():
        return False
    if not (d / COMPLETE).is_file():
        log.warning("registry ds=%s has _PUBLISHED.json but no _COMPLETE.json: ignored", ds)
        return False
    return True


def read_complete(registry, ds: str) -> dict:
    return json.loads((version_dir(registry, ds) / COMPLETE).read_text(encoding="utf-8"))


def _pending_inputs(p: str, curated_root: Path | None, landing: Path | None) -> bool:
    if curated_root is not None and (curated_root / p).exists():
        return True
    if landing is not None and landing.is_dir():
        return any((src / p).is_dir() for src in landing.iterdir() if src.is_dir())
    return False


def _input_dates(curated_root: Path | None, landing: Path | None) -> set[str]:
    dates: set[str] = set()
    if curated_root is not None and curated_root.is_dir():
        dates |= {p.name for p in curated_root.iterdir() if p.is_dir() and DS_PATTERN.match(p.name)}
    if landing is not None and landing.is_dir():
        for src in landing.iterdir():
            if src.is_dir():
                dates |= {p.name for p in src.iterdir() if p.is_dir() and DS_PATTERN.match(p.name)}
    return dates


def _linked_in_isolation(curated_root: Path | None, p: str) -> bool:
    """Date ``p``'s last link ran without the registry (``entity_registry=false``):
    its ``lake/linked/<p>/metrics.json`` (beside ``curated_root``) is that date's
    and says ``"registry": null``. Such a night never enters the registry, so it
    is not a date the registry waits for; without this every later registry
    night was refused (break-it pass, session 14)."""
    if curated_root is None:
        return False
    try:
        payload = json.loads((curated_root.parent / "linked" / p / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(payload, dict) and payload.get("ds") == p and "registry" in payload \
        and payload["registry"] is None


def resolve_base(registry, ds: str, curated_root: str | os.PathLike | None = None,
                 landing: str | os.PathLike | None = None) -> str | None:
    """The published version night ``ds`` links against (None = empty registry).

    Args:
        registry: the registry root (``lake/entities``).
        ds: the night, ``YYYY-MM-DD``.
        curated_root: ``lake/curated`` (a date with a folder there is an input date).
        landing: the landing root (``landing/<source>/<date>`` folders), optional.

    Raises:
        RegistryOrderError: a published date after ``ds`` exists ("ds <d> is
            before the published ds <q>: ..."), or a date between the base and
            ``ds`` has inputs but was neither published nor rejected ("ds <d>:
            the previous date <p> has not been published yet ..."). A date
            whose last link ran without the registry (``_linked_in_isolation``)
            is not waited for.
    """
    cr = Path(curated_root) if curated_root is not None else None
    ld = Path(landing) if landing is not None else None
    vs = versions(registry)
    published = [v for v in vs if is_published(registry, v)]
    later = [q for q in published if q > ds]
    if later:
        q = later[-1]
        raise RegistryOrderError(
            f"ds {ds} is before the published ds {q}: relinking it would fork the registry; run the full rebuild")
    earlier = [p for p in published if p < ds]
    base = earlier[-1] if earlier else None
    candidates = (_input_dates(cr, ld) | set(vs))
    pending = []
    for p in sorted(candidates):
        if not ((base is None or p > base) and p < ds):
            continue
        d = version_dir(registry, p)
        if (d / PUBLISHED).is_file() or (d / REJECTED).is_file():
            continue
        if _pending_inputs(p, cr, ld) and not _linked_in_isolation(cr, p):
            pending.append(p)
    if pending:
        p = pending[0]
        raise RegistryOrderError(
            f"ds {ds}: the previous date {p} has not been published yet (run or fix it first)")
    return base


@dataclass
class RegistryVersion:
    """One registry state (DataFrames in the contract schemas; see module doc)."""

    ds: str | None
    members: DataFrame
    entities: DataFrame
    frequencies: DataFrame
    changes: DataFrame | None = None
    complete: dict = field(default_factory=dict)
    #: (``source``, ``record_id``, ``tokens``) when the version stored them, else None; valid only
    #: for ``complete["tokens_fingerprint"]`` (module doc, "Stored tokens")
    tokens: DataFrame | None = None


def empty_version(spark: SparkSession) -> RegistryVersion:
    """The empty registry (night 1's base)."""
    mk = lambda s: spark.createDataFrame([], s)  # noqa: E731
    return RegistryVersion(None, mk(MEMBERS_SCHEMA), mk(ENTITIES_SCHEMA), mk(FREQ_SCHEMA), mk(CHANGES_SCHEMA), {})


def read_version(spark: SparkSession, registry, ds: str | None) -> RegistryVersion:
    """Read version ``ds`` (None -> the empty registry).

    Raises:
        RegistryError: the folder is missing or has no ``_COMPLETE.json``.
    """
    t0 = time.time()
    if ds is None:
        reporter("registry").say("registry: read base version", {
            "base_ds": "none (the empty registry: first night)", "references": 0, "entities": 0},
            stage_seconds=time.time() - t0)
        return empty_version(spark)
    d = version_dir(registry, ds)
    if not (d / COMPLETE).is_file():
        raise RegistryError(f"registry version {d} is missing or incomplete (no {COMPLETE})")
    frames = {}
    for part in PARTS:
        frames[part] = spark.read.schema(SCHEMAS[part]).parquet(str(d / part))
    complete = read_complete(registry, ds)
    tokens = None
    if complete.get("tokens_fingerprint") and (d / TOKENS).is_dir():
        tokens = spark.read.schema(TOKENS_SCHEMA).parquet(str(d / TOKENS))
    reporter("registry").say("registry: read base version", {  # counts as its _COMPLETE.json recorded them
        "base_ds": ds, "references": complete.get("references_total"), "entities": complete.get("entities_total"),
        "stored_tokens": complete.get("tokens_fingerprint") if tokens is not None else "none"},
        stage_seconds=time.time() - t0)
    return RegistryVersion(ds, frames["members"], frames["entities"], frames["frequencies"], frames["changes"],
                           complete, tokens)


def stash_dir(registry, ds: str) -> Path:
    """``.published-ds=<d>/``: where a published version waits while d is linked again."""
    return Path(registry) / f".published-ds={ds}"


def stash_published(registry, ds: str) -> Path | None:
    """Before version ``ds`` is written again: move the published version of
    ``ds`` (``_PUBLISHED.json`` and ``_COMPLETE.json``) aside to
    ``stash_dir`` (a rename), replacing a stale stash. An unpublished version
    is left where it is, and so is a stash an earlier attempt of this rerun
    made (the version it moved is still the published one).

    Returns: the stash folder when it holds d's published version, else None.
    """
    d, st = version_dir(registry, ds), stash_dir(registry, ds)
    if is_published(registry, ds):
        if st.exists():
            shutil.rmtree(st)
        os.rename(d, st)
        log.info("registry ds=%s is published: moved aside to %s while it is linked again", ds, st)
        return st
    return st if (st / PUBLISHED).is_file() else None


def clear_markers(registry, ds: str) -> None:
    """Delete ``_PUBLISHED.json`` and ``_REJECTED.json`` of ``ds`` (the link job
    does this before it writes, so a half-rewritten date never looks published)."""
    d = version_dir(registry, ds)
    for m in (PUBLISHED, REJECTED):
        (d / m).unlink(missing_ok=True)


def _write_json(path: Path, payload: dict) -> None:
    write_json_atomic(path, payload)


def write_version(registry, ds: str, members: DataFrame, entities: DataFrame, changes: DataFrame,
                  frequencies: DataFrame, complete: dict, tokens: DataFrame | None = None,
                  tokens_fingerprint: str | None = None) -> Path:
    """Write version ``ds`` whole: into ``.ds=<d>.tmp-<pid>``, ``_COMPLETE.json``
    last, then swap it in for ``ds=<d>`` (any older folder and stale temp
    siblings of ``ds`` are removed). Rows are sorted (``SORT_KEYS``) into one
    file per part, so a rerun writes identical rows in identical order.

    ``tokens`` (``source``, ``record_id``, ``tokens``; one row per member) with
    its ``tokens_fingerprint`` (``hdwm.tokenizer.tokens_fingerprint``) is
    written as the optional part ``tokens/`` and the fingerprint recorded in
    ``_COMPLETE.json``; without them the version has no stored tokens.

    Returns: the version folder.

    Raises:
        ValueError: ``tokens`` without ``tokens_fingerprint``.
    """
    if tokens is not None and not tokens_fingerprint:
        raise ValueError("stored tokens need the fingerprint of the tokeniser that made them")
    t0 = time.time()
    root = Path(registry)
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(f".ds={ds}.*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = root / f".ds={ds}.tmp-{os.getpid()}"
    frames = {"members": members, "entities": entities, "changes": changes, "frequencies": frequencies}
    complete = {k: v for k, v in complete.items() if k != "tokens_fingerprint"}
    if tokens is not None:
        frames[TOKENS] = tokens
        complete["tokens_fingerprint"] = tokens_fingerprint
    for part, df in frames.items():
        cols = [F.col(f.name).cast(f.dataType).alias(f.name) for f in SCHEMAS[part].fields]
        (df.select(*cols).repartition(1).sortWithinPartitions(*SORT_KEYS[part])
         .write.mode("overwrite").parquet(str(tmp / part)))
    _write_json(tmp / COMPLETE, complete)
    final = version_dir(root, ds)
    old = root / f".ds={ds}.old-{os.getpid()}"
    if final.exists():
        os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
    reporter("registry").say("registry: write version", {"ds": ds, **{k: complete[k] for k in (
        "references_total", "entities_total", "new_entities", "grows", "merges", "splits") if k in complete}},
        stage_seconds=time.time() - t0)
    return final


# ---------------------------------------------------------------- golden record

def golden_records(members: DataFrame) -> DataFrame:
    """Golden record per entity by the survivorship rule (module doc).

    Args:
        members: ``entity_id, source, record_id, last_changed_ds, attributes``.

    Returns:
        DataFrame(``entity_id``, ``golden_record`` string JSON, attributes sorted;
        ``{}`` for an entity without any non-null attribute).
    """
    ex = members.select("entity_id", "source", "record_id", "last_changed_ds",
                        F.explode_outer("attributes").alias("attr", "value"))
    vals = (ex.filter(F.col("attr").isNotNull() & F.col("value").isNotNull())
            .groupBy("entity_id", "attr", "value")
            .agg(F.count(F.lit(1)).alias("n"),
                 F.max(F.struct("last_changed_ds", "source", "record_id")).alias("recent")))
    w = Window.partitionBy("entity_id", "attr").orderBy(F.desc("n"), F.desc("recent"), F.asc("value"))
    best = vals.withColumn("rn", F.row_number().over(w)).filter("rn = 1")
    gold = best.groupBy("entity_id").agg(
        F.to_json(F.map_from_entries(F.array_sort(F.collect_list(F.struct("attr", "value"))))).alias("golden_record"))
    ents = members.select("entity_id").distinct()
    return ents.join(gold, "entity_id", "left").select(
        "entity_id", F.coalesce("golden_record", F.lit("{}")).alias("golden_record"))


# ---------------------------------------------------------------- rebuild CLI

def rebuild(spark: SparkSession, registry, ds: str, out: str, profile_name: str = "default",
            decisions: str | None = None, publish_as_version: str | None = None,
            checkpoint_dir: str | None = None) -> dict:
    """Relink every member of version ``ds`` in one batch; see the module doc.

    Returns: the report dict (also written to ``out/rebuild_report.json``).

    Raises:
        RegistryError: version ``ds`` missing/incomplete, or ``publish_as_version`` ≤ ``ds``.
        RegistryOrderError: ``publish_as_version`` given while a version after ``ds``
            is published (the rebuild would rewrite published history).
    """
    from .config import load_profile
    from .incremental import assign_and_build, enforce_decisions, read_decisions, engine_link, raw_frequencies
    from .metrics import pairwise_metrics

    t0 = time.time()
    if publish_as_version is not None and not (DS_PATTERN.match(publish_as_version) and publish_as_version > ds):
        raise RegistryError(f"--publish-as-version must be a date after {ds}, got {publish_as_version!r}")
    if publish_as_version is not None:
        # the rebuild becomes the next version: it must start from the latest published one, or it
        # would drop (or overwrite) the nights published after ``ds`` and fork the registry
        later = [q for q in versions(registry) if q > ds and is_published(registry, q)]
        if later:
            raise RegistryOrderError(
                f"--publish-as-version {publish_as_version}: version {ds} is not the latest published one "
                f"({later[-1]} is published after it); rebuild --ds {later[-1]} instead, so that no published "
                f"night is rewritten")
    profile = load_profile(profile_name)
    base = read_version(spark, registry, ds)
    mem = base.members.withColumn("ref_key", ref_key_col()).localCheckpoint(eager=True)
    n = mem.count()
    must, cannot = read_decisions(spark, decisions)
    refs = mem.select("ref_key", "text")
    freq = raw_frequencies(refs, profile)
    clusters, _, _ = engine_link(spark, refs, profile, freq, n, must, cannot, checkpoint_dir)
    clusters = enforce_decisions(clusters, must, cannot).localCheckpoint(eager=True)
    part = (mem.select("ref_key", "source", "record_id", "entity_id")
            .join(clusters.select("ref_key", F.col("cluster").alias("rebuilt_cluster")), "ref_key")
            .drop("ref_key"))
    part.repartition(1).sortWithinPartitions("source", "record_id").write.mode("overwrite").parquet(
        os.path.join(out, "partition"))
    cmp = pairwise_metrics(part, cluster_col="rebuilt_cluster", truth_col="entity_id")
    report = {"ds": ds, "profile": profile.name, "references": n,
              "incremental_entities": base.entities.count(),
              "rebuilt_clusters": clusters.select("cluster").distinct().count(),
              "pairwise_vs_incremental": cmp, "published_version": None}
    if publish_as_version is not None:
        res = assign_and_build(spark, base, clusters, night=None, ds=publish_as_version, profile=profile)
        complete = {**res.counts, "ds": publish_as_version, "base_ds": ds, "rebuild": True,
                    "seconds": round(time.time() - t0, 2), "profile": profile.name}
        clear_markers(registry, publish_as_version)
        write_version(registry, publish_as_version, res.members, res.entities, res.changes,
                      base.frequencies, complete)
        report["published_version"] = complete
    report["seconds"] = round(time.time() - t0, 2)
    os.makedirs(out, exist_ok=True)
    _write_json(Path(out) / "rebuild_report.json", report)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hdwm.registry", description="washline entity registry tools")
    sub = ap.add_subparsers(dest="cmd", required=True)
    rb = sub.add_parser("rebuild", help="relink the whole history of a version in one batch")
    rb.add_argument("--registry", required=True, help="registry root (lake/entities)")
    rb.add_argument("--ds", required=True, help="version to rebuild (YYYY-MM-DD)")
    rb.add_argument("--out", required=True, help="folder for partition/ and rebuild_report.json")
    rb.add_argument("--profile", default="default")
    rb.add_argument("--decisions", default=None, help="decisions.csv (must_link / cannot_link)")
    rb.add_argument("--publish-as-version", default=None, metavar="DS",
                    help="also write the rebuild as registry version DS (> --ds) with recorded merges/splits")
    rb.add_argument("--checkpoint-dir", default=None)
    a = ap.parse_args(argv)
    from .config import ProfileError
    from .spark import get_spark

    if not DS_PATTERN.match(a.ds):
        print(f"error: --ds must be YYYY-MM-DD, got {a.ds!r}", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = get_spark("hdwm-rebuild", {"spark.ui.enabled": "false",
                                       "spark.driver.memory": os.environ.get("HDWM_DRIVER_MEMORY", "4g")})
    spark.sparkContext.setLogLevel("WARN")
    try:
        report = rebuild(spark, a.registry, a.ds, a.out, a.profile, a.decisions, a.publish_as_version,
                         a.checkpoint_dir)
    except (RegistryError, RegistryOrderError, ProfileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
