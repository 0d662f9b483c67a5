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


# -- the command line's input checks (python -m hdwm): one-line errors, exit 2, before Spark starts --

@pytest.mark.parametrize("name, body, fmt, message", [
    ("missing.txt", None, "dwm", "does not exist"),
    ("empty.csv", "", "csv", "not a readable csv file"),
    ("empty.txt", "", "dwm", "not a readable dwm file"),
    ("header.csv", "record_id,name,city\n", "csv", "holds no records"),
    ("dups.csv", "record_id,name\nr1,ann\nr1,anne\nr2,bob\n", "csv", "record ids must be unique: 1 repeated"),
    ("ragged.csv", "RecID,Name\nA1,ann\nA2,bob,lee,1\n", "csv", "try --format dwm"),
])
def test_cli_input_mistakes_are_one_line_errors(tmp_path, capsys, name, body, fmt, message):
    from hdwm.__main__ import main

    path = tmp_path / name
    if body is not None:
        path.write_text(body)
    assert main(["--input", str(path), "--format", fmt]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err and "Traceback" not in err


def test_cli_truth_file_checks(tmp_path, capsys):
    from types import SimpleNamespace

    from hdwm.__main__ import _read_inputs
    from hdwm.readers import read_csv_refs, read_dwm, read_truth

    data = tmp_path / "refs.csv"
    data.write_text("name,record_id,city\nann,r1,perth\nanne,r2,perth\nbob,r3,hobart\n")
    args = lambda truth: SimpleNamespace(input=str(data), format="csv", truth=str(truth))  # noqa: E731
    # the column named record_id is the id even when it is not the first column
    pdf, problem = _read_inputs(SimpleNamespace(input=str(data), format="csv", truth=None),
                                read_dwm, read_csv_refs, read_truth)
    assert problem is None and list(pdf["record_id"]) == ["r1", "r2", "r3"]
    assert list(pdf["text"]) == ["ann perth", "anne perth", "bob hobart"]

    bad = tmp_path / "truth.tsv"
    bad.write_text("RecID\tIdTruth\nr1\t1\n")
    assert "no RecID,IdTruth rows" in _read_inputs(args(bad), read_dwm, read_csv_refs, read_truth)[1]
    other = tmp_path / "other.csv"
    other.write_text("RecID,IdTruth\nx1,1\nx2,1\n")
    assert "no reference has a truth label" in _read_inputs(args(other), read_dwm, read_csv_refs, read_truth)[1]
    partial = tmp_path / "partial.csv"
    partial.write_text("RecID,IdTruth\nr1,1\nr2,1\n")
    pdf, problem = _read_inputs(args(partial), read_dwm, read_csv_refs, read_truth)
    assert problem is None and pdf.attrs["truth_labelled"] == 2
    warning = capsys.readouterr().err
    # hdwm.metrics.pairwise_metrics leaves unlabelled references out; the warning says the same
    assert "only 2 of 3 references have a truth label" in warning and "count only the 2 labelled" in warning
    assert _read_inputs(args(tmp_path / "nope.csv"), read_dwm, read_csv_refs, read_truth)[1].startswith("truth file")
