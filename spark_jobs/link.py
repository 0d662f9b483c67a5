"""spark-submit entry point: link one day's curated references with HDWM.

    spark-submit spark_jobs/link.py --curated DIR --out DIR --ds YYYY-MM-DD \
        --profile NAME_OR_PATH [--checkpoint-dir DIR] [--registry DIR [--rebuild]] \
        [--source-col source] [--decisions FILE] [--landing DIR]

Input ``--curated``: Parquet of cleansed references with ``record_id``
(string), ``source`` (``--source-col``; a plain identifier
``[A-Za-z0-9_-]+``), ``truth_entity`` (nullable), ``ds``, ``source_file``,
``line_number`` and any attribute columns. A reference is keyed by
(source, record_id), which must be unique; two sources may reuse a record id.
The engine sees one key ``ref_key = source|record_id``, which never reaches
an output. The reference text is every other column in file order, cast to
string (DATE/TIMESTAMP as ``yyyyMMdd``), nulls skipped, joined by spaces.

Without ``--registry`` the night is linked on its own. With ``--registry DIR``
(``lake/entities``) it is linked incrementally against the latest published
registry version before ``--ds`` (``hdwm.registry``, ``hdwm.incremental``) and
registry version ``ds=<ds>`` is written (the night's layers of members,
entities, changes, frequencies and tokens, then ``_COMPLETE.json``), after
which versions beyond the last ``--keep-versions`` published ones (default 7)
are removed (``hdwm.registry.prune``; when it refuses, for an unreadable
manifest, the night goes on and the log says why); when ``ds`` was published already, that
version is first moved aside to ``.published-ds=<ds>/`` (``hdwm.registry.stash_published``). A date after a published one, or one whose
predecessor (a date with ``lake/curated/<p>`` or, with ``--landing``,
``landing/<source>/<p>``) was neither published nor rejected, is refused.
``--rebuild`` (needs ``--registry``): a full rebuild instead of an incremental
night: every member of that base version and the night's references are
relinked in one batch (``hdwm.incremental.rebuild_night``), and version
``ds=<ds>`` records every difference against the base as new, grow, merge
and split rows; ``_COMPLETE.json`` gets ``rebuild`` (the pairwise precision,
recall and F1 of the rebuilt clusters against the base's incremental
entities, over the base's references) and ``rebuild_f1``. The same refusals
apply. ``--decisions`` (default ``$WASHLINE_DATA/decisions/decisions.csv`` if it
exists): must_link / cannot_link pairs that always hold.

Output (all overwritten on rerun):
* ``<out>/links/`` Parquet: ``source`` string, ``record_id`` string (the
  source's record id), ``cluster_id`` string (with ``--registry``: the entity
  id; without: the smallest record_id of the cluster, or a minted ``E…`` id
  when the night's sources reuse record ids), ``iteration`` int (0 = leftover
  singleton), ``mu`` double (null for singletons), ``quality`` double,
  ``cluster_size`` int (with ``--registry``: the entity's member count) –
  one row per input record.
* ``<out>/clusters/`` Parquet: ``cluster_id, cluster_size, quality, iteration``.
* ``<out>/pairs/`` Parquet (why linked): ``source_a, record_id_a, source_b,
  record_id_b, score, iteration, accepted`` (true: a link inside an accepted
  cluster; false: a close call below mu), ``agreeing`` / ``conflicting``
  (comparison tokens both / only one of the references hold); see ``why_pairs``.
* ``<out>/metrics.json`` (written atomically): ds, profile, references,
  clusters, singletons, largest_cluster, iterations[], pairwise (null without
  truth; over the night's references), registry (the ``_COMPLETE.json``
  counts, null without ``--registry``), seconds. It is deleted when the job
  starts and written last, so its presence means ``links/`` and ``clusters/``
  are complete: a job killed mid-write (``links/`` half written) leaves no
  metrics.json, and the rerun overwrites both folders.

Progress: one ``[link] <stage>: key=value ... (seconds)`` line per stage on
stderr (under spark-submit: stdout, hence the Airflow task log), with an
estimate of the time left after each HDWM iteration; see ``run``.

Exit status: 0 on success; 2 (permanent, not retried) on bad arguments or
profile, unusable input (no record_id/source column, a bad source name,
duplicate (source, record_id)), a registry refusal, an incomplete base
version, a bad decisions file, or a transitive closure that did not converge
within the profile's ``ccMaxRounds`` (the same input and profile would fail the
same way on a retry); 1 on any other error (raised after logging). On exit 2
the one-line message is also written to ``<out>/metrics.error.json``
(``{"exit_code": 2, "error": "..."}``, atomically; deleted when the job
starts), where the Airflow operator reads it for the run summary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

try:  # editable install or --py-files
    import hdwm  # noqa: F401

    _HDWM_FROM_SCRIPT_DIR = False
except ImportError:  # run as a plain script from the repo
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import hdwm  # noqa: F401

    _HDWM_FROM_SCRIPT_DIR = True

from jobcontract import EXIT_CONFIG, EXIT_OK, error_path, pyfiles_zip, validate_ds, write_json_atomic

META_COLUMNS = ("record_id", "source", "truth_entity", "ds", "source_file", "line_number")


def reference_text(df):
    """The ``text`` Column: attribute columns (all but META_COLUMNS) cast to
    string, dates as yyyyMMdd, nulls skipped, joined with spaces."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    parts = []
    for f in df.schema.fields:
        if f.name in META_COLUMNS:
            continue
        if isinstance(f.dataType, (T.DateType, T.TimestampType, T.TimestampNTZType)):
            parts.append(F.date_format(F.col(f.name), "yyyyMMdd"))
        else:
            parts.append(F.col(f.name).cast("string"))
    if not parts:
        return F.lit("")
    return F.concat_ws(" ", *parts)


