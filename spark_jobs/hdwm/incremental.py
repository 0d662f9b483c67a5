"""Incremental HDWM: link one night against the entity registry.

``link_night`` takes the base registry version (``hdwm.registry``) and the
night's references and returns the next version:

1. The night is tokenised (``hdwm.tokenizer.tokenize``, the profile's rules).
   Token frequencies = the base version's raw counts + the night's raw counts
   (a reference sent again replaces its old text: its old counts are
   subtracted). Nothing is recounted from history. N = references after the night.
2. Candidate neighbourhood: registry references that share a blocking key with
   a night reference. Blocking tokens follow the engine's rule on the combined
   frequencies and the profile made effective for N (``hdwm.blocking.blocking_tokens``:
   ``2 ≤ freq ≤ beta``, minimum length, numeric rule). ``neighbourhood="block_key"``
   uses the engine's block keys – with ``blockByPairs`` a sorted pair
   of blocking tokens – so exactly the registry references that could land in a
   block with a night reference are candidates; ``neighbourhood="token"`` takes
   any shared blocking token (a superset; measured in docs/registry.md).
   With the engine's ``rareTokenBlocks`` a single rare token is a block key
   too, and on large nights that brings nearly the whole registry in
   (measured: docs/registry.md), so a night would cost as much as the
   history; ``neighbourhood="pair_key"`` leaves those keys out:
   a night reference and a registry reference are candidates when they share
   a pair of blocking tokens (within the night the engine still blocks on rare
   tokens alone). The default profile's rule is ``scored``
   (``scored_candidates``): of the entities a night reference shares a key
   with, the ``registryScoredPool`` best by key weight are scored by the
   comparator and the ``registryTopEntities`` best at or above ``mu`` kept, so
   the entities pulled in are bounded by the night (docs/registry.md).
   Every rule reads the registry's tokens from the base version's stored
   ``tokens/`` (``registry_tokens``; tokenised from the texts only when the
   version has none under the night's tokeniser fingerprint) and cuts them
   once, in one Arrow pass, to the night's blocking tokens and the tokens of
   its frequent-pair keys (``_shared_token_inputs``): the registry rows a night
   reads are those of its own tokens, and the candidates are the same as
   from the whole history's rows (docs/registry.md).
   With ``registryCorrectedTokens`` (default) every rule works on the tokens
   the engine blocks on: the population's correction map (DWM25 global
   correction over registry + night counts) is computed once, corrects the
   night's tokens and the registry rows as they are read, and is handed to
   the engine so that it is not computed twice.
   Then every member of the entities the candidates belong to joins them
   (an entity above ``big_entity_warn`` members is logged as a warning), plus
   the entities named by human decisions the night could affect.
3. The same engine (``hdwm.pipeline.run_linkage``, same profile) links night +
   neighbourhood; when the engine accepts ``frequencies=``/``reference_count=``
   (and ``must_link=``/``cannot_link=``) they are passed, so it scores with the
   population's frequencies. Untouched entities are carried over unchanged.
4. The profile's split policy (``registrySplits``, ``apply_split_policy``;
   default: a neighbourhood entity cut into parts none of which joins a night
   reference or another entity is put back together), then human decisions are
   enforced again (``enforce_decisions``), so they hold whatever the engine did.
5. Entity ids (``assign_ids``): for each new cluster, the old entity ids of its
   members decide – none: a minted id (``new``); one: that id (``grow`` when it
   gained members; no change row when identical); several: a ``merge``, the
   oldest id survives (smallest ``first_seen_ds``, then smallest id). An old
   entity whose members now sit in several clusters is ``split``: its largest
   part keeps the id (ties: the part holding the smallest ref_key); the other
   parts get minted ids. Change rows: see ``assign_ids``; and ``update`` for
   an entity whose members are unchanged but whose golden record changed (a
   member sent again with other values), so every change of a published
   ``entities`` row has a change row.

All work is Spark DataFrames; only decision-sized data (the human decisions
and the references they name) reaches the driver.
"""

from __future__ import annotations

import inspect
import typing
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from .blocking import blocking_tokens
from .config import LinkageProfile, load_profile
from .frequency import apply_corrections, corrected_frequencies, correction_map, token_frequencies
from .progress import reporter
from .spark import freeze as _freeze
from .registry import (
    SOURCE_PATTERN,
    RegistryVersion,
    golden_records,
    mint_id_col,
    ref_key_col,
)
from .tokenizer import tokenize, tokens_fingerprint

log = logging.getLogger("hdwm.incremental")

#: an entity with more members than this entering the neighbourhood is logged
BIG_ENTITY_WARN = 2000
#: ``ranked`` neighbourhood: registry entities kept per night reference when no profile says
#: (``LinkageProfile.registryTopEntities``' default; see ``ranked_candidates``)
TOP_ENTITIES = LinkageProfile.model_fields["registryTopEntities"].default
#: the neighbourhood rules: the values the profile's ``registryNeighbourhood`` accepts
NEIGHBOURHOODS = typing.get_args(LinkageProfile.model_fields["registryNeighbourhood"].annotation)
#: a night against the empty registry is linked alone (``link_night``'s ``first``), without the registry
#: look-ups of the general path; tests turn it off to compare the two
FIRST_NIGHT_ALONE = True
DECISIONS_COLUMNS = ["source_a", "record_id_a", "source_b", "record_id_b", "decision", "decided_by",
                     "decided_at", "note"]


def _say(msg: str, counts: dict | None = None, stage_seconds: float | None = None) -> None:
    """One progress line (``hdwm.progress``): ``[incremental] ...``, or inside
    the link job ``[link] ...`` with its seconds since start."""
    reporter("incremental").say(msg, counts, stage_seconds=stage_seconds)


# ---------------------------------------------------------------- engine glue

def entities_of(base_mem: DataFrame, keys: DataFrame) -> DataFrame:
    """(``ref_key``, ``entity_id``) of the registry members whose ``ref_key`` is in
    ``keys`` (a DataFrame with a ``ref_key`` column, night-sized).

    The keys are broadcast, so the registry's members are only scanned and
    filtered, never shuffled: a join of a night-sized frame with every member
    costs a shuffle of the whole history (measured in docs/registry.md,
    "What a night costs"). Materialised, since callers read it more than once.
    """
    return _freeze(base_mem.select("ref_key", "entity_id")
                   .join(F.broadcast(keys.select("ref_key").distinct()), "ref_key", "left_semi"))


def frequencies_for(freq: DataFrame, tokens: DataFrame, col: str = "tokens") -> DataFrame:
    """The rows of ``freq`` (``token``, ``freq``) whose token occurs in ``tokens``'
    array column ``col``: what a join of those token lists with the whole
    frequency table reads, without shuffling the whole vocabulary (the
    distinct tokens are broadcast). Joins on ``token`` with it give the same
    rows as with ``freq``."""
    wanted = tokens.select(F.explode(col).alias("token")).distinct()
    return freq.join(F.broadcast(wanted), "token", "left_semi")


def subset_frequencies(freq: DataFrame, cmap: DataFrame | None, night_tok: DataFrame, neigh_tok: DataFrame,
                       eff: LinkageProfile) -> tuple[DataFrame, DataFrame | None]:
    """The population's raw counts and correction map cut to what the engine
    reads when it links the night and its neighbourhood: the same clusters as
    with the whole tables, at the cost of the subset's vocabulary.

    The engine (``hdwm.pipeline.link_references`` with ``frequencies=`` and
    ``correction=``) reads the counts only by joining its references' tokens
    with them, and corrects those tokens and moves the raw counts of every
    corrected token to its replacement (DWM25). So it needs: the rows of the
    map for its tokens (``token`` in T), the rows that correct into a token it
    will hold (``replacement`` among T and those replacements: a misspelling
    elsewhere in the population adds to SMITH's corrected count), and the raw
    counts of all of those tokens. Without a map (``runGlobalCorrection`` off,
    or ``registryCorrectedTokens`` off so the engine builds its own map from
    the counts, which needs every rare token) the counts are cut to T only
    when no correction runs, else returned whole.

    Args:
        freq: (``token``, ``freq``) raw population counts after the night.
        cmap: (``token``, ``replacement``) ``correction_map(freq)`` or None.
        night_tok: (``record_id``, ``tokens``) the night's raw tokens.
        neigh_tok: (``record_id`` = ref_key, ``tokens``) the raw tokens of the
            neighbourhood members linked with the night: tokenised from their
            texts by the caller (a few thousand references), which gives the
            stored tokens of the same profile without scanning every stored list.
    Returns: (counts, map) cut to the subset; the engine's figures of distinct
    and corrected tokens then count the subset's vocabulary.
    """
    if cmap is None and eff.runGlobalCorrection:
        return freq, cmap
    raw = _freeze(night_tok.select(F.explode("tokens").alias("token"))
                  .unionByName(neigh_tok.select(F.explode("tokens").alias("token"))).distinct())
    if cmap is None:
        return _freeze(freq.join(F.broadcast(raw), "token", "left_semi")), None
    applied = cmap.join(F.broadcast(raw), "token", "left_semi")
    held = raw.unionByName(applied.select(F.col("replacement").alias("token"))).distinct()
    into = cmap.join(F.broadcast(held.withColumnRenamed("token", "replacement")), "replacement", "left_semi")
    sub_cmap = _freeze(applied.unionByName(into).distinct())
    wanted = held.unionByName(sub_cmap.select("token")).distinct()
    return _freeze(freq.join(F.broadcast(wanted), "token", "left_semi")), sub_cmap


def raw_frequencies(refs: DataFrame, profile: LinkageProfile) -> DataFrame:
    """(``ref_key``, ``text``) → (``token``, ``freq`` long) raw token counts
    (tokeniser output, before global correction): ``hdwm.frequency.raw_frequencies``
    when the engine provides it, else tokenise + count here (the same thing)."""
    from . import frequency

    r = refs.select(F.col("ref_key").alias("record_id"), "text")
    if hasattr(frequency, "raw_frequencies"):
        return frequency.raw_frequencies(r, profile).select("token", F.col("freq").cast("long"))
    return token_frequencies(tokenize(r, profile)).select("token", F.col("freq").cast("long"))


def engine_supports(name: str) -> bool:
    """Whether ``hdwm.pipeline.run_linkage`` has keyword ``name``."""
    from .pipeline import run_linkage

    return name in inspect.signature(run_linkage).parameters


def engine_link(spark: SparkSession, refs: DataFrame, profile: LinkageProfile, frequencies: DataFrame | None,
                reference_count: int | None, must: DataFrame | None, cannot: DataFrame | None,
                checkpoint_dir: str | None, correction: DataFrame | None = None) -> tuple[DataFrame, dict, DataFrame]:
    """Run the engine on ``refs`` (``ref_key``, ``text``[, ``truth_entity``]).

    Passes ``frequencies``/``reference_count``/``must_link``/``cannot_link``
    (and ``correction``, the correction map of ``frequencies``, when given)
    to ``hdwm.pipeline.link_references`` (decision pairs restricted to keys in
    ``refs``). Returns (DataFrame(``ref_key``, ``cluster``, ``iteration``,
    ``mu``, ``quality``), engine metrics, the why-linked pairs
    (``hdwm.pipeline.PAIRS_SCHEMA``, ids are ref_keys)).
    """
    from .pipeline import link_references

    er = refs.withColumnRenamed("ref_key", "record_id")
    kw = {}
    if frequencies is not None and engine_supports("frequencies"):
        kw["frequencies"] = frequencies
        kw["reference_count"] = int(reference_count) if reference_count is not None else None
        if correction is not None and engine_supports("correction"):
            kw["correction"] = correction
    keys = refs.select(F.col("ref_key").alias("k"))
    for name, pairs in (("must_link", must), ("cannot_link", cannot)):
        if pairs is not None and engine_supports(name):
            kw[name] = (pairs.join(keys.withColumnRenamed("k", "id1"), "id1", "left_semi")
                        .join(keys.withColumnRenamed("k", "id2"), "id2", "left_semi").select("id1", "id2"))
    _say(f"engine kwargs: {sorted(kw) or 'none (engine without incremental kwargs: frequencies of this input)'}")
    res = link_references(spark, er, profile, checkpoint_dir, **kw)
    out = res.links.select(F.col("record_id").alias("ref_key"), F.col("cluster_id").alias("cluster"),
                           "iteration", "mu", "quality")
    return out, res.metrics, res.pairs


def apply_split_policy(clusters: DataFrame, old: DataFrame, policy: str) -> tuple[DataFrame, int]:
    """The profile's ``registrySplits`` on a night's clustering: ``engine`` –
    as it is; ``night_evidence`` – ``keep_unevidenced_splits_whole``; ``never`` –
    ``keep_entities_whole``. Returns (clusters, entities whose split was undone).

    Raises:
        ValueError: an unknown policy.
    """
    if policy == "engine":
        return clusters, 0
    if policy == "night_evidence":
        return keep_unevidenced_splits_whole(clusters, old)
    if policy == "never":
        return keep_entities_whole(clusters, old)
    raise ValueError(f"registrySplits must be engine, night_evidence or never, got {policy!r}")


def keep_entities_whole(clusters: DataFrame, old: DataFrame) -> tuple[DataFrame, int]:
    """No night splits a registry entity: the clusters that hold members of one
    old entity are joined into one (transitively: connected components over
    clusters linked by shared old entities, ``hdwm.closure.connected_components``;
    the label is the smallest cluster label), together with the night references
    they took. Merges of entities and new references joining stay as the engine
    made them. Arguments and result as ``keep_unevidenced_splits_whole``."""
    from .closure import connected_components

    lab = clusters.select("ref_key", "cluster").join(old, "ref_key")
    cut = _freeze(lab.groupBy("entity_id").agg(F.countDistinct("cluster").alias("parts")).filter("parts > 1")
                  .select("entity_id"))
    n = cut.count()
    if not n:
        return clusters, 0
    edges = (lab.join(cut, "entity_id", "left_semi")
             .select(F.concat(F.lit("c:"), "cluster").alias("a"), F.concat(F.lit("e:"), "entity_id").alias("b"))
             .distinct())
    comps, _ = connected_components(edges, "a", "b")
    to = (comps.filter(F.col("record_id").startswith("c:"))
          .select(F.expr("substring(record_id, 3)").alias("cluster"), F.expr("substring(component, 3)").alias("_to"))
          .filter(F.col("cluster") != F.col("_to")))
    out = clusters.join(F.broadcast(to), "cluster", "left").withColumn(
        "cluster", F.coalesce("_to", "cluster")).drop("_to")
    return out.select(*clusters.columns), n


