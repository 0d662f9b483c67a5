"""Tokeniser, frequency table, global correction and blocking (with the size cap)."""

from __future__ import annotations

import pytest

from hdwm.blocking import block_stats, build_blocks, group_stats
from hdwm.config import LinkageProfile
from hdwm.frequency import DELETION_KEYS_COMPILED, apply_corrections, correction_map, deletion_sequence, token_frequencies
from hdwm.tokenizer import tokenize

pytestmark = pytest.mark.spark


def _toks(spark, text, **kw):
    prof = LinkageProfile(beta=4, sigma=10, **kw)
    df = spark.createDataFrame([("r1", text)], "record_id string, text string")
    return tokenize(df, prof).first().tokens


def test_splitter_upper_cases_and_splits_on_non_word(spark):
    assert _toks(spark, "barbaar,myers-christian, 3536 N. Berlin_Ave") == [
        "BARBAAR", "MYERS", "CHRISTIAN", "3536", "N", "BERLIN", "AVE"]
    assert _toks(spark, None) == []
    assert _toks(spark, "  ,, ") == []


def test_remove_duplicate_tokens_keeps_first(spark):
    assert _toks(spark, "a b a c b", removeDuplicateTokens=True) == ["A", "B", "C"]
    assert _toks(spark, "a b a", removeDuplicateTokens=False) == ["A", "B", "A"]


def test_compress_variants(spark):
    assert _toks(spark, "ssn 010-52-5974 o'neil", tokenizerType="CompressNbr") == ["SSN", "010525974", "O", "NEIL"]
    assert _toks(spark, "ssn 010-52-5974,o'neil", tokenizerType="Compress") == ["SSN", "010525974", "ONEIL"]


def test_frequency_and_global_correction(spark):
    prof = LinkageProfile(beta=4, sigma=10, runGlobalCorrection=True, minFreqStdToken=3,
                          maxFreqErrToken=1, minLenStdToken=3)
    rows = [("r1", ["SMITH", "12345"]), ("r2", ["SMITH", "12345"]), ("r3", ["SMITH"]),
            ("r4", ["SMIHT", "12346"]), ("r5", ["SMYTHE"]), ("r6", [])]
    tokens = spark.createDataFrame(rows, "record_id string, tokens array<string>")
    freq = {r.token: r.freq for r in token_frequencies(tokens).collect()}
    assert freq == {"SMITH": 3, "12345": 2, "SMIHT": 1, "12346": 1, "SMYTHE": 1}
    cmap = correction_map(token_frequencies(tokens), prof)
    # SMIHT is one transposition away; SMYTHE is two edits; digits are never corrected
    assert {r.token: r.replacement for r in cmap.collect()} == {"SMIHT": "SMITH"}
    fixed = {r.record_id: r.tokens for r in apply_corrections(tokens, cmap, True).collect()}
    assert fixed["r4"] == ["SMITH", "12346"] and fixed["r6"] == [] and len(fixed) == 6



def test_correction_prefers_the_most_frequent_standard_token_then_the_smallest(spark):
    # SMITX is one edit from SMITH (4 holders) and SMITT (3): SMITH; JONEX is one edit from JONES and
    # JONEZ (3 holders each): the smaller, JONES; SMIHT shares two deletion keys with SMITH: one row
    prof = LinkageProfile(beta=4, sigma=10, runGlobalCorrection=True, minFreqStdToken=3,
                          maxFreqErrToken=1, minLenStdToken=3)
    holders = {"SMITH": 4, "SMITT": 3, "JONES": 3, "JONEZ": 3, "SMITX": 1, "JONEX": 1, "SMIHT": 1}
    rows = [(f"{t}{i}", [t]) for t, n in holders.items() for i in range(n)]
    tokens = spark.createDataFrame(rows, "record_id string, tokens array<string>")
    cmap = correction_map(token_frequencies(tokens), prof).collect()
    assert sorted(map(tuple, cmap)) == [("JONEX", "JONES"), ("SMIHT", "SMITH"), ("SMITX", "SMITH")]


def test_deletion_sequence_holds_each_deletion_at_its_position_at_any_length(spark):
    # the compiled form (up to DELETION_KEYS_COMPILED characters, padded with nulls) and the lambda form
    # (longer tokens) must both hold the token at index 0 and its i-th deletion at index i
    words = ["A", "AB", "ABA", "SMITH", "AAAA", "X" * DELETION_KEYS_COMPILED,
             "ABCDEFGHIJKLMNOPQRSTUVWXY"[:DELETION_KEYS_COMPILED] + "Z",
             "LONGHYPHENATEDSURNAMEWITHMORELETTERS", "ÉMILE"]
    got = spark.createDataFrame([(w,) for w in words], "t string").select(
        "t", deletion_sequence("t").alias("k")).collect()
    for row in got:
        want = [row.t] + [row.t[:i] + row.t[i + 1:] for i in range(len(row.t))]
        assert [k for k in row.k if k is not None] == want, row.t
        assert row.k[:len(want)] == want, row.t  # nulls only after the deletions