def ship_hdwm(spark) -> None:
    """When ``hdwm`` was only found beside this script (no install, no
    ``--py-files``), zip it (``jobcontract.pyfiles_zip``) and ``addPyFile`` it
    so Python workers (pandas UDFs) can import it too."""
    import tempfile

    spark.sparkContext.addPyFile(str(pyfiles_zip(tempfile.mkdtemp(prefix="hdwm-pyfiles-"))))


class LinkInputError(ValueError):
    """The curated input cannot be linked as it is (exit 2, a retry cannot fix it)."""


def _default_decisions() -> str | None:
    """``$WASHLINE_DATA/decisions/decisions.csv`` when it exists, else None."""
    root = os.environ.get("WASHLINE_DATA")
    if root and Path(root, "decisions", "decisions.csv").is_file():
        return str(Path(root, "decisions", "decisions.csv"))
    return None


def attributes_map(df):
    """The ``attributes`` Column: map attribute column (all but META_COLUMNS) →
    value cast to string (dates ``yyyy-MM-dd``), null values left out."""
    from pyspark.sql import functions as F

    names = [f.name for f in df.schema.fields if f.name not in META_COLUMNS]
    if not names:
        return F.create_map().cast("map<string,string>")
    kv = []
    for n in names:
        kv += [F.lit(n), F.col(n).cast("string")]
    return F.map_filter(F.create_map(*kv), lambda k, v: v.isNotNull())


