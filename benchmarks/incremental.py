"""Incremental linkage over many nights against the entity registry.

    .venv/bin/python benchmarks/incremental.py --nights 30 --per-night 10000 --seed 42 \\
        [--generator synth|messy|longhist] [--neighbourhood pair_key|ranked|scored|block_key|token] [--skip-batch] \\
        [--work DIR] [--json OUT.json]

Runs in the product venv (it imports ``spark_jobs/link.py``). One seeded
generator makes ``nights × per-night`` references with truth
(``synth``: ``benchmarks/synth.py``; ``messy``: ``benchmarks/messy.py`` when
present, households as confounders). The references are shuffled with the
seed and dealt into nights, so the duplicates of a person arrive on different
nights (cross-night duplicates); nights alternate between two sources
(``src_a``, ``src_b``) whose record ids never collide by construction.

Each night is written as a curated Parquet folder and linked by the real link
job (``link.run(..., registry=...)``, one Spark session for all nights, so no
JVM start is counted), then marked published. Reported per night: link
seconds (the job's own ``seconds``), the neighbourhood the engine saw,
new / joined / merges / splits, the bytes of the curated night and of the layers
it wrote, and ``lake/entities`` after it. At the end: ``lake/entities`` against its
bound (1.5x one full version, measured by compacting a copy of the last
version, plus the nights' own layers as each night wrote them), and pairwise F1 of the final registry
partition against the truth, and of a full batch relink of every reference
(``hdwm.registry.rebuild``, the same engine and profile) against the truth and
against the incremental partition; and per night, the batch relink's F1 over the pairs within that
night's references beside the night's own (``batch_night_f1``, ``night_f1_gap`` = batch − night) and the
registry's last version's on the same pairs (``final_night_f1``). The batch sees every night, so an early
night's gap also counts what later nights taught the batch; ``final_night_f1`` shows how much of it the
registry's later nights recovered.

Targets of incremental linkage: every night's link time within 1.5x of night 1's; the final
F1 within 0.01 of the batch relink's, and each night's own F1 within 0.01 of the batch relink's on its references.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # a dataclass in the module looks its module up while it is built
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ generators (pluggable)

def gen_synth(total: int, seed: int, work: Path):
    """pandas (record_id, truth_entity, attribute columns...) from benchmarks/synth.py."""
    import pandas as pd

    synth = _load(REPO / "benchmarks" / "synth.py", "bench_synth")
    csv = work / f"synth_{total}_{seed}.csv"
    if not csv.exists():
        synth.generate(total, seed, csv)
    df = pd.read_csv(csv, dtype=str, keep_default_na=False).rename(columns={"rec_id": "record_id"})
    return df.replace("", None)


def gen_messy(total: int, seed: int, work: Path, name: str = "messy"):
    """pandas (record_id, truth_entity, reference) from benchmarks/messy.py (unaligned DWM text; households),
    or from ``benchmarks/<name>.py`` of the same layout (``messy_longhist``: long-lived persons who move)."""
    import pandas as pd

    path = REPO / "benchmarks" / f"{name}.py"
    if not path.exists():
        raise SystemExit(f"benchmarks/{name}.py is not present in this checkout: use --generator synth")
    if name != "messy":  # messy_longhist.py builds on messy.py beside it
        sys.path.insert(0, str(REPO / "benchmarks"))
    gen = _load(path, f"bench_{name}")
    rows = [(rid, eid, ",".join(fields)) for rid, fields, eid in gen.generate(total, seed)]
    return pd.DataFrame(rows, columns=["record_id", "truth_entity", "reference"])


def gen_longhist(total: int, seed: int, work: Path):
    """pandas (record_id, truth_entity, reference) from benchmarks/messy_longhist.py."""
    return gen_messy(total, seed, work, "messy_longhist")


GENERATORS = {"synth": gen_synth, "messy": gen_messy, "longhist": gen_longhist}


def deal(df, nights: int, per_night: int, seed: int):
    """Shuffle with ``seed`` and cut into ``nights`` frames of ``per_night`` rows, with a source column."""
    order = list(range(len(df)))
    random.Random(seed).shuffle(order)
    df = df.iloc[order].reset_index(drop=True)
    out = []
    for i in range(nights):
        part = df.iloc[i * per_night:(i + 1) * per_night].copy()
        part.insert(1, "source", "src_a" if i % 2 == 0 else "src_b")
        out.append(part)
    return out


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (0 when it does not exist)."""
    path = Path(path)
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def own_bytes(reg: Path, ds: str) -> int:
    """Bytes of the layers version ``ds`` wrote as its own delta (its manifest's ``own``)."""
    c = json.loads((reg / f"ds={ds}" / "_COMPLETE.json").read_text())
    return sum(folder_bytes(reg / "_layers" / part / lid) for part, lid in c.get("own", {}).items())