def keep_unevidenced_splits_whole(clusters: DataFrame, old: DataFrame) -> tuple[DataFrame, int]:
    """Undo the splits of registry entities that no night evidence touched.

    The night relinks its neighbourhood's entities with the night. When the
    engine puts an old entity's members into several clusters and none of those
    clusters holds a night reference or a member of another entity, nothing the
    night brought is involved: the cut comes from relinking the same members in
    another context (other neighbours, frequencies grown by the night), not from
    evidence. Such an entity is put back together (its members take the
    smallest of their cluster labels); a split in which a part joins a night
    reference or another entity stands (the registry's contract: an entity the
    night's evidence splits is split; entities already in the registry are not
    re-linked from scratch every night). Human cannot-links are enforced afterwards
    (``enforce_decisions``), so they still split.

    Args:
        clusters: (``ref_key``, ``cluster``, ...) one row per linked reference.
        old: (``ref_key``, ``entity_id``) the registry members among them (the
            neighbourhood); a key absent here is a night reference.

    Returns: (``clusters`` relabelled, other columns kept; the number of
    entities kept whole).
    """
    lab = clusters.select("ref_key", "cluster").join(old, "ref_key", "left")
    per_cluster = lab.groupBy("cluster").agg(
        F.sum(F.when(F.col("entity_id").isNull(), 1).otherwise(0)).alias("night_refs"),
        F.countDistinct("entity_id").alias("entities"))
    pure = per_cluster.filter((F.col("night_refs") == 0) & (F.col("entities") == 1)).select("cluster")
    pieces = (lab.filter(F.col("entity_id").isNotNull())
              .join(pure.withColumn("pure", F.lit(True)), "cluster", "left")
              .groupBy("entity_id")
              .agg(F.countDistinct("cluster").alias("parts"), F.min("cluster").alias("to"),
                   F.min(F.coalesce("pure", F.lit(False)).cast("int")).alias("all_pure")))
    whole = _freeze(pieces.filter((F.col("parts") > 1) & (F.col("all_pure") == 1)).select("entity_id", "to"))
    n = whole.count()
    if not n:
        return clusters, 0
    moves = old.join(whole, "entity_id").select("ref_key", F.col("to").alias("_to"))
    out = (clusters.join(moves, "ref_key", "left")
           .withColumn("cluster", F.coalesce("_to", "cluster")).drop("_to"))
    return out, n


def bounded_members(neigh: DataFrame, keep: DataFrame, limit: int) -> tuple[DataFrame, DataFrame]:
    """Cut each neighbourhood entity to the members a night relinks (``registryEntityMembers``).

    Per entity: every member in ``keep`` (the members the neighbourhood rule
    found for a night reference, and those named by human decisions), then
    the most recently seen (``first_seen_ds`` descending, then ``ref_key``)
    until ``limit`` members in all. The rest are followers: they are not
    relinked and take their entity's main part afterwards (``follow_entities``).

    Args:
        neigh: neighbourhood members (``ref_key``, ``entity_id``, ``first_seen_ds``, ...).
        keep: (``ref_key``) members that are always relinked.
        limit: members per entity (≥ 1).

    Returns: (relinked members – ``neigh``'s rows and columns –, followers (``ref_key``, ``entity_id``)).

    Raises:
        ValueError: ``limit < 1``.
    """
    if limit < 1:
        raise ValueError(f"registryEntityMembers must be at least 1 to bound an entity, got {limit}")
    flagged = neigh.join(keep.distinct().select("ref_key", F.lit(1).alias("_keep")), "ref_key", "left").withColumn(
        "_keep", F.coalesce("_keep", F.lit(0)))
    w = Window.partitionBy("entity_id").orderBy(F.desc("_keep"), F.desc("first_seen_ds"), F.asc("ref_key"))
    ranked = flagged.withColumn("_rank", F.row_number().over(w))
    relinked = (F.col("_keep") == 1) | (F.col("_rank") <= limit)
    return (ranked.filter(relinked).select(*neigh.columns),
            ranked.filter(~relinked).select("ref_key", "entity_id"))


def follow_entities(clusters: DataFrame, relinked: DataFrame, followers: DataFrame) -> DataFrame:
    """Put the members a night did not relink into their entity's main part.

    An entity's main part is the cluster holding the most of its relinked
    members (ties: the smallest cluster label); every follower of the entity
    joins it, so an entity grows, merges or splits as its relinked members did
    and a split leaves the followers with the larger part – the part that
    keeps the entity's id (``assign_ids``).

    Args:
        clusters: (``ref_key``, ``cluster``, ``iteration``, ``mu``, ``quality``) the engine's clusters.
        relinked: (``ref_key``, ``entity_id``) the neighbourhood members that were relinked.
        followers: (``ref_key``, ``entity_id``) the members that were not.

    Returns: ``clusters`` plus one row per follower (``iteration``, ``mu``, ``quality`` null).
    """
    parts = (clusters.select("ref_key", "cluster").join(relinked, "ref_key")
             .groupBy("entity_id", "cluster").agg(F.count(F.lit(1)).alias("n")))
    w = Window.partitionBy("entity_id").orderBy(F.desc("n"), F.asc("cluster"))
    main = parts.withColumn("_r", F.row_number().over(w)).filter("_r = 1").select("entity_id", "cluster")
    joined = followers.join(main, "entity_id").select(
        "ref_key", "cluster", *[F.lit(None).cast(t).alias(c) for c, t in
                                (("iteration", "int"), ("mu", "double"), ("quality", "double"))])
    cols = clusters.columns
    return clusters.unionByName(joined.select(*[F.col(c).cast(clusters.schema[c].dataType) for c in cols]))


def _decision_keys(spark: SparkSession, must: DataFrame | None, cannot: DataFrame | None) -> list[str]:
    """The ref_keys named by human decisions (decision-sized: collected)."""
    keys: set[str] = set()
    for d in (must, cannot):
        if d is not None:
            keys |= {k for r in d.collect() for k in (r.id1, r.id2)}
    return sorted(keys)


# ---------------------------------------------------------------- human decisions

class DecisionsError(ValueError):
    """The decisions file is unreadable, malformed or contradicts itself."""


def _decided_at(path, value: str):
    """``decided_at`` as an aware UTC datetime for "the latest decision wins"
    (empty: the earliest possible, so any dated row of the pair wins over it).

    ISO 8601 only (``YYYY-MM-DD``, optionally ``THH:MM[:SS[.f]]`` and ``Z`` or an
    offset; a time without an offset is UTC), as the review page exports it:
    compared as text, ``2025-1-9`` came after ``2025-01-10`` and a spreadsheet's
    ``09/01/2025`` has no unambiguous reading at all (found by an adversarial test run, 174f1cb).

    Raises:
        DecisionsError: a value that is not such a date.
    """
    from datetime import datetime, timezone

    v = (value or "").strip()
    if not v:
        return datetime.min.replace(tzinfo=timezone.utc)
    try:
        t = datetime.fromisoformat(v[:-1] + "+00:00" if v.endswith(("Z", "z")) else v)
    except ValueError:
        t = None
    if t is None or not (len(v) >= 10 and v[4] == "-" and v[7] == "-"):
        raise DecisionsError(f"decisions file {path}: decided_at {value!r} is not an ISO 8601 date or timestamp "
                             f"(YYYY-MM-DD, optionally THH:MM[:SS] and Z or an offset)")
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _check_field_counts(p: Path) -> None:
    """Every record of ``p`` has as many fields as its header (blank lines aside).

    Raises:
        DecisionsError: an empty file (not even a header), a header naming a
            column twice (pandas would read the second as ``decision.1`` and
            use the first silently), or naming the first record (by its first line) with another
            count – an unquoted comma in ``note``, say. Without this check pandas
            takes the extra leading field of such rows as the row index and every
            column shifts by one (a wrong decision read, or a crash).
        UnicodeDecodeError / csv.Error: bytes or quoting that no CSV reader takes
            (the caller reports them as an unreadable CSV).
    """
    import csv

    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise DecisionsError(f"decisions file {p} is empty: it needs at least the header "
                                 f"{','.join(DECISIONS_COLUMNS)} (a header alone means no decisions)")
        seen = [c.strip() for c in header]
        twice = sorted({c for c in seen if seen.count(c) > 1})
        if twice:
            raise DecisionsError(f"decisions file {p}: column(s) {twice} appear more than once in the header")
        start = reader.line_num + 1
        for row in reader:
            if row and len(row) != len(header):
                raise DecisionsError(f"{p}:{start}: {len(row)} fields, the header has {len(header)} "
                                     f"(quote a value that holds a comma)")
            start = reader.line_num + 1


def read_decisions(spark: SparkSession, path: str | None, pairs=None) -> tuple[DataFrame | None, DataFrame | None]:
    """Read ``decisions.csv`` → (must_link, cannot_link) DataFrames(``id1``, ``id2``)
    of ref_keys with ``id1 < id2`` (None when absent or without such rows): the
    pairs of :func:`decision_pairs` as Spark DataFrames. ``pairs``: what
    :func:`decision_pairs` already returned for ``path`` (the file is not read again).

    Raises:
        DecisionsError: as :func:`decision_pairs`.
    """
    must, cannot = pairs if pairs is not None else decision_pairs(path)
    mk = lambda pdf: spark.createDataFrame(pdf, "id1 string, id2 string") if pdf is not None and len(pdf) else None  # noqa: E731
    return mk(must), mk(cannot)


def decision_pairs(path: str | None):
    """Read and check ``decisions.csv`` without Spark → (must_link, cannot_link)
    pandas DataFrames (``id1``, ``id2``) of ref_keys with ``id1 < id2``, or
    ``(None, None)`` when ``path`` is None or the file has no decision rows.
    The link job calls it before Spark starts, so a bad file is refused at once.

    Columns: ``source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note``;
    ``decision`` is ``must_link`` or ``cannot_link``. The latest row
    (``decided_at`` as an ISO 8601 date or timestamp, ``_decided_at``; then file
    order) for a pair wins, so a decision can be revised.

    Raises:
        DecisionsError: an empty file, a header with a repeated column,
            a record with another number of fields than the header,
            a ``decided_at`` that is not ISO 8601,
            missing columns, an unknown decision, a bad source name,
            an empty id, or a cannot-link pair whose references are joined by
            must-link decisions (a contradiction).
    """
    import pandas as pd

    if not path:
        return None, None
    p = Path(path)
    if not p.is_file():
        raise DecisionsError(f"decisions file {path} does not exist")
    try:
        _check_field_counts(p)
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except DecisionsError:
        raise
    except Exception as exc:  # pandas raises several parser errors
        raise DecisionsError(f"decisions file {path} is not a readable CSV: {exc}") from exc
    missing = [c for c in DECISIONS_COLUMNS[:5] if c not in df.columns]
    if missing:
        raise DecisionsError(f"decisions file {path} lacks columns {missing}")
    if df.empty:
        return None, None
    df = df.copy()
    for c in ("source_a", "record_id_a", "source_b", "record_id_b", "decision"):
        df[c] = df[c].str.strip()
    for i, r in df.iterrows():
        line = i + 2
        if r["decision"] not in ("must_link", "cannot_link"):
            raise DecisionsError(f"{path}:{line}: decision must be must_link or cannot_link, got {r['decision']!r}")
        for s in (r["source_a"], r["source_b"]):
            if not SOURCE_PATTERN.match(s):
                raise DecisionsError(f"{path}:{line}: source name {s!r} is not [A-Za-z0-9_-]+")
        if not r["record_id_a"] or not r["record_id_b"]:
            raise DecisionsError(f"{path}:{line}: empty record id")
    ka = df["source_a"] + "|" + df["record_id_a"]
    kb = df["source_b"] + "|" + df["record_id_b"]
    df["id1"] = [min(a, b) for a, b in zip(ka, kb)]
    df["id2"] = [max(a, b) for a, b in zip(ka, kb)]
    df = df[df["id1"] != df["id2"]]
    df["_order"] = range(len(df))
    df["_at"] = [_decided_at(path, v) for v in (df["decided_at"] if "decided_at" in df.columns else [""] * len(df))]
    df = df.sort_values(["_at", "_order"]).drop_duplicates(["id1", "id2"], keep="last")
    must = df[df["decision"] == "must_link"][["id1", "id2"]]
    cannot = df[df["decision"] == "cannot_link"][["id1", "id2"]]
    groups = _union_find(list(must.itertuples(index=False, name=None)))
    for a, b in cannot.itertuples(index=False, name=None):
        if a in groups and b in groups and groups[a] == groups[b]:
            raise DecisionsError(f"{path}: cannot_link {a} / {b} contradicts must_link decisions joining them")
    return must.reset_index(drop=True), cannot.reset_index(drop=True)


def _union_find(pairs) -> dict[str, str]:
    """key → smallest key of its connected component over ``pairs``."""
    parent: dict[str, str] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = min(ra, rb), max(ra, rb)
            parent[hi] = lo
    return {k: find(k) for k in list(parent)}


