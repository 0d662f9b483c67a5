"""The night's report.html (washline.report_html): charts inline as SVG drawn
by matplotlib, nothing fetched from anywhere, tables of the HDWM iterations,
the integrity verdict and the GX results, the 30-night trend, and a page for a
failed night whose pieces are missing."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from report_lake import ITERATIONS, RUN_ID, failed_night, published_night
from washline.paths import RunPaths
from washline.report import build_summary, write_json_atomic
from washline.report_html import load_history, read_night_files, trend_point, write_report

CHARTS = ("rows", "sizes", "scores", "seconds", "trend")


class Page(HTMLParser):
    """Collects the figures (data-chart → their SVG's element counts), the
    tables' rows, every attribute holding a URL, and the texts."""

    def __init__(self, text: str):
        super().__init__()
        self.figures: dict[str, dict] = {}
        self.tables: dict[str, int] = {}
        self.urls: list[tuple[str, str, str]] = []
        self.links: dict[str, str] = {}
        self._figure = self._table = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure":
            self._figure = a.get("data-chart")
            self.figures[self._figure] = {"missing": a.get("data-missing") == "true", "svg": 0, "path": 0, "text": ""}
        elif self._figure and tag in ("svg", "path"):
            self.figures[self._figure][tag] += 1
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = 0
        elif tag == "tr" and self._table:
            self.tables[self._table] += 1
        if tag == "a" and a.get("id"):
            self.links[a["id"]] = a.get("href")
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "action", "data", "poster") and v is not None:
                self.urls.append((tag, k, v))

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._figure:
            self.figures[self._figure]["text"] += data


def external_references(text: str) -> list[str]:
    """Anything in the page that a browser would fetch from a network address:
    src/href/url()/@import with a scheme or a protocol-relative //host. XML
    namespace names (xmlns="http://www.w3.org/2000/svg") are names, never fetched."""
    found = re.findall(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*((?:[a-z][a-z0-9+.-]*:)?//[^"'\s>]*)""",
                       text, re.I)
    found += re.findall(r"""url\(\s*["']?\s*((?:[a-z]+:)?//[^)"']*)""", text, re.I)
    found += re.findall(r"@import", text)
    return found


@pytest.fixture
def night(tmp_path):
    paths, summary = published_night(tmp_path)
    return paths, summary, write_report(paths, summary)


def test_report_of_a_published_night_has_every_chart_inline_as_svg(night):
    paths, summary, path = night
    assert path == paths.reports / "report.html"
    page = Page(path.read_text())
    for chart in CHARTS:
        fig = page.figures[chart]
        assert not fig["missing"], (chart, fig["text"])
        assert fig["svg"] == 1 and fig["path"] > 5, (chart, fig)  # drawn by matplotlib: paths, text as paths too
    assert "<title>Histogram of pair scores with mu marked</title>" in path.read_text()


def test_report_fetches_nothing_and_its_links_stay_inside_the_reports_folder(night):
    paths, summary, path = night
    text = path.read_text()
    assert external_references(text) == []
    assert "<script" not in text and "<link" not in text and "<img" not in text
    page = Page(text)
    for tag, attr, url in page.urls:
        if url.startswith("#"):  # an SVG's reference to its own <defs>
            continue
        assert not re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I) and not url.startswith("/"), (tag, attr, url)
        target = (paths.reports / url).resolve()
        assert paths.reports.resolve() in target.parents and target.exists(), url  # relative, and it exists
    assert page.links["data-docs-link"] == f"gx/{paths.data_docs(RUN_ID).name}/gx/uncommitted/data_docs/local_site/index.html"
    assert page.links["review-link"] == "review.html"


def test_report_tables_hold_the_iterations_the_integrity_verdict_and_each_expectation(night):
    paths, summary, path = night
    text = path.read_text()
    page = Page(text)
    assert page.tables["iterations"] == 1 + len(ITERATIONS)
    assert page.tables["expectations"] == 1 + 2
    assert "expect_column_values_to_match_regex" in text and "postcode" in text
    assert 'class="PASS">PASS</span>' in text  # integrity verdict
    assert "No findings." in text
    assert "Published: 6 records" in text and RUN_ID in text


def test_integrity_findings_are_listed(tmp_path):
    paths, summary = published_night(tmp_path)
    findings = [{"severity": "CRITICAL", "code": "8939", "message": f"Table error: page (1:{i}) <b>bad</b>",
                 "obj": "staging_records", "index": None, "location": f"1:{i}"} for i in range(60)]
    summary = build_summary(paths.ds, RUN_ID, {"check_integrity": {
        "engine": "mssql", "verdict": "FAIL", "findings": findings, "duration_s": 3.0, "allocation_errors": 0,
        "consistency_errors": 60, "count_notes": ["the 8989 total says 61, the rows 60"]}})
    text = write_report(paths, summary).read_text()
    assert "0 allocation and 60 consistency error(s)" in text and "the 8989 total says 61, the rows 60" in text
    page = Page(text)
    assert page.tables["findings"] == 1 + 50  # the summary keeps the first 50
    assert "First 50 of 60 findings." in text
    assert "&lt;b&gt;bad&lt;/b&gt;" in text and "<b>bad</b>" not in text  # engine text is escaped


