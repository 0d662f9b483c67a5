"""What evidence the missed and the false pairs of a linkage run carry (error analysis).

    PYTHONPATH=spark_jobs .venv/bin/python benchmarks/missed_pairs.py --input FILE --format dwm|csv \\
        --truth TRUTH --links DIR [--examples 20]

``DIR`` is the ``links`` folder of ``python -m hdwm --out OUT`` (Parquet: ``record_id``,
``cluster_id``, ``cluster_size``, ...). Every true pair (two references of one truth entity)
that the run left in two clusters is a *missed* pair (false negative); every pair of one
cluster from two truth entities is a *false* pair (false positive); the rest of the true pairs
are *found*. Each pair is put in one class by the identifiers its two texts share,
read here independently of the engine's tokenizer, so that the analysis does not inherit its
blind spots, and of the peer's parser (``benchmarks/dwm_parser.py``), which keeps one value per
field where this needs every one a text holds:

* ``SSN``: a 9-digit number written ``ddd-dd-dddd``, ``ddd dd dddd`` or ``ddddddddd`` (a ZIP+4,
  ``ddddd-dddd``, is none);
* ``phone``: a 10-digit number written ``(ddd) ddd-dddd``, ``ddd.ddd.dddd``, ``ddd-ddd-dddd``;
* ``DOB``: a full date read from ``YYYY-MM-DD``, ``M/D/YYYY``, ``D-Mon-YYYY``,
  ``Mon D YYYY`` and ``YYYYMMDD`` (the shapes ``benchmarks/messy.py`` and
  ``benchmarks/messy_faker.py`` write);

and a pair with none of them is split further by whether the two texts share a 5-digit zip,
and whether the words they share (letters only, two or more) carry ln N nats of IDF weight,
Σ ln(N / df) over the shared words (df = references holding the word), the threshold of
``identifyingAgreementRule`` (Fellegi–Sunter u-probabilities from frequencies). A missed pair
below it shares, besides its name, nothing a linker could tell from a namesake's.

The truth is read only to count; nothing is fitted and no parameter is chosen here. Prints
Markdown tables on stdout. Exits 2 with a one-line ``error:`` on stderr for an unreadable input,
truth or links folder, a truth that labels none of the input's references, or links that do not
cover the input's references.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]

_MON = {m: i + 1 for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
# 3-2-4 with one separator used twice, or 9 digits alone; never a ZIP+4 (5-4)
_SSN = re.compile(r"(?<![\d-])(?:(\d{3})([- ])(\d{2})\2(\d{4})|(\d{9}))(?![\d-])")
_PHONE = re.compile(r"(?<!\d)\(?(\d{3})\)?[ .-]?(\d{3})[ .-](\d{4})(?!\d)")
_ISO = re.compile(r"(?<!\d)(19\d\d|20\d\d)-(\d\d)-(\d\d)(?!\d)")
_US = re.compile(r"(?<!\d)(\d{1,2})/(\d{1,2})/(19\d\d|20\d\d)(?!\d)")
_DMY = re.compile(r"(?<!\d)(\d{1,2})-([A-Z]{3})-(19\d\d|20\d\d)(?!\d)")
_MDY = re.compile(r"\b([A-Z]{3}) (\d{1,2}),? (19\d\d|20\d\d)(?!\d)")
_COMPACT = re.compile(r"(?<!\d)(19\d\d|20\d\d)(\d\d)(\d\d)(?!\d)")
_ZIP = re.compile(r"(?<!\d)(\d{5})(?:-\d{4})?(?!\d)")
_WORD = re.compile(r"[A-Z]{2,}")


def identifiers(text: str) -> tuple[frozenset, frozenset, frozenset]:
    """(SSNs, phones, dates of birth) written in ``text``, each normalised: 9 digits, 10 digits,
    (year, month, day) with a plausible month and day."""
    u = text.upper()
    ssn = frozenset(m[4] or m[0] + m[2] + m[3] for m in _SSN.findall(u))
    phone = frozenset("".join(m) for m in _PHONE.findall(u))
    dates = set()
    for y, m, d in _ISO.findall(u) + _COMPACT.findall(u):
        dates.add((int(y), int(m), int(d)))
    for m, d, y in _US.findall(u):
        dates.add((int(y), int(m), int(d)))
    for d, mon, y in _DMY.findall(u):
        if mon in _MON:
            dates.add((int(y), _MON[mon], int(d)))
    for mon, d, y in _MDY.findall(u):
        if mon in _MON:
            dates.add((int(y), _MON[mon], int(d)))
    dob = frozenset(t for t in dates if 1 <= t[1] <= 12 and 1 <= t[2] <= 31)
    return ssn, phone, dob


def pair_class(fa, fb) -> str:
    """What two references' ``identifiers`` share: ``SSN``, ``phone``, ``DOB`` joined by ``+``, or ``none``."""
    names = ("SSN", "phone", "DOB")
    shared = [n for n, x, y in zip(names, fa, fb) if x & y]
    return "+".join(shared) if shared else "none"


