"""Seeded generator of long-lived persons with long reference histories (the third messy kind).

    python benchmarks/messy_longhist.py --references 6000 --seed 1 --out /tmp/longhist6k_s1.txt \\
        --truth /tmp/longhist6k_s1_truth.csv
    python benchmarks/messy_longhist.py --stats [--references 6000] [--seed 1] [--s8p DIR]

What it models, against the two other kinds: ``messy.py`` is household-heavy (most references belong to
people who share an address or a landline with someone else, 1-8 references per person) and
``../shared/data/dwm/S8P.txt`` is small (999 references, a few per person). Here most persons live alone and
each has a long history: many references spread over several addresses, the given name written in many ways
(nicknames, initials, typos, spelling variants), the surname changing at marriage, and the strong
identifiers (SSN, phone) on a minority of references only. Resolving it means chaining references across
moves and name changes, not telling household members apart.

Output: the same layout as ``messy.py`` (a DWM sample file like ``S8P.txt``, see
``../shared/data/dwm/PARAMETERS.md``): the header line ``messy.HEADER``, then one reference a line, the first
comma field the record id (``L`` + 7 digits, unique, in a scrambled order), the rest unaligned
comma-separated text whose layout varies row by row (``messy.LAYOUT_KINDS``); and a truth file
``RecID,IdTruth`` (integer person ids) in the same row order. LF endings, ASCII. Both are read by
``python -m hdwm --format dwm --truth`` and ``benchmarks/linkage_quality.py`` (inputs ``longhistNk-sS``).

Building blocks reused from ``messy.py`` (not copied): the name, street and city pools, the nickname,
spelling-variant and typo rules (``_given_form``, ``_surname_form``, ``_typo``, ``_phonetic``), persons,
SSNs, phones and addresses (``_World``), and the rendering of one reference (``_render``, called with this
kind's identifier shares). What is new is the population model:

* References per person: 5-35, P(n) proportional to ``exp(-(n - 5) / (4 / ln(1 / 0.52)))``, so that about
  half the persons (51.7% expected after the cut at 35) have 9 or more (expected mean 10.4, median 9).
  The counts are planned first from their own seeded stream; the last count is trimmed so the file has
  exactly ``n_references`` references and a remainder under 5 goes one by one to the persons before it,
  so every person has 5-35.
* Moves: 2-5 per person (weights .35/.30/.20/.15), i.e. 3-6 addresses. Each move changes the house number,
  the street, the city and the zip (a new address is redrawn until all four differ from the previous one);
  it stays in the state about 0.6 (``messy._World.address``'s 0.7, less the rejected same-city draws).
  Every address gets at least one reference (the first references go one to each address, the rest
  uniformly), as far as the count allows.
* Households: a single person 0.90, a married couple both in the file 0.10 (they share the addresses
  after the marriage and those addresses' landlines; the wife's 1-2 earlier addresses carry her maiden
  name). A single woman married before or during the history 0.45 (the husband is not in the file): her
  first 1-2 addresses carry the maiden name, the later ones the married name. A married woman writes
  ``MAIDEN-MARRIED`` sometimes (``messy._surname_form``: hyphen mode 0.25, else married mode).
* Namesakes: a single person who keeps one surname is, with probability 0.02, a namesake of an earlier
  person of the same sex (the same given name and surname; another birth date, SSN and addresses);
  otherwise a new person's given name is redrawn while given name + surname (any of hers) is taken. The
  taken names are the only state that grows with ``n_references`` (one short string pair per person).
* Identifiers: every person has a mobile (the persistent phone); each address its landline 0.6. A reference
  carries the SSN 0.415 and a phone 0.545 (the landline of that address 0.6 when there is one, else the
  mobile); after ``messy._render``'s sparse rows (the name and one item) about 38% of the references show an
  SSN and 50% a phone. DOB 0.45, as in ``messy.py``. Birth years 1930-1985.

Determinism and memory: one ``random.Random(seed)`` drives the persons and the rendering, one
``random.Random(f"{seed}:counts")`` the reference counts; the same ``(n_references, seed)`` gives
byte-identical files. Rows go through a 4,096-row shuffle window. Memory: the planned counts (one int per
person) and the taken names.

Importable: ``generate(n, seed)`` yields ``(rec_id, fields, entity_id)``; ``generate(..., with_truth=True)``
yields ``(rec_id, fields, entity_id, info)`` where ``info`` is a :class:`RefInfo` (the person's planned count,
the address index the reference used, the number of addresses, whether the rendered row carries an SSN /
a phone). ``write_dwm(out, truth, n, seed)`` writes both files. ``difficulty_stats(path, truth)`` and
``difficulty_table`` give the difficulty statistics printed by ``--stats``.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path
from random import Random
from typing import Iterator

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # run as a script or loaded by path: messy.py and dwm_parser.py sit beside it
    sys.path.insert(0, _HERE)
import messy  # noqa: E402  (benchmarks/messy.py: the building blocks)

HEADER = messy.HEADER
REF_MIN, REF_MAX = 5, 35
MOVES_MIN, MOVES_MAX = 2, 5
P_SSN, P_PHONE = 0.415, 0.545
_REF_DECAY = 4 / math.log(1 / 0.52)  # P(n >= 9) = 0.52 before the cut at REF_MAX
_REF_CUM = list(accumulate(math.exp(-(k - REF_MIN) / _REF_DECAY) for k in range(REF_MIN, REF_MAX + 1)))
_MOVES_CUM = [0.35, 0.65, 0.85, 1.0]  # 2, 3, 4, 5 moves
P_COUPLE = 0.10
P_MARRIED_SINGLE_WOMAN = 0.45
P_HYPHEN = 0.25
P_NAMESAKE = 0.02
_WINDOW = 4096
_RID_P = 9_999_991  # prime < 10**7: sequence number -> distinct 7-digit record id (affine map)

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "dwm"  # as linkage_quality.py reads S8P


@dataclass(frozen=True)
class RefInfo:
    """What the generator knows about one reference (``generate(..., with_truth=True)``)."""

    n_refs: int  # the person's planned reference count
    address_index: int  # which of the person's addresses (0 = first) this reference used
    n_addresses: int
    has_ssn: bool  # the rendered row shows the SSN
    has_phone: bool  # the rendered row shows a phone


# --------------------------------------------------------------------------------------------- plan

def plan_counts(n_references: int, seed: int) -> list[int]:
    """References per person, in person order: each in ``REF_MIN..REF_MAX``, summing to ``n_references``.

    Raises:
        ValueError: ``n_references`` < ``REF_MIN``.
    """
    if not isinstance(n_references, int) or n_references < REF_MIN:
        raise ValueError(f"n_references must be an integer >= {REF_MIN}, got {n_references!r}")
    r = Random(f"{seed}:counts")
    counts: list[int] = []
    total = 0
    while total < n_references:
        k = REF_MIN + messy._pick_cum(r, _REF_CUM)
        counts.append(k)
        total += k
    counts[-1] -= total - n_references
    if counts[-1] < REF_MIN:  # too small a remainder: hand it to the persons before, one reference each
        rest = counts.pop()
        i = len(counts) - 1
        while rest:
            if counts[i] < REF_MAX:
                counts[i] += 1
                rest -= 1
            i = i - 1 if i > 0 else len(counts) - 1
    return counts


# --------------------------------------------------------------------------------------------- model

class _World(messy._World):
    """``messy._World`` plus the taken names (for few namesakes) and full moves."""

    def __init__(self, seed: int):
        super().__init__(seed)
        self.taken: set[tuple[str, str]] = set()
        self.names: dict[str, list[tuple[str, str]]] = {"M": [], "F": []}

    def person(self, sex: str, surnames: list[str], birth_year: int, namesake_ok: bool = False) -> messy._Person:
        """A new person: given name by sex, surname ``surnames[0]`` (a woman who marries later passes her
        maiden and married names). With ``namesake_ok``, 0.02 of the time the given name and surname of an
        earlier person of the same sex (a namesake); otherwise the given name is redrawn (up to 50 times)
        while it makes a name that another person already has."""
        r = self.rng
        if namesake_ok and self.names[sex] and r.random() < P_NAMESAKE:
            first, sur = r.choice(self.names[sex])
            surnames = [sur]
        else:
            first = self.given(sex)
            for _ in range(50):
                if not any((first, s) in self.taken for s in surnames):
                    break
                first = self.given(sex)
        for s in surnames:
            if (first, s) not in self.taken:
                self.taken.add((first, s))
                self.names[sex].append((first, s))
        p = self.new_person(sex, surnames[0], birth_year, first)
        if p.mobile is None:
            p.mobile = self.phone(None)
        return p

    def move(self, prev: messy._Address) -> messy._Address:
        """A new address differing from ``prev`` in house number, street, city and zip."""
        for _ in range(50):
            a = self.address(prev)
            if (a.number != prev.number and a.street != prev.street and a.city != prev.city
                    and a.zip != prev.zip):
                return a
        return a  # pragma: no cover - 50 failed draws do not happen with messy's pools

    def addresses(self, n: int, start: messy._Address | None = None) -> list[messy._Address]:
        out = [start if start is not None else self.address()]
        while len(out) < n:
            out.append(self.move(out[-1]))
        return out

    def n_addresses(self) -> int:
        return MOVES_MIN + 1 + messy._pick_cum(self.rng, _MOVES_CUM)


def _marry(r: Random, wf: messy._Person, married: str) -> None:
    wf.maiden, wf.surname = wf.surname, married
    wf.surname_mode = "hyphen" if r.random() < P_HYPHEN else "married"


def _household(w: _World, slots: int) -> list[messy._Person]:
    """One household of at most ``slots`` persons (1 or 2), each with 3-6 address periods."""
    r = w.rng
    year = r.randint(1930, 1985)
    if slots >= 2 and r.random() < P_COUPLE:
        married = w.surname()
        h = w.person("M", [married], year)
        maiden = w.surname()
        wf = w.person("F", [maiden, married], year + r.randint(-6, 4))
        n_w = w.n_addresses()
        before = r.randint(1, min(2, n_w - 1))
        shared = w.addresses(n_w - before + 1)
        own = shared[0]
        shared = shared[1:]  # her last address before the marriage, then the shared ones
        earlier = w.addresses(before - 1, w.move(own))[::-1] if before > 1 else []
        wf.periods = [(a, maiden) for a in earlier + [own]] + [(a, married) for a in shared]
        _marry(r, wf, married)
        n_h = r.randint(max(3, len(shared)), 6)
        h_before = w.addresses(n_h - len(shared) + 1, shared[0])[1:][::-1] if n_h > len(shared) else []
        h.periods = [(a, married) for a in h_before + shared]
        return [h, wf]
    sex = r.choice("MF")
    home = w.addresses(w.n_addresses())
    if sex == "F" and r.random() < P_MARRIED_SINGLE_WOMAN:
        maiden, married = w.surname(), w.surname()
        p = w.person("F", [maiden, married], year)
        k = r.randint(1, 2)
        p.periods = [(a, maiden) for a in home[:k]] + [(a, married) for a in home[k:]]
        _marry(r, p, married)
    else:
        p = w.person(sex, [w.surname()], year, namesake_ok=True)
        p.periods = [(a, p.surname) for a in home]
    return [p]


def _has(kind: str, fields: list[str]) -> bool:
    ids = messy._identifiers(fields)
    return ids["ssn"] or ids["ssn8"] if kind == "ssn" else ids["phone"]


# --------------------------------------------------------------------------------------------- API

def generate(n_references: int, seed: int, with_truth: bool = False) -> Iterator[tuple]:
    """Yield ``n_references`` references of long-lived persons with their truth, streaming.

    Args:
        n_references: how many references (>= ``REF_MIN``).
        seed: the only source of randomness.
        with_truth: also yield a :class:`RefInfo` per reference.

    Yields:
        ``(rec_id, fields, entity_id)`` or ``(rec_id, fields, entity_id, info)``: ``rec_id`` ``"L"`` + 7
        digits (unique), ``fields`` the text fields after the id (list[str]; a comma inside a name field
        is intended and makes it two fields once written), ``entity_id`` the true person id (decimal
        string, persons numbered from 1 in the order they were made).

    Raises:
        ValueError: ``n_references`` < ``REF_MIN``.
    """
    counts = plan_counts(n_references, seed)
    w = _World(seed)
    r = w.rng
    rid_a = 1 + r.randrange(_RID_P - 1)
    rid_b = r.randrange(_RID_P)
    seq = 0
    buf: list[tuple[list[str], int, RefInfo]] = []

    def flush():
        nonlocal seq
        r.shuffle(buf)
        for fields, eid, info in buf:
            rid = f"L{(rid_a * seq + rid_b) % _RID_P:07d}"
            seq += 1
            yield (rid, fields, str(eid), info) if with_truth else (rid, fields, str(eid))
        buf.clear()

    i = 0
    while i < len(counts):
        for p in _household(w, len(counts) - i):
            k = counts[i]
            i += 1
            n_addr = len(p.periods)
            which = list(range(min(k, n_addr)))  # one reference per address first (as far as k allows)
            r.shuffle(which)
            which += [r.randrange(n_addr) for _ in range(k - len(which))]
            for j in which:
                fields, _ = messy._render(r, replace(p, periods=[p.periods[j]]), p_ssn=P_SSN, p_phone=P_PHONE)
                buf.append((fields, p.eid, RefInfo(k, j, n_addr, _has("ssn", fields), _has("phone", fields))))
        if len(buf) >= _WINDOW:
            yield from flush()
    yield from flush()


def write_dwm(out: str | Path, truth: str | Path, n_references: int, seed: int) -> dict[str, int]:
    """Write the DWM file ``out`` and its ``RecID,IdTruth`` file ``truth`` (LF endings).

    Returns:
        ``{"references": n, "entities": distinct person ids}``.

    Raises:
        ValueError: ``n_references`` < ``REF_MIN``. OSError: a path cannot be written.
    """
    return messy.write_references(out, truth, generate(n_references, seed))


# --------------------------------------------------------------------------------------------- statistics

_LETTERS_ONLY = re.compile(r"[^A-Z]")


def _norm_name(x: str | None) -> str | None:
    s = _LETTERS_ONLY.sub("", (x or "").upper())
    return s or None


def difficulty_stats(path: str | Path, truth: str | Path) -> dict[str, float | int]:
    """Per-person difficulty statistics of a DWM file with its ``RecID,IdTruth`` truth.

    Names and street numbers are read by the layout-agnostic parser the Splink peer uses
    (``benchmarks/dwm_parser.parse_file``), identifiers by ``messy._identifiers`` (the patterns of
    ``messy.dwm_stats``), so all inputs are measured the same way, as written.

    Returns a dict: ``references``, ``persons`` (true entities with a reference), ``refs_mean``,
    ``refs_median``, ``share_9plus`` (persons with 9+ references), ``refs_max``; ``street_numbers_mean``,
    ``given_spellings_mean``, ``surnames_mean`` (distinct parsed house numbers / given names / surnames per
    person, upper-cased letters only for names; an initial counts as a spelling); ``share_ssn`` (references
    showing a 9-digit SSN or one without its leading zero), ``share_phone``; ``namesake_share`` (persons
    whose most written given name + surname is also the most written one of another person);
    ``household_share`` (``messy.dwm_stats``: references of persons sharing a house number + zip or a phone
    with another person).

    Raises:
        ValueError: empty file, a line without a RecID, or a truth covering none of the record ids.
    """
    from dwm_parser import parse_file  # benchmarks/dwm_parser.py (standard library + optional rapidfuzz)

    ent_of = messy._read_truth(truth)
    base = messy.dwm_stats(path, truth)
    parsed = {row["unique_id"]: row for row in parse_file(path)}
    size: Counter[str] = Counter()
    numbers: dict[str, set] = defaultdict(set)
    givens: dict[str, set] = defaultdict(set)
    surnames: dict[str, set] = defaultdict(set)
    full: dict[str, Counter] = defaultdict(Counter)
    n = n_ssn = n_phone = 0
    for rid, fields in messy._read_dwm_rows(path):
        n += 1
        ids = messy._identifiers(fields)
        n_ssn += ids["ssn"] or ids["ssn8"]
        n_phone += ids["phone"]
        e = ent_of.get(rid)
        if e is None:
            continue
        size[e] += 1
        row = parsed.get(rid, {})
        g, s = _norm_name(row.get("first_name")), _norm_name(row.get("last_name"))
        if row.get("street_number"):
            numbers[e].add(row["street_number"])
        if g:
            givens[e].add(g)
        if s:
            surnames[e].add(s)
        if g and s and len(g) > 1:
            full[e][(g, s)] += 1
    if not size:
        raise ValueError(f"{truth}: covers none of the record ids of {path}")
    modal = {e: c.most_common(1)[0][0] for e, c in full.items()}
    by_name = Counter(modal.values())
    sizes = list(size.values())
    persons = len(sizes)
    return {
        "references": n, "persons": persons,
        "refs_mean": sum(sizes) / persons, "refs_median": statistics.median(sizes),
        "share_9plus": sum(k >= 9 for k in sizes) / persons, "refs_max": max(sizes),
        "street_numbers_mean": sum(len(numbers[e]) for e in size) / persons,
        "given_spellings_mean": sum(len(givens[e]) for e in size) / persons,
        "surnames_mean": sum(len(surnames[e]) for e in size) / persons,
        "share_ssn": n_ssn / n, "share_phone": n_phone / n,
        "namesake_share": sum(by_name[m] > 1 for m in modal.values()) / persons,
        "household_share": base["household_share"],
    }


_ROWS = [("references", "references", "{:,}"), ("persons", "persons (true entities)", "{:,}"),
         ("refs_mean", "references per person, mean", "{:.2f}"),
         ("refs_median", "references per person, median", "{:g}"),
         ("share_9plus", "persons with 9+ references", "{:.1%}"),
         ("refs_max", "largest person (references)", "{}"),
         ("street_numbers_mean", "street numbers per person (distinct, as parsed)", "{:.2f}"),
         ("given_spellings_mean", "given-name spellings per person (distinct, as parsed)", "{:.2f}"),
         ("surnames_mean", "surnames per person (distinct spellings, as parsed)", "{:.2f}"),
         ("share_ssn", "references with an SSN", "{:.1%}"),
         ("share_phone", "references with a phone", "{:.1%}"),
         ("namesake_share", "persons with a namesake (same commonest first + last name)", "{:.1%}"),
         ("household_share", "household share (references of persons sharing address/phone)", "{:.1%}")]


def difficulty_table(columns: list[tuple[str, dict]]) -> str:
    """Markdown table: one row per statistic, one column per ``(label, difficulty_stats(...))``."""
    lines = ["| statistic | " + " | ".join(lbl for lbl, _ in columns) + " |", "|---|" + "---:|" * len(columns)]
    for key, label, fmt in _ROWS:
        lines.append(f"| {label} | " + " | ".join(fmt.format(s[key]) for _, s in columns) + " |")
    return "\n".join(lines)


def compare_kinds(n_references: int = 6000, seed: int = 1, workdir: str | Path | None = None,
                  longhist: tuple[Path, Path] | None = None, s8p_dir: str | Path = SHARED) -> str:
    """The difficulty table of this kind, S8P (all of its references, when ``s8p_dir`` holds
    ``S8P.txt`` and ``truthABCpoorDQ.txt``; default ``<repo>/../shared/data/dwm``) and the household-heavy
    ``messy.py`` kind, the generated ones at ``n_references`` and ``seed``.

    ``longhist``: an already written ``(file, truth)`` of this kind to use instead of generating one.
    Raises: OSError when the work folder cannot be written."""
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        d = Path(d)
        if longhist is None:
            longhist = (d / "longhist.txt", d / "longhist_truth.csv")
            write_dwm(*longhist, n_references, seed)
        cols = [(f"longhist {n_references:,} s{seed}", difficulty_stats(*longhist))]
        s8p = Path(s8p_dir)
        if (s8p / "S8P.txt").is_file():
            cols.append(("S8P (all)", difficulty_stats(s8p / "S8P.txt", s8p / "truthABCpoorDQ.txt")))
        else:
            print(f"note: {s8p}/S8P.txt not found, S8P left out (give --s8p DIR)", file=sys.stderr)
        m = (d / "messy.txt", d / "messy_truth.csv")
        messy.write_dwm(*m, n_references, seed)
        cols.append((f"messy {n_references:,} s{seed} (households)", difficulty_stats(*m)))
        return difficulty_table(cols)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Long-lived persons with long reference histories (DWM layout), "
                                             "with truth.")
    ap.add_argument("--references", type=int, default=6000, help="how many references (default 6000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="DWM file to write")
    ap.add_argument("--truth", help="RecID,IdTruth file to write")
    ap.add_argument("--stats", action="store_true",
                    help="print the difficulty statistics of this kind beside S8P and messy.py's kind")
    ap.add_argument("--s8p", default=str(SHARED), metavar="DIR",
                    help="folder with S8P.txt and truthABCpoorDQ.txt (default: <repo>/../shared/data/dwm)")
    a = ap.parse_args(argv)
    if a.references < REF_MIN:
        ap.error(f"--references must be >= {REF_MIN}")
    if bool(a.out) != bool(a.truth):
        ap.error("--out and --truth go together")
    if not a.out and not a.stats:
        ap.error("give --out and --truth, or --stats")
    try:
        written = None
        if a.out:
            info = write_dwm(a.out, a.truth, a.references, a.seed)
            print(f"wrote {info['references']:,} references of {info['entities']:,} persons to {a.out} "
                  f"(truth {a.truth})", file=sys.stderr)
            written = (Path(a.out), Path(a.truth))
        if a.stats:
            print(compare_kinds(a.references, a.seed, longhist=written, s8p_dir=a.s8p))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
