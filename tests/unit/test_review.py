"""The review page (washline.review): the pairs closest to mu on both sides and
the night's merges, side by side with agreeing / conflicting tokens, and the
decisions file the steward exports from it, read back with the link job's own
reader (hdwm.incremental.read_decisions) and loaded into the page again."""

from __future__ import annotations

import csv
import io
import json

import pytest

from browser import CHROMIUM, Chromium
from registry_data import D1, D2, two_nights, write_layered, write_version
from report_lake import published_night, write_parquet
from washline.paths import RunPaths
from washline.report import build_summary
from washline.review import (DECISIONS_COLUMNS, closest_to_mu, decisions_csv, effective_decisions, highlight,
                             pair_key, review_data, write_review)


def test_the_page_exports_the_columns_the_link_job_reads():
    from hdwm.incremental import DECISIONS_COLUMNS as READER_COLUMNS

    assert DECISIONS_COLUMNS == READER_COLUMNS


def test_the_latest_decision_of_a_pair_wins_in_either_order():
    rows = [
        {"source_a": "a", "record_id_a": "1", "source_b": "b", "record_id_b": "2", "decision": "must_link",
         "decided_at": "2025-01-02T10:00:00Z"},
        {"source_a": "b", "record_id_a": "2", "source_b": "a", "record_id_b": "1", "decision": "cannot_link",
         "decided_at": "2025-01-03T10:00:00Z"},
        {"source_a": "a", "record_id_a": "3", "source_b": "a", "record_id_b": "4", "decision": "cannot_link",
         "decided_at": "2025-01-05T00:00:00Z"},
        {"source_a": "a", "record_id_a": "3", "source_b": "a", "record_id_b": "4", "decision": "must_link",
         "decided_at": "2025-01-04T00:00:00Z"},  # older, though later in the file
    ]
    assert pair_key("a", "1", "b", "2") == pair_key("b", "2", "a", "1")
    assert effective_decisions(rows) == {pair_key("a", "1", "b", "2"): "cannot_link",
                                         pair_key("a", "3", "a", "4"): "cannot_link"}


def test_tokens_are_highlighted_by_what_both_or_only_one_reference_holds():
    assert highlight("Kristen  White", {"KRISTEN"}, {"WHITE"}) == [("Kristen", "agree"), ("  ", ""),
                                                                  ("White", "conflict")]
    assert highlight("1976-12-01", {"19761201"}, set()) == [("1976-12-01", "agree")]
    assert highlight("12 Main St", set(), set()) == [("12", ""), (" ", ""), ("Main", ""), (" ", ""), ("St", "")]
    # text after the last token is kept as its own plain segment: nothing of the value is lost
    assert highlight("Apt 4, ", {"4"}, {"APT"}) == [("Apt", "conflict"), (" ", ""), ("4", "agree"), (", ", "")]


def test_pairs_closest_to_mu_on_both_sides_by_their_iteration_s_mu():
    pairs = [{"score": s, "iteration": it, "accepted": acc, "id": n}
             for n, (s, it, acc) in enumerate([(0.97, 1, True), (0.52, 1, True), (0.61, 2, True),
                                               (0.47, 1, False), (0.41, 1, False), (0.58, 2, False)])]
    above, below = closest_to_mu(pairs, {1: 0.5, 2: 0.6}, limit=2)
    assert [p["id"] for p in above] == [2, 1]  # margins 0.01, 0.02
    assert [p["id"] for p in below] == [5, 3]  # margins -0.02, -0.03
    assert above[0]["mu"] == 0.6 and round(above[0]["margin"], 6) == 0.01


def test_review_data_of_a_night_without_the_registry(tmp_path):
    paths, summary = published_night(tmp_path)
    data = review_data(paths, summary)
    above, below = (s["pairs"] for s in data["sections"])
    assert [(p["record_id_a"], p["record_id_b"]) for p in above] == [("r2", "r3"), ("r1", "r3"), ("r1", "r2")]
    assert [(p["record_id_a"], p["record_id_b"]) for p in below] == [("r5", "r6"), ("r4", "r5"), ("r3", "r6")]
    first = above[0]
    assert first["found"]
    fields = {name: (a, b) for name, a, b in first["fields"]}
    assert fields["given_name"] == ([("KRISTEN", "agree")], [("KRISTEN", "agree")])
    assert fields["surname"] == ([("WHITE", "conflict")], [("REID", "conflict")])
    assert data["merges"] == [] and data["missing"] is None


