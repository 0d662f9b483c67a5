"""benchmarks/recall_ceiling.py: true pairs classified by the best block key they share and by
their identifying agreement on exact tokens (2026-12-04, 2ec2867)."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def ceiling(repo):
    spec = importlib.util.spec_from_file_location("recall_ceiling", repo / "benchmarks" / "recall_ceiling.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pairs_are_classified_by_key_and_identifying_agreement(spark, ceiling):
    from hdwm.config import load_profile

    rows = [
        ("r1", "ALICE,ZORNOW,12,ELM,55501", "A"),   # r1/r2 share two rare tokens: a rare key, ln(10/2) x 2 > ln 10
        ("r2", "ZORNOW,ALICIA,99,OAK,55501", "A"),
        ("r3", "BOB,KRANE", "B"),                    # r3/r4 share nothing: no key, not identifying
        ("r4", "ROBERT,QUILL", "B"),
        ("r5", "CAROL,DUNN", "C"), ("r6", "DAVE,EAMES", "D"), ("r7", "ERIN,FOSS", "E"),
        ("r8", "FRANK,GRAY", "F"), ("r9", "GINA,HALE", "G"), ("r10", "HUGO,IVES", None),
    ]
    pdf = pd.DataFrame(rows, columns=["record_id", "text", "truth_entity"])
    prof = load_profile("default").effective(len(pdf))
    links = spark.createDataFrame([(r, "K1" if r in ("r1", "r2") else r) for r, _, _ in rows],
                                  "record_id string, cluster_id string")
    got, examples = ceiling.classify(spark, pdf, prof, links=links, examples=5)
    table = {(ceiling.CLASSES[r.kind], r.identifying): (r.n, r.linked) for r in got}
    assert table == {("rare key", True): (1, 1), ("no key", False): (1, 0)}
    assert examples == []  # the one pair without a key is not identifying
    got, _ = ceiling.classify(spark, pdf, prof)  # without links: linked is not counted
    assert {r.linked for r in got} == {None}
