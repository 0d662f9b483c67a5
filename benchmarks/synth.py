"""Seeded synthetic person records with ground truth, for washline's benchmarks.

    python benchmarks/synth.py --records 100000 --seed 42 --out /tmp/synth_100k.csv

Output CSV (UTF-8, header): ``rec_id, truth_entity, given_name, surname,
street_number, address_1, suburb, postcode, state, date_of_birth,
soc_sec_id, phone``. ``truth_entity`` is the entity id every duplicate shares,
so the file is read by ``python -m hdwm --format csv`` (truth column picked up
automatically) and by ``benchmarks/linkage_quality.py``.

Entities: base people are drawn from pools of first names, surnames, streets
and suburbs. When Faker (``benchmarks/requirements.txt``) is importable the
pools come from ``Faker("en_AU")`` seeded with ``--seed``; otherwise from the
small built-in lists below (still seeded and deterministic). Entity count is
``records / (1 + dup_rate·mean_dups)``; each entity gets an original record
and 0–4 duplicates (mean ≈ 1.5 with the default rate).

Duplicate corruptions (each applied independently with the given
probability, all from one ``random.Random(seed)``):

* typo in a name/street/suburb: substitution, insertion or deletion (0.35)
* adjacent transposition in a name or in the SSN / phone (0.20)
* abbreviation of street type / state written out (0.30)
* missing field: one of given name, street number, phone, DOB, SSN (0.30)
* given name and surname swapped (0.08)
* address move: a completely new address (0.15)
* nickname / initial for the given name (0.10)

Deterministic: the same ``--seed`` and ``--records`` give byte-identical files.
Memory: rows are streamed to the file; only the entity pools are held.
"""

from __future__ import annotations

import argparse
import csv
import random
import string
import sys
from pathlib import Path

_FIRST = ("james john robert michael william david richard joseph thomas charles mary patricia jennifer linda "
          "elizabeth barbara susan jessica sarah karen olivia amelia isla grace chloe jack noah oliver leo "
          "lucas ethan liam henry lachlan harrison mia ava zoe ruby charlotte emily sophie hannah").split()
_LAST = ("smith jones williams brown wilson taylor johnson white martin anderson thompson nguyen thomas walker "
         "harris lee ryan robinson kelly king davis wright evans roberts green hall wood jackson clarke "
         "patel khan mitchell campbell clark young morris turner hughes scott edwards cooper ward baker").split()
_STREET = ("victoria albert king queen george elizabeth william high church station park river hill bay "
           "beach forest lake ocean wattle banksia acacia jarrah karri marri coral reef cedar").split()
_STYPE = {"STREET": "ST", "ROAD": "RD", "AVENUE": "AVE", "DRIVE": "DR", "PLACE": "PL", "COURT": "CT",
          "CRESCENT": "CRES", "LANE": "LN", "PARADE": "PDE", "TERRACE": "TCE"}
_STATE = {"NSW": "NEW SOUTH WALES", "VIC": "VICTORIA", "QLD": "QUEENSLAND", "SA": "SOUTH AUSTRALIA",
          "WA": "WESTERN AUSTRALIA", "TAS": "TASMANIA", "ACT": "AUSTRALIAN CAPITAL TERRITORY", "NT": "NORTHERN TERRITORY"}
_NICK = {"WILLIAM": "BILL", "ROBERT": "BOB", "RICHARD": "DICK", "JAMES": "JIM", "ELIZABETH": "LIZ",
         "MICHAEL": "MIKE", "THOMAS": "TOM", "JOSEPH": "JOE", "CHARLES": "CHARLIE", "JENNIFER": "JENNY"}

COLUMNS = ["rec_id", "truth_entity", "given_name", "surname", "street_number", "address_1", "suburb",
           "postcode", "state", "date_of_birth", "soc_sec_id", "phone"]