def test_review_page_of_a_failed_night_says_why_it_has_no_pairs(tmp_path):
    paths = RunPaths.for_run("2025-01-03", root=tmp_path)
    summary = build_summary(paths.ds, "r", {}, {"cleanse": "cleanse: no input"})
    text = write_review(paths, summary).read_text()
    assert "No pairs to review: the link task did not succeed in this run." in text


def registry_night(tmp_path, layered=False):
    """Night 2 of registry_data.two_nights (a5 and a6 merged through b2), with its
    pairs; ``layered``: the lake in format 2 (night 2's delta over night 1's layers)."""
    import pyarrow as pa

    n1, n2 = two_nights()
    lake = tmp_path / "lake"
    if layered:
        write_layered(lake, n1, None)
        write_layered(lake, n2, n1)
    else:
        write_version(lake, n1)
        write_version(lake, n2)
    paths = RunPaths.for_run(D2, root=tmp_path)
    paths.linked.mkdir(parents=True)
    paths.link_metrics.write_text(json.dumps({"ds": D2, "iterations": [{"iteration": 1, "mu": 0.5}]}))
    pairs = [("a", "a5", "b", "b2", 0.55, True), ("a", "a6", "b", "b2", 0.9, True), ("b", "b2", "b", "b4", 0.8, True),
             ("a", "a1", "b", "b1", 0.95, True), ("a", "a3", "b", "b3", 0.45, False)]
    schema = pa.schema([("source_a", pa.string()), ("record_id_a", pa.string()), ("source_b", pa.string()),
                        ("record_id_b", pa.string()), ("score", pa.float64()), ("iteration", pa.int32()),
                        ("accepted", pa.bool_()), ("agreeing", pa.list_(pa.string())),
                        ("conflicting", pa.list_(pa.string()))])
    write_parquet(paths.linked / "pairs", [
        {"source_a": sa, "record_id_a": ra, "source_b": sb, "record_id_b": rb, "score": s, "iteration": 1,
         "accepted": acc, "agreeing": ["SMITH", "2000"], "conflicting": [ra.upper(), rb.upper()]}
        for sa, ra, sb, rb, s, acc in pairs], schema)
    summary = build_summary(D2, "scheduled__2025-01-02T02:00:00+00:00", {
        "link": {"clusters": 3, "registry": {"enabled": True, "complete": n2.complete()}}})
    return paths, summary, n2


@pytest.mark.parametrize("layered", [False, True], ids=["format1", "format2"])
def test_the_night_s_merges_show_the_links_that_joined_the_two_sides(tmp_path, layered):
    paths, summary, n2 = registry_night(tmp_path, layered)
    data = review_data(paths, summary)
    (merge,) = data["merges"]
    survivor = next(c for c in n2.changes if c[1] == "merge")
    assert merge["entity_id"] == survivor[0] and merge["from"] == survivor[2].split(",")
    joined = [(p["record_id_a"], p["record_id_b"]) for p in merge["pairs"]]
    assert joined == [("a5", "b2"), ("a6", "b2")]  # weakest first; b2-b4 (both new tonight) did not bridge
    fields = {n: (a, b) for n, a, b in merge["pairs"][0]["fields"]}
    assert fields["given_name"] == ([("A5", "conflict")], [("B2", "conflict")])  # from the registry's members
    # a1 is in night 1's layer only (unchanged on night 2): still read from the registry, not the curated files
    (a1_b1,) = [p for p in data["sections"][0]["pairs"] + data["sections"][1]["pairs"] if p["record_id_a"] == "a1"]
    assert dict((n, a) for n, a, _ in a1_b1["fields"])["given_name"] == [("A1", "conflict")]


# ---------------------------------------------------------------------------
# the page in a browser: mark, export, read back with the link job's reader
# ---------------------------------------------------------------------------

needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed "
                                                                  "(.ci/run installs it)")


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


