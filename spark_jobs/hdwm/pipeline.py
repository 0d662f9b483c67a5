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

Iteration rule (DWM00): frequencies stay global; iteration ``k`` runs at
``mu_k`` and ``epsilon_k`` (``mu_1 = mu``, then ``+ muIterate`` and
``+ epsilonIterate``, rounded to 2 decimals as DWM, while ``mu ≤ 1``). It
blocks the references not yet in an accepted cluster, links the candidate
pairs scoring ≥ ``mu_k``, forms clusters (connected components, then
``hdwm.consistency``), and accepts the clusters (size ≥ 2) of quality ≥
``epsilon_k``. The loop stops when ``mu > 1``, when an iteration finds no
candidate pair or no link, or when fewer than two references are left.

Work the loop skips (``iterationShortcut``, on by default; each skip gives
exactly what the plain loop computes, which a test checks partition for
partition against ``iterationShortcut: false``):

* **Same references, same candidates.** Blocks and candidate pairs depend
  only on the unassigned references (frequencies are global), and a score
  does not depend on ``mu``. So the candidates are blocked and scored once
  per set of unassigned references (``_Candidates``), and the number of links
  at *every* remaining ``mu`` is counted from the scores in one pass.
* **Same links, same result.** While no cluster is accepted the references
  stay the same, and the links at a higher ``mu`` are a subset of those at a
  lower one; the same count therefore means the same links, the same
  clusters and qualities, rejected again (``epsilon`` never falls, and a
  cluster holding a must-link is always accepted, so it cannot be among
  them). Such an iteration (``unchanged`` in its record) costs no Spark job.
* **Fewer references, restricted candidates.** After clusters are accepted,
  blocking the rest again gives iteration ``k``'s blocks minus the accepted
  references, as long as no block was split at ``maxBlockSize`` (a split
  depends on the block's size); the scored pairs are then restricted, not
  rebuilt. When a block was split, the rest is blocked again and only pairs
  never scored before are scored (the score cache).

Where the loop runs: an input of at most ``localMaxReferences`` references
(default 10,000) is collected once after its comparison features are built
and iterates on the driver (``hdwm.local``: the same rules and shortcut in
plain Python, no Spark job per step; at 5,000 references the Spark loop was
about 150 small jobs). Larger inputs, and the plain loop
(``iterationShortcut: false``), iterate on Spark (``_Iterations``). Either
way the partition, records and why-linked pairs are the same (tested).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .blocking import block_stats, build_blocks, group_stats
from .closure import connected_components
from .compare import comparison_tokens, score_pairs
from .consistency import consistent_clusters
from .config import LinkageProfile, load_profile
from .frequency import apply_corrections, correction_map, corrected_frequencies, token_frequencies
from .metrics import pairwise_metrics
from .quality import cluster_quality
from .spark import broadcast_if_small
from .spark import freeze as _freeze
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


#: Spark local property that names the pipeline stage of every job started
#: inside it (``StageClock``); the event log and the REST API carry it.
STAGE_PROPERTY = "washline.stage"


class StageClock:
    """Driver wall seconds per pipeline stage, and the stage's name on its Spark jobs.

    ``with clock("blocking"): ...`` adds the block's wall seconds to
    ``clock.seconds["blocking"]`` and, for the jobs started inside it, sets
    the local property ``washline.stage`` (``STAGE_PROPERTY``) and the job
    description ``hdwm: blocking``. ``benchmarks/scale.py`` reads them back
    from the event log to attribute each job's shuffle bytes to a stage.
    Stages do not nest.
    """

    def __init__(self, spark: SparkSession):
        self._sc = spark.sparkContext
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        t = time.time()
        self._sc.setLocalProperty(STAGE_PROPERTY, name)
        self._sc.setJobDescription(f"hdwm: {name}")
        try:
            yield
        finally:
            self._sc.setLocalProperty(STAGE_PROPERTY, None)
            self._sc.setJobDescription(None)
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.time() - t, 2)

    def since(self, before: dict[str, float]) -> str:
        """``"blocking 1.2s, scoring 3.4s"``: seconds per stage added since the snapshot ``before``."""
        parts = [f"{k} {v - before.get(k, 0.0):.1f}s" for k, v in self.seconds.items() if v - before.get(k, 0.0) >= 0.05]
        return ", ".join(parts) or "no Spark work"