def _pools(seed: int, size: int) -> dict[str, list[str]]:
    """Name/street/suburb pools; Faker when installed, else the built-in lists
    extended with seeded syllable words so large files keep realistic
    token frequencies."""
    rnd = random.Random(seed ^ 0x5EED)
    try:  # pragma: no cover - depends on the benchmark venv
        from faker import Faker

        fk = Faker("en_AU")
        fk.seed_instance(seed)
        first = list({fk.first_name().upper() for _ in range(size)})
        last = list({fk.last_name().upper() for _ in range(size * 2)})
        street = list({fk.street_name().upper().split()[0] for _ in range(size)})
        suburb = list({fk.city().upper() for _ in range(size)})
    except ImportError:
        first, last, street, suburb = ([w.upper() for w in p] for p in (_FIRST, _LAST, _STREET, _STREET))
    syll = ["ka", "lo", "mi", "ran", "te", "vo", "sen", "dar", "bel", "ton", "ash", "win", "ley", "mor", "qui"]

    def extend(p: list[str], n: int) -> list[str]:
        s = set(p)
        while len(s) < n:
            s.add("".join(rnd.choice(syll) for _ in range(rnd.randint(2, 4))).upper())
        return sorted(s)

    return {"first": extend(first, size // 4), "last": extend(last, size), "street": extend(street, size // 2),
            "suburb": extend(suburb, size // 2)}


def _typo(rnd: random.Random, s: str) -> str:
    if len(s) < 3:
        return s
    i = rnd.randrange(len(s))
    op = rnd.random()
    c = rnd.choice(string.ascii_uppercase)
    if op < 0.4:
        return s[:i] + c + s[i + 1:]
    if op < 0.7:
        return s[:i] + c + s[i:]
    return s[:i] + s[i + 1:]


def _swap(rnd: random.Random, s: str) -> str:
    if len(s) < 2:
        return s
    i = rnd.randrange(len(s) - 1)
    return s[:i] + s[i + 1] + s[i] + s[i + 2:]


def _address(rnd: random.Random, pools) -> dict[str, str]:
    state = rnd.choice(list(_STATE))
    return {
        "street_number": str(rnd.randint(1, 400)),
        "address_1": f"{rnd.choice(pools['street'])} {rnd.choice(list(_STYPE))}",
        "suburb": rnd.choice(pools["suburb"]),
        "postcode": f"{rnd.randint(800, 7999):04d}",
        "state": state,
    }


def _entity(rnd: random.Random, pools) -> dict[str, str]:
    y, m, d = rnd.randint(1930, 2010), rnd.randint(1, 12), rnd.randint(1, 28)
    return {
        "given_name": rnd.choice(pools["first"]),
        "surname": rnd.choice(pools["last"]),
        **_address(rnd, pools),
        "date_of_birth": f"{y:04d}{m:02d}{d:02d}",
        "soc_sec_id": str(rnd.randint(1_000_000, 9_999_999)),
        "phone": f"0{rnd.randint(2, 8)} {rnd.randint(1000, 9999)} {rnd.randint(1000, 9999)}",
    }


def _corrupt(rnd: random.Random, base: dict[str, str], pools) -> dict[str, str]:
    r = dict(base)
    if rnd.random() < 0.15:  # address move
        r.update(_address(rnd, pools))
    if rnd.random() < 0.35:
        f = rnd.choice(["given_name", "surname", "address_1", "suburb"])
        r[f] = _typo(rnd, r[f])
    if rnd.random() < 0.20:
        f = rnd.choice(["given_name", "surname", "soc_sec_id", "phone"])
        r[f] = _swap(rnd, r[f])
    if rnd.random() < 0.30:
        words = r["address_1"].split()
        if words and words[-1] in _STYPE:
            words[-1] = _STYPE[words[-1]]
        r["address_1"] = " ".join(words)
        if rnd.random() < 0.5:
            r["state"] = _STATE.get(r["state"], r["state"])
    if rnd.random() < 0.10:
        g = r["given_name"]
        r["given_name"] = _NICK.get(g, g[:1])
    if rnd.random() < 0.08:
        r["given_name"], r["surname"] = r["surname"], r["given_name"]
    if rnd.random() < 0.30:
        r[rnd.choice(["given_name", "street_number", "phone", "date_of_birth", "soc_sec_id"])] = ""
    return r


def generate(records: int, seed: int, out: str | Path, dup_rate: float = 0.6) -> int:
    """Write ``records`` rows to ``out``; returns the number of entities.

    Raises:
        ValueError: records < 1 or dup_rate outside [0, 1].
    """
    if records < 1:
        raise ValueError("records must be ≥ 1")
    if not 0.0 <= dup_rate <= 1.0:
        raise ValueError("dup_rate must be in [0, 1]")
    rnd = random.Random(seed)
    pools = _pools(seed, max(200, min(records // 4, 40_000)))
    written = 0
    ent = 0
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        while written < records:
            ent += 1
            base = _entity(rnd, pools)
            ndup = 0
            if rnd.random() < dup_rate:
                ndup = min(rnd.choice([1, 1, 1, 2, 2, 3, 4]), records - written - 1)
            w.writerow([f"rec-{ent}-org", ent, *(base[c] for c in COLUMNS[2:])])
            written += 1
            for k in range(ndup):
                d = _corrupt(rnd, base, pools)
                w.writerow([f"rec-{ent}-dup-{k}", ent, *(d[c] for c in COLUMNS[2:])])
                written += 1
    return ent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dup-rate", type=float, default=0.6)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    n = generate(a.records, a.seed, a.out, a.dup_rate)
    print(f"wrote {a.records} records of {n} entities to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
