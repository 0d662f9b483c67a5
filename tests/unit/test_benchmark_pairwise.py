"""benchmarks/linkage_quality.py's pandas pairwise(): the same undefined-ratio
rule as hdwm.metrics (None, never 0.0), and the same figures where defined."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def pairwise(repo):
    spec = importlib.util.spec_from_file_location("linkage_quality", repo / "benchmarks" / "linkage_quality.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.pairwise


def test_hand_example_matches_hdwm_metrics(pairwise):
    from hdwm.metrics import metrics_from_counts

    # clusters {a,b,c} {d,e} {f}; truth {a,b} {c,d,e} {f}; g has no truth
    labels = pd.Series(["C1", "C1", "C1", "C2", "C2", "C3", "C1"])
    truth = pd.Series(["T1", "T1", "T2", "T2", "T2", "T3", None])
    m = pairwise(labels, truth)
    ref = metrics_from_counts(2, 4, 4)
    assert {k: round(v, 4) for k, v in m.items()} == {k: ref[k] for k in ("precision", "recall", "f1")}


def test_all_singletons_and_no_true_pairs_are_none(pairwise):
    m = pairwise(pd.Series(["a", "b", "c"]), pd.Series(["T1", "T1", "T2"]))
    assert m == {"precision": None, "recall": 0.0, "f1": None}
    m = pairwise(pd.Series(["a", "a", "b"]), pd.Series(["T1", "T2", "T3"]))
    assert m == {"precision": 0.0, "recall": None, "f1": None}


@pytest.fixture(scope="module")
def bench(repo):
    def load(name):
        spec = importlib.util.spec_from_file_location(name, repo / "benchmarks" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load


def test_splink_best_threshold_skips_thresholds_with_no_f1(bench):
    """At a high threshold Splink may predict no pair (precision and F1
    undefined): the best-F1 scan skips it instead of comparing None with a
    float, and an input whose F1 is never defined prints n/a, not a crash."""
    lq = bench("linkage_quality")
    none = {"precision": None, "recall": 0.0, "f1": None}
    scan = {0.5: {"precision": 0.5, "recall": 1.0, "f1": 0.6667}, 0.9: dict(none), 0.99: dict(none),
            0.8: {"precision": 0.9, "recall": 0.9, "f1": 0.9}}
    assert lq.best_threshold(scan) == 0.8
    assert lq.best_threshold({0.5: dict(none), 0.99: dict(none)}) == lq.THRESHOLD
    s = {"best": {**none, "threshold": 0.9}}
    assert lq.best_cell(s) == "n/a @ 0.9 (n/a/0.000)"
    assert lq.best_cell({"best": {**scan[0.8], "threshold": 0.8}}) == "0.900 @ 0.8 (0.900/0.900)"


def test_incremental_f1_gap_is_none_when_an_f1_is_undefined(bench):
    inc = bench("incremental")
    assert inc.f1_gap({"f1": 0.95}, {"f1": 0.9}) == 0.05
    assert inc.f1_gap({"f1": None}, {"f1": 0.9}) is None and inc.f1_gap(None, {"f1": 0.9}) is None


def test_incremental_longhist_generator_gives_dwm_text_with_truth(bench, tmp_path):
    inc = bench("incremental")
    df = inc.GENERATORS["longhist"](300, 1, tmp_path)
    assert list(df.columns) == ["record_id", "truth_entity", "reference"] and len(df) == 300
    assert df["record_id"].is_unique and df["truth_entity"].nunique() < 300  # 5-35 references a person


def test_incremental_f1_by_night_counts_pairs_within_each_night(bench, spark):
    from hdwm.metrics import metrics_from_counts

    inc = bench("incremental")
    rows = [  # night 1: clusters {a,b} {c}, truth {a,b,c}; night 2: {d,e} against truth {d} {e}; b-d never a pair
        (1, "a", "C1", "T1"), (1, "b", "C1", "T1"), (1, "c", "C2", "T1"),
        (2, "d", "C1", "T2"), (2, "e", "C1", "T3"), (2, "f", "C3", None)]
    df = spark.createDataFrame(rows, "night int, record_id string, cluster string, truth_entity string")
    got = inc.f1_by_night(df, "cluster")
    assert got == {1: metrics_from_counts(1, 1, 3)["f1"], 2: metrics_from_counts(0, 1, 0)["f1"]}
    assert got[1] == 0.5 and got[2] is None  # no true pair within night 2: undefined, not 0


def test_incremental_resume_needs_the_interrupted_runs_work_and_json(bench, tmp_path, capsys):
    inc = bench("incremental")
    for argv in (["--resume"], ["--resume", "--work", str(tmp_path)],
                 ["--resume", "--work", str(tmp_path), "--json", str(tmp_path / "missing.json")]):
        with pytest.raises(SystemExit) as e:
            inc.main(argv)
        assert e.value.code == 2
        assert "--resume continues an interrupted run" in capsys.readouterr().err


def test_registry_dag_night_lands_synth_rows_as_the_declared_febrl_source(bench, repo, tmp_path):
    """The DAG-night benchmark lands benchmarks/synth.py rows as source ``febrl``: the header is
    the declared one (the cleanse job would stop on schema drift), and the source's truth pattern
    gives back the generator's truth for every row."""
    import csv
    import re

    import sourcecontract as S

    synth, night = bench("synth"), bench("registry_dag_night")
    src = tmp_path / "synth.csv"
    synth.generate(60, 7, src)
    df = pd.read_csv(src, dtype=str, keep_default_na=False).rename(columns={"rec_id": "record_id"})
    truth = dict(zip(df["record_id"], df["truth_entity"]))
    assert night.land_csv(df.drop(columns=["truth_entity", "phone"]), tmp_path, "2025-01-02") == 60
    with (tmp_path / "landing" / "febrl" / "2025-01-02" / "part-0.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    spec = S.load_sources(repo / "include" / "config" / "sources.yaml")["febrl"]
    assert S.compare_header(rows[0], spec).ok
    pattern = re.compile(spec.truth_pattern)
    assert len(rows) == 61 and all(pattern.match(r[0]).group(1) == truth[r[0]] for r in rows[1:])
    assert {r[rows[0].index("address_2")] for r in rows[1:]} == {""}
