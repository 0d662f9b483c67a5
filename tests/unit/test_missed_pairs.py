"""benchmarks/missed_pairs.py: the found, missed and false pairs of a run, classified by the
identifiers their texts share (error analysis)."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def mp(benchmark_module):
    return benchmark_module("missed_pairs")


def test_identifiers_read_every_shape_and_no_zip_plus_4(mp):
    ssn, phone, dob = mp.identifiers("JANE DOE,740-17-9219,(881) 494-5685,24-Nov-1986,22140-5211")
    assert ssn == {"740179219"} and phone == {"8814945685"} and dob == {(1986, 11, 24)}
    assert mp.identifiers("444 59 3464 FEB 20 1998")[0] == {"444593464"}
    assert mp.identifiers("FEB 20 1998")[2] == mp.identifiers("19980220")[2] == mp.identifiers("2/20/1998")[2]
    assert mp.identifiers("12-345-6789 1998-13-40") == (frozenset(), frozenset(), frozenset())


def test_pairs_are_found_missed_or_false_by_their_shared_identifiers(mp):
    refs = pd.DataFrame([
        ("a1", "ANN LEE,12 ELM,55501,740-17-9219", "A"),
        ("a2", "LEE ANN,740179219,9 OAK,66602", "A"),          # moved, same SSN: missed below
        ("a3", "ANN LEE,12 ELM,55501", "A"),                   # same zip as a1, no identifier
        ("b1", "BO LEE,12 ELM,55501,(881) 494-5685", "B"),     # a1's housemate, linked to a1: false
        ("c1", "CY ZU,1/2/1990", "C"),
        ("c2", "CY ZU,1990-01-02", "C"),                       # found through the date
    ], columns=["record_id", "text", "truth_entity"])
    links = pd.DataFrame({"record_id": ["a1", "a2", "a3", "b1", "c1", "c2"],
                          "cluster_id": ["k1", "a2", "a3", "k1", "k2", "k2"]})
    res = mp.analyse(refs, links, examples=5)
    by = res["by_identifier"]
    assert by["SSN"]["missed"] == 1 and by["SSN"]["found"] == 0
    assert by["DOB"]["found"] == 1
    assert by["none"]["missed"] == 2  # a1-a3 (zip shared) and a2-a3 (nothing)
    assert by["none"]["false"] == 1   # a1-b1 share no identifier
    assert sum(c["false"] for c in by.values()) == 1
    assert res["unidentified_missed"][("zip shared", "words ≥ ln N")] + \
        res["unidentified_missed"][("zip shared", "words < ln N")] == 1
    assert res["missed_split"] == {"at least one side a singleton": 3}
    assert res["examples"] == [("ANN LEE,12 ELM,55501,740-17-9219", "LEE ANN,740179219,9 OAK,66602")]


def test_links_that_miss_a_reference_are_refused(mp):
    refs = pd.DataFrame([("a1", "X", "A"), ("a2", "Y", "A")], columns=["record_id", "text", "truth_entity"])
    with pytest.raises(ValueError, match="1 references have no row"):
        mp.analyse(refs, pd.DataFrame({"record_id": ["a1"], "cluster_id": ["a1"]}))


def test_a_truth_that_labels_nothing_is_an_error_not_a_table(mp, tmp_path, capsys):
    src = tmp_path / "refs.txt"
    src.write_text("RecID,Name\nr1,ANN LEE\nr2,ANN LEE\n", encoding="utf-8")
    links = tmp_path / "links"
    links.mkdir()
    pd.DataFrame({"record_id": ["r1", "r2"], "cluster_id": ["r1", "r1"]}).to_parquet(links / "part.parquet")
    for body in ("", "RecID,IdTruth\n", "RecID,IdTruth\nx9,1\n"):
        truth = tmp_path / "truth.csv"
        truth.write_text(body, encoding="utf-8")
        rc = mp.main(["--input", str(src), "--truth", str(truth), "--links", str(links)])
        assert rc == 2
        assert "no reference of the input has a truth label" in capsys.readouterr().err
    truth.write_text("RecID,IdTruth\nr1,7\nr2,7\n", encoding="utf-8")
    assert mp.main(["--input", str(src), "--truth", str(truth), "--links", str(links)]) == 0
    assert "| **all** | 1 | 0 | – | 0 |" in capsys.readouterr().out