def run(curated: str, out: str, ds: str, profile_name: str, checkpoint_dir: str | None = None, spark=None, *,
        registry: str | None = None, source_col: str = "source", decisions: str | None = None,
        landing: str | None = None, neighbourhood: str | None = None, rebuild: bool = False,
        top_entities: int | None = None, keep_versions: int | None = 7) -> dict:
    """Link ``curated`` into ``out``; returns the metrics dict written to metrics.json.

    Progress: one ``[link] <stage>: key=value ... (stage Xs; Ys since start)``
    line per stage on stderr (``hdwm.progress``): start, read curated,
    decisions, then with ``registry`` the registry stages (read base version,
    token frequencies maintained, neighbourhood pulled in, link, id
    assignment, write version), without it the link, then the written
    outputs and done. After each engine iteration a line estimates the time
    left in the mu loop (``hdwm.progress.watch_engine``); the engine's own
    ``[hdwm]`` lines stay beside them.

    References are keyed by (``source_col``, ``record_id``): two sources may
    reuse a record id. With ``registry`` (``lake/entities``) the night is
    linked incrementally against the published registry version before ``ds``
    (``hdwm.incremental``) and version ``ds`` is written there; ``cluster_id``
    is then the entity id. ``decisions`` (default
    ``$WASHLINE_DATA/decisions/decisions.csv`` if present) holds must-link /
    cannot-link pairs that always hold. ``neighbourhood`` and ``top_entities``
    (None: the profile's ``registryNeighbourhood`` / ``registryTopEntities``) are
    passed to ``hdwm.incremental.link_night``.
    ``rebuild`` (needs ``registry``): relink the base version's every member
    with the night in one batch (``hdwm.incremental.rebuild_night``); the
    registry stages are then recount, rebuild link and id assignment.
    ``keep_versions``: after the version is written, keep the last this many
    published versions and delete what no kept version needs
    (``hdwm.registry.prune``); None or 0: keep everything.

    Raises:
        ValueError: ``rebuild`` without ``registry``.
        hdwm.config.ProfileError: unknown or invalid profile.
        LinkInputError: no ``record_id``/source column, a bad source name, or
            duplicate (source, record_id).
        hdwm.registry.RegistryOrderError: the registry refuses ``ds`` (a later
            date is published, or an earlier one is pending).
        hdwm.registry.RegistryError / hdwm.incremental.DecisionsError: unusable base version / decisions file.
    """
    from hdwm.progress import Progress, activate

    if rebuild and not registry:
        raise ValueError("rebuild needs the entity registry (--registry): it relinks the registry's history")
    progress = Progress("link")
    with activate(progress):
        return _run(progress, curated, out, ds, profile_name, checkpoint_dir, spark, registry=registry,
                    source_col=source_col, decisions=decisions, landing=landing, neighbourhood=neighbourhood,
                    rebuild=rebuild, top_entities=top_entities, keep_versions=keep_versions)


