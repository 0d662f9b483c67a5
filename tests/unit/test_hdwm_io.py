"""DWM sample reader: CR, LF and CRLF endings; truth files."""

from __future__ import annotations

import pytest

from hdwm.readers import read_csv_refs, read_dwm, read_truth


@pytest.mark.parametrize("eol", ["\n", "\r", "\r\n"])
def test_read_dwm_all_line_endings(tmp_path, eol):
    f = tmp_path / "s.txt"
    f.write_bytes(eol.join(["RecID,Name,Address", "A1,john,smith,12 main", "A2,,jane doe", ""]).encode())
    df = read_dwm(f)
    assert df.record_id.tolist() == ["A1", "A2"]
    assert df.text.tolist() == ["john,smith,12 main", ",jane doe"]


def test_read_truth_and_csv(tmp_path):
    t = tmp_path / "t.txt"
    t.write_bytes(b"RecID,IdTruth\r\nA1,1\r\nA2,1\r\n")
    assert read_truth(t).values.tolist() == [["A1", "1"], ["A2", "1"]]
    c = tmp_path / "c.csv"
    c.write_text("rec_id,truth_entity,given,surname\nr1,5,ann,lee\nr2,,bob,\n")
    df = read_csv_refs(c)
    assert df.text.tolist() == ["ann lee", "bob"]
    assert df.truth_entity.tolist()[0] == "5" and df.truth_entity.isna().tolist()[1]


def test_read_sample_s8p(shared_dir):
    df = read_dwm(shared_dir / "data" / "dwm" / "S8P.txt")
    assert len(df) == 1000 and df.record_id.is_unique
