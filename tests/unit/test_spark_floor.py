"""benchmarks/spark_floor.py: the skeleton of one DWM pass on Spark that bounds what any engine of
washline's architecture can reach against Splink-DuckDB (HDWM speed). Its figures are only worth
quoting if the skeleton really links: these tests check its blocking, scoring, closure and
pairwise figures on a file whose answer is known."""

from __future__ import annotations

import pandas as pd
import pytest

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def floor(benchmark_module):
    return benchmark_module("spark_floor")


def _csv(tmp_path):
    rows = [
        # entity 1: three references chained by rare tokens; r1-r3 share only common ones
        ("r1", "1", "QUENTIN", "ZYBERT", "12 ELM", "55501"),
        ("r2", "1", "QUENTIN", "ZYBERT", "12 ELM", "55501"),
        ("r3", "1", "QUENTIN", "ZYBERT", "12 ELM", "55509"),
        # entity 2: two references, same rare tokens
        ("r4", "2", "MAVIS", "OKONKWO", "7 BIRCH", "66602"),
        ("r5", "2", "MAVIS", "OKONKWO", "7 BIRCH", "66602"),
        # entity 3: shares only the common word ELM with entity 1 (no block key)
        ("r6", "3", "ABE", "LINDQVIST", "90 ELM", "77703"),
        # entity 4: a namesake of entity 2 somewhere else: shares the rare surname, Jaccard < 0.5
        ("r7", "4", "ODO", "OKONKWO", "1 PINE", "88804"),
    ]
    filler = [(f"f{i}", f"9{i}", "COMMON", "ELM", "", "") for i in range(4)]  # make ELM frequent
    df = pd.DataFrame(rows + filler, columns=["rec_id", "truth_entity", "given_name", "surname", "street", "zip"])
    path = tmp_path / "tiny.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("score", ["pandas", "sql"])
def test_skeleton_links_what_shares_rare_tokens_and_scores_its_pairs(spark, floor, tmp_path, score):
    out = tmp_path / f"out-{score}"
    info = floor.skeleton(str(_csv(tmp_path)), beta=9, out=str(out), score=score)  # rare = floor(sqrt 9) = 3
    got = pd.read_parquet(out)
    assert len(got) == 11  # every reference, linked or not
    cid = dict(zip(got.record_id, got.cluster_id))
    assert cid["r1"] == cid["r2"] == cid["r3"]
    assert cid["r4"] == cid["r5"]
    assert len({cid["r1"], cid["r4"], cid["r6"], cid["r7"]}) == 4
    # r7 shares the block key OKONKWO with r4/r5 (3 holders = the rare limit), scored below 0.5
    assert info["pairs"] >= 5 and info["links"] >= 3
    assert info["precision"] == 1.0 and info["recall"] == 1.0 and info["f1"] == 1.0
    assert set(info["stages"]) == {"start-up", "read", "tokens+frequencies", "blocking", "scoring", "components",
                                   "write"}


def test_unknown_scoring_variant_is_refused(floor, capsys):
    with pytest.raises(SystemExit):
        floor.main(["--score", "numpy"])
    assert "unknown variant" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--sizes", "abc"], "not a comma list"), (["--sizes", "10"], "at least 1,000"), (["--sizes", ","], "at least 1,000"),
    (["--sizes", "1500"], "multiple of 1,000"), (["--score", ","], "pandas and/or sql"),
    (["--repeat", "0"], "at least 1"), (["--repeat", "-1"], "at least 1"), (["--repeat", "x"], "not a whole number"),
])
def test_bad_sizes_and_repeats_are_refused(floor, capsys, args, message):
    with pytest.raises(SystemExit):
        floor.main(args)
    assert message in capsys.readouterr().err