def mu_levels(profile: LinkageProfile) -> list[tuple[float, float]]:
    """``(mu, epsilon)`` of iterations 1, 2, …: the profile's ``mu`` and
    ``epsilon``, then ``+ muIterate`` / ``+ epsilonIterate`` (rounded to 2
    decimals as DWM, epsilon at most 1) while ``mu ≤ 1``."""
    levels, mu, eps = [], float(profile.mu), float(profile.epsilon)
    while mu <= 1.0 + 1e-9:
        levels.append((mu, eps))
        mu = round(mu + profile.muIterate, 2)
        eps = round(min(1.0, eps + profile.epsilonIterate), 2)
    return levels


@dataclass
class _Candidates:
    """The candidate pairs of one set of unassigned references, scored.

    ``members``: (``block_key``, ``sub_block``, ``record_id``, ``block_size``)
    block members (frozen). ``scored``: (``id1``, ``id2``, ``score``) every
    candidate pair (frozen). ``stats``: ``block_stats(members)`` plus
    ``pairs``. ``links``: {iteration: pairs scoring ≥ that iteration's mu}
    for the iteration they were built in and every later one.
    ``built``: the iteration they were built for. ``how``: ``blocked`` (blocked and scored), ``restricted`` (the previous
    candidates without the accepted references) or ``reblocked`` (blocked
    again, only new pairs scored). ``close_calls``: (iteration, mu) of the
    iterations that scored pairs with them (linking or not).
    """

    members: DataFrame
    scored: DataFrame
    stats: dict
    links: dict[int, int]
    how: str
    built: int
    close_calls: list[tuple[int, float]] = field(default_factory=list)
    retired: bool = False