def enforce_decisions(clusters: DataFrame, must: DataFrame | None, cannot: DataFrame | None) -> DataFrame:
    """Make human decisions hold on a clustering (fallback after the engine).

    Args:
        clusters: (``ref_key``, ``cluster``, ...) one row per reference.
        must / cannot: (``id1``, ``id2``) ref_key pairs (pairs naming an absent key are ignored).

    Rules: must-link merges the two clusters (the merged cluster is labelled
    by the smallest of their labels). Then for every cannot-link pair still in
    one cluster (pairs sorted), the must-link group of the larger key (itself
    when it has no must-link) leaves the cluster as a new cluster labelled
    ``~<smallest key of the group>``. Only the references named by decisions
    reach the driver.

    Returns: ``clusters`` with ``cluster`` relabelled (other columns kept).
    """
    if must is None and cannot is None:
        return clusters
    spark = clusters.sparkSession
    lab = clusters.select("ref_key", "cluster")
    must_pairs = [] if must is None else [(r.id1, r.id2) for r in must.collect()]
    cannot_pairs = [] if cannot is None else sorted((r.id1, r.id2) for r in cannot.collect())
    keys = sorted({k for p in must_pairs + cannot_pairs for k in p})
    if not keys:
        return clusters
    kdf = spark.createDataFrame([(k,) for k in keys], "ref_key string")
    where = {r.ref_key: r.cluster for r in lab.join(kdf, "ref_key", "left_semi").collect()}
    absent = sorted(k for k in keys if k not in where)
    if absent:
        n_pairs = sum(1 for p in must_pairs + cannot_pairs if p[0] not in where or p[1] not in where)
        _say(f"{n_pairs} decision pair(s) name {len(absent)} reference(s) not linked yet "
             f"(e.g. {absent[0]}); they take effect on the night those references arrive")
    must_pairs = [(a, b) for a, b in must_pairs if a in where and b in where]
    # 1. must-link: union the clusters
    croot = _union_find([(where[a], where[b]) for a, b in must_pairs if where[a] != where[b]])
    relabel = {c: r for c, r in croot.items() if c != r}
    out = clusters
    if relabel:
        m = spark.createDataFrame(list(relabel.items()), "cluster string, _to string")
        out = out.join(F.broadcast(m), "cluster", "left").withColumn(
            "cluster", F.coalesce("_to", "cluster")).drop("_to")
        where = {k: relabel.get(c, c) for k, c in where.items()}
    # 2. cannot-link: detach the must-link group of the larger key
    groups = _union_find(must_pairs)
    members: dict[str, list[str]] = {}
    for k, g in groups.items():
        members.setdefault(g, []).append(k)
    moved: dict[str, str] = {}
    for a, b in cannot_pairs:
        if a not in where or b not in where or where[a] != where[b]:
            continue
        unit = sorted(k for k in members.get(groups.get(b, b), [b]) if where.get(k) == where[b])
        label = "~" + unit[0]
        for k in unit:
            where[k] = label
            moved[k] = label
    if moved:
        m = spark.createDataFrame(list(moved.items()), "ref_key string, _to string")
        out = out.join(F.broadcast(m), "ref_key", "left").withColumn(
            "cluster", F.coalesce("_to", "cluster")).drop("_to")
    n_v = len(relabel) + len(moved)
    if n_v:
        _say(f"decisions enforced after linking: {len(relabel)} cluster merge(s), {len(moved)} reference(s) detached")
    return out


# ---------------------------------------------------------------- id assignment

def assign_ids(clusters: DataFrame, old: DataFrame, old_entities: DataFrame, ds: str) -> tuple[DataFrame, DataFrame]:
    """Stable entity ids for a new clustering of (a part of) the registry.

    Args:
        clusters: (``ref_key``, ``cluster``): the new clustering, one row per
            reference; it must hold *every* member of every old entity named in ``old``.
        old: (``ref_key``, ``old_id``): the references' entity before (absent = new reference).
        old_entities: (``entity_id``, ``first_seen_ds``, ``member_count``) of those old entities.
        ds: the date that mints new ids.

    Returns:
        ``(ids, summary)``: ids = (``ref_key``, ``entity_id``); summary = one row
        per cluster (``cluster``, ``entity_id``, ``change`` – new|grow|merge|split
        or null for an unchanged entity – ``from_entity_ids`` string, ``member_count`` int).

    Change rules (one row per resulting entity that differs from before):
    ``new`` – no old member; ``merge`` – members of several old entities, the
    oldest surviving, from = all of them; ``split`` – a part of a split entity
    (from = the entity or entities it came from), including the part that kept
    the id; ``grow`` – one old entity, not split, gained references. Merged-away
    ids appear only in ``from_entity_ids``.
    """
    j = clusters.select("ref_key", "cluster").join(old.select("ref_key", "old_id"), "ref_key", "left")
    size = j.groupBy("cluster").agg(F.count(F.lit(1)).cast("int").alias("size"), F.min("ref_key").alias("min_key"))
    parts = (j.filter(F.col("old_id").isNotNull()).groupBy("old_id", "cluster")
             .agg(F.count(F.lit(1)).alias("n"), F.min("ref_key").alias("part_min")))
    w = Window.partitionBy("old_id")
    parts = (parts.withColumn("rank", F.row_number().over(w.orderBy(F.desc("n"), F.asc("part_min"))))
             .withColumn("nparts", F.count(F.lit(1)).over(w)))
    oe = old_entities.select(F.col("entity_id").alias("old_id"), F.col("first_seen_ds").alias("fs"),
                             F.col("member_count").alias("old_count"))
    keep = parts.filter(F.col("rank") == 1).join(oe, "old_id", "left")
    surv = keep.groupBy("cluster").agg(
        F.min(F.struct(F.coalesce("fs", F.lit("9999-99-99")).alias("fs"), "old_id", "nparts", "old_count")).alias("s"))
    contrib = parts.groupBy("cluster").agg(F.array_sort(F.collect_set("old_id")).alias("contrib"))
    cl = size.join(surv, "cluster", "left").join(contrib, "cluster", "left")
    s_id = F.col("s.old_id")
    n_contrib = F.coalesce(F.size("contrib"), F.lit(0))
    change = (F.when(s_id.isNull() & (n_contrib == 0), F.lit("new"))
              .when(s_id.isNull(), F.lit("split"))
              .when(n_contrib > 1, F.lit("merge"))
              .when(F.col("s.nparts") > 1, F.lit("split"))
              .when(F.col("size") != F.col("s.old_count"), F.lit("grow")))
    from_ids = F.when(F.col("change").isin("merge", "split"), F.array_join("contrib", ",")).otherwise(F.lit(""))
    summary = (cl.withColumn("entity_id", F.coalesce(s_id, mint_id_col(ds, "min_key")))
               .withColumn("change", change)
               .withColumn("from_entity_ids", from_ids)
               .select("cluster", "entity_id", "change", "from_entity_ids", F.col("size").alias("member_count")))
    ids = clusters.select("ref_key", "cluster").join(summary.select("cluster", "entity_id"), "cluster").select(
        "ref_key", "entity_id")
    return ids, summary


# ---------------------------------------------------------------- building the next version

@dataclass
class NightResult:
    """The next registry version's frames and the night's links.

    ``members``: the members the night added or changed (``MEMBERS_SCHEMA``);
    ``entities``: the entities it created, changed or removed
    (``ENTITY_LAYER_SCHEMA``: ``removed`` true for an id that no longer exists);
    ``changes``: the night's change rows; ``frequencies``: the night's token
    count deltas (the whole population's with ``frequencies_full``). These are
    the deltas ``hdwm.registry.write_version`` layers on the base.
    ``links``: (``ref_key``, ``entity_id``, ``iteration``, ``mu``, ``quality``,
    ``member_count``) for the night's references (``None`` for a rebuild);
    ``counts``: the ``_COMPLETE.json`` counts."""

    members: DataFrame
    entities: DataFrame
    changes: DataFrame
    frequencies: DataFrame | None
    links: DataFrame | None
    counts: dict
    engine_metrics: dict | None = None
    #: the engine's why-linked pairs of the night + neighbourhood (ref_key ids), see engine_link
    pairs: DataFrame | None = None
    #: every member's tokens for the next version (``source``, ``record_id``, ``tokens``; ``next_tokens``)
    #: and the fingerprint of the tokeniser that made them; None: the version stores no tokens
    tokens: DataFrame | None = None
    tokens_fingerprint: str | None = None
    #: ``frequencies``/``tokens`` hold the whole population rather than the night's delta
    frequencies_full: bool = False
    tokens_full: bool = False


def assign_and_build(spark: SparkSession, base: RegistryVersion, clusters: DataFrame, night: DataFrame | None,
                     ds: str, profile: LinkageProfile) -> NightResult:
    """Given the new clustering of night + neighbourhood (or of everything, for a
    rebuild), assign ids and build members/entities/changes of version ``ds``.

    Args:
        base: the base version.
        clusters: (``ref_key``, ``cluster``) over the linked subset (all members
            of every base entity it touches).
        night: the night (``ref_key``, ``source``, ``record_id``, ``text``,
            ``attributes``) or None (a rebuild: texts come from the base).
    """
    base_mem = base.members.withColumn("ref_key", ref_key_col())
    sub_keys = clusters.select("ref_key")
    # the linked subset's base rows, read once (the keys broadcast: the history is scanned, not shuffled)
    old_sub = _freeze(base_mem.join(F.broadcast(sub_keys), "ref_key", "left_semi"))
    old = old_sub.select("ref_key", F.col("entity_id").alias("old_id"))
    touched = old.select(F.col("old_id").alias("entity_id")).distinct()
    old_entities = base.entities.join(F.broadcast(touched), "entity_id", "left_semi")
    old_entities = _freeze(old_entities)
    ids, summary = assign_ids(clusters, old, old_entities, ds)
    summary = _freeze(summary)
    ids = _freeze(ids)

    # one row per linked reference: night values first, else the base row
    prev = old_sub.select("ref_key", "source", "record_id", "text", "attributes",
                          F.col("entity_id").alias("prev_entity"), F.col("first_seen_ds").alias("prev_first"),
                          F.col("last_changed_ds").alias("prev_changed"))
    rows = ids.join(prev, "ref_key", "left")
    if night is not None:
        nv = night.select("ref_key", F.col("source").alias("n_source"), F.col("record_id").alias("n_record_id"),
                          F.col("text").alias("n_text"), F.col("attributes").alias("n_attributes"),
                          F.lit(True).alias("in_night"))
        rows = rows.join(nv, "ref_key", "left")
    else:
        rows = rows.select("*", *[F.lit(None).cast(t).alias(c) for c, t in (
            ("n_source", "string"), ("n_record_id", "string"), ("n_text", "string"),
            ("n_attributes", "map<string,string>"), ("in_night", "boolean"))])
    in_night = F.coalesce("in_night", F.lit(False))
    changed = in_night | F.col("prev_entity").isNull() | (F.col("prev_entity") != F.col("entity_id"))
    sub_members = _freeze(rows.select(
        F.coalesce("n_source", "source").alias("source"),
        F.coalesce("n_record_id", "record_id").alias("record_id"),
        "entity_id",
        F.coalesce("prev_first", F.lit(ds)).alias("first_seen_ds"),
        F.when(changed, F.lit(ds)).otherwise(F.col("prev_changed")).alias("last_changed_ds"),
        F.when(in_night, F.col("n_text")).otherwise(F.col("text")).alias("text"),
        F.when(in_night, F.col("n_attributes")).otherwise(F.col("attributes")).alias("attributes"),
    ))
    # the night's members layer: only rows that differ from the base
    members = sub_members.filter(F.col("last_changed_ds") == F.lit(ds))

    changed_ids = summary.filter(F.col("change").isNotNull()).select("entity_id", F.lit(True).alias("_chg"))
    # an entity whose members are the same but whose golden record is not (a member sent again with
    # other values): an ``update`` row, so every change to the published ``entities`` is recorded
    ent_new = _freeze(
        sub_members.groupBy("entity_id")
        .agg(F.count(F.lit(1)).cast("int").alias("member_count"), F.min("first_seen_ds").alias("first_seen_ds"))
        .join(changed_ids, "entity_id", "left")
        .join(old_entities.select("entity_id", F.col("last_changed_ds").alias("_prev_lc"),
                                  F.col("golden_record").alias("_prev_gold")), "entity_id", "left")
        .join(golden_records(sub_members), "entity_id", "left")
        .withColumn("_upd", F.col("_chg").isNull() & F.col("_prev_lc").isNotNull()
                    & ~F.col("golden_record").eqNullSafe(F.col("_prev_gold")))
        .withColumn("_is_new", F.col("_prev_lc").isNull())
        .select("entity_id", "member_count", "first_seen_ds",
                F.when(F.col("_chg").isNotNull() | F.col("_prev_lc").isNull() | F.col("_upd"), F.lit(ds))
                .otherwise(F.col("_prev_lc")).alias("last_changed_ds"),
                "golden_record", "_upd", "_is_new"))
    updates = ent_new.filter("_upd").select(F.lit(ds).alias("ds"), "entity_id", F.lit("update").alias("change"),
                                            F.lit("").alias("from_entity_ids"), "member_count")
    # ids the night touched that hold no member any more: merged away, or emptied by a split
    gone = _freeze(old_entities.join(ent_new.select("entity_id"), "entity_id", "left_anti").select(
        "entity_id", F.lit(0).alias("member_count"), "first_seen_ds", F.lit(ds).alias("last_changed_ds"),
        F.lit(None).cast("string").alias("golden_record"), F.lit(True).alias("removed")))
    entities = (ent_new.filter(F.col("last_changed_ds") == F.lit(ds))
                .select("entity_id", "member_count", "first_seen_ds", "last_changed_ds", "golden_record",
                        F.lit(False).alias("removed"))
                .unionByName(gone))
    changes = summary.filter(F.col("change").isNotNull()).select(
        F.lit(ds).alias("ds"), "entity_id", "change", "from_entity_ids", "member_count").unionByName(updates)
    changes = _freeze(changes)

    ccount = {r.change: int(r.n) for r in changes.groupBy("change").agg(F.count(F.lit(1)).alias("n")).collect()}
    n_split_entities = (summary.filter(F.col("change") == "split")
                        .select(F.explode(F.split("from_entity_ids", ",")).alias("e")).distinct().count())
    # totals from the base's recorded totals and the night's deltas: nothing history-sized is counted
    base_refs = base.complete.get("references_total")
    base_ents = base.complete.get("entities_total")
    base_refs = int(base_refs) if base_refs is not None else base.members.count()
    base_ents = int(base_ents) if base_ents is not None else base.entities.count()
    n_new_refs = ids.join(old.select("ref_key"), "ref_key", "left_anti").count()
    n_born = ent_new.filter("_is_new").count()
    counts = {"references_total": base_refs + n_new_refs, "entities_total": base_ents + n_born - gone.count(),
              "new_entities": ccount.get("new", 0), "grows": ccount.get("grow", 0),
              "merges": ccount.get("merge", 0), "splits": n_split_entities, "split_rows": ccount.get("split", 0),
              "updates": ccount.get("update", 0)}
    links = None
    if night is not None:
        nk = night.select("ref_key")
        new_refs = nk.join(old.select("ref_key"), "ref_key", "left_anti")
        counts["night_references"] = nk.count()
        counts["new_references"] = new_refs.count()
        old_ids = old_entities.select("entity_id")
        counts["joined_existing"] = (new_refs.join(ids, "ref_key").join(old_ids, "entity_id", "left_semi").count())
        ecount = ent_new.select("entity_id", "member_count")
        links = (nk.join(ids, "ref_key").join(clusters.select("ref_key", "iteration", "mu", "quality"), "ref_key")
                 .join(ecount, "entity_id"))
    return NightResult(members, entities, changes, None, links, counts)


