"""Publishing one registry night into a PostgreSQL ``entity_members`` of N stored references.

    .venv/bin/python benchmarks/publish_scale.py --references 300000,3000000 [--json FILE] [--explain]

For each N, one after the other, in a throwaway database ``washline_bench_publish_<pid>`` on the
local PostgreSQL service (127.0.0.1:5432, trust auth, user postgres; created and dropped, also on
errors, with ``registry_nights.scratch_postgres``, which ``tests/conftest.py`` uses too):

1. the tables come from the product's DDL (``sql/postgres/staging.sql`` through
   ``washline.staging.load.ensure_schema``); ``generate_series`` fills the published registry the
   night links against: ``entity_members`` N references of ``febrl`` in N/3 entities of 3,
   ``entities`` N/3 rows with a golden record, ``entity_changes`` one ``new`` row per entity over
   30 earlier dates, ``entity_registry_state`` naming the base date; then ``VACUUM ANALYZE`` (a
   long-lived table is vacuumed and analysed by autovacuum). The published slice tables stay empty.
2. the night (2026-12-06 over the base 2026-12-05) is written as the link job leaves it without
   Spark: a format-2 version whose own layers (Parquet) hold the delta, a ``_COMPLETE.json``, and
   the night's curated records, links and clusters. Delta: 10,000 new references, 7,960 joining
   an existing entity (a ``grow`` each), 40 bridging two existing entities (a ``merge``: the
   younger id is removed and its 3 members move, 120 restaged members), 2,000 forming 1,000 new
   entities; 50 entities get another golden record (``update``). Entities are spread over the
   whole id range. 10,120 members, 9,090 entities (40 removed), 9,050 change rows staged.
3. timed, as the DAG's tasks call them: (a) staging load: ``washline.tasks.registry_staging``
   (picks the incremental mode from ``entity_registry_state``) + ``washline.staging.load.load_slice``;
   (b) the GX checks of ``check_quality``: ``washline.quality.runner.validate_slice`` with the
   registry suites (SQL captured with ``sqlcapture.py``; the slowest statements are listed);
   (c) ``washline.staging.publish.publish_slice(with_entities=True)``: the real function in its
   real transaction; each statement is timed by wrapping ``publish._execute``, whose cursor's
   ``rowcount`` gives the rows each statement wrote.

Wall seconds of sub-second statements are noisy on a shared box, so the script also counts what
does not depend on the load: the rows of the published registry (``entity_members``, ``entities``)
that the registry slice queries GX validates and the publish's registry statements scan (``EXPLAIN
(ANALYZE, FORMAT JSON)``: rows produced or filtered out by every scan of those tables, all loops and
parallel workers; the publish's statements in a transaction rolled back, before the measured
publish). ``--explain`` keeps the plans in the JSON.

Afterwards the published tables are checked against the night: N + 10,000 members, N/3 + 960
entities, every moved member in its survivor. Prints a JSON document and one line per N with the
ratio of the largest N to the smallest; exit 1 when a check fails, GX does not pass, or the
publish at the largest N takes 30 s or more.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("TQDM_DISABLE", "1")  # GX's progress bars

BASE, NIGHT = "2026-12-05", "2026-12-06"
CONN_ID = "bench_publish"
NEW_REFS, GROWS, MERGES, UPDATES, NEW_ENTITY_REFS = 10_000, 7_960, 40, 50, 2_000
TARGET_S = 30.0

#: The published registry before the night: N members in N/3 entities of 3, one change row each.
FILL = """
SET synchronous_commit = off;
INSERT INTO entity_members (source, record_id, entity_id, first_seen_ds, last_changed_ds)
SELECT 'febrl', 'h-' || g, 'E' || lpad(to_hex(g / 3), 16, '0'),
       to_char(DATE '2026-11-05' + ((g / 3) %% 30), 'YYYY-MM-DD'), to_char(DATE '2026-11-05' + ((g / 3) %% 30), 'YYYY-MM-DD')