def _run(progress, curated, out, ds, profile_name, checkpoint_dir, spark, *, registry, source_col, decisions,
         landing, neighbourhood, rebuild=False, top_entities=None, keep_versions=None) -> dict:
    """``run``'s body, saying its stages on ``progress``."""
    from pyspark.sql import functions as F

    from hdwm.config import load_profile
    from hdwm.progress import watch_engine
    from hdwm.registry import (SOURCE_PATTERN, check_sources, clear_markers, read_version, ref_key_col,
                               resolve_base, write_version)
    from hdwm.spark import get_spark, tune_for_input

    t0 = time.time()
    profile = load_profile(profile_name)
    # The completion marker goes first: until it is rewritten, out/ is not a result.
    Path(out, "metrics.json").unlink(missing_ok=True)
    base_ds = None
    if registry:
        # refusals come before Spark starts: they are about dates, not data
        base_ds = resolve_base(registry, ds, curated_root=Path(curated).parent, landing=landing)
    decisions = decisions if decisions is not None else _default_decisions()
    from hdwm.incremental import decision_pairs

    pairs = decision_pairs(decisions)  # a bad decisions file is refused before Spark starts, too (DecisionsError)
    own_ckpt = checkpoint_dir is None
    ckpt = checkpoint_dir or os.path.join(out, "_checkpoint")
    progress.say("start", ds=ds, curated=curated, out=out, profile=profile.name, checkpoint=ckpt,
                 registry=registry or "none", base_ds=base_ds or "none", decisions=decisions or "none",
                 **({"mode": "full rebuild"} if rebuild else {}))
    if spark is None:
        spark = get_spark(f"washline-link-{ds}")
        # Spark's INFO lines would bury the job's story in the Airflow task log (as in cleanse.py)
        spark.sparkContext.setLogLevel(os.environ.get("WASHLINE_SPARK_LOG_LEVEL", "WARN"))
        progress.say("Spark session ready", master=spark.sparkContext.master)
    if _HDWM_FROM_SCRIPT_DIR:
        ship_hdwm(spark)
    t_read = time.time()
    df = spark.read.parquet(curated)
    if "record_id" not in df.columns:
        raise LinkInputError(f"{curated}: no record_id column")
    if source_col not in df.columns:
        raise LinkInputError(f"{curated}: no source column {source_col!r} (references are keyed by source and record_id)")
    cols = [F.col(source_col).cast("string").alias("source"), F.col("record_id").cast("string").alias("record_id"),
            reference_text(df).alias("text")]
    if "truth_entity" in df.columns:
        cols.append(F.col("truth_entity").cast("string").alias("truth_entity"))
    if registry:
        cols.append(attributes_map(df).alias("attributes"))
    refs = df.select(*cols).withColumn("ref_key", ref_key_col()).localCheckpoint(eager=True)
    # one pass for the counts and the source-name check (each Spark job costs a round trip;
    # the names of the bad sources are only looked up when there are some)
    bad_source = F.col("source").isNull() | ~F.col("source").rlike(SOURCE_PATTERN.pattern)
    crow = refs.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("ref_key").alias("d"),
                    F.countDistinct("record_id").alias("r"), F.countDistinct("source").alias("s"),
                    F.count(F.when(bad_source, 1)).alias("bad")).first()
    if crow["bad"]:
        try:
            check_sources(refs)
        except ValueError as exc:
            raise LinkInputError(f"{curated}: {exc}") from None
    if crow["n"] != crow["d"]:
        nulls = refs.filter(F.col("record_id").isNull() | F.col("source").isNull()).count()
        if nulls:
            raise LinkInputError(f"{curated}: {nulls} of {crow['n']} rows have no record_id or no source "
                                 f"(a reference is keyed by both; cleansing quarantines such rows)")
        dup = (refs.groupBy("source", "record_id").count().filter("count > 1").limit(3).collect())
        shown = ", ".join(f"{r.source}/{r.record_id}" for r in dup)
        raise LinkInputError(f"{curated}: (source, record_id) is not unique: {crow['n']} rows, {crow['d']} distinct "
                             f"(e.g. {shown})")
    tune_for_input(spark, int(crow["n"]))  # shuffle partitions for the night's size (unless set on spark-submit)
    progress.say("read curated", {"references": int(crow["n"]), "sources": int(crow["s"])},
                 stage_seconds=time.time() - t_read)
    from hdwm.incremental import read_decisions

    with progress.stage("decisions") as said:
        must, cannot = read_decisions(spark, decisions, pairs)
        said.update(must_link=must.count() if must is not None else 0,
                    cannot_link=cannot.count() if cannot is not None else 0)
    from hdwm.pipeline import mu_levels

    with watch_engine(progress, len(mu_levels(profile))):
        if registry:
            links, metrics, registry_counts, pairs = _link_with_registry(
                spark, refs, registry, ds, base_ds, profile, must, cannot, ckpt, t0, read_version, clear_markers,
                write_version, neighbourhood, rebuild=rebuild, top_entities=top_entities,
                keep_versions=keep_versions)
        else:
            with progress.stage("link") as said:
                links, metrics, pairs = _link_alone(spark, refs, ds, profile, must, cannot, ckpt,
                                                    unique_ids=crow["r"] == crow["n"])
                said.update(references=metrics["references"], clusters=metrics["clusters"],
                            iterations=len(metrics.get("iterations") or []))
            registry_counts = None
    with progress.stage("write links, clusters and pairs") as said:
        links.write.mode("overwrite").parquet(os.path.join(out, "links"))
        written = spark.read.parquet(os.path.join(out, "links"))
        from hdwm.pipeline import clusters_of

        clusters_of(written).write.mode("overwrite").parquet(os.path.join(out, "clusters"))
        said.update(links=metrics["references"], clusters=metrics["clusters"])
        if pairs is not None:
            why_pairs(pairs).write.mode("overwrite").parquet(os.path.join(out, "pairs"))
            said["pairs"] = spark.read.parquet(os.path.join(out, "pairs")).count()
    # metrics.json registry_pairwise: the whole registry version ds against the truth of every night so far
    # (hdwm.truth); history-sized, so only when the input carries truth_entity (demo and benchmark sets)
    metrics["registry_pairwise"] = None
    if registry and "truth_entity" in refs.columns:
        from hdwm.truth import registry_pairwise_after

        with progress.stage("registry pairwise vs truth (history-sized: every member, every night's truth)") as said:
            metrics["registry_pairwise"] = registry_pairwise_after(spark, registry, ds, Path(curated).parent, refs,
                                                                   source_col=source_col)
            said.update(metrics["registry_pairwise"] or {"references": 0})
    payload = {"ds": ds, "profile": profile.name, **metrics, "registry": registry_counts,
               "seconds": round(time.time() - t0, 2)}
    write_json_atomic(os.path.join(out, "metrics.json"), payload)
    if own_ckpt:
        shutil.rmtree(ckpt, ignore_errors=True)
    progress.say("done", ds=ds, references=payload["references"], clusters=payload["clusters"],
                 singletons=payload["singletons"], largest_cluster=payload["largest_cluster"],
                 pairwise=payload["pairwise"] or "none (no truth)", out=out, seconds=payload["seconds"])
    return payload