def test_report_of_a_failed_night_says_what_is_missing_and_ignores_stale_link_files(tmp_path):
    published_night(tmp_path)  # an earlier night, for the trend
    paths, summary = failed_night(tmp_path, stale_link_files=True)
    night = read_night_files(paths, summary)
    assert night.metrics is None and night.sizes is None and night.scores is None  # not this run's
    text = write_report(paths, summary).read_text()
    page = Page(text)
    assert "Not published" in text and "link: job exited 1 (OutOfMemoryError)" in text
    assert page.figures["rows"]["svg"] == 1 and page.figures["seconds"]["svg"] == 1
    assert page.figures["trend"]["svg"] == 1
    for chart in ("sizes", "scores"):
        assert page.figures[chart]["missing"] and "link task did not succeed" in page.figures[chart]["text"]
    assert "No iterations: the link task did not succeed in this run." in text
    assert "The integrity check did not run in this run." in text
    assert "iterations" not in page.tables and "expectations" not in page.tables
    assert external_references(text) == []


def test_report_of_a_night_that_failed_at_once_still_renders(tmp_path):
    """A bad Param: no task ran, every count is None, no earlier night."""
    paths = RunPaths.for_run("2025-01-05", root=tmp_path)
    summary = build_summary(paths.ds, "r", {}, {"cleanse": "cleanse: ParamError: input folder outside the data root"})
    write_json_atomic(paths.summary, summary)
    text = write_report(paths, summary).read_text()
    page = Page(text)
    assert "input folder outside the data root" in text
    assert {c for c, f in page.figures.items() if f["missing"]} == {"rows", "sizes", "scores", "seconds"}
    assert page.figures["trend"]["svg"] == 1  # the night itself is a point of the trend


def test_trend_covers_the_last_30_nights_up_to_the_date(tmp_path):
    from datetime import date, timedelta

    days = [(date(2025, 1, 1) + timedelta(days=i)).isoformat() for i in range(35)]
    for i, ds in enumerate(days):
        paths = RunPaths.for_run(ds, root=tmp_path)
        summary = build_summary(ds, f"r{i}", {"cleanse": {"rows_in": 100 + i, "rows_quarantined": i % 3,
                                                          "task_seconds": 1.0}})
        summary["registry"] = {"new_entities": i, "merges": i % 2}
        write_json_atomic(paths.summary, summary)
    (tmp_path / "lake" / "reports" / "2025-01-10" / "run_summary.json").write_text("{not json")
    current = json.loads(RunPaths.for_run(days[32], root=tmp_path).summary.read_text())
    history = load_history(tmp_path / "lake" / "reports", current)
    assert len(history) == 30
    assert history[-1]["ds"] == days[32] and history[0]["ds"] > "2025-01-02"  # nothing after the date
    assert "2025-01-10" not in {h["ds"] for h in history}  # an unreadable summary is skipped
    assert history[-1] == {"ds": days[32], "published": False, "rows_in": 132, "new_entities": 32, "merges": 0,
                           "quarantined_share": round(2 / 132, 4), "f1": None, "registry_f1": None,
                           "f1_why": None, "registry_f1_why": None, "seconds": 1.0}
    text = write_report(RunPaths.for_run(days[32], root=tmp_path), current).read_text()
    assert Page(text).tables["trend"] == 1 + 30


def test_trend_point_of_a_night_without_registry_or_truth():
    s = build_summary("2025-01-01", "r", {"cleanse": {"rows_in": 0, "rows_quarantined": 0}})
    assert trend_point(s) == {"ds": "2025-01-01", "published": False, "rows_in": 0, "new_entities": None,
                              "merges": None, "quarantined_share": None, "f1": None, "registry_f1": None,
                              "f1_why": None, "registry_f1_why": None, "seconds": None}


def test_report_task_writes_the_page_and_the_summary_names_it(tmp_path, monkeypatch):
    """tasks.report: summary first, then report.html; the page's path is in the summary."""
    from washline import tasks

    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))

    class TI:
        def xcom_pull(self, task_ids, key="return_value"):
            return None

    with pytest.raises(Exception, match="was not published"):
        tasks.report({"ds": "2025-01-04", "run_id": "r", "ti": TI(), "params": {"entity_registry": False}})
    paths = RunPaths.for_run("2025-01-04", root=tmp_path)
    summary = json.loads(paths.summary.read_text())
    assert summary["report_html"] == str(paths.reports / "report.html")
    assert (paths.reports / "report.html").is_file() and (paths.reports / "review.html").is_file()


