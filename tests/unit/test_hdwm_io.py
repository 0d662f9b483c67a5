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


# -- the Spark readers that python -m hdwm uses: the same rows as the pandas readers --

def _rows(df):
    return sorted(tuple(None if v is None else str(v) for v in r) for r in df.collect())


def _prows(pdf):
    return sorted(tuple(None if v is None or v != v else str(v) for v in r) for r in pdf.itertuples(index=False))


@pytest.mark.spark
@pytest.mark.parametrize("eol", ["\n", "\r", "\r\n"])
def test_spark_readers_match_the_pandas_readers(spark, tmp_path, eol):
    from hdwm.readers import spark_read_csv_refs, spark_read_dwm, spark_read_truth

    d = tmp_path / "s.txt"
    d.write_bytes(eol.join(["RecID,Name,Address", "A1,john,smith,12 main", "", " A2 ,,jane doe", "A3"]).encode())
    assert _rows(spark_read_dwm(spark, d)) == _prows(read_dwm(d)) == [("A1", "john,smith,12 main"),
                                                                      ("A2", ",jane doe"), ("A3", "")]
    c = tmp_path / "c.csv"
    c.write_bytes(eol.join(["name,record_id,truth_entity,city", '"lee, ann",r1,5,perth', "bob,r2,,",
                            '"say ""hi""",r3,6,x', ""]).encode())
    assert _rows(spark_read_csv_refs(spark, c)) == _prows(read_csv_refs(c)) == [
        ("r1", "lee, ann perth", "5"), ("r2", "bob", None), ("r3", 'say "hi" x', "6")]
    t = tmp_path / "t.txt"
    t.write_bytes(eol.join(["RecID,IdTruth", "A1,1", "A2,1", "A1,9", "A3"]).encode())
    assert _rows(spark_read_truth(spark, t)) == _prows(read_truth(t)) == [("A1", "1"), ("A2", "1")]


@pytest.mark.spark
def test_spark_reader_reads_s8p_like_pandas(spark, shared_dir):
    from hdwm.readers import spark_read_dwm, spark_read_truth

    dwm = shared_dir / "data" / "dwm"
    assert _rows(spark_read_dwm(spark, dwm / "S8P.txt")) == _prows(read_dwm(dwm / "S8P.txt"))
    assert _rows(spark_read_truth(spark, dwm / "truthABCpoorDQ.txt")) == _prows(read_truth(dwm / "truthABCpoorDQ.txt"))


# -- the command line's input checks (python -m hdwm): one-line errors, exit 2 --

@pytest.mark.parametrize("name, body, fmt, message", [
    ("missing.txt", None, "dwm", "does not exist"),
    ("empty.csv", "", "csv", "not a readable csv file"),
    ("empty.txt", "", "dwm", "not a readable dwm file"),
    pytest.param("header.csv", "record_id,name,city\n", "csv", "holds no records", marks=pytest.mark.spark),
    pytest.param("dups.csv", "record_id,name\nr1,ann\nr1,anne\nr2,bob\n", "csv",
                 "record ids must be unique: 1 repeated", marks=pytest.mark.spark),
    pytest.param("ragged.csv", "RecID,Name\nA1,ann\nA2,bob,lee,1\n", "csv", "try --format dwm",
                 marks=pytest.mark.spark),
    pytest.param("norecid.txt", "RecID,Name\nA1,ann\n,bob\n", "dwm", "without a RecID", marks=pytest.mark.spark),
])
def test_cli_input_mistakes_are_one_line_errors(tmp_path, capsys, name, body, fmt, message):
    from hdwm.__main__ import main

    path = tmp_path / name
    if body is not None:
        path.write_text(body)
    assert main(["--input", str(path), "--format", fmt]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_cli_set_overrides_are_checked(tmp_path, capsys):
    from hdwm.__main__ import main

    path = tmp_path / "x.txt"
    path.write_text("RecID,Name\nA1,ann\n")
    assert main(["--input", str(path), "--set", "noSuchKnob=1"]) == 2
    assert "noSuchKnob" in capsys.readouterr().err
    assert main(["--input", str(path), "--set", "mu=7"]) == 2
    assert "mu" in capsys.readouterr().err


@pytest.mark.spark
def test_cli_truth_file_checks(spark, tmp_path, capsys):
    from types import SimpleNamespace

    from hdwm.__main__ import _read_inputs

    data = tmp_path / "refs.csv"
    data.write_text("name,record_id,city\nann,r1,perth\nanne,r2,perth\nbob,r3,hobart\n")
    args = lambda truth: SimpleNamespace(input=str(data), format="csv", truth=str(truth))  # noqa: E731
    # the column named record_id is the id even when it is not the first column
    refs, info, problem = _read_inputs(spark, SimpleNamespace(input=str(data), format="csv", truth=None))
    assert problem is None and info == {"references": 3}
    assert sorted((r.record_id, r.text) for r in refs.collect()) == [
        ("r1", "ann perth"), ("r2", "anne perth"), ("r3", "bob hobart")]

    bad = tmp_path / "truth.tsv"
    bad.write_text("RecID\tIdTruth\nr1\t1\n")
    assert "no RecID,IdTruth rows" in _read_inputs(spark, args(bad))[2]
    other = tmp_path / "other.csv"
    other.write_text("RecID,IdTruth\nx1,1\nx2,1\n")
    assert "no reference has a truth label" in _read_inputs(spark, args(other))[2]
    partial = tmp_path / "partial.csv"
    partial.write_text("RecID,IdTruth\nr1,1\nr2,1\n")
    refs, info, problem = _read_inputs(spark, args(partial))
    assert problem is None and info["truth_labelled"] == 2
    warning = capsys.readouterr().err
    # hdwm.metrics.pairwise_metrics leaves unlabelled references out; the warning says the same
    assert "only 2 of 3 references have a truth label" in warning and "count only the 2 labelled" in warning
    assert _read_inputs(spark, args(tmp_path / "nope.csv"))[2].startswith("truth file")


@pytest.mark.spark
def test_cli_says_how_many_references_were_not_utf8(spark, tmp_path, capsys):
    from types import SimpleNamespace

    from hdwm.__main__ import _read_inputs

    data = tmp_path / "latin1.txt"
    data.write_bytes(b"RecID,Text\n1,Jos\xe9 M\xfcller\n2,JOSE MULLER\n3,ANN LEE\n")
    refs, info, problem = _read_inputs(spark, SimpleNamespace(input=str(data), format="dwm", truth=None))
    assert problem is None and info == {"references": 3, "not_utf8_references": 1}
    assert refs.count() == 3  # nothing dropped
    assert "1 of 3 references" in capsys.readouterr().err
