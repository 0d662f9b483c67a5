"""The entity registry: versioned, persistent entities across nights.

Lake layout (``WASHLINE_DATA/lake/entities/``, format 2). Data files are
immutable *layers*; a version is a manifest naming the layers it is made of,
so a night writes what it changed and shares everything else::

    _layers/<part>/<layer_id>/  Parquet written once and never modified;
                                layer_id = ``<ds>-<12 hex>``, unique per write
    ds=<d>/_COMPLETE.json       the version's manifest, written last (below)
    ds=<d>/_PUBLISHED.json / _REJECTED.json   written by the Airflow publish / report task
    .published-ds=<d>/          the published version of d while d is linked again (``stash_published``)

The parts and how a version's layers combine (oldest layer first, the
version's layers listed in ``_COMPLETE.json["layers"][part]``):

    members      source, record_id, entity_id, first_seen_ds, last_changed_ds, text,
                 attributes map<string,string>: upsert rows; the version holds, per
                 (source, record_id), the row of the newest layer holding it
    entities     entity_id, member_count int, first_seen_ds, last_changed_ds, golden_record
                 (JSON object), removed boolean: upsert rows, newest per entity_id; a
                 ``removed`` row says the entity no longer exists (merged away, or a split
                 left nothing under its id)
    frequencies  token, freq long: deltas; the version's raw token count is their sum (> 0)
    tokens       source, record_id, tokens array<string>: the tokeniser's output per
                 member (a cache of ``text``, optional, see "Stored tokens"), upsert
    changes      ds, entity_id, change (new|grow|merge|split|update), from_entity_ids
                 (sorted, comma separated), member_count int: the night's rows only,
                 never layered

``_COMPLETE.json`` holds the night's counts (``references_total``,
``entities_total``, ``night_references``, ``new_entities``, ``grows``, ...)
and ``{"format": 2, "base_ds": ..., "layers": {part: [layer_id, ...]},
"own": {part: layer_id}}``: ``own`` names the layers the night itself wrote
(its delta: every member and entity it added, changed or removed, its change
rows, its token counts and tokens), which the Airflow side stages and
upserts into the database. A night writes one layer per part; the bytes it
writes follow the night, not the history. Reading a whole version merges its
layers without shuffling the oldest (largest) one: each layer keeps the keys
no newer layer holds (a broadcast anti-join against the newer layers' keys),
see ``_newest_rows``.

A version is written by writing its layers first, then its manifest into a
temporary sibling folder (``.ds=<d>.tmp-<pid>``) that is renamed over
``ds=<d>``: readers see the old version or the new one, never a mixture.

Compaction (``python -m hdwm.registry compact``) rewrites a version as one
layer per part with the same content and swaps its manifest atomically; the
link job compacts on its own when a version would have more than
``MAX_LAYERS`` layers. Retention (``prune``; ``python -m hdwm.registry
prune``; run by the link job after each night with ``--keep-versions``,
default ``KEEP_VERSIONS``) keeps the last K published versions, every version
after the latest published one (a pending night), the base of every kept
version and every stash, removes the other versions, then deletes the layers
no remaining manifest names and that are older than a grace period (a writer
in flight writes its layers before its manifest). Rollback
(``python -m hdwm.registry rollback --to D``) marks every published version
after D as rejected (``_REJECTED.json`` with the reason), so the next night
links against D; the Airflow publish task sees that the database holds a
version other than the night's base and publishes the whole version.

Format 1 (lakes written before 2026-12-06): ``ds=<d>/<part>/`` holds the whole
version and ``_COMPLETE.json`` has no ``format``. It is read as a version of
one layer per part; the first night after it copies it once into ``_layers``
(a full layer per part) and layers on top of that.

Stored tokens: a night reads the registry's tokens from ``tokens`` instead of
tokenising every member's text again, but only when ``_COMPLETE.json``'s
``tokens_fingerprint`` equals ``hdwm.tokenizer.tokens_fingerprint`` of the
night's profile (same tokeniser settings and code). A version without the
part or with another fingerprint is tokenised from ``text``, and the next
version then starts a new token layer chain with every member's tokens.

Which version a night d links against (``resolve_base``):

* base = the latest ``ds=<p>`` with ``_PUBLISHED.json`` (and ``_COMPLETE.json``), p < d;
  none -> the empty registry (night 1).
* refused (``RegistryOrderError``, the link job exits 2) when a published q > d
  exists (relinking d would fork the registry: run the full rebuild), or when a
  date p with base < p < d is pending: it has ``lake/curated/<p>`` (or
  ``landing/<source>/<p>``) and neither ``_PUBLISHED.json`` nor ``_REJECTED.json``.

Rerun of a published date d (allowed while no later date is published): before
the new version is written, the published one is moved aside to
``.published-ds=<d>/`` (``stash_published``), markers included; its layers
stay where they are. The Airflow publish task deletes the stash after its
commit; when the rerun does not publish, the report task moves it back
(``washline.registry.restore_published``), so the lake says what the
published tables hold: d's earlier publish, and the next date links against it.

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

Maintenance (command line; run them while no night is being linked)::

    python -m hdwm.registry compact  --registry lake/entities --ds D
    python -m hdwm.registry prune    --registry lake/entities [--keep 7] [--grace-seconds 3600]
    python -m hdwm.registry rollback --registry lake/entities --to D [--reason TEXT]

``compact`` and ``prune`` print what they did as JSON; ``rollback`` prints the
dates it marked rejected. Exit 2 on a bad argument, a missing version, or a
rollback target that is not a retained published version.
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
#: the parts whose layers accumulate from version to version (``changes`` is the night's only)
LAYERED = ("members", "entities", "frequencies", "tokens")
#: the folder of the immutable layers, under the registry root
LAYERS = "_layers"
FORMAT = 2
#: a version with more layers than this is compacted when written (``write_version``)
MAX_LAYERS = 32
#: published versions kept by ``prune`` unless told otherwise
KEEP_VERSIONS = 7
#: unreferenced layers younger than this are left alone by ``prune`` (a writer in flight), seconds
LAYER_GRACE_SECONDS = 3600

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
#: an entities layer: ``ENTITIES_SCHEMA`` plus ``removed`` (the entity no longer exists)
ENTITY_LAYER_SCHEMA = T.StructType(ENTITIES_SCHEMA.fields + [T.StructField("removed", T.BooleanType(), False)])
SCHEMAS = {"members": MEMBERS_SCHEMA, "entities": ENTITIES_SCHEMA, "changes": CHANGES_SCHEMA,
           "frequencies": FREQ_SCHEMA, "tokens": TOKENS_SCHEMA}
#: the schema each part is stored in (format 2)
LAYER_SCHEMAS = {**SCHEMAS, "entities": ENTITY_LAYER_SCHEMA}
#: the key a layered part upserts by (frequencies are summed instead)
LAYER_KEYS = {"members": ["source", "record_id"], "entities": ["entity_id"], "tokens": ["source", "record_id"]}
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


def load_manifest(path: str | os.PathLike) -> dict:
    """One ``_COMPLETE.json``, checked for the shape the layer bookkeeping needs:
    a JSON object whose ``layers`` (when present) maps parts to lists of layer
    ids and whose ``own`` (when present) maps parts to one layer id.

    Raises:
        RegistryError: unreadable, not JSON (e.g. truncated), or of another
            shape; the message names the file.
    """
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RegistryError(f"registry manifest {path} is unreadable: {exc}") from None
    if not isinstance(payload, dict):
        raise RegistryError(f"registry manifest {path} holds {type(payload).__name__}, expected a JSON object")
    layers, own = payload.get("layers"), payload.get("own")
    if layers is not None and not (isinstance(layers, dict) and all(
            isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in layers.values())):
        raise RegistryError(f"registry manifest {path}: 'layers' must map each part to a list of layer ids")
    if own is not None and not (isinstance(own, dict) and all(isinstance(i, str) for i in own.values())):
        raise RegistryError(f"registry manifest {path}: 'own' must map each part to one layer id")
    return payload


def read_complete(registry, ds: str) -> dict:
    """``ds=<ds>/_COMPLETE.json`` (:func:`load_manifest`; raises RegistryError when malformed)."""
    return load_manifest(version_dir(registry, ds) / COMPLETE)


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
    night was refused (found by an adversarial test run, 174f1cb)."""
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
    """One registry state (DataFrames in the contract schemas; see module doc).

    ``members``, ``entities`` and ``frequencies`` are the merged version (lazy:
    nothing is read until an action needs it); ``changes`` is the night's own.
    ``frequency_rows`` are the raw (``token``, ``freq``) rows of every layer,
    unsummed, for a caller that adds its own deltas before summing once.
    ``layers``/``fmt``: the manifest's layer ids and the format (1 or 2; None
    for the empty registry)."""

    ds: str | None
    members: DataFrame
    entities: DataFrame
    frequencies: DataFrame
    changes: DataFrame | None = None
    complete: dict = field(default_factory=dict)
    #: (``source``, ``record_id``, ``tokens``) when the version stored them, else None; valid only
    #: for ``complete["tokens_fingerprint"]`` (module doc, "Stored tokens")
    tokens: DataFrame | None = None
    frequency_rows: DataFrame | None = None
    layers: dict = field(default_factory=dict)
    fmt: int | None = None