def test_a_report_that_cannot_be_written_leaves_the_summary_and_says_why(tmp_path, monkeypatch):
    from washline import report_html, tasks

    paths, summary = published_night(tmp_path)

    def broken(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(report_html, "write_report", broken)
    tasks.write_html_report(paths, summary)
    saved = json.loads(paths.summary.read_text())
    assert saved["report_html"] is None and saved["report_html_error"] == "RuntimeError: disk full"


@pytest.mark.parametrize("updates", [0, 3])
def test_registry_cards_say_how_many_golden_records_changed(tmp_path, updates):
    # an entity whose members stay but whose golden record changes is an `update` change row
    # (entity registry); the night's cards count them beside new entities, merges and splits
    paths, summary = published_night(tmp_path)
    summary["registry"] = {"new_entities": 5, "joined_existing": 7, "merges": 1, "splits": 0,
                           "entities_total": 40, "updates": updates}
    text = write_report(paths, summary).read_text()
    assert "joined existing entities" in text
    card = re.search(r"<b>([\d,]+)</b><span>golden records updated</span>", text)
    assert (card.group(1) if card else None) == ("3" if updates else None)


class Marked(HTMLParser):
    """Text and ``title`` attributes inside each element with an ``id`` (nested ids included),
    and the ids of the F1 cards in page order."""

    def __init__(self, text: str):
        super().__init__()
        self.text: dict[str, str] = {}
        self.titles: dict[str, list[str]] = {}
        self.cards: list[str] = []
        self._open: list[tuple[str, str | None]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("br", "meta", "hr", "img", "input", "link", "path", "use"):
            return
        self._open.append((tag, a.get("id")))
        if a.get("id"):
            self.text.setdefault(a["id"], "")
            self.titles.setdefault(a["id"], [])
            if a["id"].startswith("f1-"):
                self.cards.append(a["id"])
        for _, eid in self._open:
            if eid and a.get("title"):
                self.titles[eid].append(a["title"])

    def handle_endtag(self, tag):
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                del self._open[i:]
                break

    def handle_data(self, data):
        for _, eid in self._open:
            if eid:
                self.text[eid] += data


NIGHT_NO_TRUE_PAIR = {"precision": 0.0, "recall": None, "f1": None, "tp": 0, "predicted_pairs": 3, "true_pairs": 0}
REGISTRY_AFTER_2 = {"precision": 0.999, "recall": 0.9992, "f1": 0.9991, "tp": 4996, "predicted_pairs": 5001,
                    "true_pairs": 5000, "references": 10000, "members": 10000}


def test_report_shows_the_registry_f1_first_and_says_why_the_night_s_is_n_a(tmp_path):
    paths, summary = published_night(tmp_path)
    summary.update(pairwise=NIGHT_NO_TRUE_PAIR, registry_pairwise=REGISTRY_AFTER_2,
                   registry={"version": paths.ds, "new_entities": 5, "joined_existing": 5000, "merges": 0,
                             "splits": 0, "entities_total": 5004})
    text = write_report(paths, summary).read_text()
    page = Marked(text)
    assert page.cards == ["f1-registry", "f1-night"]  # the first F1 card is the registry's
    assert page.text["f1-registry"].startswith("0.9991") and f"after {paths.ds}" in page.text["f1-registry"]
    assert page.titles["f1-registry"] == []  # nothing undefined, nothing to explain
    assert page.text["f1-night"].startswith("n/a")
    assert any(t.startswith("F1 n/a: no true pair") for t in page.titles["f1-night"])
    assert any(t.startswith("recall n/a: no true pair") for t in page.titles["f1-night"])
    assert "P 0.0000" in page.text["f1-night"]  # a defined 0 is a figure, not n/a
    row = page.text["pairwise-registry"]
    assert "10,000 references with truth" in row and "0.9990" in row and "4,996" in row and "n/a" not in row
    assert page.text["pairwise-night"].count("n/a") == 2
    assert "recall and F1 n/a: no true pair" in page.text["pairwise-note-night"]
    assert "pairwise-note-registry" not in page.text
    # the trend holds both figures; the night's n/a says why on hover
    assert "0.9991" in page.text["trend"]
    assert any("no true pair" in t for t in page.titles["trend"])


def test_report_of_a_night_without_labelled_references_says_no_reference_carries_truth(tmp_path):
    paths, summary = published_night(tmp_path, f1=None)
    summary.update(registry_pairwise=REGISTRY_AFTER_2, registry={"version": paths.ds, "entities_total": 5004})
    page = Marked(write_report(paths, summary).read_text())
    assert page.text["f1-night"].startswith("n/a")
    assert "F1 n/a: no reference of this night carries truth" in page.titles["f1-night"]
    assert "no reference of this night carries truth" in page.text["pairwise-note-night"]


def test_report_without_truth_has_no_f1_card_and_no_n_a(tmp_path):
    published_night(tmp_path, ds="2025-01-01", f1=None)
    paths, summary = published_night(tmp_path, f1=None)
    assert summary["registry_pairwise"] is None
    text = write_report(paths, summary).read_text()
    page = Marked(text)
    assert page.cards == [] and "pairwise" not in page.text
    assert "n/a" not in page.text["trend"]  # no truth known is "–", not an undefined figure
