"""Where an incremental registry run loses the true pairs a batch relink finds.

    PYTHONPATH=spark_jobs .venv/bin/python benchmarks/registry_misses.py --work W [--profile default]

Run it with the PRODUCT venv on the ``--work`` folder of a finished
``benchmarks/incremental.py`` run that did the batch relink (no
``--skip-batch``): it reads the registry versions, the curated nights (their
``truth_entity``) and ``rebuild/partition``. Nothing is linked and nothing is
fitted: the truth is read only to count.

A *batch-only pair* is a true pair (same ``truth_entity``) that the batch
relink puts in one cluster and the final registry keeps in two entities. Each
is classified once, by the night the later of its two references arrived
(night d, linked against version d-1):

* ``same night`` – both arrived on night d;
* ``pulled in, not linked`` – the earlier reference was in night d's
  neighbourhood (the profile's rule, recomputed with
  ``hdwm.incremental.candidate_references``), so the engine saw both (or a
  later night cut them apart);
* ``not pulled in: key rank <= pool`` / ``> pool`` – the later reference
  shares an engine block key with the earlier one's entity, ranked by key
  weight (``hdwm.incremental.entity_ranks``) within / beyond
  ``registryScoredPool``;
* ``not pulled in: no key`` – it shares no key with that entity.

Keys and ranks are those of the tokens the rule saw: corrected by the
population's correction map when the profile's ``registryCorrectedTokens``
is on (``candidate_references(correction=…)``), raw otherwise.

Each class is crossed with whether the batch's own blocking (engine keys at
N = every reference) makes the pair a candidate on raw tokens, only after
global correction (DWM25), or not at all (linked through a chain). Prints
two Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))

CLASSES = ("same night", "pulled in, not linked", "not pulled in: key rank <= pool",
           "not pulled in: key rank > pool", "not pulled in: no key")
BATCH = ("raw candidate", "candidate after correction only", "not a candidate")


def batch_only_pairs(truth: dict, incremental: dict, batch: dict) -> tuple[list[tuple[str, str]], Counter]:
    """True pairs in one batch cluster and two incremental entities; every dict maps a
    reference key to its truth entity / entity id / batch cluster. Returns (pairs sorted
    within each pair, counts of (batch together, incremental together) over all true pairs)."""
    by_truth = defaultdict(list)
    for k, t in truth.items():
        by_truth[t].append(k)
    counts, out = Counter(), []
    for ks in by_truth.values():
        for a, b in combinations(sorted(ks), 2):
            together_b, together_i = batch[a] == batch[b], incremental[a] == incremental[b]
            counts[(together_b, together_i)] += 1
            if together_b and not together_i:
                out.append((a, b))
    return out, counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="the --work folder of a finished benchmarks/incremental.py run")
    ap.add_argument("--profile", default="default")
    a = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from hdwm.blocking import build_blocks
    from hdwm.config import load_profile
    from hdwm.frequency import apply_corrections, corrected_frequencies, correction_map, token_frequencies
    from hdwm.incremental import (_frequent_pair_matches, _shared_token_inputs, candidate_references,
                                  entity_ranks, registry_tokens)
    from hdwm.registry import read_version, ref_key_col, versions
    from hdwm.spark import get_spark
    from hdwm.tokenizer import tokenize

    work = Path(a.work)
    if not (work / "rebuild" / "partition").is_dir():
        raise SystemExit(f"{work} has no rebuild/partition: run benchmarks/incremental.py without --skip-batch")
    profile = load_profile(a.profile)
    spark = get_spark("registry-misses", {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                        "spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("WARN")
    root = work / "data" / "lake"
    vs = versions(root / "entities")
    curated = spark.read.parquet(*[str(root / "curated" / v) for v in vs])
    truth = {r.k: r.t for r in curated.select(ref_key_col().alias("k"),
                                              F.col("truth_entity").cast("string").alias("t")).collect()}
    last = read_version(spark, root / "entities", vs[-1])
    mem = last.members.select(ref_key_col().alias("k"), "entity_id", "first_seen_ds").toPandas()
    incremental, arrived = dict(zip(mem.k, mem.entity_id)), dict(zip(mem.k, mem.first_seen_ds))
    part = spark.read.parquet(str(work / "rebuild" / "partition")).select(
        ref_key_col().alias("k"), F.col("rebuilt_cluster").cast("string").alias("c")).toPandas()
    missed, counts = batch_only_pairs(truth, incremental, dict(zip(part.k, part.c)))
    missed = [(a_, b_) if arrived[a_] <= arrived[b_] else (b_, a_) for a_, b_ in missed]
    tagged = [(x, y, "same night") for x, y in missed if arrived[x] == arrived[y]]
    later = defaultdict(list)
    for x, y in missed:
        if arrived[x] != arrived[y]:
            later[arrived[y]].append((x, y))
    for i in range(1, len(vs)):
        d, pairs = vs[i], later.get(vs[i], [])
        if not pairs:
            continue
        prev, cur = read_version(spark, root / "entities", vs[i - 1]), read_version(spark, root / "entities", d)
        base_mem = prev.members.withColumn("ref_key", ref_key_col())
        night = cur.members.filter(F.col("first_seen_ds") == d).withColumn("ref_key", ref_key_col())
        ntok = tokenize(night.select(F.col("ref_key").alias("record_id"), "text"), profile)
        eff = profile.effective(cur.complete["references_total"])
        freq = cur.frequencies
        cmap = (correction_map(freq, eff).localCheckpoint()
                if eff.runGlobalCorrection and eff.registryCorrectedTokens else None)
        reg_tok, _ = registry_tokens(prev, base_mem, profile)
        cand = candidate_references(base_mem, ntok, freq, eff, profile, profile.registryNeighbourhood,
                                    profile.registryTopEntities, reg_tok, correction=cmap)
        ents = cand.join(base_mem, "ref_key").select("entity_id").distinct()
        neigh = {r.ref_key for r in base_mem.join(ents, "entity_id", "left_semi").select("ref_key").collect()}
        entity_before = {r.ref_key: r.entity_id for r in base_mem.select("ref_key", "entity_id").collect()}
        # ranks on the tokens the rule saw: corrected as candidate_references corrects them
        rtok, rfreq = ntok, freq
        if cmap is not None:
            rtok = apply_corrections(ntok, cmap, profile.removeDuplicateTokens).localCheckpoint()
            rfreq = corrected_frequencies(freq, cmap).localCheckpoint()
        sh = _shared_token_inputs(base_mem, rtok, rfreq, eff, profile, reg_tok, cmap)
        ranks = entity_ranks(sh.night_bt, sh.reg_bt, base_mem, eff, _frequent_pair_matches(sh, rtok, rfreq, eff))
        need = spark.createDataFrame(sorted({(y,) for _, y in pairs}), "night_key string")
        rank = {(r.night_key, r.entity_id): r.rank for r in ranks.join(need, "night_key", "left_semi").collect()}
        for x, y in pairs:
            if x in neigh:
                tag = "pulled in, not linked"
            else:
                r = rank.get((y, entity_before[x]))
                tag = "not pulled in: " + ("no key" if r is None else
                                           "key rank <= pool" if r <= profile.registryScoredPool else "key rank > pool")
            tagged.append((x, y, tag))
        print(f"[misses] night {i + 1} ({d}): {len(pairs)} batch-only pairs classified", file=sys.stderr, flush=True)

    # the batch's own candidates: engine blocking over every reference, raw and after correction
    eff = profile.effective(len(truth))
    refs = last.members.select(ref_key_col().alias("record_id"), "text")
    tok = tokenize(refs, eff).localCheckpoint()
    fr = token_frequencies(tok).localCheckpoint()
    tok_c = apply_corrections(tok, correction_map(fr, eff), eff.removeDuplicateTokens).localCheckpoint()
    fr_c = token_frequencies(tok_c).localCheckpoint()

    def candidates(t, f) -> set:
        p = build_blocks(t, f, eff).pairs.toPandas()
        return set(zip(p.id1, p.id2))

    raw, corrected = candidates(tok, fr), candidates(tok_c, fr_c)
    cross = Counter()
    for x, y, tag in tagged:
        k = (min(x, y), max(x, y))
        cross[(tag, BATCH[0] if k in raw else BATCH[1] if k in corrected else BATCH[2])] += 1
    print(f"true pairs {sum(counts.values())}: together in both {counts[(True, True)]}, batch only "
          f"{counts[(True, False)]}, incremental only {counts[(False, True)]}, neither {counts[(False, False)]}\n")
    print("| class of a batch-only pair | pairs | " + " | ".join(BATCH) + " |")
    print("|---|---:|" + "---:|" * len(BATCH))
    for c in CLASSES:
        row = [cross[(c, b)] for b in BATCH]
        print(f"| {c} | {sum(row)} | " + " | ".join(str(v) for v in row) + " |")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