def empty_version(spark: SparkSession) -> RegistryVersion:
    """The empty registry (night 1's base)."""
    mk = lambda s: spark.createDataFrame([], s)  # noqa: E731
    freq = mk(FREQ_SCHEMA)
    return RegistryVersion(None, mk(MEMBERS_SCHEMA), mk(ENTITIES_SCHEMA), freq, mk(CHANGES_SCHEMA),
                           {"references_total": 0, "entities_total": 0}, None, freq, {}, None)


def layer_dir(registry, part: str, layer_id: str) -> Path:
    """``<registry>/_layers/<part>/<layer_id>``."""
    return Path(registry) / LAYERS / part / layer_id


def _read_layer(spark: SparkSession, registry, part: str, layer_id: str) -> DataFrame:
    d = layer_dir(registry, part, layer_id)
    if not d.is_dir():
        raise RegistryError(f"registry layer {d} is missing (named by a version's {COMPLETE})")
    return spark.read.schema(LAYER_SCHEMAS[part]).parquet(str(d))


def _newest_rows(layers: list[DataFrame], keys: list[str]) -> DataFrame:
    """Merge upsert layers (oldest first): per key, the row of the newest layer.

    Each layer keeps the rows whose key no newer layer holds, by an anti-join
    against the newer layers' keys, broadcast: the newer layers are nights
    (small), the oldest is the history (large) and is only scanned, never
    shuffled. Returns the union (same schema as the layers)."""
    if not layers:
        raise ValueError("no layers to merge")
    out = layers[-1]
    newer = layers[-1].select(*keys)
    for df in reversed(layers[:-1]):
        out = out.unionByName(df.join(F.broadcast(newer), keys, "left_anti"))
        newer = newer.unionByName(df.select(*keys))
    return out