class _Iterations:
    """The DWM iteration loop (module docstring: the rule and the work it skips).

    Holds what crosses iterations: the accepted references (``assigned``,
    ``LINKS_SCHEMA``), the score cache (disjoint frozen (``id1``, ``id2``,
    ``score``) frames), the why-linked rows and the iteration records.
    """

    def __init__(self, spark, profile, clock, n_refs, tokens, freq, ctokens, ids, must_link, cannot_link):
        self.spark, self.profile, self.clock, self.n_refs = spark, profile, clock, n_refs
        self.tokens, self.freq, self.ctokens, self.ids = tokens, freq, ctokens, ids
        self.must_link, self.cannot_link = must_link, cannot_link
        self.shortcut = bool(profile.iterationShortcut)
        self.levels = mu_levels(profile)
        self.assigned = spark.createDataFrame([], LINKS_SCHEMA)
        self.n_assigned = 0
        self.score_cache: list[DataFrame] = []
        self.why: list[DataFrame] = []  # (id1, id2, score, iteration, accepted) per iteration
        self.records: list[dict] = []

    def run(self) -> None:
        """Run every iteration; afterwards ``assigned``, ``why`` and ``records`` hold the result."""
        self.cands: _Candidates | None = None
        try:
            self._run()
        finally:
            self._retire(self.cands)

    def _run(self) -> None:
        cands = None  # candidates of the references still unassigned (None: not built yet)
        accepted = None  # record ids the last evaluated iteration accepted (None: none)
        settled = None  # record of the last evaluated iteration on ``cands`` (it accepted nothing)
        for it, (mu, eps) in enumerate(self.levels, 1):
            ti, before = time.time(), dict(self.clock.seconds)
            rec = {"iteration": it, "mu": mu, "epsilon": eps, "references": self.n_refs - self.n_assigned,
                   "blocks": 0, "largest_block": 0, "pairs_compared": 0, "links": 0, "clusters": 0,
                   "accepted_clusters": 0, "mean_quality": None, "unchanged": False, "components_checked": 0,
                   "oversize_components": 0, "candidates": None, "seconds": 0.0}
            self.records.append(rec)
            if rec["references"] < 2:
                _say(f"iteration {it}: fewer than 2 references left, stop")
                return
            if cands is None or accepted is not None or not self.shortcut:
                self._retire(cands)
                cands = self.cands = self._candidates(it, cands, accepted)
                settled = None
            rec["candidates"] = cands.how if rec["iteration"] == cands.built else "same"
            rec.update(blocks=cands.stats["blocks"], largest_block=cands.stats["largest_block"],
                       pairs_compared=cands.stats["pairs"], links=cands.links[it])
            if rec["pairs_compared"] > 0:
                # its pairs just below mu are close calls even when none reaches mu (a night where
                # nobody repeats still shows the reviewer what came nearest)
                cands.close_calls.append((it, mu))
            if rec["pairs_compared"] == 0 or rec["links"] == 0:
                rec["seconds"] = round(time.time() - ti, 2)
                _say(f"iteration {it}: mu={mu:.2f} refs={rec['references']} blocks={rec['blocks']} "
                     f"pairs={rec['pairs_compared']} links={rec['links']}, stop")
                return
            if self.shortcut and settled is not None and rec["links"] == settled["links"]:
                # same references, and links at a higher mu ⊆ the settled ones: the same count is the
                # same links, so the same clusters, rejected again (epsilon never falls)
                rec.update({k: settled[k] for k in ("clusters", "mean_quality", "components_checked",
                                                    "oversize_components")}, unchanged=True)
                rec["seconds"] = round(time.time() - ti, 2)
                _say(f"iteration {it}: mu={mu:.2f} eps={eps:.2f} refs={rec['references']} links={rec['links']}: "
                     f"the links of iteration {settled['iteration']}, so its {rec['clusters']} cluster(s), "
                     f"none accepted (nothing recomputed)")
                continue
            rounds, accepted = self._evaluate(rec, cands, it, mu, eps)
            settled = rec if accepted is None else None
            rec["seconds"] = round(time.time() - ti, 2)
            _say(f"iteration {it}: mu={mu:.2f} eps={eps:.2f} refs={rec['references']} blocks={rec['blocks']} "
                 f"largest_block={rec['largest_block']} oversize_blocks={cands.stats['oversize_blocks']} "
                 f"pairs={rec['pairs_compared']} links={rec['links']} cc_rounds={rounds} clusters={rec['clusters']} "
                 f"accepted={rec['accepted_clusters']} mean_quality={rec['mean_quality']} "
                 f"({rec['seconds']}s: {self.clock.since(before)})")
        _say(f"mu={round(self.levels[-1][0] + self.profile.muIterate, 2) if self.levels else self.profile.mu:.2f} "
             f"> 1, stop")

    # -- candidates: blocks, pairs and scores of the unassigned references --------------------------

    def _candidates(self, it: int, previous: _Candidates | None, accepted: DataFrame | None) -> _Candidates:
        """Candidates of the references unassigned before iteration ``it``.

        ``previous``/``accepted``: the candidates the last evaluated iteration
        used and the record ids it accepted. With the shortcut and no block
        split in ``previous``, blocking the rest again would give
        ``previous``'s blocks without ``accepted``, so they are restricted
        instead; otherwise the unassigned references are blocked again.
        """
        restrict = (self.shortcut and previous is not None and accepted is not None
                    and previous.stats["oversize_blocks"] == 0)
        with self.clock("blocking"):
            if restrict:
                members = _freeze(
                    previous.members.join(accepted, "record_id", "left_anti")
                    .withColumn("block_size", F.count(F.lit(1)).over(Window.partitionBy("block_key")).cast("long"))
                    .filter(F.col("block_size") >= 2)
                )
            else:
                active = self.tokens.join(self.assigned.select("record_id"), "record_id", "left_anti")
                br = build_blocks(active, self.freq, self.profile)
                members = _freeze(br.members)
                pairs = br.pairs
                if self.must_link is not None:
                    # human must-links are candidates whatever the blocking says
                    live = self.ids.join(self.assigned.select("record_id"), "record_id", "left_anti")
                    ml = (self.must_link.join(live.withColumnRenamed("record_id", "id1"), "id1")
                          .join(live.withColumnRenamed("record_id", "id2"), "id2").select("id1", "id2"))
                    pairs = pairs.unionByName(ml).distinct()
                pairs = _freeze(pairs)
            stats = block_stats(members, self.profile) if restrict else group_stats(br.groups, self.profile)
        with self.clock("scoring"):
            if restrict:
                # a pair of two unassigned references is still a candidate, with the same score
                scored = _freeze(
                    previous.scored.join(accepted.withColumnRenamed("record_id", "id1"), "id1", "left_anti")
                    .join(accepted.withColumnRenamed("record_id", "id2"), "id2", "left_anti")
                    .select("id1", "id2", "score")
                )
            else:
                scored = self._score(pairs)
            later = [(k, mu) for k, (mu, _) in enumerate(self.levels, 1) if k >= it]
            row = scored.agg(F.count(F.lit(1)).alias("pairs"), *[
                F.sum(F.when(F.col("score") >= mu - 1e-12, 1).otherwise(0)).alias(f"links_{k}") for k, mu in later
            ]).first()
        stats["pairs"] = int(row["pairs"])
        how = "restricted" if restrict else "reblocked" if self.shortcut and previous is not None else "blocked"
        return _Candidates(members, scored, stats, {k: int(row[f"links_{k}"] or 0) for k, _ in later}, how, it)

    def _score(self, pairs: DataFrame) -> DataFrame:
        """(``id1``, ``id2``) → frozen (``id1``, ``id2``, ``score``). With the
        shortcut a pair scored before takes its cached score (scores do not
        depend on mu or on the other references) and only new pairs are scored."""
        known = None
        if self.shortcut and self.score_cache:
            cache = reduce(DataFrame.unionByName, self.score_cache)
            known = pairs.join(cache, ["id1", "id2"])
            pairs = pairs.join(cache.select("id1", "id2"), ["id1", "id2"], "left_anti")
        fresh = _freeze(_override(_override(score_pairs(pairs, self.ctokens, self.profile), self.must_link, 1.0),
                                  self.cannot_link, 0.0))
        if not self.shortcut:
            return fresh
        self.score_cache.append(fresh)
        return fresh if known is None else _freeze(known.unionByName(fresh))

    # -- one evaluated iteration: links → clusters → quality → accepted ------------------------------

    def _evaluate(self, rec: dict, cands: _Candidates, it: int, mu: float, eps: float):
        """Cluster the links at ``mu`` and accept clusters of quality ≥ ``eps``.
        Updates ``rec`` and ``assigned``; returns (closure rounds, frozen
        accepted record ids or None when none was accepted)."""
        profile, must_link = self.profile, self.must_link
        with self.clock("components"):
            links = _freeze(cands.scored.filter(F.col("score") >= mu - 1e-12))
            comps, rounds = connected_components(
                links, checkpoint_interval=profile.ccCheckpointInterval, max_rounds=profile.ccMaxRounds,
                local_max_edges=profile.ccLocalMaxEdges,
            )
            comps = _freeze(comps.withColumnRenamed("component", "cluster_id"))
            if profile.clusterConsistency:
                # washline: split each component into conflict-free clusters
                # (hdwm.consistency; cannot-link constrained single linkage)
                comps, cstat = consistent_clusters(comps, links, self.ctokens, profile, self.cannot_link, must_link,
                                                    local_max_references=profile.ccLocalMaxEdges)
                comps = _freeze(comps)
                rec["components_checked"] = cstat["components_checked"]
                rec["oversize_components"] = cstat["oversize_components"]
        with self.clock("quality"):
            q = cluster_quality(comps, self.tokens)
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
            acc_refs = int(qrow["acc_refs"] or 0)
            rec.update(clusters=int(qrow["clusters"]), accepted_clusters=int(qrow["accepted"] or 0),
                       mean_quality=round(float(qrow["mean_quality"]), 4) if qrow["mean_quality"] is not None else None)
            if not acc_refs:
                return rounds, None
            self.n_assigned += acc_refs
            new_assign = _freeze(comps.join(q.filter(F.col("_ok")).drop("_ok"), "cluster_id").select(
                "record_id", "cluster_id", F.lit(it).cast("int").alias("iteration"),
                F.lit(mu).cast("double").alias("mu"), "quality", "cluster_size",
            ))
            self.assigned = _freeze(self.assigned.unionByName(new_assign))
            # why-linked output: the links inside the accepted clusters
            na = new_assign.select("record_id", "cluster_id")
            self.why.append(_freeze(
                links.join(na.select(F.col("record_id").alias("id1"), F.col("cluster_id").alias("c1")), "id1")
                .join(na.select(F.col("record_id").alias("id2"), F.col("cluster_id").alias("c2")), "id2")
                .filter(F.col("c1") == F.col("c2"))
                .select("id1", "id2", "score", F.lit(it).cast("int").alias("iteration"), F.lit(True).alias("accepted"))
            ))
            return rounds, new_assign.select("record_id")

    def _retire(self, cands: _Candidates | None) -> None:
        """Keep the close calls of ``cands`` before they are replaced: a pair
        scoring within ``NEAR_MISS_BAND`` below an iteration's mu, once, at the
        last iteration it was one (the why-linked output keeps only that one)."""
        if cands is None or cands.retired:
            return
        cands.retired = True
        if not cands.close_calls:
            return
        s = F.col("score")
        last = F.coalesce(*[F.when((s < mu - 1e-12) & (s >= mu - NEAR_MISS_BAND - 1e-12), F.lit(it))
                            for it, mu in reversed(cands.close_calls)])
        with self.clock("quality"):
            self.why.append(_freeze(
                cands.scored.select("id1", "id2", "score", last.cast("int").alias("iteration"))
                .filter(F.col("iteration").isNotNull()).withColumn("accepted", F.lit(False))
            ))