def link_night(spark: SparkSession, base: RegistryVersion, night: DataFrame, ds: str,
               profile: LinkageProfile | str = "default", must: DataFrame | None = None,
               cannot: DataFrame | None = None, checkpoint_dir: str | None = None,
               neighbourhood: str | None = None, big_entity_warn: int = BIG_ENTITY_WARN,
               top_entities: int | None = None) -> NightResult:
    """Link ``night`` against ``base``; see the module doc.

    Args:
        night: (``source``, ``record_id``, ``text``, ``attributes`` map<string,string>
            [, ``truth_entity``]); (source, record_id) unique.
        neighbourhood: ``block_key`` (engine block keys), ``pair_key`` (pair keys only),
            ``ranked`` (per night reference, the ``top_entities`` best entities it shares an
            engine block key or frequent-name pair with, ``ranked_candidates``), ``scored`` (the
            same pool re-ranked by the comparator, below ``mu`` dropped, ``scored_candidates``)
            or ``token`` (any shared blocking token); see
            ``candidate_references``. None: the profile's ``registryNeighbourhood``.
        top_entities: with ``ranked`` or ``scored``, entities kept per night reference. None:
            the profile's ``registryTopEntities``.

    Against the empty registry (``references_total`` 0, a first night) nothing is looked up in it:
    no references sent again, no neighbourhood, no entity named by a decision; the engine gets the
    night's own counts and correction map, which are the population's (``FIRST_NIGHT_ALONE``).

    Returns: ``NightResult`` with ``frequencies`` and ``links``; ``counts`` also
    holds ``neighbourhood_references`` and ``linked_references`` (what the engine saw).

    Raises:
        ValueError: duplicate (source, record_id) in the night, or an unknown ``neighbourhood``.
    """
    t0 = time.time()
    profile = load_profile(profile)
    neighbourhood = profile.registryNeighbourhood if neighbourhood is None else neighbourhood
    top_entities = profile.registryTopEntities if top_entities is None else int(top_entities)
    if neighbourhood not in NEIGHBOURHOODS:
        raise ValueError(f"neighbourhood must be one of {', '.join(NEIGHBOURHOODS)}, got {neighbourhood!r}")
    night = _freeze(night.withColumn("ref_key", ref_key_col()))
    row = night.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("ref_key").alias("d")).first()
    if row["n"] != row["d"]:
        raise ValueError(f"(source, record_id) is not unique in the night: {row['n']} rows, {row['d']} distinct")
    n_night = int(row["n"])
    base_mem = base.members.withColumn("ref_key", ref_key_col())
    n_base = base.complete.get("references_total")
    if n_base is None:
        n_base = base_mem.count()
    n_base = int(n_base)
    # the empty registry (a first night): nothing is stored to send again, pull in or relink, so the
    # night is linked alone, as a batch would link it, and none of the Spark jobs that look the night's
    # references and keys up in the registry run (each costs its scheduling even over no rows)
    first = n_base == 0 and FIRST_NIGHT_ALONE

    # 1. frequencies: base + night, minus the old text of references sent again
    night_tok = _freeze(tokenize(night.select(F.col("ref_key").alias("record_id"), "text"), profile))
    # references sent again: found on the key columns alone (a narrow scan of the members); their
    # whole rows (text, entity) are read only when there are some
    n_resent = 0
    if not first:
        resent_keys = _freeze(base_mem.select("ref_key").join(F.broadcast(night.select("ref_key")), "ref_key",
                                                              "left_semi"))
        n_resent = resent_keys.count()
    resent = _freeze(base_mem.join(F.broadcast(resent_keys), "ref_key", "left_semi")) if n_resent else \
        base_mem.limit(0)
    deltas = [token_frequencies(night_tok)]
    if n_resent:
        old_tok = tokenize(resent.select(F.col("ref_key").alias("record_id"), "text"), profile)
        deltas.append(token_frequencies(old_tok).select("token", (-F.col("freq")).alias("freq")))
    night_delta = deltas[0]
    for d in deltas[1:]:
        night_delta = night_delta.unionByName(d)
    # the night's own counts: what the next version's frequencies layer stores
    night_delta = _freeze(night_delta.groupBy("token").agg(F.sum("freq").cast("long").alias("freq"))
                          .filter(F.col("freq") != 0))
    base_rows = base.frequency_rows if base.frequency_rows is not None else base.frequencies
    if first:  # no stored counts and nothing sent again: the night's counts are the population's
        freq = night_delta
    else:
        freq = _freeze(base_rows.select("token", "freq").unionByName(night_delta)
                       .groupBy("token").agg(F.sum("freq").cast("long").alias("freq")).filter(F.col("freq") > 0))
    n_total = n_base + n_night - n_resent
    eff = profile.effective(n_total)
    _say("registry: token frequencies maintained", {
        "ds": ds, "night": n_night, "sent_again": n_resent, "registry": n_base, "N": n_total,
        "distinct_tokens": freq.count(), "beta": eff.beta, "sigma": eff.sigma}, time.time() - t0)
    t_stage = time.time()

    # 2. candidate neighbourhood, on the tokens the engine will block on: corrected by the population's
    # correction map (DWM25), computed once here and handed to the engine
    cmap = None
    if eff.runGlobalCorrection and eff.registryCorrectedTokens:
        cmap = _freeze(correction_map(freq, eff))
    if first:  # nothing stored to pull in, and no decision can name a stored entity: the night alone
        reg_tok = neigh = neigh_all = followers = None
        stored, n_neigh, n_followers, n_touched, extra, big_rows = False, 0, 0, 0, set(), []
    else:
        reg_tok, stored = registry_tokens(base, base_mem, profile)
        cand = candidate_references(base_mem, night_tok, freq, eff, profile, neighbourhood, top_entities, reg_tok,
                                    correction=cmap)
        cand_ents = entities_of(base_mem, cand).select("entity_id")
        extra = _decision_entities(spark, base_mem, must, cannot)
        touched = cand_ents.unionByName(resent.select("entity_id"))
        if extra:
            touched = touched.unionByName(spark.createDataFrame([(e,) for e in sorted(extra)], "entity_id string"))
        touched = _freeze(touched.distinct())
        big = (base.entities.join(F.broadcast(touched), "entity_id", "left_semi")
               .filter(F.col("member_count") > big_entity_warn))
        big_rows = big.select("entity_id", "member_count").limit(10).collect()
        if big_rows:
            msg = (f"{len(big_rows)}{'+' if len(big_rows) == 10 else ''} entities with more than {big_entity_warn} members "
                   f"are in the neighbourhood (e.g. {big_rows[0].entity_id}: {big_rows[0].member_count}); the night "
                   + ("relinks all of their members" if profile.registryEntityMembers == 0 else
                      f"relinks at most {profile.registryEntityMembers} of each (plus the members found for the night)"))
            log.warning(msg)
            _say("warning: " + msg)
        neigh_all = _freeze(base_mem.join(F.broadcast(touched), "entity_id", "left_semi")
                            .join(night.select("ref_key"), "ref_key", "left_anti"))
        followers = None
        n_followers = 0
        if profile.registryEntityMembers > 0:
            keep = cand.select("ref_key")
            named = _decision_keys(spark, must, cannot)
            if named:
                keep = keep.unionByName(spark.createDataFrame([(k,) for k in named], "ref_key string"))
            neigh, followers = bounded_members(neigh_all, keep, profile.registryEntityMembers)
            neigh, followers = _freeze(neigh), _freeze(followers)
            n_followers = followers.count()
        else:
            neigh = neigh_all
        n_neigh, n_touched = neigh.count(), touched.count()
    _say("registry: neighbourhood pulled in", {
        "references": n_neigh, "entities": n_touched, "followers": n_followers, "by_decisions": len(extra),
        "big_entities": len(big_rows), "neighbourhood_rule": neighbourhood,
        "registry_tokens": "none (the empty registry)" if first else "stored" if stored else "tokenised again"},
        time.time() - t_stage)
    t_stage = time.time()

    # 3. link night + neighbourhood with the same engine
    cols = ["ref_key", "text"]
    if "truth_entity" in night.columns:
        sub = night.select("ref_key", "text", F.col("truth_entity").cast("string"))
        if neigh is not None:
            sub = sub.unionByName(neigh.select("ref_key", "text", F.lit(None).cast("string").alias("truth_entity")))
    else:
        sub = night.select(*cols) if neigh is None else night.select(*cols).unionByName(neigh.select(*cols))
    if first:  # every token is the night's: the counts and the map are already what the subset needs
        sub_freq, sub_cmap = freq, cmap
    else:
        neigh_tok = tokenize(neigh.select(F.col("ref_key").alias("record_id"), "text"), profile)
        sub_freq, sub_cmap = subset_frequencies(freq, cmap, night_tok, neigh_tok, eff)
    clusters, emetrics, pairs = engine_link(spark, sub, profile, sub_freq, n_total, must, cannot, checkpoint_dir,
                                            correction=sub_cmap)
    if followers is not None:
        clusters = follow_entities(clusters, neigh.select("ref_key", "entity_id"), followers)
    kept_whole = 0
    if neigh_all is not None:
        clusters, kept_whole = apply_split_policy(clusters, neigh_all.select("ref_key", "entity_id"),
                                                  profile.registrySplits)
    clusters = _freeze(enforce_decisions(clusters, must, cannot))
    _say("registry: link", {"references": n_night + n_neigh, "clusters": emetrics.get("clusters"),
                            "iterations": len(emetrics.get("iterations") or []),
                            "split_policy": profile.registrySplits, "splits_undone": kept_whole},
         time.time() - t_stage)
    t_stage = time.time()

    # 4. ids and the next version
    res = assign_and_build(spark, base, clusters, night, ds, profile)
    res.frequencies = night_delta
    res.engine_metrics = emetrics
    res.pairs = pairs
    res.tokens_fingerprint = tokens_fingerprint(profile)
    if stored:  # the base's token layers hold every other member: the night adds its own
        res.tokens = night_tokens(night, night_tok)
    elif first:  # the first layer of a token chain
        res.tokens, res.tokens_full = night_tokens(night, night_tok), True
    else:  # tokenised from the texts this night: the next version starts a new token chain
        res.tokens, res.tokens_full = next_tokens(reg_tok, night, night_tok), True
    res.counts.update({"neighbourhood_references": n_neigh, "neighbourhood_followers": n_followers,
                       "linked_references": n_night + n_neigh,
                       "resent_references": n_resent, "neighbourhood_rule": neighbourhood,
                       "top_entities": top_entities if neighbourhood in ("ranked", "scored") else None})
    _say("registry: id assignment", {k: res.counts[k] for k in (
        "night_references", "new_references", "joined_existing", "new_entities", "grows", "merges", "splits",
        "entities_total", "references_total") if k in res.counts}, time.time() - t_stage)
    return res