def analyse(refs: pd.DataFrame, links: pd.DataFrame, examples: int = 0) -> dict:
    """Classify the found, missed and false pairs of one run.

    Args:
        refs: pandas (``record_id``, ``text``, ``truth_entity``); a reference without a truth
            entity is in no true pair.
        links: pandas (``record_id``, ``cluster_id``) of the run, one row per reference.
        examples: missed pairs with a shared identifier to return as (text a, text b).

    Returns:
        dict with ``by_identifier`` (class → Counter of found / missed / false), ``unidentified_missed``
        (Counter of (zip shared, words ≥ ln N) for missed pairs sharing no identifier), ``missed_split``
        (Counter: both sides in clusters of 2+ / at least one side a singleton), ``examples``.

    Raises:
        ValueError: a reference of ``refs`` has no row in ``links``.
    """
    cl = dict(zip(links["record_id"].astype(str), links["cluster_id"].astype(str)))
    missing = [r for r in refs["record_id"] if r not in cl]
    if missing:
        raise ValueError(f"{len(missing)} references have no row in the links (first: {missing[:3]})")
    size = Counter(cl.values())
    text = dict(zip(refs["record_id"], refs["text"]))
    feats = {r: identifiers(t) for r, t in text.items()}
    words = {r: frozenset(_WORD.findall(t.upper())) for r, t in text.items()}
    zips = {r: frozenset(_ZIP.findall(t)) for r, t in text.items()}
    df = Counter(w for ws in words.values() for w in ws)
    n = len(text)
    ln_n = math.log(n) if n > 1 else 0.0
    by_id: dict[str, Counter] = {}
    unident, split, ex = Counter(), Counter(), []
    truth = refs.dropna(subset=["truth_entity"])
    for _, g in truth.groupby("truth_entity"):
        for a, b in combinations(list(g["record_id"]), 2):
            c = pair_class(feats[a], feats[b])
            kind = "found" if cl[a] == cl[b] else "missed"
            by_id.setdefault(c, Counter())[kind] += 1
            if kind == "missed":
                split["both in clusters of 2+" if size[cl[a]] > 1 and size[cl[b]] > 1 else "at least one side a singleton"] += 1
                if c == "none":
                    nats = sum(math.log(n / df[w]) for w in words[a] & words[b])
                    unident[("zip shared" if zips[a] & zips[b] else "no zip shared",
                             "words ≥ ln N" if nats >= ln_n else "words < ln N")] += 1
                elif len(ex) < examples:
                    ex.append((text[a], text[b]))
    ent = dict(zip(truth["record_id"], truth["truth_entity"]))
    for _, g in pd.DataFrame({"r": list(cl), "c": list(cl.values())}).groupby("c"):
        for a, b in combinations(list(g["r"]), 2):
            if a in text and b in text and (ent.get(a) is None or ent.get(a) != ent.get(b)):
                by_id.setdefault(pair_class(feats[a], feats[b]), Counter())["false"] += 1
    return {"by_identifier": by_id, "unidentified_missed": unident, "missed_split": split, "examples": ex}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="evidence carried by the missed and false pairs of a linkage run")
    ap.add_argument("--input", required=True)
    ap.add_argument("--format", choices=["dwm", "csv"], default="dwm")
    ap.add_argument("--truth", help="RecID,IdTruth file (csv inputs may carry truth_entity instead)")
    ap.add_argument("--links", required=True, help="links folder of python -m hdwm --out")
    ap.add_argument("--examples", type=int, default=0)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "spark_jobs"))
    from hdwm.readers import read_csv_refs, read_dwm, read_truth

    try:
        refs = read_dwm(a.input) if a.format == "dwm" else read_csv_refs(a.input)
        if a.truth:
            refs = refs.drop(columns=[c for c in ("truth_entity",) if c in refs.columns]).merge(
                read_truth(a.truth), on="record_id", how="left")
        if "truth_entity" not in refs.columns:
            raise ValueError("no truth: give --truth, or a csv input with a truth_entity column")
        if not refs["truth_entity"].notna().any():
            raise ValueError("no reference of the input has a truth label (an empty truth file, a header only, "
                             "or record ids that are not the input's)")
        links = pd.read_parquet(a.links, columns=["record_id", "cluster_id"])
        res = analyse(refs, links, a.examples)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    tot = Counter()
    for c in res["by_identifier"].values():
        tot.update(c)
    print("| shared identifier | found pairs | missed pairs | share of missed | false pairs |")
    print("|---|---:|---:|---:|---:|")
    for k, c in sorted(res["by_identifier"].items(), key=lambda kv: -kv[1]["missed"]):
        share = c["missed"] / tot["missed"] if tot["missed"] else 0.0
        print(f"| {k} | {c['found']:,} | {c['missed']:,} | {share:.1%} | {c['false']:,} |")
    print(f"| **all** | {tot['found']:,} | {tot['missed']:,} | {'100 %' if tot['missed'] else '–'} | "
          f"{tot['false']:,} |")
    print("\n| missed pairs with no shared identifier | pairs |")
    print("|---|---:|")
    for k, v in sorted(res["unidentified_missed"].items(), key=lambda kv: -kv[1]):
        print(f"| {k[0]}, {k[1]} | {v:,} |")
    print("\n| missed pairs | pairs |\n|---|---:|")
    for k, v in res["missed_split"].items():
        print(f"| {k} | {v:,} |")
    for x, y in res["examples"]:
        print(f"- `{x}`  ↔  `{y}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
