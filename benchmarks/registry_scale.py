"""What a night costs as the entity registry's history grows: the same nights against registries of
different sizes.

    .venv/bin/python benchmarks/registry_scale.py --history 100000,1000000 --nights 3 --per-night 10000 \\
        [--generator synth|messy] [--seed 42] [--postgres] [--work DIR] [--json OUT.json]

For each history size H: one seeded generator (``synth``: FEBRL-like, ``benchmarks/synth.py``;
``messy``: households as confounders, ``benchmarks/messy.py``) makes H + nights x per-night
references with truth, shuffled with the seed, so the persons of the nights are also in the history
(cross-night duplicates). The first H references become registry version 1 *seeded from the
generator's truth* (an entity per true person, ids minted as a night mints them, golden records,
frequencies and stored tokens computed by the product's own functions, written by
``hdwm.registry.write_version``): linking millions of references in one batch takes hours on a
2-core box, and what this benchmark varies is the history a night is linked against, not how that
history was made. Then each night is linked by the real link job (``link.run(..., registry=...)``,
one Spark session for all nights, so no JVM start is counted) and marked published.

Reported per night (and written to ``--json``): the link job's seconds, its registry stages'
seconds (read base version, token frequencies, neighbourhood, link, id assignment, write version,
retention, from the job's own progress lines), the bytes of the layers the night wrote beside the
bytes of its curated input, the neighbourhood the engine saw, the night's own pairwise F1 against
the truth, and the ``lake/entities`` bytes after the night. With ``--postgres`` each night is then
staged, validated and published as the DAG's tasks do it (``washline.tasks.registry_staging`` +
``washline.staging.load.load_slice``, ``washline.quality.runner.validate_slice``,
``washline.staging.publish.publish_slice``) into a throwaway PostgreSQL database per history size
(``registry_nights.scratch_postgres``: 127.0.0.1:5432, trust auth, dropped afterwards), with their
seconds the publish mode, and the rows staged and published per table. The database starts empty, so night 1 publishes the
whole version (what adopting a registry costs, once) and later nights publish their delta: run at
least two nights to see an incremental one. The last table row per history size is
what a night costs there; the ratio of the largest history's night to the smallest's is the
benchmark's answer (target: within 1.5x for a 30x larger history).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))
sys.path.insert(0, str(REPO / "benchmarks"))

from incremental import folder_bytes, own_bytes  # noqa: E402  (the lake's byte counts, shared with the nights benchmark)

STAGE = re.compile(r"^\[link\] (registry: [a-z ]+): .*\(stage (\d+(?:\.\d+)?)s;")
STAGES = ("registry: read base version", "registry: token frequencies maintained",
          "registry: neighbourhood pulled in", "registry: link", "registry: id assignment",
          "registry: write version")


def stage_seconds(lines: list[str]) -> dict[str, float]:
    """{stage: seconds} from the link job's progress lines (``[link] <stage>: ... (stage Xs; ...)``)."""
    out: dict[str, float] = {}
    for line in lines:
        m = STAGE.match(line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
    return out


def parse_sizes(text: str) -> list[int]:
    """``"100000,1000000"`` -> [100000, 1000000]; each at least 1,000.

    Raises:
        ValueError: an entry that is not a whole number of at least 1,000.
    """
    sizes = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part.isdigit() or int(part) < 1000:
            raise ValueError(f"history sizes are whole numbers of references, at least 1000: got {part!r}")
        sizes.append(int(part))
    return sizes


class _Tee(io.StringIO):
    def __init__(self, other):
        super().__init__()
        self.other = other

    def write(self, text):
        self.other.write(text)
        return super().write(text)


def seed_registry(spark, reg: Path, hist, ds: str, profile_name: str) -> dict:
    """Write registry version ``ds`` from the references ``hist`` (pandas or Spark: source, record_id,
    truth_entity, attribute columns, such as a curated slice) clustered by their truth; returns its counts."""
    import link as link_job
    from pyspark.sql import functions as F

    from hdwm.config import load_profile
    from hdwm.frequency import token_frequencies
    from hdwm.registry import (empty_version, golden_records, mint_id_col, ref_key_col, write_version)
    from hdwm.tokenizer import tokenize, tokens_fingerprint

    from pyspark.sql import DataFrame

    profile = load_profile(profile_name)
    sdf = hist if isinstance(hist, DataFrame) else spark.createDataFrame(
        hist.astype(object).where(hist.notna(), None), ", ".join(f"`{c}` string" for c in hist.columns))
    refs = sdf.select("source", "record_id", "truth_entity", link_job.reference_text(sdf).alias("text"),
                      link_job.attributes_map(sdf).alias("attributes")).withColumn("ref_key", ref_key_col())
    refs = refs.localCheckpoint(eager=True)
    first = refs.groupBy("truth_entity").agg(F.min("ref_key").alias("min_key"))
    ids = first.select("truth_entity", mint_id_col(ds, "min_key").alias("entity_id"))
    members = refs.join(ids, "truth_entity").select(
        "source", "record_id", "entity_id", F.lit(ds).alias("first_seen_ds"), F.lit(ds).alias("last_changed_ds"),
        "text", "attributes").localCheckpoint(eager=True)
    entities = (members.groupBy("entity_id").agg(F.count(F.lit(1)).cast("int").alias("member_count"))
                .join(golden_records(members), "entity_id")
                .select("entity_id", "member_count", F.lit(ds).alias("first_seen_ds"),
                        F.lit(ds).alias("last_changed_ds"), "golden_record", F.lit(False).alias("removed")))
    tok = tokenize(refs.select(F.col("ref_key").alias("record_id"), "text"), profile).localCheckpoint(eager=True)
    freq = token_frequencies(tok)
    from hdwm.registry import split_ref_key

    src, rid = split_ref_key("record_id")
    tokens = tok.select(src.alias("source"), rid.alias("record_id"), "tokens")
    changes = entities.select(F.lit(ds).alias("ds"), "entity_id", F.lit("new").alias("change"),
                              F.lit("").alias("from_entity_ids"), "member_count")
    counts = {"ds": ds, "references_total": members.count(), "entities_total": entities.count(),
              "seeded_from_truth": True}
    write_version(reg, ds, empty_version(spark), members, entities, changes, freq, counts,
                  tokens=tokens, tokens_fingerprint=tokens_fingerprint(profile))
    (reg / f"ds={ds}" / "_PUBLISHED.json").write_text(json.dumps({"ds": ds, "published_at": "bench"}))
    return counts


PG_CONN_ID = "washline_bench_registry_scale"


def staging_records_copy(night_sdf, out: Path) -> Path:
    """The night's references in ``staging_records``' columns (``washline.staging.spec``), written to
    ``out`` as Parquet: the cleanse job's output schema, which the generators' frames do not have. Spec
    columns the frame lacks are null (``messy``'s one unaligned text column has no field of the spec:
    its records slice holds ids and truth only); ``date_of_birth`` is parsed as ``yyyyMMdd`` or ISO,
    null otherwise; columns outside the spec (``phone``) are left out. The link job read the original."""
    from pyspark.sql import functions as F

    from washline.staging.spec import TABLES

    cols = []
    for c in TABLES["staging_records"].columns:
        if c.name in ("ds", "load_id"):
            continue
        if c.name == "date_of_birth" and c.name in night_sdf.columns:
            v = F.coalesce(F.expr("try_to_date(date_of_birth, 'yyyyMMdd')"),
                           F.expr("try_to_date(date_of_birth, 'yyyy-MM-dd')"))
        elif c.name in night_sdf.columns:
            v = F.col(c.name)
        else:
            v = F.lit(None)
        cols.append(v.cast({"str": "string", "date": "date", "int64": "bigint"}[c.kind]).alias(c.name))
    night_sdf.select(*cols).coalesce(1).write.mode("overwrite").parquet(str(out))
    return out


def stage_and_publish(root: Path, ds: str, payload: dict, night_rows: int, records: Path) -> dict:
    """Stage, validate (GX) and publish the linked night ``ds`` under ``root/lake`` into the database of
    the ``PG_CONN_ID`` connection, as the DAG's load_staging, check_quality and publish tasks call the
    product's functions. Returns seconds per step (wall), the publish mode, the rows the night staged
    and the rows its publish wrote.

    Raises:
        SystemExit: a critical GX expectation failed (the DAG would not publish the night).
    """
    from washline.paths import RunPaths
    from washline.quality.runner import validate_slice
    from washline.staging.load import load_slice
    from washline.staging.publish import publish_slice
    from washline.tasks import registry_staging

    paths = RunPaths(ds, root, root / "landing")
    sources = {"staging_records": records, "staging_links": paths.linked / "links",
               "staging_clusters": paths.linked / "clusters"}
    t0 = time.perf_counter()
    entity_sources, version = registry_staging(paths, PG_CONN_ID, None)
    loaded = load_slice(PG_CONN_ID, ds, {**sources, **entity_sources}, f"bench-{ds}", registry_version=version)
    t1 = time.perf_counter()
    summary = validate_slice(PG_CONN_ID, ds, night_rows, root / "docs" / ds,
                             expected_link_rows=payload.get("references"),
                             expected_cluster_rows=payload.get("clusters"), registry=payload["registry"])
    t2 = time.perf_counter()
    if summary["status"] not in ("PASS", "WARN"):  # a WARN publishes in the DAG too
        raise SystemExit(f"GX did not pass on {ds}: {summary['status']}")
    out = publish_slice(PG_CONN_ID, ds, with_entities=True)
    t3 = time.perf_counter()
    return {"mode": version["publish_mode"], "gx": summary["status"], "staging_s": round(t1 - t0, 2), "gx_s": round(t2 - t1, 2),
            "publish_s": round(t3 - t2, 2), "staged_rows": loaded["rows"], "published_rows": out["rows"]}


def night_source(i: int, postgres: bool) -> str:
    """The source of night ``i`` (0-based): ``src_a`` and ``src_b`` in turn; with ``--postgres`` always
    ``febrl``, as staging_records accepts only the configured sources (include/config/sources.yaml)."""
    return "febrl" if postgres else "src_a" if i % 2 == 0 else "src_b"


def run_history(spark, link, gen, size: int, a, work: Path) -> list[dict]:
    """Seed a registry of ``size`` references and link ``a.nights`` nights against it (and, with
    ``a.postgres``, stage and publish each into a scratch PostgreSQL database)."""
    with contextlib.ExitStack() as stack:
        if a.postgres:
            from registry_nights import postgres_conn, scratch_postgres

            from washline.staging.dialects import connect, get_db_hook
            from washline.staging.load import ensure_schema

            dbname = stack.enter_context(scratch_postgres("washline_bench_rscale"))
            os.environ["AIRFLOW_CONN_" + PG_CONN_ID.upper()] = json.dumps(postgres_conn(dbname))
            hook, dialect = get_db_hook(PG_CONN_ID)
            conn = connect(hook, dialect, PG_CONN_ID)
            ensure_schema(conn, dialect)
            conn.close()
        return _run_history(spark, link, gen, size, a, work)


def _run_history(spark, link, gen, size: int, a, work: Path) -> list[dict]:
    total = size + a.nights * a.per_night
    df = gen(total, a.seed, work)
    if len(df) < total:
        raise SystemExit(f"generator gave {len(df)} references, wanted {total}")
    order = df.sample(frac=1.0, random_state=a.seed).reset_index(drop=True)  # persons spread over all nights
    hist = order.iloc[:size].copy()
    hist.insert(1, "source", "hist")
    root = work / f"h{size}"
    reg = root / "lake" / "entities"
    start = date(2025, 1, 1)
    t = time.time()
    kept = work / f"seed-{a.generator}-{a.seed}-{size}"
    shutil.rmtree(root, ignore_errors=True)  # nights of an earlier run in the same --work
    if (kept / "_SEEDED.json").is_file():  # an earlier run's seeded history: copied, not recomputed
        shutil.copytree(kept / "entities", reg)
        seeded = json.loads((kept / "_SEEDED.json").read_text())
    else:
        seeded = seed_registry(spark, reg, hist, start.isoformat(), a.profile)
        if a.keep_seed:
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(reg, kept / "entities")
            (kept / "_SEEDED.json").write_text(json.dumps(seeded))
    print(f"[bench] history {size}: registry seeded in {time.time() - t:.1f}s ({seeded['entities_total']} entities, "
          f"{folder_bytes(reg)} bytes)", file=sys.stderr, flush=True)
    out = []
    for i in range(a.nights):
        night = order.iloc[size + i * a.per_night: size + (i + 1) * a.per_night].copy()
        night.insert(1, "source", night_source(i, a.postgres))
        ds = (start + timedelta(days=i + 1)).isoformat()
        cur = root / "lake" / "curated" / ds
        sdf = spark.createDataFrame(night.astype(object).where(night.notna(), None),
                                    ", ".join(f"`{c}` string" for c in night.columns))
        sdf.coalesce(1).write.mode("overwrite").parquet(str(cur))
        tee = _Tee(sys.stderr)
        with contextlib.redirect_stderr(tee):
            payload = link.run(str(cur), str(root / "lake" / "linked" / ds), ds, a.profile, spark=spark,
                               registry=str(reg), decisions="")
        (reg / f"ds={ds}" / "_PUBLISHED.json").write_text(json.dumps({"ds": ds, "published_at": "bench"}))
        r = payload["registry"]
        rec = {"history": size, "night": i + 1, "ds": ds, "seconds": payload["seconds"],
               "stages": stage_seconds(tee.getvalue().splitlines()),
               "curated_bytes": folder_bytes(cur), "written_bytes": own_bytes(reg, ds),
               "lake_entities_bytes": folder_bytes(reg), "neighbourhood": r["neighbourhood_references"],
               "joined": r["joined_existing"], "new": r["new_references"],
               "night_f1": (payload.get("pairwise") or {}).get("f1"), "load_1min": round(os.getloadavg()[0], 1)}
        if a.postgres:
            records = staging_records_copy(sdf, root / "staging_records" / ds)
            rec["postgres"] = stage_and_publish(root, ds, payload, len(night), records)
        out.append(rec)
        print(f"[bench] {json.dumps(rec)}", file=sys.stderr, flush=True)
        if a.json:
            prev = json.loads(Path(a.json).read_text()) if Path(a.json).is_file() else {"nights": []}
            prev["nights"] = [x for x in prev["nights"] if not (x["history"] == size and x["night"] == i + 1)] + [rec]
            Path(a.json).write_text(json.dumps(prev, indent=2))
    if a.batch:
        batch_night_f1(spark, reg, order.iloc[size:size + a.nights * a.per_night], a, root, out)
    return out


def batch_night_f1(spark, reg: Path, nights_df, a, root: Path, out: list[dict]) -> None:
    """Relink every reference of the last version in one batch (``hdwm.registry.rebuild``) and set each
    night record's ``batch_night_f1`` (the batch's pairwise F1 over the pairs within that night's
    references, against the truth) and ``night_f1_gap`` (batch − night; the target is at most 0.01), with
    the batch's ``batch_seconds``. The seeded history is the generator's truth, so this compares a night
    against what a batch of the whole history and every night finds for the same references."""
    import pandas as pd
    from incremental import f1_by_night

    from hdwm.registry import rebuild

    last = out[-1]["ds"]
    t = time.time()
    rebuild(spark, str(reg), last, str(root / "rebuild"), a.profile)
    seconds = round(time.time() - t, 2)
    part = spark.read.parquet(str(root / "rebuild" / "partition"))
    keys = pd.DataFrame({"source": [night_source(i, a.postgres) for i in range(a.nights) for _ in range(a.per_night)],
                         "record_id": nights_df["record_id"].astype(str).to_numpy(),
                         "truth_entity": nights_df["truth_entity"].astype(str).to_numpy(),
                         "night": [i + 1 for i in range(a.nights) for _ in range(a.per_night)]})
    keys_s = spark.createDataFrame(keys, "source string, record_id string, truth_entity string, night int")
    by_night = f1_by_night(part.join(keys_s, ["source", "record_id"]), "rebuilt_cluster")
    for r in out:
        b = by_night.get(r["night"])
        r["batch_night_f1"], r["batch_seconds"] = b, seconds
        r["night_f1_gap"] = None if b is None or r["night_f1"] is None else round(b - r["night_f1"], 4)
    print(f"[bench] history {out[0]['history']}: batch relink {seconds:.1f}s, night F1 "
          + ", ".join(f"{r['night_f1']} (batch {r['batch_night_f1']})" for r in out), file=sys.stderr, flush=True)
    if a.json:
        prev = json.loads(Path(a.json).read_text())
        mine = {(r["history"], r["night"]): r for r in out}
        prev["nights"] = [mine.get((x["history"], x["night"]), x) for x in prev["nights"]]
        Path(a.json).write_text(json.dumps(prev, indent=2))


def _f4(x) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def table(rows: list[dict]) -> str:
    """The Markdown table of ``rows`` (run_history's records)."""
    short = {"registry: read base version": "read", "registry: token frequencies maintained": "freq",
             "registry: neighbourhood pulled in": "neigh", "registry: link": "link",
             "registry: id assignment": "ids", "registry: write version": "write"}
    head = ("| history | night | link s | " + " | ".join(short.values())
            + " | written KB | curated KB | written / curated | neighbourhood | night F1 |"
            + (" batch F1 |" if any("batch_night_f1" in r for r in rows) else "") + " lake/entities MB | load |"
            + (" publish mode | staging s | GX s | publish s |" if any("postgres" in r for r in rows) else ""))
    lines = [head, "|" + "---:|" * (head.count("|") - 1)]
    for r in rows:
        st = r["stages"]
        f1 = "n/a" if r["night_f1"] is None else f"{r['night_f1']:.4f}"
        lines.append(f"| {r['history']:,} | {r['night']} | {r['seconds']:.1f} | "
                     + " | ".join(f"{st.get(k, 0):.1f}" for k in short)
                     + f" | {r['written_bytes'] / 1e3:.0f} | {r['curated_bytes'] / 1e3:.0f} | "
                       f"{r['written_bytes'] / max(r['curated_bytes'], 1):.2f} | {r['neighbourhood']} | {f1} | "
                     + (f"{_f4(r.get('batch_night_f1'))} | " if any("batch_night_f1" in x for x in rows) else "")
                     + f"{r['lake_entities_bytes'] / 1e6:.1f} | {r['load_1min']} |"
                     + (" {mode} | {staging_s} | {gx_s} | {publish_s} |".format(**r["postgres"]) if "postgres" in r
                        else " | | | |" if any("postgres" in x for x in rows) else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--history", default="100000,1000000", help="registry sizes, comma separated")
    ap.add_argument("--nights", type=int, default=3)
    ap.add_argument("--per-night", type=int, default=10000)
    ap.add_argument("--generator", choices=["synth", "messy"], default="synth")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--profile", default="default")
    ap.add_argument("--work", default=None, help="working folder (default: a new temp folder)")
    ap.add_argument("--json", default=None, help="write the per-night records here too")
    ap.add_argument("--postgres", action="store_true",
                    help="also stage, validate and publish each night into a scratch database on the local "
                         "PostgreSQL service (127.0.0.1:5432, trust auth)")
    ap.add_argument("--batch", action="store_true",
                    help="after each history's nights, relink its last version in one batch and report the "
                         "batch's F1 over each night's references beside the night's own (batch_night_f1)")
    ap.add_argument("--keep-seed", action="store_true",
                    help="keep each seeded history under --work and copy it on later runs with the same "
                         "generator, seed and size (the seeding is not what is measured)")
    a = ap.parse_args(argv)
    try:
        sizes = parse_sizes(a.history)
    except ValueError as exc:
        ap.error(str(exc))
    if a.nights < 1 or a.per_night < 100:
        ap.error("--nights must be at least 1 and --per-night at least 100")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import incremental

    from hdwm.spark import get_spark

    link = incremental._load(REPO / "spark_jobs" / "link.py", "bench_link")
    gen = incremental.GENERATORS[a.generator]
    work = Path(a.work or tempfile.mkdtemp(prefix="registry-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    spark = get_spark("registry-scale", {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                         "spark.driver.memory": os.environ.get("HDWM_DRIVER_MEMORY", "6g")})
    spark.sparkContext.setLogLevel("WARN")
    rows = []
    for size in sizes:
        rows += run_history(spark, link, gen, size, a, work)
    print(table(rows))
    last = {r["history"]: r for r in rows}
    lo, hi = last[min(last)], last[max(last)]
    print(f"\nlast night against {hi['history']:,} / against {lo['history']:,}: "
          f"{hi['seconds'] / lo['seconds']:.2f}x ({hi['seconds']:.1f} s / {lo['seconds']:.1f} s); "
          f"generator {a.generator}, seed {a.seed}, {a.per_night} references a night; work={work}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