WHY_SCHEMA = "id1 string, id2 string, score double, iteration int, accepted boolean"


def _local_iterations(spark, profile, clock, n_refs, tokens, freq, ctokens, must_link, cannot_link):
    """The iteration loop on the driver (``hdwm.local``) for a small input.

    Collects the references' tokens (with Spark's ``xxhash64(record_id)``),
    the frequencies of their tokens, the comparison features and the human
    decisions once (Arrow), runs ``LocalIterations`` and hands its result back
    as Spark frames. Returns (assigned ``LINKS_SCHEMA`` frame, iteration
    records, why-linked (``id1``, ``id2``, ``score``, ``iteration``,
    ``accepted``) frame).
    """
    import pandas as pd

    from .local import LocalIterations

    t = time.time()
    with clock("collect"):
        inp = _collect_inputs(profile, tokens, freq, ctokens, must_link, cannot_link)
    _say(f"{n_refs} references ≤ localMaxReferences={profile.localMaxReferences}: iterations on the driver "
         f"(collected in {time.time() - t:.1f}s)")
    estimate = None
    profile, bounded = _identifier_conflict_bound(profile, n_refs)
    if profile.agreementEvidence != "off" or profile.clusterIdentifierConflict == "estimated":
        with clock("agreement"):
            profile, estimate = _agreement_estimate(profile, inp)
    estimate = estimate if bounded is None else {**(estimate or {}), **bounded}
    loop = LocalIterations(profile, mu_levels(profile), clock, n_refs, inp)
    loop.run()
    with clock("collect"):
        a = pd.DataFrame(loop.assigned, columns=["record_id", "cluster_id", "iteration", "mu", "quality",
                                                 "cluster_size"])
        a = a.astype({"iteration": "int32", "mu": "float64", "quality": "float64", "cluster_size": "int32"})
        assigned = _freeze(spark.createDataFrame(a, LINKS_SCHEMA)) if len(a) else spark.createDataFrame([], LINKS_SCHEMA)
        w = pd.DataFrame(loop.why, columns=["id1", "id2", "score", "iteration", "accepted"])
        w = w.astype({"score": "float64", "iteration": "int32", "accepted": "bool"})
        why = spark.createDataFrame(w, WHY_SCHEMA) if len(w) else spark.createDataFrame([], WHY_SCHEMA)
    return assigned, loop.records, why, estimate