def rebuild_night(spark: SparkSession, base: RegistryVersion, night: DataFrame, ds: str,
                  profile: LinkageProfile | str = "default", must: DataFrame | None = None,
                  cannot: DataFrame | None = None, checkpoint_dir: str | None = None) -> NightResult:
    """Full rebuild on a night: relink every member of ``base`` together with
    ``night`` in one batch (the same engine and profile), and build version
    ``ds`` from it as a night would (``assign_and_build``: ids kept by the
    same rules, every difference against ``base`` recorded as ``new``,
    ``grow``, ``merge`` or ``split`` rows).

    Token frequencies are recounted over the whole population (a reference
    sent again counts with the night's text); nothing is carried over.

    Args:
        base: the published version the night follows (may be the empty registry).
        night: as ``link_night``: (``source``, ``record_id``, ``text``,
            ``attributes``[, ``truth_entity``]), (source, record_id) unique.

    Returns:
        ``NightResult`` as ``link_night``. ``counts`` also holds
        ``neighbourhood_references`` (every base reference not sent again: the
        whole history is relinked), ``linked_references``, ``resent_references``
        and ``rebuild``: ``{"compared_references", "precision", "recall", "f1",
        "tp", "predicted_pairs", "true_pairs", "rebuilt_clusters"}``, the
        pairwise agreement of the rebuilt clusters with the base's
        (incremental) entities over the base's references, the base entities
        taken as the truth (``hdwm.metrics.pairwise_metrics``; the night's new
        references have no incremental entity to compare with; precision,
        recall and F1 are None when a side has no pair, e.g. an empty base).

    Raises:
        ValueError: duplicate (source, record_id) in the night.
    """
    from .metrics import pairwise_metrics

    t0 = time.time()
    profile = load_profile(profile)
    night = _freeze(night.withColumn("ref_key", ref_key_col()))
    row = night.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("ref_key").alias("d")).first()
    if row["n"] != row["d"]:
        raise ValueError(f"(source, record_id) is not unique in the night: {row['n']} rows, {row['d']} distinct")
    n_night = int(row["n"])
    base_mem = _freeze(base.members.withColumn("ref_key", ref_key_col()))
    kept = base_mem.join(night.select("ref_key"), "ref_key", "left_anti")
    n_kept = kept.count()
    n_resent = base_mem.count() - n_kept
    truth = "truth_entity" in night.columns
    cols = ["ref_key", "text"] + (["truth_entity"] if truth else [])
    everyone = night.select(*cols).unionByName(
        kept.select("ref_key", "text", *([F.lit(None).cast("string").alias("truth_entity")] if truth else [])))
    everyone = _freeze(everyone)
    n_total = n_night + n_kept
    freq = _freeze(raw_frequencies(everyone.select("ref_key", "text"), profile))
    _say("registry: rebuild: token frequencies recounted", {
        "ds": ds, "night": n_night, "sent_again": n_resent, "registry": n_kept + n_resent, "N": n_total,
        "distinct_tokens": freq.count()}, time.time() - t0)
    t_stage = time.time()
    clusters, emetrics, pairs = engine_link(spark, everyone, profile, freq, n_total, must, cannot, checkpoint_dir)
    clusters = _freeze(enforce_decisions(clusters, must, cannot))
    _say("registry: rebuild: link", {"references": n_total, "clusters": emetrics.get("clusters"),
                                     "iterations": len(emetrics.get("iterations") or [])}, time.time() - t_stage)
    t_stage = time.time()
    cmp_rows = base_mem.select("ref_key", "entity_id").join(
        clusters.select("ref_key", F.col("cluster").alias("rebuilt_cluster")), "ref_key")
    cmp = pairwise_metrics(cmp_rows, cluster_col="rebuilt_cluster", truth_col="entity_id") or \
        {"precision": None, "recall": None, "f1": None, "tp": 0, "predicted_pairs": 0, "true_pairs": 0}
    res = assign_and_build(spark, base, clusters, night, ds, profile)
    res.frequencies, res.frequencies_full = freq, True  # recounted over the whole population
    res.engine_metrics = emetrics
    res.pairs = pairs
    night_tok = tokenize(night.select(F.col("ref_key").alias("record_id"), "text"), profile)
    kept_tok = tokenize(kept.select(F.col("ref_key").alias("record_id"), "text"), profile)
    res.tokens, res.tokens_fingerprint = next_tokens(kept_tok, night, night_tok), tokens_fingerprint(profile)
    res.tokens_full = True
    res.counts.update({
        "neighbourhood_references": n_kept, "linked_references": n_total, "resent_references": n_resent,
        "rebuild": {"compared_references": n_kept + n_resent, **cmp,
                    "rebuilt_clusters": clusters.select("cluster").distinct().count()}})
    _say("registry: rebuild: id assignment", {
        **{k: res.counts[k] for k in ("night_references", "new_references", "joined_existing", "new_entities",
                                      "grows", "merges", "splits", "entities_total", "references_total")},
        "f1_vs_incremental": cmp.get("f1") if cmp.get("f1") is not None else "n/a"}, time.time() - t_stage)
    return res


def candidate_references(base_mem: DataFrame, night_tok: DataFrame, freq: DataFrame, eff: LinkageProfile,
                         profile: LinkageProfile, neighbourhood: str = "pair_key",
                         top_entities: int = TOP_ENTITIES, reg_tok: DataFrame | None = None,
                         correction: DataFrame | None = None) -> DataFrame:
    """Registry references that could share a block with a night reference.

    Args:
        base_mem: registry members with ``ref_key`` and ``text``.
        night_tok: the night's (``record_id`` = ref_key, ``tokens``).
        freq: combined raw frequencies (``token``, ``freq``).
        eff: the profile made effective for the population size (blocking rule).
        neighbourhood: ``block_key`` – share an engine block key (a sorted pair
            of blocking tokens with ``blockByPairs``, and with ``rareTokenBlocks``
            a blocking token rarer than ``√beta`` on its own, as
            ``hdwm.blocking.build_blocks``); ``pair_key`` – share a pair key
            (the single rare-token keys left out; see docs/registry.md);
            both include the engine's rare pairs of frequent word tokens
            (``frequentPairMaxBlock``, with ``initialPairBlocks`` a word and an
            initial), counted over registry and night;
            ``ranked`` – ``block_key``'s key holders and the same
            frequent-pair holders, ranked together: only the
            ``top_entities`` best entities per night reference
            (``ranked_candidates``);
            ``scored`` – ``ranked``'s best ``registryScoredPool`` entities
            re-ranked by the comparator's score (``registryScoredMembers`` members
            each), those below ``mu`` dropped, the best ``top_entities`` kept
            (``scored_candidates``);
            ``token`` – share any blocking token.
        top_entities: with ``ranked`` or ``scored``, entities kept per night reference.
        reg_tok: the registry's tokens (``record_id`` = ref_key, ``tokens``;
            ``registry_tokens``); None: tokenised from ``base_mem``'s texts.
        correction: optional (``token``, ``replacement``) correction map of
            ``freq`` (``hdwm.frequency.correction_map``). Given, every rule
            runs on corrected tokens and corrected counts, as the engine's
            blocking and scoring do after its global correction (DWM25): a
            night reference whose misspelt surname (SMTIH) is one edit from a
            frequent one shares SMITH's keys with the registry, and a
            registry reference written with the misspelling shares them too
            (its stored tokens are raw; they are corrected as read). Without
            it, raw tokens (the rule before b675bb7). Measured in
            docs/registry.md.

    Returns: DataFrame(``ref_key``) distinct.
    """
    if correction is not None:
        night_tok = _freeze(apply_corrections(night_tok.select("record_id", "tokens"), correction,
                                              profile.removeDuplicateTokens))
        freq = _freeze(corrected_frequencies(freq, correction))
    sh = _shared_token_inputs(base_mem, night_tok, freq, eff, profile, reg_tok, correction,
                              rare_only=neighbourhood == "scored")
    night_bt, reg_tok, reg_bt = sh.night_bt, sh.reg_tok, sh.reg_bt
    if neighbourhood == "ranked":
        extra = _frequent_pair_matches(sh, night_tok, freq, eff)
        return ranked_candidates(night_bt, reg_bt, base_mem, eff, top_entities, extra).distinct()
    if neighbourhood == "scored":
        extra = _frequent_pair_matches(sh, night_tok, freq, eff)
        return scored_candidates(night_bt, reg_bt, base_mem, night_tok, reg_tok, freq, eff,
                                 top_entities, extra, pool=profile.registryScoredPool,
                                 members=profile.registryScoredMembers, correction=correction,
                                 reg_pk=sh.reg_pk, reg_lists=sh.reg_lists).distinct()
    if neighbourhood in ("block_key", "pair_key") and eff.blockByPairs:
        def keys(bt):
            k = night_pair_keys(bt).withColumnRenamed("night_key", "ref_key")
            if neighbourhood == "block_key" and getattr(eff, "rareTokenBlocks", False):
                # the engine's rule: a token rarer than sqrt(beta) also blocks on its own
                from .blocking import rare_token_limit

                k = k.unionByName(bt.filter(F.col("freq") <= rare_token_limit(eff))
                                  .select("ref_key", F.col("token").alias("block_key")))
            return k
        nkeys = keys(night_bt).select("block_key").distinct()
        near = keys(reg_bt).join(nkeys, "block_key", "left_semi").select("ref_key")
        return near.unionByName(_frequent_pair_candidates(sh, night_tok, freq, eff)).distinct()
    return reg_bt.select("ref_key").distinct()


def registry_tokens(base: RegistryVersion, base_mem: DataFrame, profile: LinkageProfile) -> tuple[DataFrame, bool]:
    """The registry members' tokens (``record_id`` = ref_key, ``tokens``).

    Read from the version's stored ``tokens/`` part when its fingerprint is
    the profile's (``hdwm.tokenizer.tokens_fingerprint``; ``hdwm.registry``
    module doc, "Stored tokens"), else tokenised from ``base_mem``'s ``text``
    and materialised (it is read more than once). Returns (tokens, whether
    they were read from the version).
    """
    if base.tokens is not None and base.complete.get("tokens_fingerprint") == tokens_fingerprint(profile):
        return base.tokens.select(ref_key_col().alias("record_id"), "tokens"), True
    return _freeze(tokenize(base_mem.select(F.col("ref_key").alias("record_id"), "text"), profile)), False


def night_tokens(night: DataFrame, night_tok: DataFrame) -> DataFrame:
    """The night's layer of stored tokens: (``source``, ``record_id``, ``tokens``)
    of the night's references (``hdwm.registry.TOKENS_SCHEMA``), from
    ``night_tok`` (``record_id`` = ref_key, ``tokens``)."""
    from .registry import split_ref_key

    src, rid = split_ref_key("record_id")
    return night_tok.select(src.alias("source"), rid.alias("record_id"), "tokens")


def next_tokens(reg_tok: DataFrame, night: DataFrame, night_tok: DataFrame) -> DataFrame:
    """The next version's stored tokens: the registry's (``record_id`` = ref_key,
    ``tokens``) except the references the night sends again, plus the night's.
    Returns (``source``, ``record_id``, ``tokens``), one row per member
    (``hdwm.registry.TOKENS_SCHEMA``)."""
    from .registry import split_ref_key

    kept = reg_tok.join(night.select(F.col("ref_key").alias("record_id")), "record_id", "left_anti")
    both = kept.unionByName(night_tok.select("record_id", "tokens"))
    src, rid = split_ref_key("record_id")
    return both.select(src.alias("source"), rid.alias("record_id"), "tokens")


#: sets of at most this many strings (blocking tokens, correction entries, frequent-pair keys) are
#: shipped to the executors, which cut the registry's token lists with them in one Arrow pass
#: (``_scan_token_lists``); a larger night (a first load) uses the joins instead
SCAN_SET_LIMIT = 2_000_000

#: ``_scan_token_lists`` cuts this many token lists at a time (Arrow batches merged): each cut hashes
#: the night's sets once, and a chunk of 200,000 lists of about ten tokens is some 50 MB of Arrow data
SCAN_CHUNK_LISTS = 200_000

#: the rows ``_scan_token_lists`` returns: kind 0 a blocking token, 1 a frequent-pair key, 2 a key
#: held more than the cap within one partition (``ref_key`` null, ``n`` its holders there), 3 a pair
#: of blocking tokens that a night reference also holds, 4 a returned reference's token list
_SCAN_SCHEMA = "ref_key string, kind int, value string, n long"


def _scan_token_lists(reg_tok: DataFrame, blocking, back, fp_keys, skip, cap: int, pair_keys=None,
                      emit=None, lists: bool = False) -> DataFrame:
    """One pass over the registry's token lists (``record_id`` = ref_key,
    ``tokens``) in the executors (``mapInArrow``, vectorised with
    ``pyarrow.compute``): each list is corrected (``back``: raw token →
    replacement) and made distinct; its tokens among ``blocking`` are kept,
    and so are its ordered pairs of distinct tokens ``"x y"`` among
    ``fp_keys`` (matched as integer codes), except for the references in
    ``skip`` (the night sends them again: they hold the night's keys with the
    night's text).

    A key held by more than ``cap`` references of one partition is held by
    more than ``cap`` in all, so the engine's cap drops it
    (``hdwm.blocking.cap_frequent_pairs``): its holders are not returned, one
    kind 2 row says so instead. Pairs of common names (a given name and a
    surname) have thousands of holders in a registry of millions.

    With ``pair_keys`` (sorted pairs ``"a b"``, a < b, of blocking tokens
    that a night reference holds together), each list's pairs of kept
    blocking tokens among them are returned too (``key_matches``). With
    ``emit`` (strings, a subset of ``blocking``) the kind 0 rows are those of
    its tokens only; the pairs still see every blocking token. With
    ``lists``, every reference returned in a row of kind 0, 1 (before the
    cap) or 3 is also returned once as a kind 4 row: its stored (raw) token
    list, joined by spaces (a token never holds one, ``hdwm.tokenizer``).

    Returns DataFrame(``ref_key``, ``kind``, ``value``, ``n``): kind 0 rows
    (reference, blocking token), kind 1 rows (reference, frequent-pair key),
    kind 3 rows (reference, pair of blocking tokens) and kind 4 rows
    (reference, token list), each distinct, ``n`` 1; kind 2 rows (null, key,
    holders in the partition).

    No shuffle: the explode, the joins and the per-reference regrouping it
    replaces (``_shared_token_inputs``' fallback) were the two largest steps
    of a night against a 3M-reference registry (docs/registry.md). The sets
    (strings: sequences or Arrow arrays; ``back`` a dict or a (raw tokens,
    replacements) pair) reach the executors as one broadcast variable, at
    most ``SCAN_SET_LIMIT`` strings each (``_scan_sets``; the executors'
    side is ``_scan_batches``)."""
    sets = reg_tok.sparkSession.sparkContext.broadcast(_scan_sets(blocking, back, fp_keys, skip, pair_keys, emit))
    want_lists = bool(lists)

    def scan(batches):
        return _scan_batches(batches, sets.value, cap, want_lists)

    return reg_tok.select("record_id", "tokens").mapInArrow(scan, _SCAN_SCHEMA)