FROM generate_series(0, %(n)s - 1) g;
INSERT INTO entities (entity_id, member_count, first_seen_ds, last_changed_ds, golden_record)
SELECT 'E' || lpad(to_hex(k), 16, '0'), 3, to_char(DATE '2026-11-05' + (k %% 30), 'YYYY-MM-DD'),
       to_char(DATE '2026-11-05' + (k %% 30), 'YYYY-MM-DD'),
       '{"given_name": "NAME' || (k %% 977) || '", "postcode": "' || lpad((k %% 9000 + 1000)::text, 4, '0')
       || '", "surname": "SURNAME' || (k %% 1913) || '"}'
FROM generate_series(0, %(e)s - 1) k;
INSERT INTO entity_changes (ds, entity_id, change, from_entity_ids, member_count)
SELECT to_char(DATE '2026-11-05' + (k %% 30), 'YYYY-MM-DD'), 'E' || lpad(to_hex(k), 16, '0'), 'new', NULL, 3
FROM generate_series(0, %(e)s - 1) k;
INSERT INTO entity_registry_state (ds, load_id, base_ds, publish_mode, reason, held_ds, references_total,
                                   entities_total, published_at)
VALUES ('2026-12-05', 'bench-base', '2026-12-04', 'incremental', 'benchmark fill', '2026-12-04',
        %(n)s, %(e)s, now())