def _collect_inputs(profile, tokens, freq, ctokens, must_link, cannot_link, household: bool = True):
    """``hdwm.local.LocalInputs`` of a small input, collected once (Arrow): the references' tokens with
    Spark's ``xxhash64(record_id)``, the frequencies of their tokens, the comparison features and the
    human decisions. ``household``: compute the household identifiers here (``ctokens`` was built
    with ``comparison_tokens(..., household=False)``), else keep ``ctokens``' own."""
    from .evidence import household_numbers, needs_household_numbers
    from .local import LocalInputs

    tp = tokens.select("record_id", "tokens", F.xxhash64("record_id").alias("h")).toPandas()
    fp = (tokens.select(F.explode("tokens").alias("token")).distinct().join(freq, "token")
          .select("token", "freq").toPandas())
    features = ctokens.toPandas()
    if household and needs_household_numbers(profile):  # left out of ctokens for this path (comparison_tokens)
        house = household_numbers(features["record_id"].astype(str).tolist(), features["lead"].tolist(),
                                  features["nums"].tolist(), profile)
        features["shared"] = [house.get(r, []) for r in features["record_id"].astype(str).tolist()]
    ml = [(r["id1"], r["id2"]) for r in must_link.collect()] if must_link is not None else []
    cl = [(r["id1"], r["id2"]) for r in cannot_link.collect()] if cannot_link is not None else []
    rid = tp["record_id"].astype(str).tolist()
    return LocalInputs(
        tokens={r: ([] if x is None else list(x)) for r, x in zip(rid, tp["tokens"])},
        hashes=dict(zip(rid, tp["h"].astype("int64").tolist())),
        freq=dict(zip(fp["token"].tolist(), fp["freq"].astype("int64").tolist())),
        features=features, must_link=ml, cannot_link=cl,
    )