def _scan_sets(blocking, back, fp_keys, skip, pair_keys=None, emit=None) -> dict:
    """The night's sets as ``_scan_batches`` reads them (arguments as
    ``_scan_token_lists``): Arrow arrays of the strings, the frequent-pair
    keys and pairs of blocking tokens as integer codes (``key_codes``: first
    × ``width`` + second, positions among the sorted names ``fp``;
    ``pair_codes``: the same among the sorted ``blocking``, ``bwidth``), and
    the one dictionary every list is hashed against (``_scan_dictionary``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def arr(x) -> pa.Array:
        return (x.combine_chunks() if isinstance(x, pa.ChunkedArray) else pa.array(x, pa.string())).cast(pa.string())

    if isinstance(back, dict):
        back = (list(back), list(back.values()))
    keys_a = arr(fp_keys)
    parts = pc.split_pattern(keys_a, " ")
    fp_a = pc.unique(pc.list_flatten(parts)).sort()
    width = max(len(fp_a), 1)
    first = pc.index_in(pc.list_element(parts, 0), value_set=fp_a).cast(pa.int64())
    second = pc.index_in(pc.list_element(parts, 1), value_set=fp_a).cast(pa.int64())
    blocking_a = pc.unique(arr(blocking)).sort()
    bwidth = max(len(blocking_a), 1)
    pparts = pc.split_pattern(arr(pair_keys if pair_keys is not None else []), " ")
    pair_codes = pc.add(pc.multiply(pc.index_in(pc.list_element(pparts, 0), value_set=blocking_a).cast(pa.int64()),
                                    bwidth),
                        pc.index_in(pc.list_element(pparts, 1), value_set=blocking_a).cast(pa.int64()))
    payload = {
        "blocking": blocking_a, "back_from": arr(back[0]), "back_to": arr(back[1]), "skip": arr(skip),
        "fp": fp_a, "key_codes": pc.add(pc.multiply(first, width), second), "pair_codes": pc.drop_null(pair_codes),
        "emit": None if emit is None else pc.unique(arr(emit)), "width": width, "bwidth": bwidth}
    payload.update(_scan_dictionary(payload))
    for name in ("back_from", "back_to", "emit"):  # in the dictionary now: not shipped twice
        del payload[name]
    return payload


def _scan_dictionary(sets: dict) -> dict:
    """The one dictionary ``_scan_batches`` hashes a list's tokens against: ``vocab`` (sorted distinct
    strings: correction sources and replacements, blocking tokens, names of frequent-pair keys) and,
    per position in it, ``corr`` (the position of its replacement, or its own), ``bcode`` (its
    position among the blocking tokens, or -1), ``fcode`` (among the frequent-pair names, or -1);
    ``emit_mask`` (per blocking token, whether kind 0 rows are returned for it) or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = [sets["back_from"], sets["back_to"], sets["blocking"], sets["fp"]]
    vocab = pc.unique(pa.concat_arrays([p.cast(pa.string()) for p in parts])).sort()
    own = pa.array(range(len(vocab)), pa.int64())
    to = pc.index_in(pc.take(sets["back_to"], pc.index_in(vocab, value_set=sets["back_from"])), value_set=vocab)
    return {"vocab": vocab, "corr": pc.coalesce(to.cast(pa.int64()), own),
            "bcode": pc.fill_null(pc.index_in(vocab, value_set=sets["blocking"]).cast(pa.int64()), -1),
            "fcode": pc.fill_null(pc.index_in(vocab, value_set=sets["fp"]).cast(pa.int64()), -1),
            "emit_mask": None if sets["emit"] is None else pc.is_in(sets["blocking"], value_set=sets["emit"])}


def _distinct_codes(p, c, width: int):
    """Distinct (list position, code) rows of two numpy integer arrays, sorted by position and then
    code (``width`` > every code)."""
    import numpy as np

    u = _sorted_distinct(p.astype(np.int64) * width + c.astype(np.int64))
    return u // width, u % width


def _sorted_distinct(a):
    """The distinct values of the numpy array ``a``, sorted (``np.unique`` hashes: slower here)."""
    import numpy as np

    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def _pairs_within(p):
    """(i, k): every pair of row indices i < k of the sorted numpy array ``p`` with p[i] == p[k]
    (the pairs of codes of one list), formed without a join."""
    import numpy as np

    n = len(p)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
    sizes = np.diff(np.r_[starts, n])
    group = np.repeat(np.arange(len(starts)), sizes)
    after = sizes[group] - 1 - (np.arange(n) - starts[group])  # partners after each row
    i = np.repeat(np.arange(n), after)
    k = i + 1 + np.arange(len(i)) - np.repeat(np.cumsum(after) - after, after)
    return i, k


def _scan_batches(batches, got: dict, cap: int, want_lists: bool):
    """The executors' side of ``_scan_token_lists``: ``batches`` of (``record_id``, ``tokens``)
    → Arrow batches of ``_SCAN_SCHEMA`` rows; ``got`` the broadcast sets."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    width, bwidth = got["width"], got["bwidth"]
    fp_a = got["fp"]
    out_schema = pa.schema([("ref_key", pa.string()), ("kind", pa.int32()), ("value", pa.string()),
                            ("n", pa.int64())])

    def key_text(codes):
        codes = pa.chunked_array([codes]) if isinstance(codes, pa.Array) else codes
        return pc.binary_join_element_wise(pc.take(fp_a, pc.divide(codes, width)),
                                           pc.take(fp_a, pc.subtract(codes, pc.multiply(pc.divide(codes, width),
                                                                                        width))), " ")

    def rows(refs, values, kind: int, n=None):
        k = len(values)
        return pa.table([refs.cast(pa.string()), pa.array(np.full(k, kind, np.int32)), values.cast(pa.string()),
                         n if n is not None else pa.array(np.ones(k, np.int64))], schema=out_schema).to_batches()

    def chunks(batches):
        # Arrow's set look-ups (is_in, index_in) hash their value set on every call: the night's sets
        # hold up to a few hundred thousand strings (the correction entries), so they are called once
        # per SCAN_CHUNK_LISTS lists, not once per Arrow batch of 10,000
        buf, n = [], 0
        for b in batches:
            buf.append(b)
            n += b.num_rows
            if n >= SCAN_CHUNK_LISTS:
                yield pa.Table.from_batches(buf).combine_chunks().to_batches()[0]
                buf, n = [], 0
        if n:
            yield pa.Table.from_batches(buf).combine_chunks().to_batches()[0]

    # every string the pass looks for, in one sorted dictionary: a list's tokens are hashed once
    # against it (``index_in``), and what they are (a correction source, a blocking token, a name of a
    # frequent-pair key) is read from integer arrays indexed by their position in it
    vocab, corr, bcode, fcode = got["vocab"], got["corr"], got["bcode"], got["fcode"]
    blocking_a, skip_a, key_codes, pair_codes = got["blocking"], got["skip"], got["key_codes"], got["pair_codes"]
    emit_mask = got["emit_mask"]
    held_refs, held_codes = [], []
    for b in chunks(batches):
        ids, lists = b.column("record_id"), b.column("tokens")
        found = []  # the chunk's references returned in a row (their list positions)
        idx = pc.index_in(pc.list_flatten(lists).cast(pa.string()), value_set=vocab)
        hit = pc.is_valid(idx)
        parents = pc.filter(pc.list_parent_indices(lists), hit)
        ci = pc.take(corr, pc.filter(idx, hit))  # corrected, as a position in vocab
        par = parents.to_numpy(zero_copy_only=False).astype(np.int64)
        bc = pc.take(bcode, ci).to_numpy(zero_copy_only=False)  # -1: not a blocking token
        bp, bcodes = _distinct_codes(par[bc >= 0], bc[bc >= 0], bwidth)
        out = np.ones(len(bp), bool) if emit_mask is None else \
            pc.take(emit_mask, pa.array(bcodes)).to_numpy(zero_copy_only=False)
        yield from rows(pc.take(ids, pa.array(bp[out])), pc.take(blocking_a, pa.array(bcodes[out])), 0)
        found.append(bp[out])
        if len(pair_codes):
            i, k = _pairs_within(bp)
            pair = pa.array(bcodes[i] * bwidth + bcodes[k])  # codes sorted within a list: first < second
            sel = pc.is_in(pair, value_set=pair_codes).to_numpy(zero_copy_only=False)
            i, k = i[sel], k[sel]
            text = pc.binary_join_element_wise(pc.take(blocking_a, pa.array(bcodes[i])),
                                               pc.take(blocking_a, pa.array(bcodes[k])), " ")
            yield from rows(pc.take(ids, pa.array(bp[i])), text, 3)
            found.append(bp[i])
        if len(key_codes):
            fc = pc.take(fcode, ci).to_numpy(zero_copy_only=False)  # -1: not a name of a key
            keep = fc >= 0
            if len(skip_a):
                keep &= ~pc.is_in(ids, value_set=skip_a).to_numpy(zero_copy_only=False)[par]
            fp_, fcodes = _distinct_codes(par[keep], fc[keep], width)
            i, k = _pairs_within(fp_)
            for x, y in ((i, k), (k, i)):  # ordered pairs of names, each way
                pair = fcodes[x] * width + fcodes[y]
                sel = pc.is_in(pa.array(pair), value_set=key_codes).to_numpy(zero_copy_only=False)
                held_refs.append(pc.take(ids, pa.array(fp_[x][sel])).cast(pa.string()))
                held_codes.append(pa.array(pair[sel]))
                found.append(fp_[x][sel])
        if want_lists and found:
            at = pa.array(_sorted_distinct(np.concatenate(found)))
            if len(at):
                # binary_join has no kernel for lists of non-null strings (tokenised lists are)
                yield from rows(pc.take(ids, at),
                                pc.binary_join(pc.take(lists, at).cast(pa.list_(pa.string())), " "), 4)
    if held_codes:
        h = pa.table({"r": pa.chunked_array([x for r in held_refs for x in getattr(r, "chunks", [r])],
                                            pa.string()),
                      "k": pa.chunked_array([x for c in held_codes for x in getattr(c, "chunks", [c])],
                                            pa.int64())})
        counts = h.group_by("k").aggregate([("r", "count")])
        over = counts.filter(pc.greater(counts["r_count"], cap))
        if over.num_rows:
            yield from rows(pa.nulls(over.num_rows, pa.string()), key_text(over["k"]), 2,
                            over["r_count"].cast(pa.int64()))
        h = h.filter(pc.invert(pc.is_in(h["k"], value_set=over["k"].combine_chunks())))
        yield from rows(h["r"], key_text(h["k"]), 1)


@dataclass
class SharedTokens:
    """What every neighbourhood rule reads, computed once per night
    (``_shared_token_inputs``).

    ``night_bt``: (``ref_key``, ``token``, ``freq``) the night's blocking tokens;
    ``reg_tok``: (``record_id``, ``tokens``) the registry's tokens;
    ``reg_bt``: (``token``, ``ref_key``, ``freq``) registry references' tokens
    among the night's blocking tokens; ``reg_rows``: (``ref_key``, ``token``)
    every registry reference's tokens that are among the night's blocking
    tokens or the tokens of the night's frequent-pair keys (materialised: the
    only scan of the registry's tokens); ``night_fp``: (``record_id``,
    ``block_key``) the night's frequent-pair keys before the cap, or None
    when ``frequentPairMaxBlock`` is 0; ``reg_fp``: (``record_id``,
    ``block_key``) the registry references holding one of those keys (the
    references the night sends again left out), from the same pass as
    ``reg_rows`` (``_scan_token_lists``), or None: ``_frequent_pair_keys``
    forms them from ``reg_rows``; ``reg_pk``: (``ref_key``, ``block_key``) the
    registry references' sorted pairs of blocking tokens that a night
    reference holds too (``night_pair_keys``), from the same pass, or None
    (``key_matches`` then joins single tokens); ``reg_lists``: (``record_id``,
    ``tokens``) the stored token lists of every registry reference in
    ``reg_rows``, ``reg_fp`` or ``reg_pk``, from the same pass when it ran
    with ``rare_only``, else None (the scored rule then reads ``reg_tok``)."""

    night_bt: DataFrame
    reg_tok: DataFrame
    reg_bt: DataFrame
    reg_rows: DataFrame
    night_fp: DataFrame | None
    reg_fp: DataFrame | None = None
    reg_pk: DataFrame | None = None
    reg_lists: DataFrame | None = None


def _shared_token_inputs(base_mem: DataFrame, night_tok: DataFrame, freq: DataFrame, eff: LinkageProfile,
                         profile: LinkageProfile, reg_tok: DataFrame | None = None,
                         correction: DataFrame | None = None, scan_limit: int = SCAN_SET_LIMIT,
                         rare_only: bool = False) -> SharedTokens:
    """Compute ``SharedTokens`` (``reg_tok`` None: tokenise ``base_mem``'s texts).

    ``rare_only``: the caller reads ``reg_bt`` only for the blocking tokens
    that block alone (``key_matches`` with pair keys: frequency at most
    ``hdwm.blocking.rare_token_limit``), so when the Arrow pass forms the pair
    keys (``reg_pk`` not None) ``reg_rows`` and ``reg_bt`` hold those tokens
    only. At 3M stored references a night's blocking tokens have about seven
    million holders, its rare ones a few percent of that. The same pass then
    returns the stored token lists of the references it found (``reg_lists``),
    which the scored rule compares, instead of a second scan of every list.

    With ``correction`` (``token``, ``replacement``; ``night_tok`` and ``freq``
    already corrected by it) the registry's raw tokens are corrected as they
    are read: a raw token is kept when it, or its replacement, is one the
    night can use, and ``reg_rows`` holds the replacement. A replacement is
    never itself corrected (``maxFreqErrToken < minFreqStdToken``), so the
    mapping is a function of the raw token.

    The registry's token lists are read once and cut to the tokens the night
    can use: its blocking tokens and the tokens of its frequent-pair keys.
    Both rules downstream (shared blocking tokens, holders of a night's
    frequent pair) read only those rows, so a night never joins the whole
    history's tokens with the frequency table. When the night's sets hold at
    most ``scan_limit`` strings each (every night but a large first load) the
    cut is one Arrow pass in the executors that keeps the blocking tokens and
    forms the registry references' frequent-pair keys (``_scan_token_lists``,
    ``reg_fp``; ``reg_rows`` then holds the blocking tokens only); else
    the lists are exploded and cut by broadcast joins, and the keys are formed
    later from ``reg_rows`` (``_frequent_pair_keys``). Both give the same rows
    (tests/unit/test_registry_neighbourhood.py); the Arrow pass needs
    ``minBlkTokenLen`` ≥ 2, which keeps the key rules' keys apart."""
    night_freq = _freeze(frequencies_for(freq, night_tok))  # the night's tokens' counts: night-sized joins below
    night_bt = blocking_tokens(night_tok, night_freq, eff).select(
        F.col("record_id").alias("ref_key"), "token", "freq")
    night_bt = _freeze(night_bt)
    if reg_tok is None:
        reg_tok = tokenize(base_mem.select(F.col("ref_key").alias("record_id"), "text"), profile)
    night_fp = None
    wanted = night_bt.select("token")
    if getattr(eff, "frequentPairMaxBlock", 0) > 0:
        from .blocking import frequent_pair_candidates

        night_fp = _freeze(frequent_pair_candidates(night_tok.select("record_id", "tokens"), night_freq, eff))
        wanted = wanted.unionByName(night_fp.select(F.explode(F.split("block_key", " ")).alias("token")))
    wanted = _freeze(wanted.distinct())
    back = None
    if correction is not None:
        back = _freeze(correction.join(F.broadcast(wanted.withColumnRenamed("token", "replacement")),
                                       "replacement", "left_semi").select("token", "replacement"))
    sets = _night_sets(night_bt, back, night_fp, night_tok, eff, scan_limit) if eff.minBlkTokenLen >= 2 else None
    reg_fp = reg_pk = reg_lists = None
    if sets is not None:
        *scan_sets, pair_keys, counts = sets
        emit = None
        if rare_only and pair_keys is not None and eff.blockByPairs and getattr(eff, "rareTokenBlocks", False):
            import pyarrow.compute as pc

            from .blocking import rare_token_limit

            emit = pc.filter(counts.column("token"), pc.less_equal(counts.column("freq"), rare_token_limit(eff)))
        scanned = _freeze(_scan_token_lists(reg_tok, *scan_sets, cap=eff.frequentPairMaxBlock, pair_keys=pair_keys,
                                            emit=emit, lists=emit is not None))
        if emit is not None:
            reg_lists = scanned.filter(F.col("kind") == 4).select(F.col("ref_key").alias("record_id"),
                                                                  F.split("value", " ").alias("tokens"))
        reg_rows = scanned.filter(F.col("kind") == 0).select("ref_key", F.col("value").alias("token"))
        if pair_keys is not None:
            reg_pk = scanned.filter(F.col("kind") == 3).select("ref_key", F.col("value").alias("block_key"))
        if night_fp is not None:
            over = scanned.filter(F.col("kind") == 2).select(F.col("value").alias("block_key")).distinct()
            reg_fp = (scanned.filter(F.col("kind") == 1)
                      .select(F.col("ref_key").alias("record_id"), F.col("value").alias("block_key"))
                      .join(F.broadcast(over), "block_key", "left_anti"))
            night_fp = night_fp.join(F.broadcast(over), "block_key", "left_anti")
    else:
        exploded = reg_tok.select(F.col("record_id").alias("ref_key"),
                                  F.explode(F.array_distinct("tokens")).alias("token"))
        if back is None:
            reg_rows = _freeze(exploded.join(F.broadcast(wanted), "token", "left_semi"))
        else:
            raw = wanted.unionByName(back.select("token")).distinct()
            reg_rows = _freeze(exploded.join(F.broadcast(raw), "token", "left_semi")
                               .join(F.broadcast(back), "token", "left")
                               .select("ref_key", F.coalesce("replacement", "token").alias("token")).distinct())
    reg_bt = reg_rows.join(night_bt.select("token", "freq").distinct(), "token")
    return SharedTokens(night_bt, reg_tok, reg_bt, reg_rows, night_fp, reg_fp, reg_pk, reg_lists)


