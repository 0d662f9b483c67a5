"""The HDWM iteration loop: tokens → frequencies → (correction) → blocks →
scores → links ≥ mu → connected components → entropy quality ≥ epsilon →
iterate with mu raised (DWM00 driver, Talburt et al. 2020; SparkDWM 2024).

Input ``refs`` columns: ``record_id`` (string, unique), ``text`` (string, the
reference), optional ``truth_entity`` (string, nullable) for pairwise metrics.

Output ``links`` columns (one row per input record):
``record_id`` string, ``cluster_id`` string (smallest record_id of the
cluster), ``iteration`` int (1-based iteration that accepted the cluster; 0
for leftover singletons), ``mu`` double (threshold at link time; null for
singletons), ``quality`` double (normalised entropy quality; 1.0 for
singletons), ``cluster_size`` int.

Iteration rule (DWM00): frequencies stay global; each iteration blocks only
the references not yet in an accepted cluster; pairs scoring ≥ mu are linked;
clusters (size ≥ 2) with quality ≥ epsilon are accepted; then
``mu += muIterate`` and ``epsilon += epsilonIterate`` (rounded to 2
decimals, as DWM). The loop stops when mu > 1, when an iteration finds no
candidate pair or no link, or when no reference is left. Scores do not
depend on mu, so a pair scored once is cached and never re-scored; and when
iteration 1 split no block (``maxBlockSize`` not reached), later iterations
reuse iteration 1's blocks restricted to the remaining references, which is
exactly what re-blocking them would give.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
import sys
import time

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .blocking import block_stats, build_blocks
from .closure import connected_components
from .compare import comparison_tokens, score_pairs
from .consistency import consistent_clusters
from .config import LinkageProfile, load_profile
from .frequency import apply_corrections, correction_map, token_frequencies
from .metrics import pairwise_metrics
from .quality import cluster_quality
from .tokenizer import tokenize

log = logging.getLogger("hdwm")

LINKS_SCHEMA = T.StructType(
    [
        T.StructField("record_id", T.StringType(), False),
        T.StructField("cluster_id", T.StringType(), False),
        T.StructField("iteration", T.IntegerType(), False),
        T.StructField("mu", T.DoubleType(), True),
        T.StructField("quality", T.DoubleType(), True),
        T.StructField("cluster_size", T.IntegerType(), False),
    ]
)


def _say(msg: str) -> None:
    """Progress line ``[hdwm] msg`` on stderr (stdout stays for results) and in the log."""
    print(f"[hdwm] {msg}", file=sys.stderr, flush=True)
    log.info(msg)


def _freeze(df: DataFrame, reliable: bool = False) -> DataFrame:
    """Materialise ``df`` once and cut its lineage.

    A local checkpoint (executor storage, MEMORY_AND_DISK) computes the plan
    exactly once. A reliable ``checkpoint`` (only with ``reliable`` and a
    checkpoint dir) runs the plan, then a second job that recomputes it to
    write the files – washline measured that double work as a third of the
    FEBRL3 link time, so it is kept for the state that crosses iterations
    (``assigned``, the score cache) and the closure's every-N-rounds cut.
    """
    if reliable and df.sparkSession.sparkContext.getCheckpointDir():
        return df.localCheckpoint(eager=True).checkpoint(eager=True)
    return df.localCheckpoint(eager=True)


PAIRS_SCHEMA = T.StructType(
    [
        T.StructField("record_id_a", T.StringType(), False),
        T.StructField("record_id_b", T.StringType(), False),
        T.StructField("score", T.DoubleType(), False),
        T.StructField("iteration", T.IntegerType(), False),
        T.StructField("accepted", T.BooleanType(), False),
        T.StructField("agreeing", T.ArrayType(T.StringType()), True),
        T.StructField("conflicting", T.ArrayType(T.StringType()), True),
    ]
)

#: rejected pairs this far below mu (score units) are kept in the pairs output as close calls
NEAR_MISS_BAND = 0.10


@dataclass
class LinkageResult:
    """What ``link_references`` returns.

    ``links``: one row per reference (``LINKS_SCHEMA``). ``pairs``: the
    why-linked output (``PAIRS_SCHEMA``): every link inside an accepted
    cluster (``accepted`` true, at the iteration that accepted it) and every
    close call, a scored pair of two still-unassigned references with
    ``mu − NEAR_MISS_BAND ≤ score < mu`` (``accepted`` false); ``agreeing`` =
    comparison tokens both hold, ``conflicting`` = comparison tokens only one
    holds. ``metrics``: as ``run_linkage``.
    """

    links: DataFrame
    pairs: DataFrame
    metrics: dict


def _decision_pairs(df: DataFrame | None) -> DataFrame | None:
    """Normalise a human-decision frame to distinct (``id1`` < ``id2``) string pairs."""
    if df is None:
        return None
    a, b = F.col("id1").cast("string"), F.col("id2").cast("string")
    return (
        df.select(F.least(a, b).alias("id1"), F.greatest(a, b).alias("id2"))
        .filter(F.col("id1") != F.col("id2"))
        .distinct()
    )


def _override(scores: DataFrame, decided: DataFrame | None, value: float) -> DataFrame:
    """(``id1``, ``id2``, ``score``) with ``score`` set to ``value`` for the pairs in ``decided``."""
    if decided is None:
        return scores
    hit = decided.select("id1", "id2", F.lit(True).alias("_hit"))
    return scores.join(hit, ["id1", "id2"], "left").select(
        "id1", "id2", F.when(F.col("_hit"), F.lit(float(value))).otherwise(F.col("score")).alias("score"))


def run_linkage(
    spark: SparkSession,
    refs: DataFrame,
    profile: LinkageProfile | str = "default",
    checkpoint_dir: str | None = None,
    *,
    frequencies: DataFrame | None = None,
    reference_count: int | None = None,
    must_link: DataFrame | None = None,
    cannot_link: DataFrame | None = None,
) -> tuple[DataFrame, dict]:
    """Run HDWM on ``refs`` and return ``(links_df, metrics)``.

    The same as ``link_references(...)`` without the pairs output.
    """
    res = link_references(spark, refs, profile, checkpoint_dir, frequencies=frequencies,
                          reference_count=reference_count, must_link=must_link, cannot_link=cannot_link)
    return res.links, res.metrics


def link_references(
    spark: SparkSession,
    refs: DataFrame,
    profile: LinkageProfile | str = "default",
    checkpoint_dir: str | None = None,
    *,
    frequencies: DataFrame | None = None,
    reference_count: int | None = None,
    must_link: DataFrame | None = None,
    cannot_link: DataFrame | None = None,
) -> LinkageResult:
    """Run HDWM on ``refs``; returns ``LinkageResult(links, pairs, metrics)``.

    Args:
        spark: the session.
        refs: DataFrame (``record_id``, ``text``[, ``truth_entity``]);
            ``record_id`` is an opaque unique key.
        profile: a ``LinkageProfile`` or a profile name/path.
        checkpoint_dir: directory for reliable checkpoints (``sc.setCheckpointDir``);
            without it local checkpoints are used.
        frequencies: optional (``token`` string, ``freq`` long) raw token
            counts (``raw_frequencies``: tokens before global correction)
            over the whole population ``refs`` is linked against (an entity
            registry plus the night). Given, they replace the counts over
            ``refs``, so ``refs`` may be a subset (the night and its
            candidate neighbourhood) and still see global frequencies; the
            correction map and blocking use them too.
        reference_count: references in that population (for
            ``frequencyScaling`` and IDF weights); default = rows of ``refs``.
        must_link / cannot_link: optional (``id1``, ``id2``) pairs of
            ``record_id`` (human decisions): a must-link pair is a candidate
            scoring 1.0 and is joined before any other link; a cannot-link
            pair scores 0.0 and two groups holding one are never joined
            (with ``clusterConsistency``; without it only the pair is vetoed).

    Returns:
        links_df (schema ``LINKS_SCHEMA``, checkpointed) and a metrics dict with
        ``references, clusters, singletons, largest_cluster, iterations[...],
        pairwise`` (None without truth), ``effective_parameters`` (beta/sigma
        after ``frequencyScaling`` for this input's size, see
        ``LinkageProfile.effective_summary``) and ``seconds``.

    Raises:
        ValueError: ``refs`` lacks ``record_id``/``text`` or has duplicate record ids.
        hdwm.config.ProfileError: invalid profile.
        hdwm.closure.ClosureDidNotConverge: connected components did not converge.
    """
    t0 = time.time()
    profile = load_profile(profile)
    missing = {"record_id", "text"} - set(refs.columns)
    if missing:
        raise ValueError(f"refs lacks columns {sorted(missing)}")
    if checkpoint_dir:
        spark.sparkContext.setCheckpointDir(str(checkpoint_dir))

    base_cols = [F.col("record_id").cast("string").alias("record_id"), F.col("text").cast("string").alias("text")]
    if "truth_entity" in refs.columns:
        base_cols.append(F.col("truth_entity").cast("string").alias("truth_entity"))
    refs = _freeze(refs.select(*base_cols))
    crow = refs.agg(F.count(F.lit(1)).alias("n"), F.countDistinct("record_id").alias("d")).first()
    n_refs, n_ids = int(crow["n"]), int(crow["d"])
    if n_ids != n_refs:
        raise ValueError(f"record_id is not unique: {n_refs} rows, {n_ids} distinct ids")
    # washline: beta/sigma scale with the input size (frequencyScaling); every
    # step below sees the effective values, which are logged and reported
    n_pop = int(reference_count) if reference_count else n_refs
    if frequencies is not None and n_pop < n_refs:
        raise ValueError(f"reference_count={n_pop} is smaller than the {n_refs} references being linked")
    eff_params = profile.effective_summary(n_pop)
    profile = profile.effective(n_pop)
    _say(f"({time.time() - t0:.1f}s) profile={profile.name} references={n_refs} comparator={profile.comparator} "
         f"beta={profile.beta} sigma={profile.sigma} (frequencyScaling={eff_params['frequencyScaling']} "
         f"x{eff_params['scale']} of beta={eff_params['beta_profile']} sigma={eff_params['sigma_profile']} "
         f"at {eff_params['frequencyReferenceSize']} references) mu={profile.mu} epsilon={profile.epsilon}")

    # every frozen frame is derived from frozen inputs only, so no plan is
    # ever computed twice (tokens → freq → correction map → corrected tokens)
    tokens = _freeze(tokenize(refs, profile))
    if frequencies is None:
        freq = _freeze(token_frequencies(tokens))
    else:
        # global (population) frequencies given: the subset sees them, not its own counts
        freq = _freeze(frequencies.select(F.col("token").cast("string").alias("token"),
                                          F.col("freq").cast("long").alias("freq")))
    if profile.runGlobalCorrection:
        cmap = _freeze(correction_map(freq, profile))
        n_fix = cmap.count()
        if n_fix:
            tokens = _freeze(apply_corrections(tokens, cmap, profile.removeDuplicateTokens))
            if frequencies is None:
                freq = _freeze(token_frequencies(tokens))
            else:
                # corrected population counts: every raw count moves to its replacement
                freq = _freeze(
                    freq.join(cmap, "token", "left")
                    .select(F.coalesce("replacement", "token").alias("token"), "freq")
                    .groupBy("token").agg(F.sum("freq").cast("long").alias("freq"))
                )
        _say(f"global correction: {n_fix} rare tokens replaced by a frequent token one edit away ({time.time() - t0:.1f}s since start)")
    frow = freq.agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.when(F.col("freq") >= profile.sigma, 1).otherwise(0)).alias("s")
    ).first()
    n_tokens, stops = int(frow["n"]), int(frow["s"] or 0)
    _say(f"distinct tokens={n_tokens} stop tokens (freq>={profile.sigma})={stops} ({time.time() - t0:.1f}s since start)")
    ctokens = _freeze(comparison_tokens(tokens, freq, profile, n_pop))
    ids = refs.select("record_id")
    must_link = _decision_pairs(must_link)
    cannot_link = _decision_pairs(cannot_link)
    if must_link is not None:  # decisions about references of this run only
        must_link = _freeze(must_link.join(ids.withColumnRenamed("record_id", "id1"), "id1")
                            .join(ids.withColumnRenamed("record_id", "id2"), "id2").select("id1", "id2"))
    if cannot_link is not None:
        cannot_link = _freeze(cannot_link.join(ids.withColumnRenamed("record_id", "id1"), "id1")
                              .join(ids.withColumnRenamed("record_id", "id2"), "id2").select("id1", "id2"))
    why = spark.createDataFrame([], "id1 string, id2 string, score double, iteration int, accepted boolean")

    cache = spark.createDataFrame([], "id1 string, id2 string, score double")
    assigned = spark.createDataFrame([], LINKS_SCHEMA)
    mu, eps = float(profile.mu), float(profile.epsilon)
    iterations: list[dict] = []
    it = 0
    n_assigned = 0
    first_members = first_pairs = None
    reblock = True
    # what the previous iteration left, so the next one only subtracts what it
    # accepted (``prev_done``) instead of starting again from iteration 1's blocks
    prev = None  # dict(members, pairs, bs, n_pairs, scored, n_links, eps, rec) of the previous iteration
    prev_done = None  # record ids accepted by the previous iteration (frozen), None = none
    while mu <= 1.0 + 1e-9:
        it += 1
        ti = time.time()
        n_active = n_refs - n_assigned
        rec = {"iteration": it, "mu": mu, "epsilon": eps, "references": n_active, "blocks": 0,
               "largest_block": 0, "pairs_compared": 0, "links": 0, "clusters": 0,
               "accepted_clusters": 0, "mean_quality": None, "unchanged": False, "components_checked": 0,
               "oversize_components": 0, "seconds": 0.0}
        if n_active < 2:
            rec["seconds"] = round(time.time() - ti, 2)
            iterations.append(rec)
            _say(f"iteration {it}: fewer than 2 references left, stop")
            break
        unchanged = prev is not None and prev_done is None and not reblock
        if first_members is None or reblock:
            active = tokens.join(assigned.select("record_id"), "record_id", "left_anti")
            br = build_blocks(active, freq, profile)
            members = _freeze(br.members)
            pairs = _freeze(br.pairs)
            if first_members is None:
                first_members, first_pairs = members, pairs
        elif unchanged:
            # The previous iteration accepted no cluster: the same references
            # remain, so the blocks and candidate pairs are exactly the same.
            members, pairs = prev["members"], prev["pairs"]
        else:
            # No block was split in iteration 1, so blocking the remaining
            # references again gives exactly iteration 1's blocks and pairs
            # restricted to them (frequencies are global): reuse, don't rebuild.
            # Blocks and pairs only shrink, so removing just what the previous
            # iteration accepted from its (already reduced) frames is the same.
            done = prev_done
            members = prev["members"].join(done, "record_id", "left_anti")
            members = _freeze(
                members.withColumn("block_size", F.count(F.lit(1)).over(Window.partitionBy("block_key")))
                .filter(F.col("block_size") >= 2)
            )
            pairs = _freeze(
                prev["pairs"].join(done.withColumnRenamed("record_id", "id1"), "id1", "left_anti")
                .join(done.withColumnRenamed("record_id", "id2"), "id2", "left_anti")
                .select("id1", "id2")
            )
        if must_link is not None and not unchanged:
            # human must-links are candidates whatever the blocking says
            live = ids.join(assigned.select("record_id"), "record_id", "left_anti")
            ml = (must_link.join(live.withColumnRenamed("record_id", "id1"), "id1")
                  .join(live.withColumnRenamed("record_id", "id2"), "id2").select("id1", "id2"))
            pairs = _freeze(pairs.unionByName(ml).distinct())
        if unchanged:
            bs, n_pairs = prev["bs"], prev["n_pairs"]
        else:
            bs = block_stats(members, profile)
            n_pairs = pairs.count()
        if it == 1:
            reblock = bs["oversize_blocks"] > 0
        t_block = time.time()
        rec.update(blocks=bs["blocks"], largest_block=bs["largest_block"], pairs_compared=n_pairs)
        if n_pairs == 0:
            rec["seconds"] = round(time.time() - ti, 2)
            iterations.append(rec)
            _say(f"iteration {it}: mu={mu:.2f} no candidate pairs, stop")
            break
        if unchanged:
            scored = prev["scored"]  # the same pairs: their scores are known
        else:
            new_pairs = pairs.join(cache.select("id1", "id2"), ["id1", "id2"], "left_anti")
            fresh = _override(_override(score_pairs(new_pairs, ctokens, profile), must_link, 1.0), cannot_link, 0.0)
            cache = _freeze(cache.unionByName(fresh))
            scored = _freeze(pairs.join(cache, ["id1", "id2"]))
        links = _freeze(scored.filter(F.col("score") >= mu - 1e-12))
        n_links = links.count()
        t_score = time.time()
        rec["links"] = n_links
        if n_links == 0:
            rec["seconds"] = round(time.time() - ti, 2)
            iterations.append(rec)
            _say(f"iteration {it}: mu={mu:.2f} refs={n_active} blocks={bs['blocks']} "
                 f"pairs={n_pairs} links=0, stop")
            break
        if unchanged and n_links == prev["n_links"] and abs(eps - prev["eps"]) < 1e-12:
            # Same references and a higher mu: the links are a subset of the
            # previous ones, so the same count means the same links, hence the
            # same clusters with the same quality, rejected again at the same
            # epsilon. Skip components and quality; the result is identical.
            rec.update(clusters=prev["rec"]["clusters"], accepted_clusters=0,
                       mean_quality=prev["rec"]["mean_quality"], unchanged=True)
            rec["seconds"] = round(time.time() - ti, 2)
            iterations.append(rec)
            _say(f"iteration {it}: mu={mu:.2f} eps={eps:.2f} refs={n_active} pairs={n_pairs} links={n_links}: "
                 f"the same links as iteration {it - 1}, so the same {rec['clusters']} cluster(s), none accepted "
                 f"(components and quality skipped; {rec['seconds']}s)")
            prev = dict(prev, rec=rec)
            prev_done = None
            mu = round(mu + profile.muIterate, 2)
            eps = round(min(1.0, eps + profile.epsilonIterate), 2)
            continue
        comps, rounds = connected_components(
            links, checkpoint_interval=profile.ccCheckpointInterval, max_rounds=profile.ccMaxRounds
        )
        comps = _freeze(comps.withColumnRenamed("component", "cluster_id"))
        if profile.clusterConsistency:
            # washline: split each component into conflict-free clusters
            # (hdwm.consistency; cannot-link constrained single linkage)
            comps, cstat = consistent_clusters(comps, links, ctokens, profile, cannot_link, must_link)
            comps = _freeze(comps)
            rec["components_checked"] = cstat["components_checked"]
            rec["oversize_components"] = cstat["oversize_components"]
        t_cc = time.time()
        q = cluster_quality(comps, tokens)
        if must_link is not None:
            # a cluster holding a human must-link is accepted whatever its entropy says
            forced = (
                must_link.join(comps.select(F.col("record_id").alias("id1"), F.col("cluster_id").alias("c1")), "id1")
                .join(comps.select(F.col("record_id").alias("id2"), F.col("cluster_id").alias("c2")), "id2")
                .filter(F.col("c1") == F.col("c2")).select(F.col("c1").alias("cluster_id")).distinct()
                .withColumn("_forced", F.lit(True))
            )
            q = q.join(forced, "cluster_id", "left").withColumn("_ok", (F.col("quality") >= eps - 1e-12)
                                                                | F.coalesce("_forced", F.lit(False)))
        else:
            q = q.withColumn("_ok", F.col("quality") >= eps - 1e-12)
        q = _freeze(q.select("cluster_id", "cluster_size", "quality", "_ok"))
        qrow = q.agg(
            F.count(F.lit(1)).alias("clusters"),
            F.sum(F.when(F.col("_ok"), 1).otherwise(0)).alias("accepted"),
            F.avg("quality").alias("mean_quality"),
            F.sum(F.when(F.col("_ok"), F.col("cluster_size")).otherwise(0)).alias("acc_refs"),
        ).first()
        n_assigned += int(qrow["acc_refs"] or 0)
        rec.update(clusters=int(qrow["clusters"]), accepted_clusters=int(qrow["accepted"] or 0),
                   mean_quality=round(float(qrow["mean_quality"]), 4) if qrow["mean_quality"] is not None else None)
        accepted = q.filter(F.col("_ok")).drop("_ok")
        new_assign = comps.join(accepted, "cluster_id").select(
            "record_id", "cluster_id", F.lit(it).cast("int").alias("iteration"),
            F.lit(mu).cast("double").alias("mu"), "quality", "cluster_size",
        )
        assigned = _freeze(assigned.unionByName(new_assign))
        # why-linked output: the links inside accepted clusters, and the close calls below mu
        na = new_assign.select("record_id", "cluster_id")
        inside = (
            links.join(na.select(F.col("record_id").alias("id1"), F.col("cluster_id").alias("c1")), "id1")
            .join(na.select(F.col("record_id").alias("id2"), F.col("cluster_id").alias("c2")), "id2")
            .filter(F.col("c1") == F.col("c2"))
            .select("id1", "id2", "score", F.lit(it).cast("int").alias("iteration"), F.lit(True).alias("accepted"))
        )
        near = scored.filter((F.col("score") < mu - 1e-12) & (F.col("score") >= mu - NEAR_MISS_BAND - 1e-12)).select(
            "id1", "id2", "score", F.lit(it).cast("int").alias("iteration"), F.lit(False).alias("accepted"))
        why = _freeze(why.unionByName(inside).unionByName(near))
        prev_done = _freeze(new_assign.select("record_id")) if int(qrow["acc_refs"] or 0) else None
        prev = {"members": members, "pairs": pairs, "bs": bs, "n_pairs": n_pairs, "scored": scored,
                "n_links": n_links, "eps": eps, "rec": rec}
        rec["seconds"] = round(time.time() - ti, 2)
        iterations.append(rec)
        _say(
            f"iteration {it}: mu={mu:.2f} eps={eps:.2f} refs={n_active} blocks={bs['blocks']} "
            f"largest_block={bs['largest_block']} oversize_blocks={bs['oversize_blocks']} "
            f"pairs={n_pairs} links={n_links} cc_rounds={rounds} clusters={rec['clusters']} "
            f"accepted={rec['accepted_clusters']} mean_quality={rec['mean_quality']} "
            f"({rec['seconds']}s: blocking {t_block - ti:.1f}s, scoring {t_score - t_block:.1f}s, "
            f"components {t_cc - t_score:.1f}s, quality {time.time() - t_cc:.1f}s)"
        )
        mu = round(mu + profile.muIterate, 2)
        eps = round(min(1.0, eps + profile.epsilonIterate), 2)
    else:
        _say(f"mu={mu:.2f} > 1, stop")

    singles = refs.join(assigned.select("record_id"), "record_id", "left_anti").select(
        "record_id", F.col("record_id").alias("cluster_id"), F.lit(0).cast("int").alias("iteration"),
        F.lit(None).cast("double").alias("mu"), F.lit(1.0).alias("quality"), F.lit(1).cast("int").alias("cluster_size"),
    )
    links_df = _freeze(assigned.unionByName(singles))
    summary = links_df.agg(
        F.count(F.lit(1)).alias("refs"),
        F.countDistinct("cluster_id").alias("clusters"),
        F.sum(F.when(F.col("cluster_size") == 1, 1).otherwise(0)).alias("singletons"),
        F.max("cluster_size").alias("largest"),
    ).first()
    pairwise = None
    if "truth_entity" in refs.columns:
        pairwise = pairwise_metrics(links_df.join(refs.select("record_id", "truth_entity"), "record_id"))
    metrics = {
        "references": int(summary["refs"]),
        "clusters": int(summary["clusters"]),
        "singletons": int(summary["singletons"] or 0),
        "largest_cluster": int(summary["largest"] or 0),
        "effective_parameters": eff_params,
        "iterations": iterations,
        "pairwise": pairwise,
        "seconds": round(time.time() - t0, 2),
    }
    # a close call whose two references ended in one cluster later is not a rejection
    lab = links_df.select("record_id", "cluster_id")
    why = (
        why.join(lab.select(F.col("record_id").alias("id1"), F.col("cluster_id").alias("c1")), "id1")
        .join(lab.select(F.col("record_id").alias("id2"), F.col("cluster_id").alias("c2")), "id2")
        .filter(F.col("accepted") | (F.col("c1") != F.col("c2")))
        .withColumn("_r", F.row_number().over(
            Window.partitionBy("id1", "id2").orderBy(F.col("accepted").desc(), F.col("iteration").desc())))
        .filter(F.col("_r") == 1)
        .join(ctokens.select(F.col("record_id").alias("id1"), F.col("ctokens").alias("t1")), "id1")
        .join(ctokens.select(F.col("record_id").alias("id2"), F.col("ctokens").alias("t2")), "id2")
        .select(
            F.col("id1").alias("record_id_a"), F.col("id2").alias("record_id_b"), "score", "iteration", "accepted",
            F.array_sort(F.array_intersect("t1", "t2")).alias("agreeing"),
            F.array_sort(F.array_union(F.array_except("t1", "t2"), F.array_except("t2", "t1"))).alias("conflicting"),
        )
    )
    _say(f"done: references={metrics['references']} clusters={metrics['clusters']} "
         f"singletons={metrics['singletons']} largest={metrics['largest_cluster']} "
         f"pairwise={pairwise} seconds={metrics['seconds']}")
    return LinkageResult(links_df, why, metrics)


def clusters_of(links_df: DataFrame) -> DataFrame:
    """One row per cluster: (``cluster_id``, ``cluster_size``, ``quality``, ``iteration``)."""
    return links_df.groupBy("cluster_id").agg(
        F.first("cluster_size").alias("cluster_size"),
        F.first("quality").alias("quality"),
        F.first("iteration").alias("iteration"),
    )