def _osa(a: str, b: str) -> int:
    """Optimal string alignment distance (Damerau–Levenshtein without repeated edits of a substring)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def test_correction_map_equals_a_brute_force_over_every_pair(spark):
    # a small alphabet makes every kind of one-edit pair (insertions, deletions, substitutions, adjacent
    # swaps, repeated letters) and many two-edit pairs that share a deletion key; the map must be exactly
    # the DWM25 rule evaluated over all pairs with an edit distance computed in Python
    import random

    rnd = random.Random(3)
    vocab = {"".join(rnd.choice("ABC") for _ in range(rnd.randint(2, 6))) for _ in range(400)}
    vocab |= {"ABCABCABCABCABCABCABCABCAB", "ABCABCABCABCABCABCABCABCBA"}  # past the compiled length
    freq = {t: rnd.choice([1, 1, 2, 3, 5, 6, 9]) for t in sorted(vocab)}
    prof = LinkageProfile(minFreqStdToken=5, maxFreqErrToken=3, minLenStdToken=3)
    want = {}
    for r, fr in freq.items():
        if fr > 3 or len(r) < 3 or r.isdigit():
            continue
        cands = [(-fs, s) for s, fs in freq.items() if fs >= 5 and len(s) >= 3 and _osa(r, s) == 1]
        if cands:
            want[r] = min(cands)[1]
    df = spark.createDataFrame(sorted(freq.items()), "token string, freq long")
    got = dict(map(tuple, correction_map(df, prof).collect()))
    assert got == want
    assert len(want) > 30 and any(len(k) != len(v) for k, v in want.items())


@pytest.mark.parametrize("broadcast", [True, False])
def test_corrected_frequencies_move_every_corrected_count_to_its_replacement(spark, monkeypatch, broadcast):
    # the broadcast path (only the replacements' rows summed) and the whole-vocabulary grouping give what
    # the rule says: a token's corrected count is its own raw count plus those of the tokens corrected into it
    import random

    import hdwm.spark as hspark
    from hdwm.frequency import corrected_frequencies

    if not broadcast:
        monkeypatch.setattr(hspark, "BROADCAST_MAX_ROWS", 0)
    rnd = random.Random(5)
    freq = {f"T{i:03d}": rnd.randint(1, 50) for i in range(300)}
    std = sorted(freq)[:20]
    cmap = {t: rnd.choice(std) for t in sorted(freq)[20:] if rnd.random() < 0.4}
    want = {}
    for t, n in freq.items():
        want[cmap.get(t, t)] = want.get(cmap.get(t, t), 0) + n
    f = spark.createDataFrame(sorted(freq.items()), "token string, freq long")
    m = spark.createDataFrame(sorted(cmap.items()), "token string, replacement string")
    rows = corrected_frequencies(f, m).collect()
    assert len(rows) == len(want)  # one row per token
    assert {r.token: r.freq for r in rows} == want
    assert len(cmap) > 50 and sum(want.values()) == sum(freq.values())


def _refs(spark, rows):
    return spark.createDataFrame(rows, "record_id string, tokens array<string>")


def test_blocking_tokens_single_and_pairs(spark):
    rows = [("a", ["JONES", "MAPLE", "12", "ST"]), ("b", ["JONES", "MAPLE", "12"]),
            ("c", ["JONES", "OAKS"]), ("d", ["ALPHA", "OAKS"]), ("e", ["COMMON"]),
            ("f", ["COMMON"]), ("g", ["COMMON"])]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)
    # single tokens: beta=3 keeps JONES(3), MAPLE(2), OAKS(2), COMMON(3); 12 numeric, ST short
    prof = LinkageProfile(beta=3, sigma=10, minBlkTokenLen=3, excludeNumericBlocks=True)
    pairs = {tuple(r) for r in build_blocks(tokens, freq, prof).pairs.collect()}
    assert pairs == {("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("e", "f"), ("e", "g"), ("f", "g")}
    # pairs of tokens: only a,b share two blocking tokens (JONES+MAPLE)
    prof2 = prof.model_copy(update={"blockByPairs": True})
    br = build_blocks(tokens, freq, prof2)
    assert {tuple(r) for r in br.pairs.collect()} == {("a", "b")}
    assert block_stats(br.members, prof2) == {"blocks": 1, "largest_block": 2, "oversize_blocks": 0}
    # beta=2 drops JONES and COMMON (freq 3)
    prof3 = LinkageProfile(beta=2, sigma=10, minBlkTokenLen=3, excludeNumericBlocks=False)
    pairs3 = {tuple(r) for r in build_blocks(tokens, freq, prof3).pairs.collect()}
    assert pairs3 == {("a", "b"), ("c", "d")}  # MAPLE, 12 (numeric allowed, len 2 < 3 so no), OAKS


def test_block_cap_splits_oversize_blocks(spark):
    rows = [(f"r{i}", ["ALPHA"]) for i in range(7)]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)
    uncapped = LinkageProfile(beta=10, sigma=20, minBlkTokenLen=3, maxBlockSize=100)
    assert build_blocks(tokens, freq, uncapped).pairs.count() == 21
    capped = uncapped.model_copy(update={"maxBlockSize": 3})
    br = build_blocks(tokens, freq, capped)
    sub_sizes = sorted(r["count"] for r in br.members.groupBy("block_key", "sub_block").count().collect())
    assert sub_sizes == [2, 2, 3]  # ceil(7/3)=3 sub-blocks, round-robin
    assert br.pairs.count() == 1 + 1 + 3
    assert block_stats(br.members, capped) == {"blocks": 1, "largest_block": 7, "oversize_blocks": 1}
    # the stats the engine takes from the groups (no distinct over the members) are the same
    assert group_stats(br.groups, capped) == block_stats(br.members, capped)


def test_no_collected_group_exceeds_max_block_size(spark):
    # one giant block (250 refs share GIANT) next to small ones, beta far above the cap
    rows = [(f"g{i:03d}", ["GIANT", f"SOLO{i % 2}"]) for i in range(250)] + [
        ("s1", ["SMALL", "PAIRX"]), ("s2", ["SMALL", "PAIRX"])]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)
    prof = LinkageProfile(beta=1000, sigma=2000, minBlkTokenLen=3, maxBlockSize=100)
    br = build_blocks(tokens, freq, prof)
    groups = {(r.block_key, r.sub_block): r["count"] for r in br.members.groupBy("block_key", "sub_block").count().collect()}
    assert max(groups.values()) <= 100
    # GIANT (250) -> ceil(250/100) = 3 sub-blocks of 84/83/83; SOLO0/SOLO1 (125 each) -> 2 of 63/62
    assert sorted(v for (k, _), v in groups.items() if k == "GIANT") == [83, 83, 84]
    assert sorted(v for (k, _), v in groups.items() if k == "SOLO0") == [62, 63]
    assert groups[("SMALL", 0)] == 2 and groups[("PAIRX", 0)] == 2
    # every pair lies inside one sub-block of some block
    sub = {}
    for r in br.members.collect():
        sub.setdefault(r.record_id, set()).add((r.block_key, r.sub_block))
    pairs = [tuple(r) for r in br.pairs.collect()]
    assert all(sub[a] & sub[b] for a, b in pairs)
    assert ("s1", "s2") in pairs
    stats = block_stats(br.members, prof)
    assert stats["largest_block"] == 250 and stats["oversize_blocks"] == 3
    assert group_stats(br.groups, prof) == stats == {"blocks": 5, "largest_block": 250, "oversize_blocks": 3}


def test_a_reference_keyed_twice_is_one_member_of_its_block(spark):
    # build_blocks drops a repeated (reference, key) row inside its group-by, not by a distinct
    # over every key row; a reference listed twice must still be one member and never a pair with
    # itself, in a small block (one group-by) and in a split one (the window path)
    rows = [("a", ["ALPHA", "BETA"]), ("a", ["ALPHA", "BETA"]), ("b", ["ALPHA", "BETA"])] + [
        (f"g{i:02d}", ["GAMMA", "DELTA"]) for i in range(9)] + [("g00", ["GAMMA", "DELTA"])]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens.dropDuplicates(["record_id"]))
    for cap in (100, 4):  # beta 50 <= cap: one group-by; beta 50 > cap 4: GAMMA/DELTA split
        prof = LinkageProfile(beta=50, sigma=100, minBlkTokenLen=3, maxBlockSize=cap, blockByPairs=True,
                              rareTokenBlocks=False, frequentPairMaxBlock=0)
        br = build_blocks(tokens, freq, prof)
        members = [(r.block_key, r.sub_block, r.record_id) for r in br.members.collect()]
        assert len(members) == len(set(members))
        sizes = {(r.block_key, r.block_size) for r in br.members.collect()}
        assert sizes == {("ALPHA BETA", 2), ("DELTA GAMMA", 9)}
        pairs = [tuple(r) for r in br.pairs.collect()]
        assert all(a < b for a, b in pairs) and ("a", "b") in pairs
        assert len(pairs) == (1 + 36 if cap == 100 else 1 + 3 * 3)  # 9 split into 3 sub-blocks of 3


def test_pair_keys_split_like_single_keys(spark):
    # 120 refs share the pair ALPHA+BETA (ub = 120 > cap 50): split, same dealing rule
    rows = [(f"r{i:03d}", ["ALPHA", "BETA"]) for i in range(120)]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)
    prof = LinkageProfile(beta=500, sigma=1000, minBlkTokenLen=3, maxBlockSize=50, blockByPairs=True)
    br = build_blocks(tokens, freq, prof)
    sizes = sorted(r["count"] for r in br.members.groupBy("block_key", "sub_block").count().collect())
    assert sizes == [40, 40, 40]
    assert br.pairs.count() == 3 * (40 * 39 // 2)


def test_rare_pair_of_frequent_names_is_a_block(spark):
    """JOHN and SMITH are each above beta; the pair is held by few references."""
    rows = [("j1", ["JOHN", "SMITH", "12", "ELM"]), ("j2", ["JOHN", "SMITH", "99", "OAK"]),  # moved
            ("m1", ["MARY", "SMITH", "5", "PINE"]), ("m2", ["MARY", "SMITH", "7", "BIRCH"]),
            ("k1", ["JOHN", "KING"]), ("k2", ["JOHN", "KING"]), ("k3", ["JOHN", "KING"]),
            ("s1", ["ANNA", "SMITH"]), ("x1", ["2025", "JOHN"]), ("x2", ["2025", "JOHN"])]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)  # JOHN 7, SMITH 5, KING 3, MARY 2, 2025 2; beta 2, sigma 8
    base = LinkageProfile(beta=2, sigma=8, minBlkTokenLen=3, blockByPairs=True)
    assert {tuple(r) for r in build_blocks(tokens, freq, base).pairs.collect()} == set()  # nothing blocks
    prof = base.model_copy(update={"frequentPairMaxBlock": 2})
    got = {tuple(r) for r in build_blocks(tokens, freq, prof).pairs.collect()}
    # JOHN SMITH (2 refs) and MARY SMITH (2) are blocks; JOHN KING (3) is above the cap; digits
    # never make a frequent pair (2025 JOHN); a pair of two tokens <= beta is not one of these keys
    assert got == {("j1", "j2"), ("m1", "m2")}
    wider = {tuple(r) for r in build_blocks(tokens, freq, base.model_copy(
        update={"frequentPairMaxBlock": 3})).pairs.collect()}
    assert wider == got | {("k1", "k2"), ("k1", "k3"), ("k2", "k3")}
    # a stop token (freq >= sigma) never blocks
    stop = {tuple(r) for r in build_blocks(tokens, freq, base.model_copy(
        update={"frequentPairMaxBlock": 3, "sigma": 7})).pairs.collect()}
    assert stop == {("m1", "m2")}


def test_a_word_and_an_initial_of_one_reference_block(spark):
    """ULLAH R: a person who moved and wrote the given name differently keeps
    the surname and the middle initial; with initialPairBlocks that pair is a
    key under the frequentPairMaxBlock cap."""
    rows = [("u1", ["ANGIE", "R", "ULLAH", "3571", "SUNRISE"]), ("u2", ["ANGELINA", "R", "ULLAH", "2557", "MESA"]),
            ("u3", ["OMAR", "T", "ULLAH", "10", "DENVER"]),  # a relative: another initial
            ("v1", ["MARK", "R", "VANCE"]), ("v2", ["MARK", "R", "VANCE"]), ("v3", ["MARK", "R", "VANCE"])]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)  # R 5, ULLAH 3, VANCE 3, MARK 3; beta 2, sigma 8
    base = LinkageProfile(beta=2, sigma=8, minBlkTokenLen=3, blockByPairs=True, frequentPairMaxBlock=2)
    assert {tuple(r) for r in build_blocks(tokens, freq, base).pairs.collect()} == set()
    got = {tuple(r) for r in build_blocks(tokens, freq, base.model_copy(
        update={"initialPairBlocks": True})).pairs.collect()}
    # ULLAH R (2 refs) is a block; VANCE R and MARK R (3 each) are above the cap; T is nobody else's
    assert got == {("u1", "u2")}
    # without the frequent-pair keys there are no initial pairs either
    off = base.model_copy(update={"initialPairBlocks": True, "frequentPairMaxBlock": 0})
    assert {tuple(r) for r in build_blocks(tokens, freq, off).pairs.collect()} == set()


def _word(i: int, prefix: str) -> str:
    """A distinct letters-only token per ``i`` (``prefix`` + base-26 letters)."""
    out = ""
    while True:
        out = chr(ord("A") + i % 26) + out
        i //= 26
        if i == 0:
            return prefix + out


def test_a_long_number_and_a_frequent_name_block_at_1m(spark):
    """A person who moved (same name and date of birth, another address) at the
    default profile's 1M-reference thresholds (beta 506, √beta 22, cap 50):
    JOHN and SMITH are above beta, JOHN SMITH is held by more references than
    the cap, and the date is held by more than √beta. Only numberPairBlocks
    ("19800315 SMITH") brings the two references together."""
    from hdwm.config import load_profile

    dob = "19800315"
    rows = [("p1", ["JOHN", "SMITH", dob, "12", _word(0, "ELM")]),
            ("p2", ["JOHN", "SMITH", dob, "99", _word(1, "OAK")])]  # moved
    rows += [(f"js{i}", ["JOHN", "SMITH", str(19500101 + i), _word(i, "ST")]) for i in range(58)]  # other JOHN SMITHs
    rows += [(f"j{i}", ["JOHN", _word(i, "SUR"), _word(i, "RD")]) for i in range(540)]
    rows += [(f"s{i}", [_word(i, "GIV"), "SMITH", _word(i, "LN")]) for i in range(540)]
    rows += [(f"d{i}", [_word(i, "PER"), _word(i, "FAM"), dob]) for i in range(28)]  # same date, other people
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)
    prof = load_profile("default").effective(1_000_000).model_copy(update={"numberPairBlocks": True})
    assert (prof.beta, prof.frequentPairMaxBlock) == (506, 50)
    f = {r.token: r.freq for r in freq.filter("token in ('JOHN', 'SMITH', '19800315')").collect()}
    assert f["JOHN"] == f["SMITH"] == 600 > prof.beta  # names: no blocking token
    assert 22 < f[dob] <= prof.beta  # the date blocks only in a pair; JOHN SMITH: 60 > cap
    off = {tuple(r) for r in build_blocks(tokens, freq, prof.model_copy(
        update={"numberPairBlocks": False})).pairs.collect()}
    assert ("p1", "p2") not in off and off == set()
    on = {tuple(r) for r in build_blocks(tokens, freq, prof).pairs.collect()}
    # 19800315 JOHN and 19800315 SMITH are held by p1 and p2 only
    assert on == {("p1", "p2")}
    # the same cap: a number pair held by more than frequentPairMaxBlock references is no key
    assert {tuple(r) for r in build_blocks(tokens, freq, prof.model_copy(
        update={"frequentPairMaxBlock": 1})).pairs.collect()} == set()


def test_number_pairs_need_a_long_number_and_a_frequent_word(spark):
    """Short numbers (house numbers) and words ≤ beta make no number pair; the
    rule is off without frequentPairMaxBlock."""
    rows = [("a1", ["JOHN", "12345", "12", "ELM"]), ("a2", ["JOHN", "12345", "12", "OAK"]),
            ("b1", ["JOHN", "7777"]), ("b2", ["JOHN", "7777"]),  # 4 digits: not a long number
            ("c1", ["RARE", "55555"]), ("c2", ["RARE", "55555"]), ("c3", ["JOHN"]), ("c4", ["JOHN"])]
    tokens = _refs(spark, rows)
    freq = token_frequencies(tokens)  # JOHN 6 > beta 2; RARE 2; 55555 2; 12 2 (short)
    base = LinkageProfile(beta=2, sigma=8, minBlkTokenLen=3, blockByPairs=True, excludeNumericBlocks=True,
                          minNumBlkTokenLen=5, frequentPairMaxBlock=2)
    on = {tuple(r) for r in build_blocks(tokens, freq, base.model_copy(
        update={"numberPairBlocks": True})).pairs.collect()}
    # c1/c2: RARE and 55555 are both blocking tokens, an ordinary pair key with or without the rule
    assert on == {("a1", "a2"), ("c1", "c2")}
    assert {tuple(r) for r in build_blocks(tokens, freq, base).pairs.collect()} == {("c1", "c2")}
    off = base.model_copy(update={"numberPairBlocks": True, "frequentPairMaxBlock": 0})
    assert {tuple(r) for r in build_blocks(tokens, freq, off).pairs.collect()} == {("c1", "c2")}
