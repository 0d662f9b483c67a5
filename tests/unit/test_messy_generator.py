"""benchmarks/messy.py: the messy household generator - determinism, DWM layout read by the
product's reader, households and layouts present, entity sizes, the difficulty statistics."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

from hdwm.readers import read_dwm, read_truth

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "messy.py"
_spec = importlib.util.spec_from_file_location("messy", _PATH)
messy = importlib.util.module_from_spec(_spec)
sys.modules["messy"] = messy
_spec.loader.exec_module(messy)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("messy")
    out, truth = d / "m.txt", d / "m_truth.csv"
    info = messy.write_dwm(out, truth, 2000, 1)
    return out, truth, info


def test_same_seed_same_bytes_other_seed_differs(files, tmp_path):
    out, truth, _ = files
    messy.write_dwm(tmp_path / "a.txt", tmp_path / "a.csv", 2000, 1)
    messy.write_dwm(tmp_path / "b.txt", tmp_path / "b.csv", 2000, 2)
    assert (tmp_path / "a.txt").read_bytes() == out.read_bytes()
    assert (tmp_path / "a.csv").read_bytes() == truth.read_bytes()
    assert (tmp_path / "b.txt").read_bytes() != out.read_bytes()


def test_product_reader_reads_file_and_truth_with_same_ids(files):
    out, truth, info = files
    refs, t = read_dwm(out), read_truth(truth)
    assert len(refs) == 2000 and refs.record_id.is_unique
    assert refs.record_id.tolist() == t.record_id.tolist()
    assert refs.record_id.str.fullmatch(r"M\d{7}").all()
    assert (refs.text.str.len() > 0).all()
    assert t.truth_entity.nunique() == info["entities"]


def test_entity_sizes_within_1_to_8_with_a_realistic_mean(files):
    sizes = Counter(read_truth(files[1]).truth_entity)
    assert min(sizes.values()) >= 1 and max(sizes.values()) <= 8
    assert 2.5 <= 2000 / len(sizes) <= 4.5
    assert len(set(sizes.values())) == 8  # every size 1..8 occurs


def test_every_layout_kind_occurs_in_2000_references():
    seen = Counter(k for *_, kinds in messy.generate(2000, 3, with_layout=True) for k in kinds)
    assert set(seen) == set(messy.LAYOUT_KINDS)
    rows = list(messy.generate(2000, 3, with_layout=True))
    # one name layout per row; the last_first comma really splits the name into two fields
    assert all(len(k & {"full_name", "split_name", "last_first"}) == 1 for *_, k in rows)
    lf = [f for _, f, _, k in rows if "last_first" in k and len(f) > 1 and f[1].startswith(" ")]
    assert lf


def test_households_share_addresses_and_phones_across_entities(files):
    out, truth, _ = files
    st = messy.dwm_stats(out, truth)
    assert st["household_share"] > 0.5  # a majority of references: a person living with someone else
    # and concretely: a phone number written for two different true entities
    ent = dict(read_truth(truth).values.tolist())
    owners: dict[str, set[str]] = {}
    for rid, fields in messy._read_dwm_rows(out):
        for k in messy._keys(fields):
            owners.setdefault(k, set()).add(ent[rid])
    assert any(k.startswith("P:") and len(v) > 1 for k, v in owners.items())
    assert any(k.startswith("A:") and len(v) > 1 for k, v in owners.items())


def test_household_model_has_couples_twins_juniors_and_maiden_names():
    w = messy._World(5)
    kinds = Counter()
    twins = jrsr = maiden = 0
    for _ in range(400):
        kind, members = messy._household(w)
        kinds[kind] += 1
        if kind == "junior_senior":
            sr, jr = members[0], members[1]
            assert (sr.first, sr.middle, sr.surname) == (jr.first, jr.middle, jr.surname)
            assert sr.dob != jr.dob and sr.ssn != jr.ssn
            assert {a.zip for a, _ in sr.periods} & {a.zip for a, _ in jr.periods}
            jrsr += 1
        if kind == "family":
            kids = members[2:]
            twins += any(a.dob == b.dob and a.first != b.first for i, a in enumerate(kids) for b in kids[i + 1:])
        for p in members:
            if p.maiden and p.maiden != p.surname and any(s == p.maiden for _, s in p.periods):
                maiden += 1  # references before the marriage carry the maiden name
        for p in members:
            assert 1 <= len(p.periods)
    assert set(kinds) == {"single", "couple", "family", "single_parent", "roommates", "junior_senior"}
    assert twins and jrsr and maiden
    assert kinds["single"] / sum(kinds.values()) < 0.5  # of households; of references far fewer


def test_stats_detect_identifier_formats(tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("RecID,x\n"
                 "A1,JOHN,SMITH,1936,MAIN,ST,123-45-6789,(501) 555-1234\n"  # 1936 is a house number here
                 "A2,JOHN SMITH,PO BOX 12,72201,19360814\n"
                 "A3,SMITH JOHN,555-1234,1936\n"
                 "A4,jane,doe,10525974\n")
    t = tmp_path / "t.csv"
    t.write_text("RecID,IdTruth\nA1,1\nA2,1\nA3,1\nA4,2\n")
    st = messy.dwm_stats(f, t)
    assert st["references"] == 4 and st["entities"] == 2 and st["refs_per_entity_max"] == 3
    assert st["share_ssn"] == 0.25 and st["share_ssn8"] == 0.25
    assert st["share_dob"] == 0.5 and st["share_phone"] == 0.5
    assert st["share_pobox"] == 0.25 and st["share_zip"] == 0.25
    assert st["household_share"] == 0.0
    table = messy.stats_table([("s", st)])
    assert table.startswith("| statistic | s |") and "| references | 4 |" in table


def test_cli_writes_and_reports_errors(tmp_path, capsys):
    out, truth = tmp_path / "c.txt", tmp_path / "c.csv"
    assert messy.main(["--references", "50", "--seed", "4", "--out", str(out), "--truth", str(truth),
                       "--stats"]) == 0
    assert "| references | 50 |" in capsys.readouterr().out
    assert messy.main(["--stats-only", str(tmp_path / "missing.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(ValueError):
        next(messy.generate(0, 1))