def _night_sets(night_bt: DataFrame, back: DataFrame | None, night_fp: DataFrame | None, night_tok: DataFrame,
                eff: LinkageProfile, limit: int) -> tuple | None:
    """The night's sets for ``_scan_token_lists`` on the driver, as Arrow
    arrays: (blocking tokens, (raw tokens, replacements) of the correction
    entries, frequent-pair keys, the night's references when it has keys,
    its pairs of blocking tokens with ``blockByPairs`` else None, and the
    blocking tokens with their counts as an Arrow table ``token``, ``freq``), or None
    when one holds more than ``limit`` strings (logged); pairs of blocking
    tokens above the limit are left out (None) and the rest is shipped. A key the
    night's own references hold more than ``frequentPairMaxBlock`` times is
    left out: the cap drops it whatever the registry holds."""
    import pyarrow as pa

    frames = {"blocking tokens": night_bt.select("token", "freq").distinct()}  # one count per token
    if back is not None:
        frames["correction entries"] = back.select("token", "replacement")
    if night_fp is not None:
        frames["frequent-pair keys"] = (night_fp.groupBy("block_key").count()
                                        .filter(F.col("count") <= eff.frequentPairMaxBlock).select("block_key"))
        frames["night references"] = night_tok.select("record_id")
    if eff.blockByPairs:
        frames["pairs of blocking tokens"] = night_pair_keys(night_bt).select("block_key").distinct()
    got = {}
    for name, df in frames.items():
        n = df.count()
        if n > limit and name == "pairs of blocking tokens":
            _say(f"registry: the night's {name} ({n:,}) are more than the scan ships ({limit:,}): "
                 "night-registry pairs are found by joining single tokens")
        elif n > limit:
            _say(f"registry: the night's {name} ({n:,}) are more than the scan ships ({limit:,}): "
                 "the registry's tokens are exploded and joined instead")
            return None
        else:
            got[name] = df.toArrow()
    empty = pa.array([], pa.string())
    corr = got.get("correction entries")
    return (got["blocking tokens"].column(0),
            (corr.column(0), corr.column(1)) if corr is not None else (empty, empty),
            got["frequent-pair keys"].column(0) if night_fp is not None else empty,
            got["night references"].column(0) if night_fp is not None else empty,
            got["pairs of blocking tokens"].column(0) if "pairs of blocking tokens" in got else None,
            got["blocking tokens"])


def neighbourhood_ranks(base_mem: DataFrame, night_tok: DataFrame, freq: DataFrame, eff: LinkageProfile,
                        profile: LinkageProfile) -> DataFrame:
    """For measurement (``benchmarks/incremental.py --rank-of-truth``): every
    registry entity each night reference shares a key with, with the rank the
    ``ranked`` rule gives it (``entity_ranks``; arguments as ``candidate_references``)."""
    sh = _shared_token_inputs(base_mem, night_tok, freq, eff, profile)
    return entity_ranks(sh.night_bt, sh.reg_bt, base_mem, eff, _frequent_pair_matches(sh, night_tok, freq, eff))


def _frequent_pair_keys(sh: SharedTokens, night_tok: DataFrame, freq: DataFrame,
                        eff: LinkageProfile) -> tuple[DataFrame, DataFrame] | None:
    """The engine's rare pairs of frequent tokens (``hdwm.blocking.frequent_pair_keys``),
    counted over the registry and the night together as the engine will block
    them: (night keys (``record_id``, ``block_key``, ``ub``), registry keys
    (``record_id``, ``block_key``)) restricted to keys a night reference holds.
    None when ``frequentPairMaxBlock`` is 0.

    Only keys a night reference holds matter, and a key depends only on its two
    tokens (``hdwm.blocking.frequent_pair_candidates``), so a registry
    reference's keys are formed from its tokens among those of the night's
    keys (``sh.reg_fp`` from the scan of the token lists, else from
    ``sh.reg_rows``): the same keys and the same holder counts ``ub`` as
    forming every registry reference's pairs, at the cost of the night's
    tokens only. A registry reference the night sends again counts with the
    night's text, as in the engine."""
    if sh.night_fp is None:
        return None
    from .blocking import frequent_pair_candidates

    reg_fp = sh.reg_fp
    if reg_fp is None:
        night_keys = night_tok.select(F.col("record_id").alias("ref_key")).distinct()
        fp_tokens = _freeze(sh.night_fp.select(F.explode(F.split("block_key", " ")).alias("token")).distinct())
        reg_lists = (sh.reg_rows.join(F.broadcast(fp_tokens), "token", "left_semi")
                     .join(night_keys, "ref_key", "left_anti")
                     .groupBy(F.col("ref_key").alias("record_id")).agg(F.collect_list("token").alias("tokens")))
        small_freq = freq.join(F.broadcast(fp_tokens), "token", "left_semi")
        reg_fp = (frequent_pair_candidates(reg_lists, F.broadcast(small_freq), eff)
                  .join(sh.night_fp.select("block_key").distinct(), "block_key", "left_semi"))
    held = (sh.night_fp.select("record_id", "block_key", F.lit(True).alias("_night"))
            .unionByName(reg_fp.select("record_id", "block_key", F.lit(False).alias("_night"))))
    # the engine's cap (hdwm.blocking.cap_frequent_pairs) as a count per key: the night's keys are few, so
    # the counts are broadcast back instead of sorting every holder row into a window
    ub = (held.groupBy("block_key").agg(F.count(F.lit(1)).alias("ub"))
          .filter(F.col("ub") <= eff.frequentPairMaxBlock))
    counted = _freeze(held.join(F.broadcast(ub), "block_key"))
    night_fk = counted.filter("_night").select("record_id", "block_key", "ub")
    reg_fk = counted.filter(~F.col("_night")).select("record_id", "block_key")
    return night_fk, reg_fk


def _frequent_pair_matches(sh: SharedTokens, night_tok: DataFrame, freq: DataFrame,
                           eff: LinkageProfile) -> DataFrame | None:
    """(``night_key``, ``ref_key``, ``weight``): a night reference and a registry
    reference holding one rare pair of frequent tokens (``_frequent_pair_keys``);
    ``weight`` = ``ln(N / ub)`` nats, the rarity of the pair itself (``ub``
    references hold it). None when ``frequentPairMaxBlock`` is 0."""
    keys = _frequent_pair_keys(sh, night_tok, freq, eff)
    if keys is None:
        return None
    night_fk, reg_fk = keys
    n = max(int(eff.referenceCount or 1), 1)
    return night_fk.withColumnRenamed("record_id", "night_key").join(
        reg_fk.withColumnRenamed("record_id", "ref_key"), "block_key").select(
        "night_key", "ref_key", F.log(F.lit(float(n)) / F.col("ub")).alias("weight"))


def _frequent_pair_candidates(sh: SharedTokens, night_tok: DataFrame, freq: DataFrame,
                              eff: LinkageProfile) -> DataFrame:
    """Registry references (``ref_key``) holding one of the engine's rare pairs of
    frequent tokens that a night reference holds (``_frequent_pair_keys``; a
    semi-join, no night-registry pairs formed); empty when
    ``frequentPairMaxBlock`` is 0."""
    keys = _frequent_pair_keys(sh, night_tok, freq, eff)
    if keys is None:
        return sh.reg_rows.select("ref_key").limit(0)
    return keys[1].select(F.col("record_id").alias("ref_key"))


def ranked_candidates(night_bt: DataFrame, reg_bt: DataFrame, base_mem: DataFrame, eff: LinkageProfile,
                      top_entities: int = TOP_ENTITIES, extra: DataFrame | None = None) -> DataFrame:
    """The ``ranked`` neighbourhood: for each night reference, the registry
    entities it shares a pair key with, best ``top_entities`` only.

    A registry reference shares a key with a night reference when they share
    two blocking tokens (``blockByPairs``; without it one blocking token is a
    key) or, with the engine's ``rareTokenBlocks``, one blocking token rarer
    than ``√beta`` (``hdwm.blocking.rare_token_limit``): the engine's own block
    keys (``block_key``), so ``ranked`` never pulls in more than ``block_key``.
    Such a pair is weighted by the inverse document
    frequency of the blocking tokens it shares, ``Σ ln(N / freq)`` in nats (the
    evidence weight of ``identifyingAgreementRule``; N = references after the
    night). Each entity is ranked, per night reference, by its best member's
    weight (ties: the smaller entity id), and the first ``top_entities`` are kept.

    Why a rank and not every key holder (``pair_key``): in person data with
    households a pair key (a street with a city, a surname with a zip) is held
    by co-residents and neighbours, so the holders of a night's keys are most of
    the registry after a few nights and a night costs as much as the history
    (docs/registry.md). A person's own
    earlier references share the rare tokens (an SSN, a date of birth, a name
    with an address), so they rank high; the rank bounds the neighbourhood by
    the night's size – at most ``top_entities`` entities per night reference –
    whatever the history's. A single rare token shared alone (the engine's
    ``rareTokenBlocks``) counts, as in the engine: unranked (``block_key``) it
    brought nearly the whole registry in (docs/registry.md), ranked it is
    bounded like the rest; left out (the form before 4f2562a), 19 % of the night
    references of night 30 of the messy 30 x 10,000 run that had an earlier
    true reference shared no key with any of them (docs/registry.md).

    The engine's rare pairs of frequent tokens (``frequentPairMaxBlock``: JOHN
    SMITH held by at most 50 references, with ``initialPairBlocks`` ULLAH R)
    are ranked with them (``extra``, weight ``ln(N / holders)``): unranked,
    their holders were most of a messy night's neighbourhood (measured at 4f2562a: at
    night 4 of the 30 x 10,000 run 25,415 of its references against 4,575
    from the ranked pair keys).

    Args:
        night_bt: (``ref_key``, ``token``, ``freq``) the night's blocking tokens.
        reg_bt: (``ref_key``, ``token``) registry references' tokens that are
            among the night's blocking tokens.
        base_mem: registry members with ``ref_key`` and ``entity_id``.
        eff: the profile made effective for N (``referenceCount``, ``blockByPairs``).
        top_entities: entities kept per night reference (≥ 1).
        extra: optional (``night_key``, ``ref_key``, ``weight``) further matches
            ranked with the pair-key ones (weights of one pair are summed).

    Returns: DataFrame(``ref_key``): one registry reference per kept entity
    (the entity is pulled in whole by the caller).

    Raises:
        ValueError: ``top_entities < 1``.
    """
    if top_entities < 1:
        raise ValueError(f"top_entities must be at least 1, got {top_entities}")
    return (entity_ranks(night_bt, reg_bt, base_mem, eff, extra).filter(F.col("rank") <= top_entities)
            .select("ref_key"))