def _identifier_conflict_bound(profile: LinkageProfile, n_refs: int) -> tuple[LinkageProfile, dict | None]:
    """``clusterIdentifierConflict: estimated`` above ``hdwm.agreement.ESTIMATE_MAX_REFERENCES``
    references is not estimated (the estimate collects the input to the driver): true, said and
    reported. Returns (profile, report entry or None)."""
    from .agreement import ESTIMATE_MAX_REFERENCES

    if profile.clusterIdentifierConflict != "estimated" or n_refs <= ESTIMATE_MAX_REFERENCES:
        return profile, None
    _say(f"clusterIdentifierConflict: estimated from inputs of at most {ESTIMATE_MAX_REFERENCES} references; "
         f"{n_refs} references: true (an identifier conflict stays a cannot-link inside a component)")
    return (profile.model_copy(update={"clusterIdentifierConflict": True}),
            {"cluster_identifier_conflict": {"estimated": None, "applied": True,
                                             "reason": f"more than {ESTIMATE_MAX_REFERENCES} references: not estimated"}})


def _agreement_estimate(profile: LinkageProfile, inp) -> tuple[LinkageProfile, dict]:
    """``agreementEvidence`` and ``clusterIdentifierConflict: estimated`` on the collected inputs
    (``hdwm.local.LocalInputs``) of the iteration-1 candidate pairs (``hdwm.local.block_members`` of
    every reference). ``agreementEvidence`` (report, adaptive): the Fellegi–Sunter estimate
    (``hdwm.agreement.estimate_from_pairs``), logged; with ``adaptive`` the profile gets
    ``agreementMatchPatterns``. ``estimated``: ``clusterIdentifierConflict`` becomes true or false
    (``hdwm.agreement.identifiers_change_with_moves``), reported as ``cluster_identifier_conflict``.
    Returns (profile, report dict)."""
    from .agreement import candidate_patterns, estimate_from_pairs, identifiers_change_with_moves, profile_update
    from .local import block_members

    t = time.time()
    _, pairs = block_members(sorted(inp.tokens), inp, profile)
    f = inp.features
    cols = [f[c].tolist() if c in f.columns else [None] * len(f) for c in ("lead", "nums", "shared", "gstd", "street")]
    evidence = dict(zip(f["record_id"].astype(str).tolist(), zip(*cols)))
    pairs = sorted(pairs)
    report: dict = {}
    patterns = None  # the candidate pairs' comparison vectors, counted once for both readings
    if profile.agreementEvidence != "off":
        est = estimate_from_pairs(evidence, pairs)
        patterns = est.patterns
        report = est.report()
        if profile.agreementEvidence == "adaptive":
            upd = profile_update(est, profile.agreementMatchProbability)
            profile = profile.model_copy(update=upd)
            report["match_patterns"] = len(upd["agreementMatchPatterns"])
            report["match_pattern_pairs"] = int(sum(n for p, n in est.patterns.items()
                                                    if est.posterior(p) >= profile.agreementMatchProbability))
        weights = {c: {lv: v["weight"] for lv, v in levels.items()} for c, levels in report["classes"].items()}
        _say(f"agreement estimate ({time.time() - t:.1f}s, {report['pairs']} candidate pairs, lambda={report['lambda']}, "
             f"EM rounds={report['rounds']}): weights (bits) {json.dumps(weights)}")
    if profile.clusterIdentifierConflict == "estimated":
        moves, read = identifiers_change_with_moves(patterns if patterns is not None else
                                                    candidate_patterns(evidence, pairs))
        profile = profile.model_copy(update={"clusterIdentifierConflict": not moves})
        report["cluster_identifier_conflict"] = {"estimated": not moves, **read}
        _say(f"clusterIdentifierConflict estimated {str(not moves).lower()} ({len(pairs)} candidate pairs): "
             f"{read['co_residence']} of {read['same_address_pairs']} same-address pairs conflict on the given "
             f"name, {read['identifier_change']} of {read['same_name_pairs']} same-name pairs on an identifier ("
             + ("persons whose identifiers change: an identifier conflict is a pairwise veto only)" if moves else
                "an identifier conflict stays a cannot-link inside a component)"))
    return profile, report


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
    correction: DataFrame | None = None,
) -> tuple[DataFrame, dict]:
    """Run HDWM on ``refs`` and return ``(links_df, metrics)``.

    The same as ``link_references(...)`` without the pairs output.
    """
    res = link_references(spark, refs, profile, checkpoint_dir, frequencies=frequencies,
                          reference_count=reference_count, must_link=must_link, cannot_link=cannot_link,
                          correction=correction)
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
    correction: DataFrame | None = None,
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
        correction: optional (``token``, ``replacement``) correction map of
            ``frequencies`` (``hdwm.frequency.correction_map`` with the profile
            made effective for ``reference_count``), when the caller already
            computed it (``hdwm.incremental.link_night``); used instead of
            computing the same map again. Only with ``frequencies``.

    Returns:
        links_df (schema ``LINKS_SCHEMA``, checkpointed) and a metrics dict with
        ``references, clusters, singletons, largest_cluster, iterations[...],
        pairwise`` (None without truth), ``effective_parameters`` (beta/sigma
        after ``frequencyScaling`` for this input's size, see
        ``LinkageProfile.effective_summary``) and ``seconds``.

    Raises:
        ValueError: ``refs`` lacks ``record_id``/``text`` or has duplicate record ids, or
            ``correction`` is given without ``frequencies``.
        hdwm.config.ProfileError: invalid profile.
        hdwm.closure.ClosureDidNotConverge: connected components did not converge.
    """
    t0 = time.time()
    profile = load_profile(profile)
    missing = {"record_id", "text"} - set(refs.columns)
    if missing:
        raise ValueError(f"refs lacks columns {sorted(missing)}")
    if correction is not None and frequencies is None:
        raise ValueError("correction is the correction map of the given frequencies: pass frequencies too")
    if checkpoint_dir:
        spark.sparkContext.setCheckpointDir(str(checkpoint_dir))
    clock = StageClock(spark)

    with clock("read"):
        base_cols = [F.col("record_id").cast("string").alias("record_id"),
                     F.col("text").cast("string").alias("text")]
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
    with clock("tokens+frequencies"):
        tokens = _freeze(tokenize(refs, profile))
        if frequencies is None:
            freq = _freeze(token_frequencies(tokens))
        else:
            # global (population) frequencies given: the subset sees them, not its own counts
            freq = _freeze(frequencies.select(F.col("token").cast("string").alias("token"),
                                              F.col("freq").cast("long").alias("freq")))
    if profile.runGlobalCorrection:
        with clock("correction"):
            cmap = _freeze(correction_map(freq, profile) if correction is None else correction)
            n_fix = cmap.count()
            if n_fix:
                tokens = _freeze(apply_corrections(tokens, broadcast_if_small(cmap, n_fix),
                                                   profile.removeDuplicateTokens))
                if frequencies is None:
                    freq = _freeze(token_frequencies(tokens))
                else:
                    # corrected population counts: every raw count moves to its replacement
                    freq = _freeze(corrected_frequencies(freq, cmap))
        _say(f"global correction: {n_fix} rare tokens replaced by a frequent token one edit away "
             f"({time.time() - t0:.1f}s since start)")
    with clock("tokens+frequencies"):
        frow = freq.agg(
            F.count(F.lit(1)).alias("n"), F.sum(F.when(F.col("freq") >= profile.sigma, 1).otherwise(0)).alias("s")
        ).first()
        n_tokens, stops = int(frow["n"]), int(frow["s"] or 0)
        # joined with every reference's tokens below (comparison features, blocking keys)
        freq = broadcast_if_small(freq, n_tokens)
        _say(f"distinct tokens={n_tokens} stop tokens (freq>={profile.sigma})={stops} "
             f"({time.time() - t0:.1f}s since start)")
        # the driver loop computes the household identifiers itself (no Python UDF job)
        local = 0 < n_refs <= profile.localMaxReferences and profile.iterationShortcut
        ctokens = _freeze(comparison_tokens(tokens, freq, profile, n_pop, household=not local))
    with clock("read"):
        ids = refs.select("record_id")
        must_link = _decision_pairs(must_link)
        cannot_link = _decision_pairs(cannot_link)
        if must_link is not None:  # decisions about references of this run only
            must_link = _freeze(must_link.join(ids.withColumnRenamed("record_id", "id1"), "id1")
                                .join(ids.withColumnRenamed("record_id", "id2"), "id2").select("id1", "id2"))
        if cannot_link is not None:
            cannot_link = _freeze(cannot_link.join(ids.withColumnRenamed("record_id", "id1"), "id1")
                                  .join(ids.withColumnRenamed("record_id", "id2"), "id2").select("id1", "id2"))

    if local:
        # washline (speed): a small input iterates on the driver (hdwm.local: the same rules)
        assigned, iterations, why, agreement = _local_iterations(spark, profile, clock, n_refs, tokens, freq,
                                                                 ctokens, must_link, cannot_link)
    else:
        agreement = None
        if profile.agreementEvidence != "off":
            log.warning("agreementEvidence=%s is estimated on the driver path only (at most localMaxReferences=%d "
                        "references); %d references: not estimated", profile.agreementEvidence,
                        profile.localMaxReferences, n_refs)
        profile, agreement = _identifier_conflict_bound(profile, n_refs)
        if profile.clusterIdentifierConflict == "estimated":
            # the same estimate as the driver loop's, from the same collected inputs: either loop gives
            # the same clusters (agreementEvidence itself stays a driver-path setting, warned above)
            with clock("agreement"):
                inp = _collect_inputs(profile, tokens, freq, ctokens, None, None, household=False)
                read, agreement = _agreement_estimate(profile.model_copy(update={"agreementEvidence": "off"}), inp)
            profile = profile.model_copy(update={"clusterIdentifierConflict": read.clusterIdentifierConflict})
        loop = _Iterations(spark, profile, clock, n_refs, tokens, freq, ctokens, ids, must_link, cannot_link)
        loop.run()
        assigned, iterations = loop.assigned, loop.records
        why = (reduce(DataFrame.unionByName, loop.why) if loop.why else
               spark.createDataFrame([], "id1 string, id2 string, score double, iteration int, accepted boolean"))

    with clock("summary"):
        singles = refs.join(assigned.select("record_id"), "record_id", "left_anti").select(
            "record_id", F.col("record_id").alias("cluster_id"), F.lit(0).cast("int").alias("iteration"),
            F.lit(None).cast("double").alias("mu"), F.lit(1.0).alias("quality"),
            F.lit(1).cast("int").alias("cluster_size"),
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
        "stages": dict(clock.seconds),
        "seconds": round(time.time() - t0, 2),
    }
    if agreement is not None:
        metrics["agreement_estimate"] = agreement
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