def why_pairs(pairs):
    """The engine's why-linked pairs (``hdwm.pipeline.PAIRS_SCHEMA``, ref_key ids)
    keyed back to ``source_a, record_id_a, source_b, record_id_b`` plus
    ``score, iteration, accepted, agreeing, conflicting`` (for the review of
    linkage on messy household data: the links that formed each accepted
    cluster and the close calls within ``NEAR_MISS_BAND`` below mu; with a
    registry, pairs with already published references too)."""
    from hdwm.registry import split_ref_key

    sa, ra = split_ref_key("record_id_a")
    sb, rb = split_ref_key("record_id_b")
    return pairs.select(sa.alias("source_a"), ra.alias("record_id_a"), sb.alias("source_b"), rb.alias("record_id_b"),
                        "score", "iteration", "accepted", "agreeing", "conflicting")


def _summary(links) -> dict:
    """references / clusters / singletons / largest_cluster of a links frame."""
    from pyspark.sql import functions as F

    s = links.agg(F.count(F.lit(1)).alias("refs"), F.countDistinct("cluster_id").alias("clusters"),
                  F.sum(F.when(F.col("cluster_size") == 1, 1).otherwise(0)).alias("singletons"),
                  F.max("cluster_size").alias("largest")).first()
    return {"references": int(s["refs"]), "clusters": int(s["clusters"]), "singletons": int(s["singletons"] or 0),
            "largest_cluster": int(s["largest"] or 0)}


