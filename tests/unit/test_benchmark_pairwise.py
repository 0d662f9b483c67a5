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
