"""The link job with an entity registry: nights linked against the published
registry, stable ids, merges, reruns, refusals and killed jobs.

Tiny hand-made references, Spark local. "Publishing" a night is simulated by
writing its ``_PUBLISHED.json`` marker, as the Airflow publish task does.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from hdwm.config import load_profile

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
ATTRS = ["given_name", "surname", "street_number", "address", "city", "dob", "phone", "email"]

NIGHT1 = [  # source crm
    ("c1", "p1", "JOHN", "SMITH", "12", "OAK ST", "SPRINGFIELD", "19800101", "5551234567", None),
    ("c2", "p1", "JON", "SMITH", "12", "OAK ST", "SPRINGFIELD", "19800101", "5551234567", None),
    ("c3", "p2", "MARY", "JONES", "4", "ELM RD", "SHELBYVILLE", "19750505", "5559876543", None),
    ("c4", "p3", "PETER", "BROWN", "77", "PINE AVE", "OGDENVILLE", None, None, None),
    ("c5", "p4", "LISA", "WHITE", "9", "BIRCH LN", "HAVERBROOK", "19851212", "5552223333", None),
]
NIGHT2 = [  # source web, reusing crm's record ids for other people
    ("c1", "p1", "JOHN", "SMITH", "12", "OAK ST", "SPRINGFIELD", "19800101", "5551234567", None),
    ("c2", "p3", None, None, None, None, None, "19900909", "5550001111", "PBROWN77"),
    ("c3", "p5", "KAREN", "GREEN", "3", "MAPLE CT", "CAPITAL", "19700303", "5554445555", None),
]
NIGHT3 = [  # source web: one reference that bridges crm/c4 (night 1) and web/c2 (night 2)
    ("c9", "p3", "PETER", "BROWN", "77", "PINE AVE", "OGDENVILLE", "19900909", "5550001111", "PBROWN77"),
]


def _link_module():
    spec = importlib.util.spec_from_file_location("washline_link_job_reg", REPO / "spark_jobs" / "link.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _curated(spark, root: Path, ds: str, source: str, rows) -> str:
    pdf = pd.DataFrame(rows, columns=["record_id", "truth_entity", *ATTRS])
    pdf.insert(1, "source", source)
    pdf["ds"] = ds
    pdf["source_file"] = f"{source}.csv"
    pdf["line_number"] = range(2, len(pdf) + 2)
    pdf = pdf.astype(object).where(pdf.notna(), None)
    schema = ", ".join(f"{c} {'int' if c == 'line_number' else 'string'}" for c in pdf.columns)
    path = root / "lake" / "curated" / ds
    spark.createDataFrame(pdf, schema).coalesce(1).write.mode("overwrite").parquet(str(path))
    return str(path)


class _Tee(io.StringIO):
    """Keeps what is written and passes it on (so ``-s`` still shows it)."""

    def __init__(self, other):
        super().__init__()
        self.other = other

    def write(self, text):
        self.other.write(text)
        return super().write(text)


def _logged(fn, *args, **kwargs):
    """(fn's result, the [link]/[hdwm] lines it wrote to stderr)."""
    tee = _Tee(sys.stderr)
    with contextlib.redirect_stderr(tee):
        result = fn(*args, **kwargs)
    return result, tee.getvalue().splitlines()


def _publish(registry: Path, ds: str) -> None:
    (registry / f"ds={ds}" / "_PUBLISHED.json").write_text(json.dumps({"ds": ds, "published_at": "now"}))


KEYS = {"members": ["source", "record_id"], "tokens": ["source", "record_id"], "entities": ["entity_id"]}


def _part(registry: Path, ds: str, part: str, folder: str | None = None) -> pd.DataFrame:
    """Part ``part`` of a version (its manifest in ``folder``, default ``ds=<ds>``) as a
    reader sees it: the layers it names merged (newest row per key, frequencies summed,
    removed entities dropped); ``changes`` is the night's own layer."""
    c = json.loads((registry / (folder or f"ds={ds}") / "_COMPLETE.json").read_text())
    lay = registry / "_layers" / part
    if part == "changes":
        return pd.read_parquet(lay / c["own"]["changes"])
    frames = [pd.read_parquet(lay / i).assign(_layer=n) for n, i in enumerate(c["layers"][part])]
    df = pd.concat(frames, ignore_index=True)
    if part == "frequencies":
        df = df.groupby("token", as_index=False)["freq"].sum()
        return df[df["freq"] > 0].sort_values("token").reset_index(drop=True)
    df = df.sort_values("_layer").drop_duplicates(KEYS[part], keep="last").drop(columns="_layer")
    if part == "entities":
        df = df[~df["removed"]].drop(columns="removed")
    return df.sort_values(KEYS[part]).reset_index(drop=True)


def _copy_version(src: Path, ds: str, dst: Path) -> None:
    """Copy version ``ds`` of registry ``src`` into registry ``dst``: its folder and the layers it names."""
    import shutil

    shutil.copytree(src / f"ds={ds}", dst / f"ds={ds}")
    c = json.loads((src / f"ds={ds}" / "_COMPLETE.json").read_text())
    named = {(part, i) for part, ids in c["layers"].items() for i in ids} | set(c["own"].items())
    for part, i in named:
        shutil.copytree(src / "_layers" / part / i, dst / "_layers" / part / i)


def _members(registry: Path, ds: str, folder: str | None = None) -> pd.DataFrame:
    df = _part(registry, ds, "members", folder)
    df["attributes"] = df["attributes"].map(lambda m: sorted(dict(m).items()) if m is not None else None)
    return df.sort_values(["source", "record_id"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def nights(spark, tmp_path_factory):
    """Nights 1-3 linked and published in order; returns (root, registry, link module, payloads)."""
    link = _link_module()
    root = tmp_path_factory.mktemp("data")
    reg = root / "lake" / "entities"
    payloads = {"logs": {}}
    for ds, source, rows in (("2024-01-01", "crm", NIGHT1), ("2024-01-02", "web", NIGHT2),
                             ("2024-01-03", "web", NIGHT3)):
        cur = _curated(spark, root, ds, source, rows)
        payloads[ds], payloads["logs"][ds] = _logged(
            link.run, cur, str(root / "lake" / "linked" / ds), ds, "default", spark=spark, registry=str(reg),
            decisions="")
        if ds == "2024-01-02":
            payloads["members2"] = _members(reg, ds)
        _publish(reg, ds)
    return root, reg, link, payloads


def _ids(registry: Path, ds: str) -> dict:
    m = _members(registry, ds)
    return {(r.source, r.record_id): r.entity_id for r in m.itertuples()}


def test_night_two_duplicate_takes_night_one_id(nights):
    root, reg, _, payloads = nights
    ids1, ids2 = _ids(reg, "2024-01-01"), _ids(reg, "2024-01-02")
    assert ids1[("crm", "c1")] == ids1[("crm", "c2")]  # linked within night 1
    assert ids2[("web", "c1")] == ids1[("crm", "c1")]  # night 2's duplicate joins it
    assert ids2[("web", "c3")] not in ids1.values()  # a new person gets a new id
    assert all(ids2[k] == v for k, v in ids1.items())  # nothing of night 1 changed
    c2 = payloads["2024-01-02"]["registry"]
    assert (c2["base_ds"], c2["night_references"], c2["new_references"], c2["joined_existing"]) == \
        ("2024-01-01", 3, 3, 1)
    assert c2["references_total"] == 8 and c2["grows"] == 1 and c2["merges"] == 0
    # links/ carries source + source record id; cluster_id is the entity id
    links = pd.read_parquet(root / "lake" / "linked" / "2024-01-02" / "links")
    assert list(links.columns) == ["source", "record_id", "cluster_id", "iteration", "mu", "quality", "cluster_size"]
    row = links.set_index("record_id").loc["c1"]
    assert row.source == "web" and row.cluster_id == ids1[("crm", "c1")] and row.cluster_size == 3
    ents = _part(reg, "2024-01-02", "entities").set_index("entity_id")
    gold = json.loads(ents.loc[ids1[("crm", "c1")], "golden_record"])
    assert gold["given_name"] == "JOHN" and gold["surname"] == "SMITH"  # 2 x JOHN beat 1 x JON
    assert ents.loc[ids1[("crm", "c1")], "first_seen_ds"] == "2024-01-01"
    changes = _part(reg, "2024-01-02", "changes")
    assert set(changes["ds"]) == {"2024-01-02"}
    assert sorted(changes["change"]) == ["grow", "new", "new"]


def test_bridging_reference_merges_keeping_oldest_id(nights):
    _, reg, _, payloads = nights
    ids2, ids3 = _ids(reg, "2024-01-02"), _ids(reg, "2024-01-03")
    a, b = ids2[("crm", "c4")], ids2[("web", "c2")]
    assert a != b
    assert ids3[("crm", "c4")] == ids3[("web", "c2")] == ids3[("web", "c9")] == a  # night 1's id survives
    changes = _part(reg, "2024-01-03", "changes")
    merge = changes[changes["change"] == "merge"]
    assert len(merge) == 1 and merge.iloc[0]["entity_id"] == a
    assert merge.iloc[0]["from_entity_ids"] == ",".join(sorted([a, b])) and merge.iloc[0]["member_count"] == 3
    ents = _part(reg, "2024-01-03", "entities")
    assert b not in set(ents["entity_id"]) and len(ents) == payloads["2024-01-03"]["registry"]["entities_total"]
    assert payloads["2024-01-03"]["registry"]["merges"] == 1


def test_rerun_gives_identical_members(spark, nights, tmp_path):
    """A rerun of the latest night (2024-01-03) relinks against the same base: identical rows."""
    root, reg, link, _ = nights
    before = {p: _part(reg, "2024-01-03", p) for p in ("entities", "changes", "frequencies")}
    m_before = _members(reg, "2024-01-03")

    def stored_tokens():
        t = _part(reg, "2024-01-03", "tokens")
        return [(r.source, r.record_id, list(r.tokens)) for r in t.itertuples()]

    t_before = stored_tokens()
    link.run(str(root / "lake" / "curated" / "2024-01-03"), str(tmp_path / "out"), "2024-01-03", "default",
             spark=spark, registry=str(reg), decisions="")
    assert not (reg / "ds=2024-01-03" / "_PUBLISHED.json").exists()  # the rerun cleared the marker
    # the published version was moved aside first, until the rerun publishes (or report restores it)
    stash = reg / ".published-ds=2024-01-03"
    assert (stash / "_PUBLISHED.json").exists() and (stash / "_COMPLETE.json").exists()
    pd.testing.assert_frame_equal(_members(reg, "2024-01-03", ".published-ds=2024-01-03"), m_before)
    pd.testing.assert_frame_equal(_members(reg, "2024-01-03"), m_before)
    for p, df in before.items():
        pd.testing.assert_frame_equal(_part(reg, "2024-01-03", p), df)
    assert stored_tokens() == t_before and len(t_before) == len(m_before)
    _publish(reg, "2024-01-03")


def test_refusals_name_the_dates(spark, nights, tmp_path):
    root, reg, link, _ = nights
    from hdwm.registry import RegistryOrderError

    with pytest.raises(RegistryOrderError, match="ds 2024-01-02 is before the published ds 2024-01-03"):
        link.run(str(root / "lake" / "curated" / "2024-01-02"), str(tmp_path / "o"), "2024-01-02", "default",
                 spark=spark, registry=str(reg), decisions="")
    cur4 = _curated(spark, root, "2024-01-04", "web", [NIGHT2[2]])
    try:
        with pytest.raises(RegistryOrderError, match="the previous date 2024-01-04 has not been published yet"):
            link.run(cur4.replace("2024-01-04", "2024-01-05"), str(tmp_path / "o"), "2024-01-05", "default",
                     spark=spark, registry=str(reg), decisions="")
        # through main(): exit 2 (permanent) and the message on stderr
        rc = link.main(["--curated", cur4, "--out", str(tmp_path / "o"), "--ds", "2024-01-02",
                        "--registry", str(reg), "--decisions", ""])
        assert rc == 2
    finally:
        import shutil

        shutil.rmtree(cur4)


def test_killed_job_is_ignored_by_next_night(spark, nights, tmp_path):
    root, reg, link, _ = nights
    # a killed link of 2024-01-04: half a version, no _COMPLETE.json (a stray marker does not make it a base)
    half = reg / "ds=2024-01-04" / "members"
    half.mkdir(parents=True)
    (half / "part-0.parquet").write_bytes(b"garbage")
    _publish(reg, "2024-01-04")
    (reg / ".ds=2024-01-05.tmp-999").mkdir()  # a temp sibling of an earlier attempt
    cur = _curated(spark, root, "2024-01-05", "web", [("c7", "p2", "MARY", "JONES", "4", "ELM RD", "SHELBYVILLE",
                                                        "19750505", "5559876543", None)])
    payload = link.run(cur, str(tmp_path / "o5"), "2024-01-05", "default", spark=spark, registry=str(reg),
                       decisions="")
    assert payload["registry"]["base_ds"] == "2024-01-03"
    ids3, ids5 = _ids(reg, "2024-01-03"), _ids(reg, "2024-01-05")
    assert ids5[("web", "c7")] == ids3[("crm", "c3")]
    assert not (reg / ".ds=2024-01-05.tmp-999").exists()
    assert (reg / "ds=2024-01-05" / "_COMPLETE.json").is_file()


SINCE_START = re.compile(r"\((?:stage (\d+\.\d)s; )?(\d+\.\d)s since start\)$")


def _levels_left(mu: float, step: float = 0.05) -> int:
    """mu levels the engine's loop still visits after ``mu`` (default profile: muIterate 0.05)."""
    left, m = 0, mu
    while round(m + step, 2) <= 1.0 + 1e-9:
        m, left = round(m + step, 2), left + 1
    return left


ENGINE_LINE = re.compile(r"took (\d+\.\d)s; (?:it was the last mu level|at most (\d+) mu level\(s\) left, about "
                         r"(\d+)s more at (\d+\.\d)s per iteration \(mean of the last (\d); the loop may stop sooner\))")


def _check_engine_lines(lines: list[str], iterations: list[dict]) -> None:
    """One ``[link] engine:`` line per engine iteration: its mu and seconds as in
    metrics.json, and the estimate = mu levels left x mean of the last 3 iterations."""
    engine = [line for line in lines if line.startswith("[link] engine: iteration ")]
    assert len(engine) == len(iterations), (engine, iterations)
    recent: list[float] = []
    for line, rec in zip(engine, iterations):
        if rec["links"] == 0:  # the loop stopped: no pair, or no link, left (the engine's line has no mu
            # when fewer than 2 references are left)
            at = f" at mu={rec['mu']:.2f}" if rec["references"] >= 2 else ""
            assert line.startswith(f"[link] engine: iteration {rec['iteration']}{at} ended the loop"), line
            continue
        assert line.startswith(f"[link] engine: iteration {rec['iteration']} at mu={rec['mu']:.2f} took "), line
        m = ENGINE_LINE.search(line)
        assert m, line
        took = float(m[1])
        if not rec["unchanged"]:  # the engine's own seconds; a line that recomputed nothing has none
            assert m[1] == f"{rec['seconds']:.1f}", (line, rec)
        recent = (recent + [took])[-3:]
        mean, left = sum(recent) / len(recent), _levels_left(rec["mu"])
        if left == 0:
            assert m[2] is None, line
            continue
        assert (int(m[2]), int(m[5])) == (left, len(recent)), line
        assert abs(float(m[4]) - mean) <= 0.11 and abs(int(m[3]) - left * mean) <= left * 0.05 + 0.51, (line, mean)


def test_task_log_tells_each_registry_stage_with_counts_and_seconds(nights):
    """Progress lines: the link job's [link] lines in the task log, one per
    stage with its counts, the stage's seconds and the seconds since start."""
    _, _, _, payloads = nights
    stages = ["start", "read curated", "decisions", "registry: read base version",
              "registry: token frequencies maintained", "registry: neighbourhood pulled in", "registry: link",
              "registry: id assignment", "registry: write version", "write links, clusters and pairs", "done"]
    previous = None
    for ds, rows in (("2024-01-01", NIGHT1), ("2024-01-02", NIGHT2), ("2024-01-03", NIGHT3)):
        p, lines = payloads[ds], payloads["logs"][ds]
        c = p["registry"]
        said = [line for line in lines if line.startswith("[link] ")]
        by_stage = {}
        for line in said:
            stage = line[len("[link] "):].split(":")[0]
            stage = next((s for s in stages if line.startswith(f"[link] {s}:")), stage)
            by_stage.setdefault(stage, line)
        assert [s for s in by_stage if s in stages] == stages, said
        seconds = [float(SINCE_START.search(line).group(2)) for line in said]
        assert seconds == sorted(seconds), said  # every line says its seconds since the job started
        for s in stages[1:-1]:
            assert SINCE_START.search(by_stage[s]).group(1) is not None, by_stage[s]  # and the stage's own

        def says(stage, text):
            assert by_stage[stage].startswith(f"[link] {stage}: {text} ("), by_stage[stage]

        says("read curated", f"references={len(rows)} sources=1")
        says("decisions", "must_link=0 cannot_link=0")
        if previous is None:
            says("registry: read base version", "base_ds=none (the empty registry: first night) references=0 "
                                                "entities=0")
        else:
            says("registry: read base version", f"base_ds={previous['ds']} "
                                                f"references={previous['references_total']} "
                                                f"entities={previous['entities_total']} "
                                                f"layers={previous['layers']} "
                                                f"stored_tokens={previous['tokens_fingerprint']}")
        base_refs = previous["references_total"] if previous else 0
        assert by_stage["registry: token frequencies maintained"].startswith(
            f"[link] registry: token frequencies maintained: ds={ds} night={len(rows)} "
            f"sent_again={c['resent_references']} registry={base_refs} N={c['references_total']} distinct_tokens=")
        assert f"references={c['neighbourhood_references']} entities=" in by_stage["registry: neighbourhood pulled in"]
        # the rule comes from the profile (registryNeighbourhood), and the log and _COMPLETE.json name it
        rule = load_profile("default").registryNeighbourhood
        assert c["neighbourhood_rule"] == rule, c
        assert f"neighbourhood_rule={rule} " in by_stage["registry: neighbourhood pulled in"]
        link_line = re.match(r"\[link\] registry: link: references=(\d+) clusters=(\d+) iterations=(\d+) "
                             r"split_policy=(\w+) splits_undone=(\d+) \(stage ", by_stage["registry: link"])
        assert link_line, by_stage["registry: link"]
        assert int(link_line[1]) == len(rows) + c["neighbourhood_references"] == p["engine_references"]
        assert int(link_line[3]) == len(p["iterations"]) and 1 <= int(link_line[2]) <= int(link_line[1])
        assert link_line[4] == load_profile("default").registrySplits and int(link_line[5]) <= c["entities_total"]
        says("registry: id assignment", f"night_references={c['night_references']} "
                                        f"new_references={c['new_references']} joined_existing={c['joined_existing']} "
                                        f"new_entities={c['new_entities']} grows={c['grows']} merges={c['merges']} "
                                        f"splits={c['splits']} entities_total={c['entities_total']} "
                                        f"references_total={c['references_total']}")
        written = re.match(
            re.escape(f"[link] registry: write version: ds={ds} references_total={c['references_total']} "
                      f"entities_total={c['entities_total']} new_entities={c['new_entities']} "
                      f"grows={c['grows']} merges={c['merges']} splits={c['splits']} "
                      f"layers={len(previous['layers_list']) + 1 if previous else 1} ") + r"bytes_written=(\d+) \(",
            by_stage["registry: write version"])
        assert written and int(written[1]) > 0, by_stage["registry: write version"]
        assert by_stage["write links, clusters and pairs"].startswith(
            f"[link] write links, clusters and pairs: links={len(rows)} clusters={p['clusters']} pairs=")
        assert by_stage["done"].startswith(f"[link] done: ds={ds} references={len(rows)} clusters={p['clusters']} ")
        _check_engine_lines(said, p["iterations"])
        assert not any("JOHN" in line or "SMITH" in line for line in said)  # counts, never a reference's values
        layers = (previous["layers_list"] if previous else []) + [ds]
        previous = {"ds": ds, **c, "layers": len(layers), "layers_list": layers}


def test_two_sources_may_reuse_record_ids_without_registry(spark, tmp_path):
    link = _link_module()
    rows = [("crm", r) for r in NIGHT1] + [("web", r) for r in NIGHT2]
    pdf = pd.DataFrame([(s, *r) for s, r in rows], columns=["source", "record_id", "truth_entity", *ATTRS])
    pdf["ds"], pdf["source_file"], pdf["line_number"] = "2024-01-01", "x.csv", range(len(pdf))
    pdf = pdf.astype(object).where(pdf.notna(), None)
    schema = ", ".join(f"{c} {'int' if c == 'line_number' else 'string'}" for c in pdf.columns)
    cur = tmp_path / "curated" / "2024-01-01"
    spark.createDataFrame(pdf, schema).write.parquet(str(cur))
    payload, logged = _logged(link.run, str(cur), str(tmp_path / "out"), "2024-01-01", "default", spark=spark,
                              decisions="")
    links = pd.read_parquet(tmp_path / "out" / "links")
    assert len(links) == 8 and payload["references"] == 8
    # without a registry the task log has one link stage
    stage = [line for line in logged if line.startswith("[link] link: ")]
    assert len(stage) == 1 and stage[0].startswith(
        f"[link] link: references=8 clusters={payload['clusters']} iterations={len(payload['iterations'])} (stage ")
    _check_engine_lines(logged, payload["iterations"])
    assert set(zip(links["source"], links["record_id"])) == {(s, r[0]) for s, r in rows}
    lk = links.set_index(["source", "record_id"])["cluster_id"]
    assert lk[("crm", "c1")] == lk[("web", "c1")] == lk[("crm", "c2")]  # linked across sources
    assert lk[("crm", "c3")] != lk[("web", "c3")]  # same record id, other person
    assert all(c.startswith("E") for c in links["cluster_id"])  # ids reused across sources: minted labels


def test_bad_source_name_and_duplicates_exit_2(spark, tmp_path):
    link = _link_module()
    expected = {"bad": "source names must match", "dup": "not unique",
                "null": r"1 of 2 rows have no record_id or no source"}
    for name, src, ids in (("bad", "we b", ["a", "b"]), ("dup", "crm", ["a", "a"]), ("null", "crm", ["a", None])):
        pdf = pd.DataFrame({"record_id": ids, "source": src, "given_name": ["X", "Y"]})
        cur = tmp_path / name / "2024-01-01"
        spark.createDataFrame(pdf, "record_id string, source string, given_name string").write.parquet(str(cur))
        with pytest.raises(link.LinkInputError, match=expected[name]):
            link.run(str(cur), str(tmp_path / f"o{name}"), "2024-01-01", "default", spark=spark, decisions="")


def test_full_rebuild_reports_and_publishes_as_version(spark, nights, tmp_path):
    _, reg, _, _ = nights
    from hdwm.metrics import metrics_from_counts
    from hdwm.registry import RegistryError, main, rebuild

    rep = rebuild(spark, str(reg), "2024-01-03", str(tmp_path / "rb"), "default", decisions=None,
                  publish_as_version="2024-01-06")
    part = pd.read_parquet(tmp_path / "rb" / "partition")
    assert len(part) == 9 and rep["references"] == 9
    assert set(zip(part["source"], part["record_id"])) == set(_ids(reg, "2024-01-03"))

    def pairs(groups):
        return sum(n * (n - 1) // 2 for n in groups)
    tp = pairs(part.groupby(["rebuilt_cluster", "entity_id"]).size())
    expect = metrics_from_counts(tp, pairs(part.groupby("rebuilt_cluster").size()),
                                 pairs(part.groupby("entity_id").size()))
    assert rep["pairwise_vs_incremental"] == expect
    assert json.loads((tmp_path / "rb" / "rebuild_report.json").read_text()) == rep
    # the published rebuild: every reference in exactly one entity; a vanished id is in a merge/split row
    v = reg / "ds=2024-01-06"
    assert json.loads((v / "_COMPLETE.json").read_text())["base_ds"] == "2024-01-03"
    m6 = _members(reg, "2024-01-06")
    assert len(m6) == 9 and not m6.duplicated(["source", "record_id"]).any()
    e6 = _part(reg, "2024-01-06", "entities")
    assert set(e6["entity_id"]) == set(m6["entity_id"]) and e6["member_count"].sum() == 9
    ch = _part(reg, "2024-01-06", "changes")
    gone = set(_ids(reg, "2024-01-03").values()) - set(e6["entity_id"])
    mentioned = {i for f in ch["from_entity_ids"] for i in f.split(",") if i}
    assert gone <= mentioned
    if expect["f1"] == 1.0:  # the same partition: every id kept, nothing to record
        assert _ids(reg, "2024-01-06") == _ids(reg, "2024-01-03") and ch.empty
    with pytest.raises(RegistryError, match="after 2024-01-03"):
        rebuild(spark, str(reg), "2024-01-03", str(tmp_path / "rb2"), publish_as_version="2024-01-03")
    # once a later version is published, a rebuild of an older one may not become a version: it would
    # rewrite (or leave out) the published nights after it (a copy, so the other tests keep their lake)
    import shutil

    from hdwm.registry import RegistryOrderError

    copy = tmp_path / "entities"
    shutil.copytree(reg, copy)
    _publish(copy, "2024-01-06")
    before = _members(copy, "2024-01-06")
    for target in ("2024-01-06", "2024-01-07", "2024-01-05"):
        with pytest.raises(RegistryOrderError, match="2024-01-06 is published after it"):
            rebuild(spark, str(copy), "2024-01-03", str(tmp_path / "rb3"), publish_as_version=target)
    assert (copy / "ds=2024-01-06" / "_PUBLISHED.json").is_file()
    pd.testing.assert_frame_equal(_members(copy, "2024-01-06"), before)
    assert main(["rebuild", "--registry", str(copy), "--ds", "2024-01-03", "--out", str(tmp_path / "rb4"),
                 "--publish-as-version", "2024-01-07"]) == 2
    assert main(["rebuild", "--registry", str(reg), "--ds", "2024-1-3", "--out", str(tmp_path / "x")]) == 2


def test_decisions_hold_through_the_link_job(spark, tmp_path):
    """cannot_link keeps two duplicates apart, must_link joins two strangers (engine + fallback)."""
    link = _link_module()
    dec = tmp_path / "decisions.csv"
    dec.write_text("source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note\n"
                   "crm,c1,crm,c2,cannot_link,ann,2024-01-01T10:00,father and son\n"
                   "crm,c3,crm,c5,must_link,ann,2024-01-01T10:00,same person after marriage\n")
    reg = tmp_path / "lake" / "entities"
    cur = _curated(spark, tmp_path, "2024-01-01", "crm", NIGHT1)
    link.run(cur, str(tmp_path / "o"), "2024-01-01", "default", spark=spark, registry=str(reg), decisions=str(dec))
    ids = _ids(reg, "2024-01-01")
    assert ids[("crm", "c1")] != ids[("crm", "c2")]
    assert ids[("crm", "c3")] == ids[("crm", "c5")]
    ents = _part(reg, "2024-01-01", "entities")
    assert ents["member_count"].sum() == 5 and len(ents) == 4
    # night 2 (one unrelated reference) revises one decision and adds one, both naming stored entities:
    # the night relinks those entities (they are not in its neighbourhood by their tokens) so both hold
    _publish(reg, "2024-01-01")
    with dec.open("a") as fh:
        fh.write("crm,c3,crm,c5,cannot_link,bob,2024-01-02T09:00,two people after all\n"
                 "crm,c1,crm,c4,must_link,bob,2024-01-02T09:00,same person under another name\n")
    cur2 = _curated(spark, tmp_path, "2024-01-02", "web", NIGHT2[2:])
    p2, lines = _logged(link.run, cur2, str(tmp_path / "o2"), "2024-01-02", "default", spark=spark,
                        registry=str(reg), decisions=str(dec))
    ids2 = _ids(reg, "2024-01-02")
    assert ids2[("crm", "c3")] != ids2[("crm", "c5")] and ids2[("crm", "c1")] == ids2[("crm", "c4")]
    assert ids2[("crm", "c1")] != ids2[("crm", "c2")]  # the first night's cannot-link still holds
    assert ids2[("crm", "c1")] in (ids[("crm", "c1")], ids[("crm", "c4")])  # a merge keeps a stored id
    nb = next(line for line in lines if line.startswith("[link] registry: neighbourhood pulled in:"))
    assert " by_decisions=3 " in nb, nb  # c3+c5's entity and the entities of c1 and c4
    assert p2["registry"]["merges"] == 1 and p2["registry"]["splits"] == 1, p2["registry"]


def test_link_job_rebuild_relinks_the_history_with_the_night(spark, nights, tmp_path):
    """--rebuild on a night (what the DAG Param passes): the published version 2024-01-03 (copied into a
    registry of its own) and the night are relinked in one batch, the new version records every
    difference against the base, and _COMPLETE.json carries the pairwise F1 against the base's entities."""
    import shutil

    from hdwm.metrics import metrics_from_counts

    _, reg0, link, _ = nights
    reg = tmp_path / "lake" / "entities"
    _copy_version(reg0, "2024-01-03", reg)
    assert (reg / "ds=2024-01-03" / "_PUBLISHED.json").exists()
    before = _ids(reg, "2024-01-03")
    row = [("c8", "p2", "MARY", "JONES", "4", "ELM RD", "SHELBYVILLE", "19750505", "5559876543", None)]
    cur = _curated(spark, tmp_path, "2024-01-07", "crm", row)
    out = tmp_path / "o7"
    rc = link.main(["--curated", cur, "--out", str(out), "--ds", "2024-01-07", "--registry", str(reg),
                    "--decisions", "", "--rebuild"])
    assert rc == 0 and not (out / "metrics.error.json").exists()
    complete = json.loads((reg / "ds=2024-01-07" / "_COMPLETE.json").read_text())
    assert complete["base_ds"] == "2024-01-03"
    m7 = _members(reg, "2024-01-07")
    assert len(m7) == complete["references_total"] == len(before) + 1
    assert complete["neighbourhood_references"] == len(before)  # the whole history was relinked
    # the F1: the rebuilt clusters against the base entities, over the base's references
    part = m7.merge(pd.DataFrame([(s, r, e) for (s, r), e in before.items()],
                                 columns=["source", "record_id", "base_entity"]), on=["source", "record_id"])

    def pairs(groups):
        return sum(n * (n - 1) // 2 for n in groups)
    expect = metrics_from_counts(pairs(part.groupby(["entity_id", "base_entity"]).size()),
                                 pairs(part.groupby("entity_id").size()), pairs(part.groupby("base_entity").size()))
    rb = complete["rebuild"]
    assert {k: rb[k] for k in expect} == expect and complete["rebuild_f1"] == expect["f1"]
    assert rb["compared_references"] == len(before)
    ids7 = _ids(reg, "2024-01-07")
    assert ids7[("crm", "c8")] == before[("crm", "c3")]  # the night's duplicate joined MARY JONES's entity
    assert complete["new_references"] == complete["joined_existing"] == 1
    ch = _part(reg, "2024-01-07", "changes")
    gone = set(before.values()) - set(ids7.values())  # an id that vanished is named by a merge or split row
    assert gone <= {i for f in ch[ch["change"].isin(["merge", "split"])]["from_entity_ids"] for i in f.split(",")}
    assert (ch["change"] == "grow").sum() == complete["grows"] >= 1
    # a refused run leaves its one-line error for the run summary
    assert link.main(["--curated", cur, "--out", str(out), "--ds", "2024-01-07", "--rebuild"]) == 2
    assert "--rebuild needs --registry" in json.loads((out / "metrics.error.json").read_text())["error"]
    rc = link.main(["--curated", cur, "--out", str(out), "--ds", "2024-01-02", "--registry", str(reg),
                    "--decisions", ""])
    error = json.loads((out / "metrics.error.json").read_text())
    # a refusal for the registry's order is flagged, so the report keeps the date pending instead of rejected
    assert rc == 2 and error == {"exit_code": 2, "error": "ds 2024-01-02 is before the published ds 2024-01-03: "
                                 "relinking it would fork the registry; run the full rebuild", "keep_pending": True}


def test_each_version_stores_its_members_tokens_and_the_next_night_reads_them(spark, nights):
    """Every version keeps one token list per member, the tokeniser's output for the member's text
    (a reference sent again: its new text), and the next night reads them instead of the texts."""
    from hdwm.tokenizer import tokenize, tokens_fingerprint

    _, reg, _, payloads = nights
    fp = tokens_fingerprint(load_profile("default"))
    for ds in ("2024-01-01", "2024-01-02", "2024-01-03"):
        assert json.loads((reg / f"ds={ds}" / "_COMPLETE.json").read_text())["tokens_fingerprint"] == fp
        members = _members(reg, ds)
        stored = _part(reg, ds, "tokens")
        assert list(zip(stored.source, stored.record_id)) == list(zip(members.source, members.record_id))
        texts = spark.createDataFrame([(f"{r.source}|{r.record_id}", r.text) for r in members.itertuples()],
                                      "record_id string, text string")
        expect = {r.record_id: list(r.tokens) for r in tokenize(texts, load_profile("default")).collect()}
        assert {f"{r.source}|{r.record_id}": list(r.tokens) for r in stored.itertuples()} == expect
        if ds != "2024-01-01":
            line = next(x for x in payloads["logs"][ds] if x.startswith("[link] registry: neighbourhood pulled in"))
            assert "registry_tokens=stored" in line, line


def test_an_entity_relinked_by_representatives_keeps_its_other_members(spark, nights, tmp_path):
    """registryEntityMembers: 1 – night 2 relinks one member of JOHN SMITH's night-1 entity (the one its
    duplicate was found with); the other follows, so the entity grows whole, as with the default."""
    import shutil

    root, reg, link, _ = nights
    reg2 = tmp_path / "lake" / "entities"
    reg2.mkdir(parents=True)
    _copy_version(reg, "2024-01-01", reg2)
    prof = tmp_path / "bounded.yaml"
    prof.write_text((REPO / "include" / "config" / "default.yaml").read_text() + "\nregistryEntityMembers: 1\n")
    cur = _curated(spark, tmp_path, "2024-01-02", "web", NIGHT2)
    payload, lines = _logged(link.run, cur, str(tmp_path / "out"), "2024-01-02", str(prof), spark=spark,
                             registry=str(reg2), decisions="")
    c = payload["registry"]
    assert c["neighbourhood_followers"] >= 1 and c["neighbourhood_references"] >= 1
    said = next(x for x in lines if x.startswith("[link] registry: neighbourhood pulled in"))
    assert f"followers={c['neighbourhood_followers']}" in said
    ids1, ids2 = _ids(reg, "2024-01-01"), _ids(reg2, "2024-01-02")
    assert ids2 == _ids(reg, "2024-01-02")  # the same entities as relinking whole entities
    assert ids2[("web", "c1")] == ids2[("crm", "c1")] == ids2[("crm", "c2")] == ids1[("crm", "c1")]
    assert c["references_total"] == 8 and c["grows"] == 1 and c["merges"] == 0 and c["splits"] == 0
