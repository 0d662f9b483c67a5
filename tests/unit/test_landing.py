"""Demo landing of FEBRL (src/washline/landing.py)."""

from __future__ import annotations

import csv

import pytest

from washline.landing import FEBRL_COLUMNS, land_febrl


def _rows(paths):
    out = []
    for path in paths:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            assert tuple(next(reader)) == FEBRL_COLUMNS
            out.extend(reader)
    return out


def test_lands_febrl1_as_csv_parts(tmp_path):
    paths = land_febrl("febrl1", "2025-01-01", tmp_path, parts=2)
    assert [p.name for p in paths] == ["part-0000.csv", "part-0001.csv"]
    assert all(p.parent == tmp_path / "febrl" / "2025-01-01" for p in paths)
    rows = _rows(paths)
    assert len(rows) == 1000
    assert len({r[0] for r in rows}) == 1000
    assert all(len(r) == len(FEBRL_COLUMNS) for r in rows)
    # values as shipped: lower case, missing given name is an empty field, dirty dates kept
    first = dict(zip(FEBRL_COLUMNS, rows[0]))
    assert first["rec_id"] == "rec-223-org" and first["given_name"] == "" and first["surname"] == "waller"
    assert any(r[FEBRL_COLUMNS.index("date_of_birth")] == "19371233" for r in rows)


def test_landing_is_idempotent_and_touches_only_its_date(tmp_path):
    other = land_febrl("febrl1", "2024-12-31", tmp_path, parts=1)
    land_febrl("febrl1", "2025-01-01", tmp_path, parts=3)
    stray = tmp_path / "febrl" / "2025-01-01" / "part-0002.csv"
    assert stray.exists()
    again = land_febrl("febrl1", "2025-01-01", tmp_path, parts=2)
    assert sorted(p.name for p in (tmp_path / "febrl" / "2025-01-01").iterdir()) == ["part-0000.csv", "part-0001.csv"]
    assert not stray.exists()  # the date's folder was replaced as a whole
    assert len(_rows(again)) == 1000
    assert other[0].exists() and len(_rows(other)) == 1000
    # no temporary or moved-aside folders are left behind
    assert sorted(p.name for p in (tmp_path / "febrl").iterdir()) == ["2024-12-31", "2025-01-01"]


def test_lands_febrl3(tmp_path):
    paths = land_febrl("febrl3", "2025-01-01", tmp_path, parts=4)
    assert len(paths) == 4
    assert len(_rows(paths)) == 5000


@pytest.mark.parametrize("ds", ["2025-1-1", "20250101", "2025-02-30", "../x", "", "2025-01-01/.."])
def test_bad_ds_is_refused(tmp_path, ds):
    with pytest.raises(ValueError, match="ds"):
        land_febrl("febrl1", ds, tmp_path)
    assert not (tmp_path / "febrl").exists()


def test_unknown_dataset_and_bad_parts_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'febrl9'"):
        land_febrl("febrl9", "2025-01-01", tmp_path)
    with pytest.raises(ValueError, match="parts"):
        land_febrl("febrl1", "2025-01-01", tmp_path, parts=0)


# --- the demo command line (src/washline/demo.py) -----------------------


def _demo(capsys, *argv):
    from washline.demo import main

    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_demo_land_outside_the_data_root_is_a_one_line_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path / "data"))
    code, out, err = _demo(capsys, "land", "--landing", "../../etc", "--ds", "2025-01-01")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("washline.demo land: error: argument --landing: path '../../etc'")
    assert "outside the data root" in err
    assert not (tmp_path / "etc").exists()


def test_demo_bad_ds_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    code, _, err = _demo(capsys, "land", "--ds", "2025-02-30")
    assert code == 2 and err.count("\n") == 1
    assert "2025-02-30 is not a valid YYYY-MM-DD date: day is out of range for month" in err
    assert "invalid validate_ds value" not in err
    code, _, err = _demo(capsys, "summary", "--ds", "2025-2-3")
    assert code == 2 and "2025-2-3 is not a valid YYYY-MM-DD date" in err


def test_demo_help_says_the_landing_path_must_be_inside_the_data_root(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    code, out, _ = _demo(capsys, "land", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "must be inside the data root ($WASHLINE_DATA" in text
    assert str(tmp_path) in "".join(out.split())  # the data root in force (argparse may wrap it)


def test_demo_land_inside_the_data_root_still_works(tmp_path, monkeypatch, capsys):
    from washline.demo import main

    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    assert main(["land", "--dataset", "febrl1", "--ds", "2025-01-01", "--landing", "in"]) == 0
    assert sorted((tmp_path / "in" / "febrl" / "2025-01-01").glob("*.csv"))


def test_febrl4_parts_land_as_two_sources_and_exclusive_clears_the_date(tmp_path):
    """The entity registry demo: FEBRL4 part A as source febrl4a, part B as febrl4b; an
    exclusive landing leaves the date to its own source (other dates untouched)."""
    import csv

    land_febrl("febrl1", "2025-01-01", tmp_path, parts=1)
    land_febrl("febrl1", "2024-12-31", tmp_path, parts=1)
    a = land_febrl("febrl4a", "2025-01-01", tmp_path, parts=2, exclusive=True)
    assert all(p.parent == tmp_path / "febrl4a" / "2025-01-01" for p in a)
    assert not (tmp_path / "febrl" / "2025-01-01").exists() and (tmp_path / "febrl" / "2024-12-31").is_dir()
    b = land_febrl("febrl4b", "2025-01-02", tmp_path, parts=1)
    ids = {}
    for name, files in (("a", a), ("b", b)):
        rows = [r for f in files for r in csv.DictReader(f.open(encoding="utf-8"))]
        assert list(rows[0]) == list(FEBRL_COLUMNS)
        ids[name] = [r["rec_id"] for r in rows]
    assert len(ids["a"]) == len(set(ids["a"])) == 5000 and len(ids["b"]) == len(set(ids["b"])) == 5000
    assert all(i.endswith("-org") for i in ids["a"]) and all(i.endswith("-dup-0") for i in ids["b"])
    # every part B record duplicates one part A original
    assert {i.rsplit("-", 2)[0] for i in ids["b"]} == {i.rsplit("-", 1)[0] for i in ids["a"]}


def test_demo_summary_prints_the_registry_figures(tmp_path, monkeypatch, capsys):
    import json

    from washline.demo import main
    from washline.report import build_summary

    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    complete = {"ds": "2025-01-02", "base_ds": "2025-01-01", "references_total": 10000, "entities_total": 5004,
                "night_references": 5000, "new_references": 5000, "joined_existing": 4990, "new_entities": 10,
                "grows": 4990, "merges": 2, "splits": 1}
    summary = build_summary("2025-01-02", "r", {"link": {"registry": {"enabled": True, "complete": complete}},
                                                "publish": {"rows": {"entity_members": 10000}}})
    path = tmp_path / "lake" / "reports" / "2025-01-02" / "run_summary.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(summary))
    assert main(["summary", "--ds", "2025-01-02"]) == 0
    out = capsys.readouterr().out
    assert "5000 references: 5000 new, 4990 joined existing entities (99.8%)" in out
    assert "10 new entities, 4990 grown, 2 merges, 1 splits" in out
    assert main(["summary", "--ds", "2025-01-02", "--json"]) == 0
    assert '"joined_existing": 4990' in capsys.readouterr().out