def read_version(spark: SparkSession, registry, ds: str | None) -> RegistryVersion:
    """Read version ``ds`` (None -> the empty registry), merged from its layers.

    Raises:
        RegistryError: the folder is missing or has no ``_COMPLETE.json``, or a
            layer it names is missing.
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
    complete = read_complete(registry, ds)
    tokens = None
    if complete.get("format") == FORMAT:
        lay = complete.get("layers") or {}
        frames = {part: [_read_layer(spark, registry, part, i) for i in lay.get(part, [])] for part in LAYERED}
        for part in ("members", "entities", "frequencies"):
            if not frames[part]:
                raise RegistryError(f"registry version {d}: {COMPLETE} names no {part} layer")
        members = _newest_rows(frames["members"], LAYER_KEYS["members"])
        entities = _newest_rows(frames["entities"], LAYER_KEYS["entities"]).filter(~F.col("removed")).drop("removed")
        freq_rows = frames["frequencies"][0]
        for f in frames["frequencies"][1:]:
            freq_rows = freq_rows.unionByName(f)
        own_changes = (complete.get("own") or {}).get("changes")
        changes = (_read_layer(spark, registry, "changes", own_changes) if own_changes
                   else spark.createDataFrame([], CHANGES_SCHEMA))
        if complete.get("tokens_fingerprint") and frames["tokens"]:
            tokens = _newest_rows(frames["tokens"], LAYER_KEYS["tokens"])
        fmt = FORMAT
    else:
        part_df = {part: spark.read.schema(SCHEMAS[part]).parquet(str(d / part)) for part in PARTS}
        members, entities, changes = part_df["members"], part_df["entities"], part_df["changes"]
        freq_rows = part_df["frequencies"]
        if complete.get("tokens_fingerprint") and (d / TOKENS).is_dir():
            tokens = spark.read.schema(TOKENS_SCHEMA).parquet(str(d / TOKENS))
        lay, fmt = {}, 1
    frequencies = (freq_rows.groupBy("token").agg(F.sum("freq").cast("long").alias("freq"))
                   .filter(F.col("freq") > 0)) if fmt == FORMAT else freq_rows
    reporter("registry").say("registry: read base version", {  # counts as its _COMPLETE.json recorded them
        "base_ds": ds, "references": complete.get("references_total"), "entities": complete.get("entities_total"),
        "layers": len(lay.get("members", [])) or "format 1",
        "stored_tokens": complete.get("tokens_fingerprint") if tokens is not None else "none"},
        stage_seconds=time.time() - t0)
    return RegistryVersion(ds, members, entities, frequencies, changes, complete, tokens, freq_rows, lay, fmt)


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


def new_layer_id(ds: str) -> str:
    """A fresh layer id ``<ds>-<12 hex>`` (random: a rerun never overwrites a layer another manifest names)."""
    import secrets

    return f"{ds}-{secrets.token_hex(6)}"


def _write_layer(registry, part: str, layer_id: str, df: DataFrame) -> None:
    """Write ``df`` as layer ``layer_id`` of ``part``: cast to the part's layer
    schema, sorted by ``SORT_KEYS`` into one file, so a rerun writes the same
    rows in the same order."""
    cols = [F.col(f.name).cast(f.dataType).alias(f.name) for f in LAYER_SCHEMAS[part].fields]
    (df.select(*cols).repartition(1).sortWithinPartitions(*SORT_KEYS[part])
     .write.mode("overwrite").parquet(str(layer_dir(registry, part, layer_id))))


def _with_removed(entities: DataFrame) -> DataFrame:
    return entities if "removed" in entities.columns else entities.withColumn("removed", F.lit(False))


def _merged_parts(spark: SparkSession, registry, layers: dict) -> dict[str, DataFrame]:
    """The merged content of ``layers`` (part -> layer ids, oldest first) per part,
    in the layer schemas (entities without removed rows, frequencies summed)."""
    out = {}
    for part in LAYERED:
        ids = layers.get(part) or []
        if not ids:
            continue
        frames = [_read_layer(spark, registry, part, i) for i in ids]
        if part == "frequencies":
            rows = frames[0]
            for f in frames[1:]:
                rows = rows.unionByName(f)
            out[part] = (rows.groupBy("token").agg(F.sum("freq").cast("long").alias("freq"))
                         .filter(F.col("freq") > 0))
        elif part == "entities":
            out[part] = _newest_rows(frames, LAYER_KEYS[part]).filter(~F.col("removed"))
        else:
            out[part] = _newest_rows(frames, LAYER_KEYS[part])
    return out


def compact_layers(spark: SparkSession, registry, ds: str, layers: dict) -> dict:
    """Write the merged content of ``layers`` as one new layer per part and
    return the new ``layers`` dict (part -> [layer id]). Removed entities and
    zero counts are dropped (no older layer is left for them to hide)."""
    t0 = time.time()
    merged = _merged_parts(spark, registry, layers)
    out = {}
    for part, df in merged.items():
        lid = new_layer_id(ds)
        _write_layer(registry, part, lid, df)
        out[part] = [lid]
    for part in LAYERED:
        out.setdefault(part, [])
    reporter("registry").say("registry: compacted", {"ds": ds, "layers_before": len(layers.get("members", [])),
                                                     "layers_after": 1}, stage_seconds=time.time() - t0)
    return out


def write_version(registry, ds: str, base: RegistryVersion, members: DataFrame, entities: DataFrame,
                  changes: DataFrame, frequencies: DataFrame, complete: dict, tokens: DataFrame | None = None,
                  tokens_fingerprint: str | None = None, *, frequencies_full: bool = False,
                  tokens_full: bool = False, max_layers: int = MAX_LAYERS) -> Path:
    """Write version ``ds`` on top of ``base`` from the night's deltas.

    Args:
        base: the version the night linked against (``read_version``; the empty
            registry for night 1).
        members: the members the night added or changed (``MEMBERS_SCHEMA``).
        entities: the entities it created, changed or removed (``ENTITIES_SCHEMA``
            plus ``removed`` boolean; without the column none is removed).
        changes: the night's change rows (``CHANGES_SCHEMA``).
        frequencies: (``token``, ``freq``) the night's count deltas, or with
            ``frequencies_full`` the whole population's counts (a rebuild).
        complete: the counts for ``_COMPLETE.json`` (``references_total`` ...).
        tokens: (``source``, ``record_id``, ``tokens``) of the night's
            references, or with ``tokens_full`` of every member (the base had
            no stored tokens under this fingerprint); None: no stored tokens.
        tokens_fingerprint: ``hdwm.tokenizer.tokens_fingerprint`` of the tokeniser.
        max_layers: compact (``compact_layers``) when the version would have more layers.

    The night's layers are written first (``_layers/<part>/<id>/``), then the
    manifest into ``.ds=<d>.tmp-<pid>``, renamed over ``ds=<d>`` (an older
    folder and stale temp siblings of ``ds`` are removed). A format-1 base is
    copied once into layers. Returns the version folder.

    Raises:
        ValueError: ``tokens`` without ``tokens_fingerprint``.
    """
    if tokens is not None and not tokens_fingerprint:
        raise ValueError("stored tokens need the fingerprint of the tokeniser that made them")
    t0 = time.time()
    spark = members.sparkSession
    root = Path(registry)
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(f".ds={ds}.*"):
        shutil.rmtree(stale, ignore_errors=True)

    # the base's chain of layers (a format-1 base is copied into layers once)
    chain = {part: list((base.layers or {}).get(part, [])) for part in LAYERED}
    if base.fmt == 1:
        snap = {"members": base.members, "entities": _with_removed(base.entities),
                "frequencies": base.frequencies}
        if base.tokens is not None:
            snap["tokens"] = base.tokens
        for part, df in snap.items():
            lid = new_layer_id(ds)
            _write_layer(registry, part, lid, df)
            chain[part] = [lid]
    if frequencies_full:
        chain["frequencies"] = []
    if tokens is None or tokens_full or base.tokens is None or (
            base.complete.get("tokens_fingerprint") != tokens_fingerprint):
        chain["tokens"] = []

    own = {}
    night = {"members": members, "entities": _with_removed(entities), "changes": changes,
             "frequencies": frequencies}
    if tokens is not None:
        night["tokens"] = tokens
    for part, df in night.items():
        own[part] = new_layer_id(ds)
        _write_layer(registry, part, own[part], df)
    layers = {part: chain[part] + ([own[part]] if part in own else []) for part in LAYERED}
    if len(layers["members"]) > max_layers:
        layers = compact_layers(spark, registry, ds, layers)

    complete = {k: v for k, v in complete.items() if k not in ("tokens_fingerprint", "layers", "own", "format")}
    complete.update({"format": FORMAT, "ds": ds, "base_ds": base.ds, "layers": layers, "own": own})
    if tokens is not None:
        complete["tokens_fingerprint"] = tokens_fingerprint
    tmp = root / f".ds={ds}.tmp-{os.getpid()}"
    tmp.mkdir(parents=True)
    _write_json(tmp / COMPLETE, complete)
    final = version_dir(root, ds)
    old = root / f".ds={ds}.old-{os.getpid()}"
    if final.exists():
        os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
    written = sum(f.stat().st_size for part, lid in own.items()
                  for f in layer_dir(root, part, lid).rglob("*") if f.is_file())
    reporter("registry").say("registry: write version", {"ds": ds, **{k: complete[k] for k in (
        "references_total", "entities_total", "new_entities", "grows", "merges", "splits") if k in complete},
        "layers": len(layers["members"]), "bytes_written": written},
        stage_seconds=time.time() - t0)
    return final


def compact(spark: SparkSession, registry, ds: str) -> dict:
    """Rewrite version ``ds`` as one layer per part (same content) and swap its
    manifest in atomically (markers untouched; ``own`` still names the night's
    delta layers). Returns the new manifest.

    Raises:
        RegistryError: the version is missing, incomplete or of format 1.
    """
    d = version_dir(registry, ds)
    if not (d / COMPLETE).is_file():
        raise RegistryError(f"registry version {d} is missing or incomplete (no {COMPLETE})")
    complete = read_complete(registry, ds)
    if complete.get("format") != FORMAT:
        raise RegistryError(f"registry version {d} is of format 1 (one full copy already); nothing to compact")
    complete["layers"] = compact_layers(spark, registry, ds, complete["layers"])
    _write_json(d / COMPLETE, complete)
    return complete


def _manifests(root: Path) -> list[Path]:
    """Every manifest under ``root``: versions, stashes, rejected attempts, temp folders."""
    return [p / COMPLETE for p in root.iterdir()
            if p.is_dir() and p.name != LAYERS and (p / COMPLETE).is_file()]


def prune(registry, keep: int = KEEP_VERSIONS, grace_seconds: float = LAYER_GRACE_SECONDS,
          now: float | None = None) -> dict:
    """Retention: keep the last ``keep`` published versions, remove older ones
    safely, then delete the layers no remaining manifest names.

    Kept whatever ``keep`` says: every version after the latest published one
    (a pending or in-flight night) and its base (what its rerun links
    against), every stash (``.published-ds=<d>``) and its base, the layers any
    kept manifest names (a kept version's layers may have been written by
    removed versions), and unreferenced layers younger than ``grace_seconds``
    (a writer writes its layers before its manifest). Format-1 versions are removed as
    folders like the others. Returns {"removed_versions": [...],
    "removed_layers": n, "freed_bytes": n}.

    Nothing is removed when any manifest under ``registry`` is unreadable (for
    example truncated): the layers it names could not be told apart from
    unused ones.

    Raises:
        ValueError: ``keep`` < 1, or ``grace_seconds`` negative or not a number.
        RegistryError: a manifest is unreadable or malformed (nothing removed).
    """
    if keep < 1:
        raise ValueError(f"keep must be at least 1 published version, got {keep}")
    if not grace_seconds >= 0:  # also refuses nan, which would compare as "old enough" for every layer
        raise ValueError(f"grace_seconds must be 0 or more, got {grace_seconds}")
    root = Path(registry)
    if not root.is_dir():
        return {"removed_versions": [], "removed_layers": 0, "freed_bytes": 0}
    bad = []
    for m in _manifests(root):
        try:
            load_manifest(m)
        except RegistryError as exc:
            bad.append(str(exc))
    if bad:
        raise RegistryError("retention refused, nothing removed: the layers an unreadable manifest names cannot "
                            "be told apart from unused ones; repair or remove it, then prune again: "
                            + "; ".join(bad))
    now = time.time() if now is None else now
    vs = versions(root)
    published = [v for v in vs if is_published(root, v)]
    kept = set(published[-keep:])
    latest = published[-1] if published else None
    kept |= {v for v in vs if latest is None or v > latest}

    def base_of(folder: Path):
        return load_manifest(folder / COMPLETE).get("base_ds") if (folder / COMPLETE).is_file() else None

    pending = {v for v in vs if latest is None or v > latest}
    stashed = {st.name.split("=", 1)[1] for st in root.glob(".published-ds=*")}
    kept |= stashed
    # what a pending night or a stash may still be linked against again (a rerun relinks on its base)
    for b in [base_of(version_dir(root, v)) for v in pending] + [base_of(stash_dir(root, v)) for v in stashed]:
        if b:
            kept.add(b)
    removed = []
    freed = 0
    for v in vs:
        if v in kept:
            continue
        d = version_dir(root, v)
        trash = root / f".trash-ds={v}-{os.getpid()}"
        os.rename(d, trash)  # one rename: the version disappears whole
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(v)
    for rej in root.glob(".rejected-ds=*"):
        if rej.name.split("=", 1)[1] not in kept:
            shutil.rmtree(rej, ignore_errors=True)
    named: dict[str, set] = {}
    for m in _manifests(root):
        c = load_manifest(m)  # checked above; a manifest written since then is checked here
        for part, ids in (c.get("layers") or {}).items():
            named.setdefault(part, set()).update(ids)
        for part, lid in (c.get("own") or {}).items():
            named.setdefault(part, set()).add(lid)
    n_layers = 0
    lay_root = root / LAYERS
    if lay_root.is_dir():
        for part_dir in lay_root.iterdir():
            for lay in part_dir.iterdir() if part_dir.is_dir() else []:
                if lay.name in named.get(part_dir.name, set()):
                    continue
                if now - lay.stat().st_mtime < grace_seconds:
                    continue
                freed += sum(f.stat().st_size for f in lay.rglob("*") if f.is_file())
                shutil.rmtree(lay, ignore_errors=True)
                n_layers += 1
    result = {"removed_versions": removed, "removed_layers": n_layers, "freed_bytes": freed}
    reporter("registry").say("registry: retention", {"keep": keep, "kept_versions": len(kept & set(vs)),
                                                     **{k: (len(v) if isinstance(v, list) else v)
                                                        for k, v in result.items()}})
    return result


def rollback(registry, to: str, reason: str | None = None) -> list[str]:
    """Roll the registry back to published version ``to``: every published
    version after it gets ``_REJECTED.json`` (``{ds, reason}``) in place of
    ``_PUBLISHED.json``, so the next night links against ``to``. The Airflow
    publish task then finds the database holding another version than the
    night's base and publishes the whole version. Returns the dates rolled back.

    Raises:
        RegistryError: ``to`` is not a published, complete version (removed by
            retention, never published, or not there).
    """
    root = Path(registry)
    if not is_published(root, to):
        kept = [v for v in versions(root) if is_published(root, v)]
        raise RegistryError(f"cannot roll back to {to}: it is not a published version of {root} "
                            f"(published versions kept: {', '.join(kept) or 'none'})")
    later = [v for v in versions(root) if v > to and is_published(root, v)]
    why = reason or f"rolled back to {to}"
    for v in reversed(later):
        d = version_dir(root, v)
        _write_json(d / REJECTED, {"ds": v, "reason": why})
        (d / PUBLISHED).unlink(missing_ok=True)
    log.info("registry rolled back to %s: %s marked rejected", to, ", ".join(later) or "nothing")
    return later


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
        write_version(registry, publish_as_version, base, res.members, res.entities, res.changes,
                      base.frequencies, complete, frequencies_full=True)
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
    cp = sub.add_parser("compact", help="rewrite a version as one layer per part (same content)")
    cp.add_argument("--registry", required=True, help="registry root (lake/entities)")
    cp.add_argument("--ds", required=True, help="version to compact (YYYY-MM-DD)")
    pr = sub.add_parser("prune", help="keep the last K published versions; delete what no version needs")
    pr.add_argument("--registry", required=True, help="registry root (lake/entities)")
    pr.add_argument("--keep", type=int, default=KEEP_VERSIONS, help=f"published versions kept (default {KEEP_VERSIONS})")
    pr.add_argument("--grace-seconds", type=float, default=LAYER_GRACE_SECONDS,
                    help="leave unreferenced layers younger than this (a night being written)")
    rl = sub.add_parser("rollback", help="make a retained published version the one the next night links against")
    rl.add_argument("--registry", required=True, help="registry root (lake/entities)")
    rl.add_argument("--to", required=True, help="the published version to return to (YYYY-MM-DD)")
    rl.add_argument("--reason", default=None, help="recorded in the later versions' _REJECTED.json")
    a = ap.parse_args(argv)
    from .config import ProfileError
    from .spark import get_spark

    ds_arg = a.to if a.cmd == "rollback" else getattr(a, "ds", None)
    if ds_arg is not None and not DS_PATTERN.match(ds_arg):
        print(f"error: {'--to' if a.cmd == 'rollback' else '--ds'} must be YYYY-MM-DD, got {ds_arg!r}",
              file=sys.stderr)
        return 2
    if not Path(a.registry).is_dir():
        # a mistyped path would otherwise "prune" nothing and exit 0, or start Spark before failing
        print(f"error: --registry {a.registry}: no such folder", file=sys.stderr)
        return 2
    if a.cmd in ("compact", "rebuild") and not (version_dir(a.registry, a.ds) / COMPLETE).is_file():
        print(f"error: registry version {version_dir(a.registry, a.ds)} is missing or incomplete (no {COMPLETE})",
              file=sys.stderr)
        return 2
    try:
        if a.cmd == "prune":
            print(json.dumps(prune(a.registry, a.keep, a.grace_seconds), indent=2))
            return 0
        if a.cmd == "rollback":
            later = rollback(a.registry, a.to, a.reason)
            print(json.dumps({"rolled_back_to": a.to, "rejected": later}, indent=2))
            return 0
    except (RegistryError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = get_spark("hdwm-rebuild", {"spark.ui.enabled": "false",
                                       "spark.driver.memory": os.environ.get("HDWM_DRIVER_MEMORY", "4g")})
    spark.sparkContext.setLogLevel("WARN")
    try:
        if a.cmd == "compact":
            report = compact(spark, a.registry, a.ds)
        else:
            report = rebuild(spark, a.registry, a.ds, a.out, a.profile, a.decisions, a.publish_as_version,
                             a.checkpoint_dir)
    except (RegistryError, RegistryOrderError, ProfileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
