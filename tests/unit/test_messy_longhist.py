"""benchmarks/messy_longhist.py: the long-history person generator - determinism by seed, the planned
reference counts (5..35, skewed), moves (2..5, every component of the address changes), the identifier
shares, the truth column, maiden/married surnames, few households and namesakes, the difficulty table."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

import pytest

from hdwm.readers import read_dwm, read_truth

N = 3000


@pytest.fixture(scope="module")
def longhist(benchmark_module):
    return benchmark_module("messy_longhist")


@pytest.fixture(scope="module")
def rows(longhist):
    return list(longhist.generate(N, 1, with_truth=True))


@pytest.fixture(scope="module")
def files(longhist, tmp_path_factory):
    d = tmp_path_factory.mktemp("longhist")
    out, truth = d / "l.txt", d / "l_truth.csv"
    info = longhist.write_dwm(out, truth, N, 1)
    return out, truth, info


def test_same_seed_same_bytes_other_seed_differs(longhist, files, tmp_path):
    out, truth, _ = files
    longhist.write_dwm(tmp_path / "a.txt", tmp_path / "a.csv", N, 1)
    longhist.write_dwm(tmp_path / "b.txt", tmp_path / "b.csv", N, 2)
    assert (tmp_path / "a.txt").read_bytes() == out.read_bytes()
    assert (tmp_path / "a.csv").read_bytes() == truth.read_bytes()
    assert (tmp_path / "b.txt").read_bytes() != out.read_bytes()


def test_planned_counts_bounded_skewed_and_exact(longhist):
    for n, seed in ((5, 1), (36, 2), (6000, 1), (6001, 3), (60_000, 4)):
        c = longhist.plan_counts(n, seed)
        assert sum(c) == n
        assert min(c) >= 5 and max(c) <= 35
    c = longhist.plan_counts(60_000, 4)  # ~5,800 persons: the shape of the distribution
    nine = sum(k >= 9 for k in c) / len(c)
    assert 0.47 <= nine <= 0.56  # about half the persons have 9 or more
    assert 8 <= statistics.median(c) <= 9
    assert max(c) >= 30  # a long tail reaches the top of the range
    assert Counter(c)[5] > Counter(c)[9] > Counter(c)[20]  # decreasing: skewed toward few references
    with pytest.raises(ValueError):
        longhist.plan_counts(4, 1)


def test_truth_column_matches_rows_and_counts(longhist, rows, files):
    out, truth, info = files
    refs, t = read_dwm(out), read_truth(truth)  # the product's reader reads both
    assert len(refs) == N and refs.record_id.is_unique
    assert refs.record_id.tolist() == t.record_id.tolist()
    assert refs.record_id.str.fullmatch(r"L\d{7}").all()
    sizes = Counter(t.truth_entity)
    assert len(sizes) == info["entities"]
    assert min(sizes.values()) >= 5 and max(sizes.values()) <= 35
    # the truth column is the person each row was rendered from: its size is that person's planned count
    planned = {eid: i.n_refs for _, _, eid, i in rows}
    assert all(sizes[e] == planned[e] for e in sizes)
    assert sorted(sizes.values()) == sorted(longhist.plan_counts(N, 1))
    # entity ids are 1..persons
    assert sorted(int(e) for e in sizes) == list(range(1, len(sizes) + 1))


def test_moves_two_to_five_and_references_spread_over_addresses(rows):
    by_person: dict[str, list] = defaultdict(list)
    for _, _, eid, i in rows:
        by_person[eid].append(i)
    n_moves = Counter()
    for infos in by_person.values():
        n_addr = infos[0].n_addresses
        assert all(i.n_addresses == n_addr for i in infos)
        assert 2 <= n_addr - 1 <= 5
        n_moves[n_addr - 1] += 1
        used = {i.address_index for i in infos}
        assert used == set(range(min(len(infos), n_addr)))  # each address gets a reference while they last
    assert set(n_moves) == {2, 3, 4, 5}


def test_every_move_changes_number_street_city_and_zip(longhist):
    w = longhist._World(11)
    for _ in range(200):
        people = longhist._household(w, 2)
        for p in people:
            assert 3 <= len(p.periods) <= 6
            for (a, _), (b, _) in zip(p.periods, p.periods[1:]):
                assert a.number != b.number and a.street != b.street
                assert a.city != b.city and a.zip != b.zip


def test_identifier_shares_near_38_and_50_percent(longhist):
    big = list(longhist.generate(12_000, 5, with_truth=True))
    ssn = sum(i.has_ssn for *_, i in big) / len(big)
    phone = sum(i.has_phone for *_, i in big) / len(big)
    assert abs(ssn - 0.38) < 0.02
    assert abs(phone - 0.50) < 0.02


def test_maiden_and_married_names_few_households_and_namesakes(longhist):
    w = longhist._World(3)
    people = [p for _ in range(1500) for p in longhist._household(w, 2)]
    changed = [p for p in people if p.maiden and p.maiden != p.surname]
    assert 0.1 <= len(changed) / len(people) <= 0.4  # part of the persons
    for p in changed:
        written = [s for _, s in p.periods]
        assert written[0] == p.maiden and written[-1] == p.surname  # maiden first, then married
    couples = Counter(id(a) for p in people for a, _ in p.periods)
    shared = sum(1 for p in people if any(couples[id(a)] > 1 for a, _ in p.periods))
    assert 0.05 <= shared / len(people) <= 0.3  # few live with another person of the file
    names = Counter((p.first, p.maiden or p.surname) for p in people)
    namesakes = sum(v for v in names.values() if v > 1)
    assert 0 < namesakes / len(people) < 0.08


def test_difficulty_table_and_cli(longhist, files, tmp_path, capsys):
    out, truth, _ = files
    st = longhist.difficulty_stats(out, truth)
    assert st["references"] == N and 5 <= st["refs_mean"] <= 15 and 5 <= st["refs_max"] <= 35
    assert st["street_numbers_mean"] > 2.5  # moves show as several house numbers per person
    assert st["given_spellings_mean"] > 2 and st["surnames_mean"] > 1.5
    assert abs(st["share_ssn"] - 0.38) < 0.04 and abs(st["share_phone"] - 0.50) < 0.04
    table = longhist.difficulty_table([("l", st)])
    assert table.startswith("| statistic | l |") and "| references | 3,000 |" in table
    o, t = tmp_path / "c.txt", tmp_path / "c.csv"
    assert longhist.main(["--references", "60", "--seed", "4", "--out", str(o), "--truth", str(t)]) == 0
    assert len(read_truth(t)) == 60
    for bad in (["--references", "60", "--out", str(o)], ["--references", "4", "--stats"], ["--seed", "2"]):
        with pytest.raises(SystemExit):  # --out without --truth, too few references, nothing asked
            longhist.main(bad)
    capsys.readouterr()
    assert longhist.main(["--references", "200", "--seed", "2", "--stats", "--s8p", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "| statistic | longhist 200 s2 | messy 200 s2 (households) |" in captured.out
    assert "S8P.txt not found" in captured.err


def test_s8p_statistics(longhist, shared_dir):
    dwm = shared_dir / "data" / "dwm"
    st = longhist.difficulty_stats(dwm / "S8P.txt", dwm / "truthABCpoorDQ.txt")
    assert st["references"] == 1000 and st["persons"] == 195
    assert st["share_phone"] == 0.0 and st["share_ssn"] > 0.5  # S8P carries SSNs, no phones


def test_linkage_quality_writes_the_longhist_input(benchmark_module, monkeypatch, tmp_path):
    lq = benchmark_module("linkage_quality")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    path, fmt, truth = lq.ensure_input("longhist60-s2")
    assert (path, fmt, truth) == (tmp_path / "longhist60-s2.txt", "dwm", tmp_path / "longhist60-s2_truth.csv")
    assert read_dwm(path).record_id.tolist() == read_truth(truth).record_id.tolist()
    assert len(read_truth(truth)) == 60