def full_version_bytes(spark, reg: Path, ds: str, scratch: Path) -> int:
    """Bytes of version ``ds`` written as one full version: a copy of the registry compacted
    (``hdwm.registry.compact``: one layer per part), its layers measured, the copy removed."""
    import shutil

    from hdwm.registry import compact

    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(reg, scratch)
    try:
        c = compact(spark, scratch, ds)
        return sum(folder_bytes(scratch / "_layers" / part / lid) for part, lids in c["layers"].items()
                   for lid in lids)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def f1_gap(batch: dict | None, incremental: dict | None) -> float | None:
    """Batch F1 minus incremental F1 against the truth (4 decimals); None when
    either F1 is undefined (no predicted or no true pairs), never a crash or 0."""
    a, b = (batch or {}).get("f1"), (incremental or {}).get("f1")
    return None if a is None or b is None else round(a - b, 4)


def f1_by_night(df, cluster_col: str) -> dict[int, float | None]:
    """Pairwise F1 of ``cluster_col`` against ``truth_entity`` within each night.

    ``df``: one row per reference with ``night`` (int), ``cluster_col`` and ``truth_entity``; pairs are
    counted only between references of the same night. Returns {night: F1 (4 decimals) or None}."""
    from pyspark.sql import functions as F

    from hdwm.metrics import metrics_from_counts

    def pairs(cols, name):
        return (df.filter(F.col("truth_entity").isNotNull()).groupBy("night", *cols).count()
                .groupBy("night").agg(F.sum(F.col("count") * (F.col("count") - 1) / 2).cast("long").alias(name)))

    rows = (pairs([cluster_col], "pred").join(pairs(["truth_entity"], "true"), "night")
            .join(pairs([cluster_col, "truth_entity"], "tp"), "night").collect())
    return {int(r["night"]): metrics_from_counts(int(r["tp"]), int(r["pred"]), int(r["true"]))["f1"] for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", type=int, default=30)
    ap.add_argument("--per-night", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--generator", choices=sorted(GENERATORS), default="synth")
    ap.add_argument("--neighbourhood", choices=["block_key", "pair_key", "ranked", "scored", "token"], default=None,
                    help="registry neighbourhood rule (default: the profile's registryNeighbourhood)")
    ap.add_argument("--top-entities", type=int, default=None,
                    help="with ranked or scored: entities kept per night reference (default: the profile's "
                         "registryTopEntities)")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--skip-batch", action="store_true", help="no full batch relink at the end")
    ap.add_argument("--work", default=None, help="working folder (default: a new temp folder)")
    ap.add_argument("--json", default=None, help="write the results here too")
    ap.add_argument("--resume", action="store_true",
                    help="continue an interrupted run: with the same --work and --json, nights already "
                         "published in the registry there (and recorded in the JSON) are not linked again")
    ap.add_argument("--compare-neighbourhood", action="store_true",
                    help="no linking: on the registry of an earlier run in --work, count each night's "
                         "neighbourhood under each rule of --rules")
    ap.add_argument("--rules", default=None,
                    help="with --compare-neighbourhood: comma-separated rules, e.g. pair_key,ranked:3,ranked:10 "
                         "(default block_key,token)")
    ap.add_argument("--rank-of-truth", default=None, metavar="NIGHTS",
                    help="no linking: on the registry of an earlier run in --work, for nights NIGHTS (e.g. 5,30) "
                         "where a night reference's own earlier entity ranks among the entities it shares a key with")
    a = ap.parse_args(argv)
    if (a.rank_of_truth or a.compare_neighbourhood) and not a.work:
        ap.error("--rank-of-truth and --compare-neighbourhood read an earlier run: give its --work folder")
    if a.resume and not (a.work and a.json and Path(a.json).is_file()):
        ap.error("--resume continues an interrupted run: give its --work folder and its existing --json file")
    if a.rank_of_truth:
        return rank_of_truth(Path(a.work), a.profile, [int(x) for x in a.rank_of_truth.split(",")])
    if a.compare_neighbourhood:
        return compare_neighbourhood(Path(a.work), a.profile, a.rules.split(",") if a.rules else None)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pandas as pd

    from hdwm.registry import rebuild
    from hdwm.spark import get_spark

    link = _load(REPO / "spark_jobs" / "link.py", "bench_link")
    work = Path(a.work or tempfile.mkdtemp(prefix="incr-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    root = work / "data"
    reg = root / "lake" / "entities"
    total = a.nights * a.per_night
    t_gen = time.time()
    df = GENERATORS[a.generator](total, a.seed, work)
    if len(df) < total:
        raise SystemExit(f"generator gave {len(df)} references, wanted {total}")
    nights = deal(df, a.nights, a.per_night, a.seed)
    print(f"[bench] {total} references from {a.generator} (seed {a.seed}) in {time.time() - t_gen:.1f}s; "
          f"work={work}", file=sys.stderr, flush=True)

    spark = get_spark("incremental-bench", {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                            "spark.driver.memory": os.environ.get("HDWM_DRIVER_MEMORY", "4g")})
    spark.sparkContext.setLogLevel("WARN")
    start = date(2025, 1, 1)
    per_night = []
    results = {"generator": a.generator, "seed": a.seed, "nights": a.nights, "per_night": a.per_night,
               "neighbourhood": a.neighbourhood, "top_entities": a.top_entities, "profile": a.profile, "per_night_results": per_night,
               "load_start": os.getloadavg()}
    done = {}
    if a.resume:
        done = {r["ds"]: r for r in json.loads(Path(a.json).read_text()).get("per_night_results", [])}
    for i, part in enumerate(nights):
        ds = (start + timedelta(days=i)).isoformat()
        if ds in done and (reg / f"ds={ds}" / "_PUBLISHED.json").exists():
            per_night.append(done[ds])
            print(f"[bench] night {i + 1}: published by the interrupted run, kept", file=sys.stderr, flush=True)
            continue
        cur = root / "lake" / "curated" / ds
        sdf = spark.createDataFrame(part.astype(object).where(part.notna(), None),
                                    ", ".join(f"`{c}` string" for c in part.columns))
        sdf.write.mode("overwrite").parquet(str(cur))
        payload = link.run(str(cur), str(root / "lake" / "linked" / ds), ds, a.profile, spark=spark,
                           registry=str(reg), decisions="", neighbourhood=a.neighbourhood,
                           top_entities=a.top_entities)
        (reg / f"ds={ds}" / "_PUBLISHED.json").write_text(json.dumps({"ds": ds, "published_at": "bench"}))
        r = payload["registry"]
        results["neighbourhood"] = r.get("neighbourhood_rule", results["neighbourhood"])  # the rule the job used
        results["top_entities"] = r.get("top_entities", results["top_entities"])
        rec = {"night": i + 1, "ds": ds, "seconds": payload["seconds"],
               "neighbourhood": r["neighbourhood_references"], "followers": r.get("neighbourhood_followers", 0),
               "new": r["new_references"],
               "joined": r["joined_existing"], "merges": r["merges"], "splits": r["splits"],
               "references_total": r["references_total"], "entities_total": r["entities_total"],
               "night_f1": (payload["pairwise"] or {}).get("f1"),
               "curated_bytes": folder_bytes(cur), "written_bytes": own_bytes(reg, ds),
               "lake_entities_bytes": folder_bytes(reg), "load_1min": round(os.getloadavg()[0], 1)}
        per_night.append(rec)
        print(f"[bench] night {rec['night']}: {json.dumps(rec)}", file=sys.stderr, flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=2))

    last = per_night[-1]["ds"]
    truth = pd.concat(nights)[["source", "record_id", "truth_entity"]]
    truth_s = spark.createDataFrame(truth.astype(object), "source string, record_id string, truth_entity string")

    def f1_vs_truth(part_df, col):
        from hdwm.metrics import pairwise_metrics

        return pairwise_metrics(part_df.join(truth_s, ["source", "record_id"]), cluster_col=col)

    from hdwm.registry import read_version

    members = read_version(spark, reg, last).members
    results["incremental_vs_truth"] = f1_vs_truth(members, "entity_id")
    base_s = per_night[0]["seconds"]
    results["max_night_ratio"] = round(max(r["seconds"] for r in per_night) / base_s, 3)
    results["night1_seconds"] = base_s
    # the lake's bound: lake/entities after the nights <= 1.5 x one full version + the nights' own layers
    results["lake_entities_bytes"] = folder_bytes(reg)
    results["own_bytes_total"] = sum(  # measured when each night was written, before any retention
        r["written_bytes"] if r.get("written_bytes") is not None
        else own_bytes(reg, r["ds"]) if (reg / f"ds={r['ds']}" / "_COMPLETE.json").is_file() else 0
        for r in per_night)
    results["full_version_bytes"] = full_version_bytes(spark, reg, last, work / "compacted-copy")
    results["lake_bound_bytes"] = round(1.5 * results["full_version_bytes"] + results["own_bytes_total"])
    if not a.skip_batch:
        t = time.time()
        rep = rebuild(spark, str(reg), last, str(work / "rebuild"), a.profile)
        results["batch_seconds"] = round(time.time() - t, 2)
        part = spark.read.parquet(str(work / "rebuild" / "partition"))
        results["batch_vs_truth"] = f1_vs_truth(part, "rebuilt_cluster")
        results["batch_vs_incremental"] = rep["pairwise_vs_incremental"]
        results["f1_gap"] = f1_gap(results["batch_vs_truth"], results["incremental_vs_truth"])
        # each night's own F1 beside what the batch relink gives the same references (their pairs within the
        # night): does a night against a history of this size miss what a batch of the whole history finds?
        keys = spark.createDataFrame(
            pd.concat([p[["source", "record_id"]].assign(night=i + 1) for i, p in enumerate(nights)]).astype(
                {"source": str, "record_id": str, "night": int}), "source string, record_id string, night int")
        batch_by_night = f1_by_night(part.join(truth_s, ["source", "record_id"]).join(keys, ["source", "record_id"]),
                                     "rebuilt_cluster")
        # the same references in the registry's last version: later nights may have merged what a night
        # alone could not, as the batch (which sees every night) may
        final_by_night = f1_by_night(members.join(truth_s, ["source", "record_id"]).join(keys, ["source", "record_id"]),
                                     "entity_id")
        for r in per_night:
            b = batch_by_night.get(r["night"])
            r["batch_night_f1"] = b
            r["final_night_f1"] = final_by_night.get(r["night"])
            r["night_f1_gap"] = (None if b is None or r["night_f1"] is None else round(b - r["night_f1"], 4))
        gaps = [r["night_f1_gap"] for r in per_night if r.get("night_f1_gap") is not None]
        results["max_night_f1_gap"] = max(gaps) if gaps else None
    results["load_end"] = os.getloadavg()
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2))
    print("| night | seconds | x night 1 | neighbourhood | new | joined | merges | splits | night F1 | batch F1 | "
          "registry F1 at the end | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in per_night:
        batch_f1 = r.get("batch_night_f1")
        print(f"| {r['night']} | {r['seconds']} | {r['seconds'] / base_s:.2f} | {r['neighbourhood']} | {r['new']} | "
              f"{r['joined']} | {r['merges']} | {r['splits']} | {'n/a' if r['night_f1'] is None else r['night_f1']} | "
              f"{'n/a' if batch_f1 is None else batch_f1} | {r.get('final_night_f1', 'n/a')} | {r['load_1min']} |")
    print(json.dumps({k: v for k, v in results.items() if k != "per_night_results"}, indent=2))
    spark.stop()
    return 0


def compare_neighbourhood(work: Path, profile_name: str, rules: list[str] | None = None) -> int:
    """For every night d > 1 of an earlier run in ``work``: the neighbourhood
    (references and entities: the members of the entities of the candidates)
    of d against version d-1 under each rule of ``rules`` (``pair_key``,
    ``block_key``, ``token``, or ``ranked:K`` with K entities kept per night
    reference), with the seconds each took. Nothing is linked. Prints a
    Markdown table."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from hdwm.config import load_profile
    from hdwm.incremental import candidate_references
    from hdwm.registry import read_version, ref_key_col, versions
    from hdwm.spark import get_spark
    from hdwm.tokenizer import tokenize

    rules = rules or ["block_key", "token"]
    spark = get_spark("incremental-neighbourhood", {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("WARN")
    profile = load_profile(profile_name)
    reg = work / "data" / "lake" / "entities"
    vs = versions(reg)
    print("| night | registry | night refs | " + " | ".join(f"{r}: references / entities / s" for r in rules) + " |")
    print("|---:|---:|---:|" + "---:|" * len(rules))
    for i in range(1, len(vs)):
        prev, cur = read_version(spark, reg, vs[i - 1]), read_version(spark, reg, vs[i])
        base_mem = prev.members.withColumn("ref_key", ref_key_col())
        night = (cur.members.filter(F.col("first_seen_ds") == vs[i]).withColumn("ref_key", ref_key_col()))
        ntok = tokenize(night.select(F.col("ref_key").alias("record_id"), "text"), profile)
        eff = profile.effective(cur.complete["references_total"])
        cells = []
        for rule in rules:
            mode, _, k = rule.partition(":")
            kw = {"top_entities": int(k)} if k else {}
            t = time.time()
            cand = candidate_references(base_mem, ntok, cur.frequencies, eff, profile, mode, **kw)
            ents = cand.join(base_mem, "ref_key").select("entity_id").distinct()
            row = base_mem.join(ents, "entity_id", "left_semi").agg(
                F.count(F.lit(1)).alias("r"), F.countDistinct("entity_id").alias("e")).first()
            cells.append(f"{row['r']} / {row['e']} / {time.time() - t:.1f}")
        print(f"| {i + 1} | {prev.complete['references_total']} | {night.count()} | " + " | ".join(cells) + " |",
              flush=True)
    spark.stop()
    return 0


def rank_of_truth(work: Path, profile_name: str, nights: list[int]) -> int:
    """A measurement of the ``ranked`` rule, not a tuning loop: for each night d
    of ``nights`` of an earlier run in ``work`` (its curated nights carry
    ``truth_entity``), the night references whose true entity has references in
    version d-1, and the rank (``hdwm.incremental.neighbourhood_ranks``) of the
    best-ranked registry entity holding one of them: 1, 2, 3, 4-10, > 10, or
    none (no key shared with any of them: no rule built on keys finds it, only
    a chain through other references). Also how many have their earlier true
    references spread over more than one registry entity. Prints one line per night."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from hdwm.config import load_profile
    from hdwm.incremental import neighbourhood_ranks
    from hdwm.registry import read_version, ref_key_col, versions
    from hdwm.spark import get_spark
    from hdwm.tokenizer import tokenize

    spark = get_spark("incremental-rank-of-truth", {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("WARN")
    profile = load_profile(profile_name)
    root = work / "data" / "lake"
    vs = versions(root / "entities")
    truth = (spark.read.parquet(*[str(root / "curated" / v) for v in vs])
             .select(ref_key_col().alias("ref_key"), F.col("truth_entity").cast("string").alias("t")))
    for d in nights:
        if not 2 <= d <= len(vs):
            raise SystemExit(f"night {d} is not in the run (nights 2..{len(vs)} have a registry before them)")
        prev, cur = read_version(spark, root / "entities", vs[d - 2]), read_version(spark, root / "entities", vs[d - 1])
        base_mem = prev.members.withColumn("ref_key", ref_key_col())
        night = cur.members.filter(F.col("first_seen_ds") == vs[d - 1]).withColumn("ref_key", ref_key_col())
        ntok = tokenize(night.select(F.col("ref_key").alias("record_id"), "text"), profile)
        ranks = neighbourhood_ranks(base_mem, ntok, cur.frequencies,
                                    profile.effective(cur.complete["references_total"]), profile)
        true_ents = (night.select("ref_key").join(truth, "ref_key").withColumnRenamed("ref_key", "night_key")
                     .join(base_mem.select("ref_key", "entity_id").join(truth, "ref_key")
                           .select("t", "entity_id").distinct(), "t"))
        per = (true_ents.join(ranks, ["night_key", "entity_id"], "left").groupBy("night_key")
               .agg(F.min("rank").alias("rank"), F.countDistinct("entity_id").alias("true_entities")))
        bucket = (F.when(F.col("rank").isNull(), "none").when(F.col("rank") <= 3, F.col("rank").cast("string"))
                  .when(F.col("rank") <= 10, "4-10").otherwise(">10"))
        rows = {r["b"]: r["count"] for r in per.select(bucket.alias("b")).groupBy("b").count().collect()}
        total = sum(rows.values())
        spread = per.filter("true_entities > 1").count()
        cells = ", ".join(f"{b}: {rows.get(b, 0)} ({rows.get(b, 0) / max(total, 1):.1%})"
                          for b in ("1", "2", "3", "4-10", ">10", "none"))
        print(f"night {d} ({vs[d - 1]}): {total} of {night.count()} night references have earlier true references "
              f"({spread} spread over > 1 registry entity); rank of the best true entity: {cells}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