def _link_alone(spark, refs, ds, profile, must, cannot, ckpt, unique_ids: bool):
    """One night on its own (no registry). ``cluster_id`` = the smallest
    record_id of the cluster when record ids are unique across the night's
    sources (as before the entity registry), else an ``E…`` id minted from
    ``ds`` and the cluster's smallest (source, record_id) (unique, never a record id)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from hdwm.incremental import engine_link, enforce_decisions
    from hdwm.metrics import pairwise_metrics
    from hdwm.registry import mint_id_col

    # no truth_entity for the engine: the pairwise figures are computed once, below, on the
    # clusters after the decisions (the engine's own would be a second Spark query of ~13 jobs)
    sub = refs.select("ref_key", "text")
    clusters, emetrics, pairs = engine_link(spark, sub, profile, None, None, must, cannot, ckpt)
    clusters = enforce_decisions(clusters, must, cannot)
    w = Window.partitionBy("cluster")
    j = clusters.join(refs.select("ref_key", "source", "record_id"), "ref_key")
    label = F.min("record_id").over(w) if unique_ids else mint_id_col(ds, F.min("ref_key").over(w))
    links = j.select("source", "record_id", label.alias("cluster_id"), "iteration", "mu", "quality",
                     F.count(F.lit(1)).over(w).cast("int").alias("cluster_size")).localCheckpoint(eager=True)
    metrics = {**emetrics, **_summary(links)}
    if "truth_entity" in refs.columns:
        metrics["pairwise"] = pairwise_metrics(links.join(refs.select("source", "record_id", "truth_entity"),
                                                          ["source", "record_id"]))
    return links, metrics, pairs


def _link_with_registry(spark, refs, registry, ds, base_ds, profile, must, cannot, ckpt, t0, read_version,
                        clear_markers, write_version, neighbourhood=None, rebuild=False, top_entities=None,
                        keep_versions=None):
    """Link the night against registry version ``base_ds`` (or, with
    ``rebuild``, relink that version's history with the night in one batch)
    and write version ``ds``."""
    from pyspark.sql import functions as F

    from hdwm.incremental import link_night, rebuild_night
    from hdwm.metrics import pairwise_metrics

    base = read_version(spark, registry, base_ds)
    night = refs.drop("ref_key")
    if rebuild:
        res = rebuild_night(spark, base, night, ds, profile, must, cannot, ckpt)
    else:
        res = link_night(spark, base, night, ds, profile, must, cannot, ckpt, neighbourhood=neighbourhood,
                         top_entities=top_entities)
    links = res.links.join(refs.select("ref_key", "source", "record_id"), "ref_key").select(
        "source", "record_id", F.col("entity_id").alias("cluster_id"), "iteration", "mu", "quality",
        F.col("member_count").cast("int").alias("cluster_size")).localCheckpoint(eager=True)
    complete = {"ds": ds, "base_ds": base_ds, **{k: res.counts[k] for k in (
        "references_total", "night_references", "new_references", "joined_existing", "entities_total",
        "new_entities", "grows", "merges", "splits", "split_rows", "updates")},
        "seconds": None, "profile": profile.name,
        "neighbourhood_references": res.counts["neighbourhood_references"],
        "neighbourhood_followers": res.counts.get("neighbourhood_followers", 0),
        "neighbourhood_rule": res.counts.get("neighbourhood_rule", "rebuild"),
        "top_entities": res.counts.get("top_entities"),
        "resent_references": res.counts["resent_references"]}
    if rebuild:
        complete["rebuild"] = res.counts["rebuild"]
        complete["rebuild_f1"] = res.counts["rebuild"]["f1"]
    from hdwm.registry import stash_published

    stash_published(registry, ds)  # a rerun of a published date: keep that publish until this one publishes
    clear_markers(registry, ds)
    complete["seconds"] = round(time.time() - t0, 2)
    if res.tokens is not None:
        complete["tokens_fingerprint"] = res.tokens_fingerprint  # what the next night checks (hdwm.registry)
    write_version(registry, ds, base, res.members, res.entities, res.changes, res.frequencies, complete,
                  tokens=res.tokens, tokens_fingerprint=res.tokens_fingerprint,
                  frequencies_full=res.frequencies_full, tokens_full=res.tokens_full)
    if keep_versions:
        from hdwm.registry import RegistryError, prune

        try:
            prune(registry, keep=keep_versions)
        except RegistryError as exc:  # the night's version is written and sound: retention waits, the night goes on
            print(f"[link] warning: {exc}", file=sys.stderr)
    em = res.engine_metrics or {}
    metrics = {**{k: em[k] for k in ("effective_parameters", "iterations", "stages") if k in em},
               "engine_references": em.get("references"), **_summary(links), "pairwise": None}
    if "truth_entity" in refs.columns:
        metrics["pairwise"] = pairwise_metrics(links.join(refs.select("source", "record_id", "truth_entity"),
                                                          ["source", "record_id"]))
    return links, metrics, complete, res.pairs


def error_file(out: str) -> Path:
    """Where a refused or permanently failed run leaves its one-line error:
    ``<out>/metrics.error.json`` (``jobcontract.error_path`` of ``metrics.json``)."""
    return error_path(Path(out) / "metrics.json")


def _fail(out: str, message: str, code: int = EXIT_CONFIG, keep_pending: bool = False) -> int:
    """Print ``[link] error: <message>`` to stderr, write it to
    ``metrics.error.json`` (``{"exit_code", "error"}``, plus ``"keep_pending": true``
    when the date was refused before anything of it was linked, for a reason outside its data: the
    registry's order or the decisions file; the report then leaves the date pending, not rejected,
    so the next date waits for it) and return ``code``."""
    print(f"[link] error: {message}", file=sys.stderr)
    payload = {"exit_code": code, "error": message}
    if keep_pending:
        payload["keep_pending"] = True
    try:
        write_json_atomic(error_file(out), payload)
    except OSError as err:  # the exit code and the task log still tell the story
        print(f"[link] warning: could not write {error_file(out)}: {err}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="washline HDWM link job")
    ap.add_argument("--curated", required=True, help="Parquet folder of cleansed references")
    ap.add_argument("--out", required=True, help="output folder for links/, clusters/, metrics.json")
    ap.add_argument("--ds", required=True, help="logical date YYYY-MM-DD")
    ap.add_argument("--profile", default="default", help="profile name (include/config/<name>.yaml) or YAML path")
    ap.add_argument("--checkpoint-dir", default=None)
    ap.add_argument("--registry", default=None, help="entity registry root (lake/entities): link incrementally")
    ap.add_argument("--rebuild", action="store_true",
                    help="with --registry: relink the base version's whole history with the night in one batch")
    ap.add_argument("--source-col", default="source", help="column naming the source of a reference")
    ap.add_argument("--decisions", default=None,
                    help="must_link/cannot_link CSV (default $WASHLINE_DATA/decisions/decisions.csv if present)")
    ap.add_argument("--landing", default=None, help="landing root: its <source>/<ds> folders count as pending dates")
    ap.add_argument("--keep-versions", type=int, default=7,
                    help="with --registry: published registry versions kept after the night (0: keep all)")
    a = ap.parse_args(argv)
    from hdwm.closure import ClosureDidNotConverge
    from hdwm.config import ProfileError
    from hdwm.incremental import DecisionsError
    from hdwm.registry import RegistryError, RegistryOrderError

    error_file(a.out).unlink(missing_ok=True)  # never report a previous attempt's error
    try:
        validate_ds(a.ds, "--ds")
    except ValueError as exc:
        return _fail(a.out, str(exc))
    if a.keep_versions < 0:
        return _fail(a.out, f"--keep-versions must be 0 (keep all) or more, got {a.keep_versions}")
    if a.rebuild and not a.registry:
        return _fail(a.out, "--rebuild needs --registry (a rebuild relinks the entity registry's history)")
    try:
        run(a.curated, a.out, a.ds, a.profile, a.checkpoint_dir, registry=a.registry, source_col=a.source_col,
            decisions=a.decisions, landing=a.landing, rebuild=a.rebuild, keep_versions=a.keep_versions)
    except (RegistryOrderError, DecisionsError) as exc:
        # about the dates' order or the shared decisions file, not this night's data: the report keeps the
        # date pending (no _REJECTED.json), so the next date waits for it instead of leaving its references out
        return _fail(a.out, str(exc), keep_pending=True)
    except (ProfileError, LinkInputError, RegistryError) as exc:
        return _fail(a.out, str(exc))
    except ClosureDidNotConverge as exc:  # deterministic: a retry of the same input would fail the same way
        return _fail(a.out, f"{exc} (the profile's ccMaxRounds); the night is not published: raise ccMaxRounds "
                            f"in the profile or look for an oversized component")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