@needs_chromium
@pytest.mark.spark
def test_exported_decisions_parse_with_the_link_job_s_reader_and_round_trip(tmp_path, tmp_path_factory, spark):
    from hdwm.incremental import read_decisions

    paths, summary, _ = registry_night(tmp_path)
    earlier = [{"source_a": "a", "record_id_a": "a3", "source_b": "b", "record_id_b": "b3", "decision": "must_link",
                "decided_by": "ann", "decided_at": "2025-01-01T09:00:00Z", "note": "same person, moved"},
               {"source_a": "x", "record_id_a": "1", "source_b": "x", "record_id_b": "2", "decision": "cannot_link",
                "decided_by": "ann", "decided_at": "2025-01-01T09:05:00Z", "note": 'twins, "junior"'}]
    paths.decisions.parent.mkdir(parents=True)
    paths.decisions.write_text(decisions_csv(earlier))
    page = write_review(paths, summary)
    published_before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    downloads = tmp_path_factory.mktemp("downloads")

    def card(a: str, b: str) -> str:
        return f"Array.from(document.querySelectorAll('article.pair')).find(c => " \
               f"c.dataset.recordIdA === '{a}' && c.dataset.recordIdB === '{b}')"

    async def scenario(p):
        await p.goto(page.as_uri())
        # the decision already in the file is shown on its pair
        assert await p.evaluate(f"{card('a3', 'b3')}.querySelector('input[value=must_link]').checked")
        # mark: the weak bridge a5-b2 cannot-link (it is shown twice: merge and near mu; one mark),
        # a1-b1 must-link with a note, and clear the earlier a3-b3 decision
        await p.evaluate(f"{card('a5', 'b2')}.querySelector('input[value=cannot_link]').click()")
        await p.evaluate(f"{card('a1', 'b1')}.querySelector('input[value=must_link]').click()")
        await p.evaluate(f"{card('a1', 'b1')}.querySelector('input.note').value = 'same SSN, typo, name'")
        await p.evaluate(f"{card('a3', 'b3')}.querySelector('input[value=\"\"]').click()")
        marked_twice = await p.evaluate("Array.from(document.querySelectorAll('article.pair'))"
                                        ".filter(c => c.dataset.recordIdA === 'a5' && c.dataset.recordIdB === 'b2')"
                                        ".map(c => c.querySelector('input[value=cannot_link]').checked)")
        try:
            await p.evaluate("window.washlineReview.exportCsv()")
            raise AssertionError("exported without a steward name")
        except AssertionError as exc:
            assert "enter your name" in str(exc)
        await p.evaluate("document.getElementById('steward').value = 'bo'")
        first = await p.evaluate("window.washlineReview.exportCsv()")
        await p.call("Page.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
        await p.evaluate("document.getElementById('export').click()")  # the button: a download
        await p.wait(f"{json.dumps(str(downloads))} && document.getElementById('status').textContent"
                     ".startsWith('exported')")
        # a fresh page (the file on disk is unchanged) with the export loaded: same marks, same file
        await p.goto(page.as_uri())
        await p.evaluate(f"window.washlineReview.importCsv({json.dumps(first)})")
        again = await p.evaluate("window.washlineReview.exportCsv()")
        marks = await p.evaluate("Array.from(document.querySelectorAll('article.pair')).map(c => "
                                 "[c.dataset.recordIdA, c.dataset.recordIdB, "
                                 "(c.querySelector('input[type=radio]:checked') || {}).value])")
        return first, again, marks, marked_twice, p.requests

    with Chromium() as browser:
        first, again, marks, marked_twice, requests = browser.run(scenario)

    assert marked_twice == [True, True]
    rows = _rows(first)
    assert list(rows[0]) == DECISIONS_COLUMNS
    assert rows[0] == {k: v for k, v in earlier[1].items()}  # kept verbatim (quotes and commas survive)
    new = rows[1:]
    assert [(r["record_id_a"], r["record_id_b"], r["decision"], r["decided_by"], r["note"]) for r in new] == [
        ("a5", "b2", "cannot_link", "bo", ""), ("a1", "b1", "must_link", "bo", "same SSN, typo, name")]
    assert all(r["decided_at"].endswith("Z") and len(r["decided_at"]) == 20 for r in new)
    assert again == first  # round trip through the page
    assert ("a5", "b2", "cannot_link") in [tuple(m) for m in marks] and ("a3", "b3", "") in [tuple(m) for m in marks]
    assert all(u.startswith(("file:", "blob:", "data:")) for u in requests), requests

    import time

    exported = downloads / "decisions.csv"
    deadline = time.monotonic() + 30
    while not exported.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    strip = lambda text: [{k: v for k, v in r.items() if k != "decided_at"} for r in _rows(text)]  # noqa: E731
    assert strip(exported.read_text()) == strip(first)  # the file the button downloads is the export
    must, cannot = read_decisions(spark, str(exported))  # the link job's own reader
    assert {tuple(r) for r in must.collect()} == {("a|a1", "b|b1")}
    assert {tuple(r) for r in cannot.collect()} == {("a|a5", "b|b2"), ("x|1", "x|2")}
    # nothing was written into the lake, staging or decisions/ by the page (the export is a download)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == published_before