"""


def eid(k: int) -> str:
    """The id the fill gives entity number ``k`` (``E`` + 16 hex digits)."""
    return f"E{k:016x}"


def fs(k: int) -> str:
    """The first-seen date the fill gives entity number ``k``."""
    import datetime as dt

    return (dt.date(2026, 11, 5) + dt.timedelta(days=k % 30)).isoformat()


def golden(k: int, tag: str = "") -> str:
    return json.dumps({"given_name": f"NAME{k % 977}{tag}", "postcode": f"{k % 9000 + 1000:04d}",
                       "surname": f"SURNAME{k % 1913}"}, sort_keys=True)


def night_delta(n: int) -> dict[str, Any]:
    """The night's delta over a registry of ``n`` references (see the module docstring)."""
    entities = n // 3
    step = entities // (GROWS + MERGES + UPDATES + 50)
    if step < 2:
        raise SystemExit(f"--references {n} is too small for the night (at least {3 * 2 * 8100:,})")
    members, ents, changes, slice_refs = [], [], [], []
    for i in range(NEW_REFS):
        rid = f"n-{i}"
        if i < GROWS:  # joins an existing entity
            k = i * step
            members.append(("febrl", rid, eid(k), NIGHT, NIGHT))
            ents.append((eid(k), 4, fs(k), NIGHT, golden(k, "+"), False))
            changes.append((eid(k), "grow", "", 4))
            slice_refs.append((rid, eid(k), 4))
        elif i < GROWS + MERGES:  # bridges entity k and k + 1: k survives (the smaller id), k + 1's members move
            k = i * step
            members.append(("febrl", rid, eid(k), NIGHT, NIGHT))
            members += [("febrl", f"h-{3 * (k + 1) + j}", eid(k), fs(k + 1), NIGHT) for j in range(3)]
            ents.append((eid(k), 7, min(fs(k), fs(k + 1)), NIGHT, golden(k, "*"), False))
            ents.append((eid(k + 1), 0, fs(k + 1), NIGHT, None, True))
            changes.append((eid(k), "merge", f"{eid(k)},{eid(k + 1)}", 7))
            slice_refs.append((rid, eid(k), 7))
        else:  # two references per new entity
            new = eid(0x1000000000 + (i - GROWS - MERGES) // 2)
            members.append(("febrl", rid, new, NIGHT, NIGHT))
            if (i - GROWS - MERGES) % 2 == 0:
                ents.append((new, 2, NIGHT, NIGHT, golden(i), False))
                changes.append((new, "new", "", 2))
            slice_refs.append((rid, new, 2))
    for j in range(UPDATES):  # another golden record, same members
        k = (GROWS + MERGES + j) * step
        ents.append((eid(k), 3, fs(k), NIGHT, golden(k, "~"), False))
        changes.append((eid(k), "update", "", 3))
    new_entities = NEW_ENTITY_REFS // 2
    complete = {
        "ds": NIGHT, "base_ds": BASE, "format": 2, "references_total": n + NEW_REFS,
        "night_references": NEW_REFS, "new_references": NEW_REFS, "joined_existing": GROWS + MERGES,
        "entities_total": entities - MERGES + new_entities, "new_entities": new_entities, "grows": GROWS,
        "merges": MERGES, "splits": 0, "split_rows": 0, "updates": UPDATES, "seconds": 1.0,
        "profile": "default",
    }
    return {"members": members, "entities": ents, "changes": changes, "slice": slice_refs,
            "complete": complete, "step": step}


def write_night(root: Path, delta: dict[str, Any]) -> dict[str, Path]:
    """Write the night as the jobs leave it under ``root`` (a data root): the registry version's own
    layers and ``_COMPLETE.json``, and the curated records, links and clusters. Returns the slice's
    staging table → Parquet folder."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    def layer(part: str, table) -> str:
        layer_id = f"{NIGHT}-{os.urandom(6).hex()}"
        folder = root / "lake" / "entities" / "_layers" / part / layer_id
        folder.mkdir(parents=True)
        pq.write_table(table, folder / "part-00000.parquet")
        (folder / "_SUCCESS").write_text("")
        return layer_id

    s = pa.string()
    m, e, c = delta["members"], delta["entities"], delta["changes"]
    own = {
        "members": layer("members", pa.table({
            "source": pa.array([x[0] for x in m], s), "record_id": pa.array([x[1] for x in m], s),
            "entity_id": pa.array([x[2] for x in m], s), "first_seen_ds": pa.array([x[3] for x in m], s),
            "last_changed_ds": pa.array([x[4] for x in m], s),
            "text": pa.array([f"{x[1].upper()} SMITH 2000" for x in m], s),
            "attributes": pa.array([[("given_name", x[1].upper()), ("postcode", "2000")] for x in m],
                                   pa.map_(s, s))})),
        "entities": layer("entities", pa.table({
            "entity_id": pa.array([x[0] for x in e], s), "member_count": pa.array([x[1] for x in e], pa.int32()),
            "first_seen_ds": pa.array([x[2] for x in e], s), "last_changed_ds": pa.array([x[3] for x in e], s),
            "golden_record": pa.array([x[4] for x in e], s), "removed": pa.array([x[5] for x in e], pa.bool_())})),
        "changes": layer("changes", pa.table({
            "ds": pa.array([NIGHT] * len(c), s), "entity_id": pa.array([x[0] for x in c], s),
            "change": pa.array([x[1] for x in c], s), "from_entity_ids": pa.array([x[2] for x in c], s),
            "member_count": pa.array([x[3] for x in c], pa.int32())})),
    }
    # the base's layers are not in this lake: an incremental publish stages the own layers only
    complete = {**delta["complete"], "own": own,
                "layers": {"members": [own["members"]], "entities": [own["entities"]], "frequencies": []}}
    version = root / "lake" / "entities" / f"ds={NIGHT}"
    version.mkdir(parents=True)
    (version / "_COMPLETE.json").write_text(json.dumps(complete))

    refs = delta["slice"]
    n = len(refs)
    records = pa.table({
        "record_id": [r[0] for r in refs], "source": ["febrl"] * n, "truth_entity": [r[1] for r in refs],
        "given_name": [f"NAME{i % 977}" for i in range(n)], "surname": [f"SURNAME{i % 1913}" for i in range(n)],
        "street_number": ["1"] * n, "address_1": ["MAIN ST"] * n, "address_2": pa.array([None] * n, s),
        "suburb": ["TOWN"] * n, "postcode": [f"{i % 9000 + 1000:04d}" for i in range(n)], "state": ["NSW"] * n,
        "date_of_birth": [dt.date(1950, 1, 1) + dt.timedelta(days=i % 20000) for i in range(n)],
        "soc_sec_id": [f"{1000000 + i:07d}" for i in range(n)], "ds": [NIGHT] * n,
        "source_file": ["part-0000.csv"] * n, "line_number": list(range(2, n + 2)),
    })
    links = pa.table({
        "record_id": [r[0] for r in refs], "source": ["febrl"] * n, "cluster_id": [r[1] for r in refs],
        "iteration": pa.array([1] * n, pa.int32()), "mu": [0.6] * n, "quality": [1.0] * n,
        "cluster_size": pa.array([r[2] for r in refs], pa.int32()),
    })
    sizes = dict((r[1], r[2]) for r in refs)
    clusters = pa.table({
        "cluster_id": list(sizes), "cluster_size": pa.array(list(sizes.values()), pa.int32()),
        "quality": [1.0] * len(sizes), "iteration": pa.array([1] * len(sizes), pa.int32()),
    })
    out = {}
    for table, data, folder in (("staging_records", records, root / "lake" / "curated" / NIGHT),
                                ("staging_links", links, root / "lake" / "linked" / NIGHT / "links"),
                                ("staging_clusters", clusters, root / "lake" / "linked" / NIGHT / "clusters")):
        folder.mkdir(parents=True)
        pq.write_table(data, folder / "part-00000.parquet")
        (folder / "_SUCCESS").write_text("")
        out[table] = folder
    return out


@contextmanager
def timed_publish_steps() -> Iterator[list[dict[str, Any]]]:
    """Every statement ``publish_slice`` runs through ``publish._execute``: name, seconds, rowcount."""
    from washline.staging import publish

    steps: list[dict[str, Any]] = []
    original = publish._execute

    def timed(cur, step, dialect, params):
        t0 = time.perf_counter()
        out = original(cur, step, dialect, params)
        steps.append({"step": step.name, "seconds": round(time.perf_counter() - t0, 4), "rows": cur.rowcount})
        return out

    publish._execute = timed
    try:
        yield steps
    finally:
        publish._execute = original


REGISTRY = ("entity_members", "entities")


def suite_of(sql: str) -> str | None:
    """The suite whose per-run view ``sql`` reads (``wlgx_<suite>_<yyyymmdd>_<token>``), if any."""
    import re

    hit = re.search(r"wlgx_([a-z_]+?)_\d{8}_", sql)
    return hit.group(1) if hit else None


def scanned_rows(node: dict[str, Any]) -> int:
    """Rows the scans of the published registry (``entity_members``, ``entities``) in an ``EXPLAIN
    (ANALYZE, FORMAT JSON)`` plan produced or filtered out, over all loops and parallel workers."""
    own = 0
    if node.get("Relation Name") in REGISTRY:
        own = (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node.get("Actual Loops", 0)
    return int(own + sum(scanned_rows(child) for child in node.get("Plans", [])))


def registry_reads(dbname: str, mode: str, text: bool) -> dict[str, Any]:
    """Registry rows scanned by the night's registry statements of the publish (in ``mode``, run in
    one transaction that is rolled back) and by the registry slice queries GX validates (through
    their views); with ``text`` also the plans."""
    import psycopg

    from washline.quality.runner import REGISTRY_SUITE_NAMES, query_for
    from washline.staging.dialects import render
    from washline.staging.publish import entity_publish_plan
    from washline.staging.spec import TABLES

    from registry_nights import PG_HOST, PG_PORT, PG_USER

    columns = {t: TABLES[t].column_names for t in ("entity_members", "entities", "entity_changes")}
    params = {"ds": NIGHT, "load_id": "bench-night", "published_at": "2026-12-06T00:00:00+00:00"}
    out: dict[str, Any] = {"publish": {}, "gx": {}, "plans": []}
    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=dbname) as conn:
        cur = conn.cursor()

        def explain(sql: str, bound: Any = None) -> int:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, bound)
            plan = cur.fetchone()[0]
            plan = plan[0] if isinstance(plan, list) else plan
            if text:
                out["plans"].append({"sql": " ".join(sql.split())[:160], "plan": plan})
            return scanned_rows(plan["Plan"])

        for suite in (*REGISTRY_SUITE_NAMES, "staging_clusters"):
            out["gx"][suite] = explain(query_for(suite, NIGHT, "postgres", registry=True))
        conn.rollback()
        for step in entity_publish_plan("postgres", columns, None, mode):
            if step.name.startswith(("other_load_ids", "staged", "version")):
                continue
            sql, bound = render(step.sql, "postgres", {k: v for k, v in params.items() if f":{k}" in step.sql})
            out["publish"][step.name] = explain(sql, bound)
        conn.rollback()
    out["publish_total"] = sum(out["publish"].values())
    out["gx_total"] = sum(out["gx"].values())
    return out


def run_one(n: int, explain: bool) -> dict[str, Any]:
    import psycopg

    from registry_nights import PG_HOST, PG_PORT, PG_USER, postgres_conn, scratch_postgres
    from sqlcapture import capture_sql

    from washline.paths import RunPaths
    from washline.quality import runner
    from washline.staging.dialects import connect, get_db_hook
    from washline.staging.load import ensure_schema, load_slice
    from washline.staging.publish import publish_slice
    from washline.tasks import registry_staging

    entities = n // 3
    result: dict[str, Any] = {"references": n, "entities": entities}
    with scratch_postgres("washline_bench_publish") as dbname, tempfile.TemporaryDirectory() as tmp:
        os.environ["AIRFLOW_CONN_" + CONN_ID.upper()] = json.dumps(postgres_conn(dbname))
        hook, dialect = get_db_hook(CONN_ID)
        conn = connect(hook, dialect, CONN_ID)
        ensure_schema(conn, dialect)
        conn.close()
        t0 = time.perf_counter()
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=dbname, autocommit=True) as c:
            for stmt in FILL.split(";"):
                if stmt.strip():
                    c.execute(stmt, {"n": n, "e": entities})
            c.execute("VACUUM ANALYZE entity_members, entities, entity_changes, entity_registry_state")
            sizes = c.execute("SELECT pg_total_relation_size('entity_members'), pg_total_relation_size('entities')"
                              ).fetchone()
        result["fill_seconds"] = round(time.perf_counter() - t0, 1)
        result["entity_members_mb"], result["entities_mb"] = (round(b / 2**20) for b in sizes)
        print(f"[publish_scale] N={n:,}: filled in {result['fill_seconds']} s "
              f"(entity_members {result['entity_members_mb']} MB)", file=sys.stderr, flush=True)

        delta = night_delta(n)
        root = Path(tmp)
        slice_sources = write_night(root, delta)
        paths = RunPaths(NIGHT, root, root / "landing")

        # (a) staging load, as load_staging does it
        t0 = time.perf_counter()
        entity_sources, version = registry_staging(paths, CONN_ID, None)
        loaded = load_slice(CONN_ID, NIGHT, {**slice_sources, **entity_sources}, "bench-night",
                            registry_version=version)
        result["staging"] = {"seconds": round(time.perf_counter() - t0, 2), "mode": version["publish_mode"],
                             "rows": loaded["rows"], "table_seconds": loaded["table_seconds"]}

        # (b) the GX checks check_quality runs
        with capture_sql() as statements:
            summary = runner.validate_slice(CONN_ID, NIGHT, NEW_REFS, root / "docs",
                                            expected_link_rows=NEW_REFS,
                                            expected_cluster_rows=len({r[1] for r in delta["slice"]}),
                                            registry=delta["complete"])
        result["gx"] = {"seconds": summary["seconds"], "status": summary["status"],
                        "failing": [(e["suite"], e["expectation"], e["column"], e["status"])
                                    for e in summary["expectations"] if e["status"] not in ("PASS", "SKIPPED")],
                        "statements": len(statements),
                        "sql_seconds": round(sum(s["seconds"] for s in statements), 2),
                        "slowest": [{"seconds": s["seconds"], "suite": suite_of(s["sql"]),
                                     "sql": " ".join(s["sql"].split())[:220]}
                                    for s in sorted(statements, key=lambda s: -s["seconds"])[:6]]}

        # rows of the published registry each statement scans (EXPLAIN ANALYZE; the publish's
        # statements in a transaction rolled back), before the measured publish
        result["registry_rows_scanned"] = registry_reads(dbname, version["publish_mode"], explain)

        # (c) publish, the real function in its real transaction
        with timed_publish_steps() as steps:
            t0 = time.perf_counter()
            out = publish_slice(CONN_ID, NIGHT, with_entities=True)
            wall = time.perf_counter() - t0
        writes = [s for s in steps if s["step"].split(":")[0] in
                  ("delete", "insert", "upsert", "delete_removed", "prune")]
        result["publish"] = {"seconds": round(wall, 2), "mode": out["registry"]["mode"], "rows": out["rows"],
                             "rows_written": sum(max(s["rows"], 0) for s in writes),
                             "steps": sorted(steps, key=lambda s: -s["seconds"])[:8]}

        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=dbname) as c:
            got = c.execute(
                "SELECT (SELECT COUNT(*) FROM entity_members), (SELECT COUNT(*) FROM entities), "
                "(SELECT COUNT(*) FROM entity_changes WHERE ds = %(ds)s), "
                "(SELECT COUNT(*) FROM entity_members m WHERE NOT EXISTS "
                " (SELECT 1 FROM entities e WHERE e.entity_id = m.entity_id)), "
                "(SELECT ds FROM entity_registry_state)", {"ds": NIGHT}).fetchone()
        want = (n + NEW_REFS, entities - MERGES + NEW_ENTITY_REFS // 2, len(delta["changes"]), 0, NIGHT)
        result["check"] = {"ok": tuple(got) == want, "got": list(got), "want": list(want)}
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--references", default="300000,3000000",
                        help="stored references N, comma-separated (default 300000,3000000)")
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--explain", action="store_true", help="keep the EXPLAIN ANALYZE plans in the JSON")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.references.split(",")]
    results = []
    for n in sizes:
        results.append(run_one(n, args.explain))
        r = results[-1]
        print(f"[publish_scale] N={n:,}: staging {r['staging']['seconds']} s, GX {r['gx']['seconds']} s "
              f"({r['gx']['status']}), publish {r['publish']['seconds']} s ({r['publish']['rows_written']:,} "
              f"rows written), registry rows scanned: GX {r['registry_rows_scanned']['gx_total']:,}, publish "
              f"{r['registry_rows_scanned']['publish_total']:,}; check {'ok' if r['check']['ok'] else r['check']}, "
              f"load {r['load_average']}", file=sys.stderr, flush=True)
    doc = {"night": NIGHT, "results": results}
    if len(results) > 1:
        lo, hi = results[0], results[-1]
        doc["ratio"] = {k: round(hi[k]["seconds"] / lo[k]["seconds"], 2) for k in ("staging", "gx", "publish")}
    print(json.dumps(doc, indent=2, default=str))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2, default=str))
    for r in results:
        print(f"N={r['references']:,}: staging {r['staging']['seconds']} s | GX {r['gx']['seconds']} s "
              f"({r['gx']['status']}) | publish {r['publish']['seconds']} s, {r['publish']['rows_written']:,} rows "
              f"written | registry rows scanned: GX {r['registry_rows_scanned']['gx_total']:,}, publish "
              f"{r['registry_rows_scanned']['publish_total']:,} | load {r['load_average']}")
    if "ratio" in doc:
        print(f"ratio {results[-1]['references']:,} / {results[0]['references']:,}: {doc['ratio']}")
    bad = [r for r in results if not r["check"]["ok"] or r["gx"]["status"] != "PASS"]
    return 1 if bad or results[-1]["publish"]["seconds"] >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
