"""A first night (the empty registry as its base) is linked alone: ``hdwm.incremental.link_night``
skips the registry look-ups that cannot find anything (references sent again, the neighbourhood,
entities named by decisions) and hands the engine the night's own counts and correction map.

The shortcut must not change what a first night publishes: the same clusters, ids, members,
entities, change rows, frequency and token layers, and counts as the general path
(``FIRST_NIGHT_ALONE`` off), on FEBRL-like references with duplicates (``benchmarks/synth.py``).
"""

from __future__ import annotations

import pandas as pd
import pytest

pytestmark = pytest.mark.spark


def _night(spark, synth, tmp_path, records: int = 200, seed: int = 7):
    """(source, record_id, text, attributes, truth_entity) of ``records`` synth.py references."""
    out = tmp_path / "synth.csv"
    synth.generate(records, seed, out)
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    id_col, truth_col, *attrs = df.columns  # rec_id, truth_entity, then the attributes
    rows = []
    for d in df.to_dict("records"):
        values = {a: d[a] for a in attrs if d[a]}
        rows.append(("crm", d[id_col], " ".join(values.values()), values, d[truth_col]))
    return spark.createDataFrame(rows, "source string, record_id string, text string, "
                                       "attributes map<string,string>, truth_entity string")


def _rows(df) -> list:
    if df is None:
        return []
    pdf = df.toPandas()
    for c in pdf.columns:
        pdf[c] = pdf[c].map(lambda v: sorted(v.items()) if isinstance(v, dict) else
                            (list(v) if hasattr(v, "__len__") and not isinstance(v, str) else v))
    return sorted(map(repr, pdf.itertuples(index=False)))


def test_a_first_night_alone_publishes_what_the_general_path_does(spark, benchmark_module, tmp_path, monkeypatch,
                                                                  capsys):
    from hdwm import incremental
    from hdwm.registry import empty_version

    night = _night(spark, benchmark_module("synth"), tmp_path)
    parts = ("members", "entities", "changes", "frequencies", "tokens", "pairs")
    results = {}
    for alone in (True, False):
        monkeypatch.setattr(incremental, "FIRST_NIGHT_ALONE", alone)
        res = incremental.link_night(spark, empty_version(spark), night, "2025-01-01", "default")
        results[alone] = {p: _rows(getattr(res, p)) for p in parts} | {
            "counts": res.counts, "tokens_full": res.tokens_full, "clusters": res.engine_metrics.get("clusters")}
    said = capsys.readouterr().err
    assert "registry_tokens=none (the empty registry)" in said  # the shortcut ran ...
    assert "registry_tokens=tokenised again" in said  # ... and so did the general path
    fast, general = results[True], results[False]
    assert len(fast["members"]) == 200 and fast["counts"]["new_entities"] < 150  # duplicates were linked
    for key in (*parts, "counts", "tokens_full", "clusters"):
        assert fast[key] == general[key], key
