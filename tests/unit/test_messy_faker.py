"""benchmarks/messy_faker.py: the second messy household generator, on Faker vocabularies -
determinism, the DWM layout read by the product's reader, truth consistency, households that share
surnames and addresses.

Faker is a development and benchmark dependency (requirements-dev.txt, benchmarks/requirements.txt), not a
product one: `make test` runs these tests; a venv without it skips them."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

pytest.importorskip("faker", reason="faker is not installed here (requirements-dev.txt has it)")

from hdwm.readers import read_dwm, read_truth  # noqa: E402  (pandas only, no Spark)

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "messy_faker.py"
_spec = importlib.util.spec_from_file_location("messy_faker", _PATH)
mf = importlib.util.module_from_spec(_spec)
sys.modules["messy_faker"] = mf
_spec.loader.exec_module(mf)

N = 1500


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("messy_faker")
    out, truth = d / "f.txt", d / "f_truth.csv"
    info = mf.write_dwm(out, truth, N, 1)
    return out, truth, info


def test_same_seed_same_bytes_other_seed_differs(files, tmp_path):
    out, truth, _ = files
    mf.write_dwm(tmp_path / "a.txt", tmp_path / "a.csv", N, 1)
    mf.write_dwm(tmp_path / "b.txt", tmp_path / "b.csv", N, 2)
    assert (tmp_path / "a.txt").read_bytes() == out.read_bytes()
    assert (tmp_path / "a.csv").read_bytes() == truth.read_bytes()
    assert (tmp_path / "b.txt").read_bytes() != out.read_bytes()


def test_file_starts_with_its_own_header_and_counts_its_persons(files):
    out, truth, info = files
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == mf.HEADER  # its own layout, not messy.py's (which has PO box fields)
    ids = [ln.split(",")[1] for ln in truth.read_text(encoding="utf-8").splitlines()[1:]]
    assert info == {"references": N, "entities": len(set(ids))} and len(lines) == N + 1


def test_product_reader_reads_file_and_truth_with_same_ids(files):
    out, truth, info = files
    raw = out.read_bytes()
    assert b"\r" not in raw and raw.decode("ascii")  # LF endings, ASCII
    refs, t = read_dwm(out), read_truth(truth)
    assert len(refs) == N and refs.record_id.is_unique
    assert refs.record_id.tolist() == t.record_id.tolist()
    assert refs.record_id.str.fullmatch(r"F\d{7}").all()
    assert (refs.text.str.replace(",", "").str.strip().str.len() > 0).all()
    assert t.truth_entity.str.fullmatch(r"\d+").all()
    assert t.truth_entity.nunique() == info["entities"] == t.truth_entity.astype(int).max()


def test_entity_sizes_within_1_to_8(files):
    sizes = Counter(read_truth(files[1]).truth_entity)
    assert min(sizes.values()) >= 1 and max(sizes.values()) <= 8
    assert 2.3 <= N / len(sizes) <= 4.5


def test_households_share_surnames_and_addresses():
    """Members of one household (consecutive entity ids of one ``_household`` call) share their surname
    (mostly) and at least one address; an address is shared by different people's references."""
    w = mf._World(7)
    shared_surname = shared_address = multi = 0
    for _ in range(300):
        people = mf._household(w)
        if len(people) < 2:
            continue
        multi += 1
        addrs = [{id(a) for a, _ in p.periods} for p in people]
        if any(addrs[0] & s for s in addrs[1:]):
            shared_address += 1
        if len({p.surname for p in people}) < len(people):
            shared_surname += 1
    assert multi > 150
    assert shared_address == multi  # every multi-person household has a common address
    assert shared_surname > 0.5 * multi  # roommates and partners who kept their name do not


def test_rows_vary_in_layout_and_identifier_formats():
    rows = list(mf.generate(2000, 3, with_layout=True))
    seen = Counter(k for *_, kinds in rows for k in kinds)
    assert set(seen) == set(mf.LAYOUT_KINDS)
    text = "\n".join(",".join(f) for _, f, _, _ in rows)
    assert re.search(r"\b\d{3}-\d{2}-\d{4}\b", text) and re.search(r"XXX-XX-\d{4}", text, re.I)
    assert re.search(r"\b\d\d/\d\d/(19|20)\d\d\b", text) and re.search(r"\b\d\d-[A-Z]{3}-\d{4}\b", text, re.I)
    assert re.search(r"\(\d{3}\) \d{3}-\d{4}", text)


def test_vocabulary_grows_with_the_population():
    """Heaps' law: more references bring new city words (Faker's composed city names)."""
    def cities(n):
        return {f for _, fields, _ in mf.generate(n, 5) for f in fields if f.isalpha() and len(f) > 8}
    assert len(cities(4000)) > 1.5 * len(cities(1000))