def entity_ranks(night_bt: DataFrame, reg_bt: DataFrame, base_mem: DataFrame, eff: LinkageProfile,
                 extra: DataFrame | None = None) -> DataFrame:
    """Every registry entity a night reference shares a key with, ranked: the
    ordering ``ranked_candidates`` cuts (same arguments, see there).

    Returns: DataFrame(``night_key``, ``entity_id``, ``ref_key`` – the entity's
    best member, ``weight`` – its weight in nats, ``rank`` – 1 = best per night
    reference, ties to the smaller entity id).
    """
    matches = _freeze(key_matches(night_bt, reg_bt, eff, extra))
    best = (matches.join(entities_of(base_mem, matches), "ref_key")
            .groupBy("night_key", "entity_id")
            .agg(F.max(F.struct("weight", "ref_key")).alias("b")))
    w = Window.partitionBy("night_key").orderBy(F.desc("b.weight"), F.asc("entity_id"))
    return best.withColumn("rank", F.row_number().over(w)).select(
        "night_key", "entity_id", F.col("b.ref_key").alias("ref_key"), F.col("b.weight").alias("weight"), "rank")


def night_pair_keys(night_bt: DataFrame) -> DataFrame:
    """(``night_key``, ``block_key``): each reference's sorted pairs ``"a b"``
    (a < b) of its blocking tokens (``night_bt``: ``ref_key``, ``token``[,
    ``freq``]; the night's, or the registry's in ``candidate_references``),
    the engine's pair keys with ``blockByPairs``."""
    a = night_bt.select(F.col("ref_key").alias("night_key"), F.col("token").alias("t1"))
    b = night_bt.select(F.col("ref_key").alias("night_key"), F.col("token").alias("t2"))
    return a.join(b, "night_key").filter(F.col("t1") < F.col("t2")).select(
        "night_key", F.concat_ws(" ", "t1", "t2").alias("block_key"))


def key_matches(night_bt: DataFrame, reg_bt: DataFrame, eff: LinkageProfile,
                extra: DataFrame | None = None, reg_pk: DataFrame | None = None) -> DataFrame:
    """(``night_key``, ``ref_key``, ``weight``): every night reference and registry
    reference that share an engine block key (see ``ranked_candidates``), with
    the IDF weight of the blocking tokens they share in nats, plus ``extra``
    (weights of one pair summed). Arguments as ``ranked_candidates``.

    With ``blockByPairs`` and ``reg_pk`` (``ref_key``, ``block_key``: the
    registry references' pairs of blocking tokens that a night reference
    holds too, ``_scan_token_lists``) the pairs are found through the pair
    keys, and, with ``rareTokenBlocks``, through the rare tokens alone; only
    then are their shared tokens counted. Joining every night blocking token
    with all its stored holders (up to beta of them, and beta grows with √N)
    was the largest step of a night against 3M references. Two references
    sharing two or more tokens hold a pair key for each two of them, so the
    shared tokens, their count, the rarest and the weight are the same."""
    n = max(int(eff.referenceCount or 1), 1)
    nb = night_bt.select(F.col("ref_key").alias("night_key"), "token", "freq")
    rare_alone = eff.blockByPairs and getattr(eff, "rareTokenBlocks", False)
    if rare_alone:
        from .blocking import rare_token_limit
    if eff.blockByPairs and reg_pk is not None:
        shared_tokens = (night_pair_keys(night_bt).join(reg_pk, "block_key")
                         .select("night_key", "ref_key", F.explode(F.split("block_key", " ")).alias("token")))
        if rare_alone:
            limit = rare_token_limit(eff)
            shared_tokens = shared_tokens.unionByName(
                nb.filter(F.col("freq") <= limit).select("night_key", "token")
                .join(reg_bt.filter(F.col("freq") <= limit).select("ref_key", "token"), "token")
                .select("night_key", "ref_key", "token"))
        joined = shared_tokens.distinct().join(F.broadcast(nb.select("token", "freq").distinct()), "token")
    else:
        joined = nb.join(reg_bt.select("ref_key", "token"), "token")
    shared = (joined.groupBy("night_key", "ref_key")
              .agg(F.count(F.lit(1)).alias("shared"), F.min("freq").alias("rarest"),
                   F.sum(F.log(F.lit(float(n)) / F.col("freq"))).alias("weight")))
    share_a_key = F.col("shared") >= (2 if eff.blockByPairs else 1)
    if rare_alone:
        # the engine's own rule: a token rarer than sqrt(beta) is a block key alone (a person who
        # moved shares the surname, or an SSN beside another address); ranked, it cannot flood
        share_a_key = share_a_key | (F.col("rarest") <= rare_token_limit(eff))
    matches = shared.filter(share_a_key).select("night_key", "ref_key", "weight")
    if extra is not None:
        matches = (matches.unionByName(extra.select("night_key", "ref_key", "weight"))
                   .groupBy("night_key", "ref_key").agg(F.sum("weight").alias("weight")))
    return matches


#: ``scored`` neighbourhood: entities per night reference, best by key weight, that the comparator scores
#: (``LinkageProfile.registryScoredPool``' default)
SCORED_POOL = LinkageProfile.model_fields["registryScoredPool"].default
#: ``scored`` neighbourhood: members of one pooled entity scored against a night reference, best by key
#: weight (``LinkageProfile.registryScoredMembers``' default)
SCORED_MEMBERS = LinkageProfile.model_fields["registryScoredMembers"].default


def scored_candidates(night_bt: DataFrame, reg_bt: DataFrame, base_mem: DataFrame, night_tok: DataFrame,
                      reg_tok: DataFrame, freq: DataFrame, eff: LinkageProfile,
                      top_entities: int = TOP_ENTITIES, extra: DataFrame | None = None,
                      pool: int = SCORED_POOL, members: int = SCORED_MEMBERS,
                      correction: DataFrame | None = None, reg_pk: DataFrame | None = None,
                      reg_lists: DataFrame | None = None) -> DataFrame:
    """The ``scored`` neighbourhood: the ``ranked`` pool re-ranked by the engine's
    own comparator.

    For each night reference, the ``pool`` best entities by key weight
    (``entity_ranks``: shared blocking tokens weighted ``Σ ln(N / freq)``) are
    scored: their ``members`` best key-sharing members are compared with the
    night reference by the profile's comparator (``hdwm.compare.score_pairs``
    on ``comparison_tokens`` with the night's frequencies and N – the same
    score, evidence vetoes included, that the engine's first iteration gives
    the pair; after the population's token correction when ``correction`` is
    given, as in the engine). An entity's score is its best member's.
    Entities scoring below the profile's starting threshold ``mu`` are dropped
    – the engine links no pair below ``mu`` – and the ``top_entities`` best
    by score are kept (ties: key weight, then the smaller entity id).

    Why: key weight alone ranks a co-resident who shares the street, the city,
    the phone and the surname above the person's own earlier reference written
    with another address or a nickname; at one entity per night reference the
    ``ranked`` rule put the true entity first for 69 % of the night references
    with an earlier true reference (docs/registry.md). The comparator weighs the whole reference – given names, dates,
    identifiers and the household vetoes – as the engine will. The cost stays
    bounded by the night: at most ``pool × members`` scored pairs per night
    reference and ``top_entities`` entities pulled in.

    Args: as ``ranked_candidates``, plus ``night_tok`` / ``reg_tok``
    (``record_id`` = ref_key, ``tokens``) the night's and the registry's tokens,
    ``freq`` (``token``, ``freq``) the frequencies after the night, and
    ``correction`` (``token``, ``replacement``): when given, ``night_tok`` and
    ``freq`` are already corrected and the registry members scored are
    corrected by it before their comparison tokens are built, so the score is
    the engine's after its global correction; ``reg_pk`` the registry's pairs
    of blocking tokens a night reference holds too (``key_matches``);
    ``reg_lists`` (``record_id``, ``tokens``) the stored token lists of at
    least every registry reference ``key_matches`` can return
    (``SharedTokens.reg_lists``): read instead of ``reg_tok``, so the
    compared members' tokens do not cost a scan of every stored list. A
    reference the night sends again is compared with its night tokens only.

    Returns: DataFrame(``ref_key``): one registry reference per kept entity.

    Raises:
        ValueError: ``top_entities``, ``pool`` or ``members`` below 1.
    """
    from .compare import comparison_tokens, score_pairs

    if min(top_entities, pool, members) < 1:
        raise ValueError(f"top_entities, pool and members must be at least 1, got {top_entities}, {pool}, {members}")
    pool = max(pool, top_entities)
    matches = _freeze(key_matches(night_bt, reg_bt, eff, extra, reg_pk))
    matches = _freeze(matches.join(entities_of(base_mem, matches), "ref_key"))
    ent_w = Window.partitionBy("night_key").orderBy(F.desc("ew"), F.asc("entity_id"))
    pooled = (matches.groupBy("night_key", "entity_id").agg(F.max("weight").alias("ew"))
              .withColumn("erank", F.row_number().over(ent_w)).filter(F.col("erank") <= pool))
    mem_w = Window.partitionBy("night_key", "entity_id").orderBy(F.desc("weight"), F.asc("ref_key"))
    pairs = _freeze(matches.join(pooled, ["night_key", "entity_id"])
                    .withColumn("mrank", F.row_number().over(mem_w)).filter(F.col("mrank") <= members)
                    .select("night_key", "ref_key", "entity_id", "ew"))
    involved = (pairs.select(F.col("night_key").alias("record_id")).distinct()
                .unionByName(pairs.select(F.col("ref_key").alias("record_id")).distinct()))
    # the tokens (a union), the comparison tokens and the scores are each materialised, so the
    # comparison starts from one stored frame as the engine's does (hdwm.pipeline): plans mixing the
    # union or the Python UDF with these windows and joins failed under AQE, on night 7 of a 10-night
    # run and on night 30 of a 30-night run ("Can't zip RDDs with unequal numbers of partitions")
    # a registry reference the night sends again is compared with its night tokens: one row per id
    stored_ids = (pairs.select(F.col("ref_key").alias("record_id")).distinct()
                  .join(night_tok.select("record_id"), "record_id", "left_anti"))
    reg_part = (reg_tok if reg_lists is None else reg_lists).select("record_id", "tokens").join(
        F.broadcast(stored_ids), "record_id", "left_semi")
    if correction is not None:
        reg_part = apply_corrections(reg_part, correction, eff.removeDuplicateTokens)
    toks = _freeze(night_tok.select("record_id", "tokens").join(involved, "record_id", "left_semi")
                   .unionByName(reg_part))
    ct = _freeze(comparison_tokens(toks, frequencies_for(freq, toks), eff, int(eff.referenceCount or 1)))
    scored = _freeze(score_pairs(pairs.select(F.col("night_key").alias("id1"), F.col("ref_key").alias("id2")),
                                 ct, eff))
    best = (pairs.join(scored.withColumnRenamed("id1", "night_key").withColumnRenamed("id2", "ref_key"),
                       ["night_key", "ref_key"])
            .filter(F.col("score") >= float(eff.mu) - 1e-12)
            .groupBy("night_key", "entity_id")
            .agg(F.max(F.struct("score", "ref_key")).alias("b"), F.max("ew").alias("ew")))
    w = Window.partitionBy("night_key").orderBy(F.desc("b.score"), F.desc("ew"), F.asc("entity_id"))
    return (best.withColumn("rank", F.row_number().over(w)).filter(F.col("rank") <= top_entities)
            .select(F.col("b.ref_key").alias("ref_key")))


def _decision_entities(spark: SparkSession, base_mem: DataFrame, must: DataFrame | None,
                       cannot: DataFrame | None) -> set[str]:
    """Base entities a night must relink so that decisions hold: both entities
    of a must-link pair whose references are in different entities (or one is
    not in the registry yet), and the entity of a cannot-link pair held together.
    Decision-sized: collected."""
    pairs = []
    if must is not None:
        pairs += [("must", r.id1, r.id2) for r in must.collect()]
    if cannot is not None:
        pairs += [("cannot", r.id1, r.id2) for r in cannot.collect()]
    if not pairs:
        return set()
    keys = sorted({k for _, a, b in pairs for k in (a, b)})
    kdf = spark.createDataFrame([(k,) for k in keys], "ref_key string")
    ent = {r.ref_key: r.entity_id for r in base_mem.join(kdf, "ref_key", "left_semi").select(
        "ref_key", "entity_id").collect()}
    out: set[str] = set()
    for kind, a, b in pairs:
        ea, eb = ent.get(a), ent.get(b)
        if kind == "must" and ea != eb:
            out |= {e for e in (ea, eb) if e is not None}
        if kind == "cannot" and ea is not None and ea == eb:
            out.add(ea)
    return out
