"""The executors' side of the registry's one pass over its stored token lists
(``hdwm.incremental._scan_sets`` on the driver, ``_scan_batches`` in the executors), without Spark:
every row kind against a plain-Python statement of the rule, on hand-made and on random lists."""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from hdwm import incremental
from hdwm.incremental import _scan_batches, _scan_sets


def _batches(lists: dict[str, list[str]], size: int = 3):
    keys = list(lists)
    for i in range(0, len(keys), size):
        part = keys[i:i + size]
        yield pa.record_batch([pa.array(part, pa.string()), pa.array([lists[k] for k in part],
                                                                      pa.list_(pa.string()))],
                              names=["record_id", "tokens"])


def _scan(lists, blocking, back, fp_keys, skip, cap, pair_keys=None, emit=None, want_lists=False):
    got = _scan_sets(blocking, back, fp_keys, skip, pair_keys, emit)
    out = [b for b in _scan_batches(_batches(lists), got, cap, want_lists)]
    t = pa.Table.from_batches(out, schema=out[0].schema) if out else None
    return sorted(((r["ref_key"], r["kind"], r["value"], r["n"]) for r in t.to_pylist()), key=str) if t else []


def _rule(lists, blocking, back, fp_keys, skip, cap, pair_keys=None, emit=None, want_lists=False):
    """The rule as ``_scan_token_lists`` states it, one list at a time."""
    blocking, fp_keys, pair_keys = set(blocking), set(fp_keys), set(pair_keys or ())
    emit = set(emit) if emit is not None else None
    names = {n for k in fp_keys for n in k.split(" ")}
    rows, held, found = [], [], set()
    for ref, toks in lists.items():
        have = {back.get(t, t) for t in toks}
        kept = sorted(have & blocking)
        for t in kept:
            if emit is None or t in emit:
                rows.append((ref, 0, t, 1))
                found.add(ref)
        for i, a in enumerate(kept):
            for b in kept[i + 1:]:
                if f"{a} {b}" in pair_keys:
                    rows.append((ref, 3, f"{a} {b}", 1))
                    found.add(ref)
        if ref not in skip:
            for x in have & names:
                for y in have & names:
                    if x != y and f"{x} {y}" in fp_keys:
                        held.append((ref, f"{x} {y}"))
                        found.add(ref)
    count = Counter(k for _, k in held)
    rows += [(None, 2, k, n) for k, n in count.items() if n > cap]
    rows += [(r, 1, k, 1) for r, k in held if count[k] <= cap]
    if want_lists:
        rows += [(r, 4, " ".join(lists[r]), 1) for r in found]
    return sorted(rows, key=str)


def test_every_row_kind_on_a_hand_made_registry():
    # SMIHT is corrected into SMITH before anything is kept; r|3 is sent again by the night, so its
    # MARY SMITH is not counted; MARY SMITH has two holders over a cap of one (one kind 2 row), JOHN SMITH
    # one (kind 1); r|1 holds the night's pair of blocking tokens SMITH ZORBA (kind 3)
    lists = {"r|1": ["MARY", "SMITH", "ZORBA"], "r|2": ["SMIHT", "MARY", "OAK"], "r|3": ["MARY", "SMITH"],
             "r|4": ["JOHN", "SMITH", "SMITH"], "r|5": ["MARY", "SMIHT"]}
    args = (lists, ["ZORBA", "SMITH"], {"SMIHT": "SMITH"}, ["MARY SMITH", "JOHN SMITH"], ["r|3"], 1)
    got = _scan(*args, pair_keys=["SMITH ZORBA"])
    assert got == sorted([
        ("r|1", 0, "SMITH", 1), ("r|1", 0, "ZORBA", 1), ("r|2", 0, "SMITH", 1), ("r|3", 0, "SMITH", 1),
        ("r|4", 0, "SMITH", 1), ("r|5", 0, "SMITH", 1), ("r|1", 3, "SMITH ZORBA", 1),
        (None, 2, "MARY SMITH", 3), ("r|4", 1, "JOHN SMITH", 1)], key=str)
    assert got == _rule(*args, pair_keys=["SMITH ZORBA"])


def test_emit_and_lists_return_rare_holders_and_their_raw_lists():
    lists = {"r|1": ["ANN", "ZORBA", "SMIHT"], "r|2": ["ANN", "SMITH"], "r|3": ["OAK"]}
    got = _scan(lists, ["ZORBA", "SMITH"], {"SMIHT": "SMITH"}, [], [], 5, emit=["ZORBA"], want_lists=True)
    # only ZORBA's holders come back as kind 0 rows, each with its stored list as written
    assert got == sorted([("r|1", 0, "ZORBA", 1), ("r|1", 4, "ANN ZORBA SMIHT", 1)], key=str)


def test_nothing_to_look_for_returns_nothing():
    assert _scan({"r|1": ["A1", "B2"]}, [], {}, [], [], 5) == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_registries_follow_the_rule(seed, monkeypatch):
    # lists cut in chunks of 7 (the cap's counts are per call, over every chunk), words drawn with
    # weights 1/rank, misspellings corrected into other words and into words that are not looked for
    monkeypatch.setattr(incremental, "SCAN_CHUNK_LISTS", 7)
    rnd = random.Random(seed)
    words = [f"W{i:02d}" for i in range(40)]
    w = [1.0 / (i + 1) for i in range(40)]
    lists = {f"r|{i}": [rnd.choices(words, w)[0] for _ in range(rnd.randint(1, 7))] for i in range(60)}
    blocking = rnd.sample(words, 15)
    back = {a: b for a, b in zip(rnd.sample(words, 8), rnd.sample(words, 8)) if a != b and a not in blocking}
    back = {a: b for a, b in back.items() if b not in back}  # a replacement is never corrected itself
    names = rnd.sample(words, 10)
    fp_keys = sorted({f"{a} {b}" for a in names for b in names if a != b and rnd.random() < 0.3})
    pair_keys = sorted({" ".join(sorted(rnd.sample(blocking, 2))) for _ in range(20)})
    skip = rnd.sample(list(lists), 5)
    emit = rnd.sample(blocking, 6)
    for kw in ({}, {"pair_keys": pair_keys}, {"pair_keys": pair_keys, "emit": emit, "want_lists": True}):
        args = (lists, blocking, back, fp_keys, skip, 3)
        assert _scan(*args, **kw) == _rule(*args, **kw)
