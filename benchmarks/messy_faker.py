"""A second, independently designed messy household generator, on Faker ``en_US`` vocabularies.

    python benchmarks/messy_faker.py --references 6000 --seed 1 --out /tmp/faker6k_s1.txt \\
        --truth /tmp/faker6k_s1_truth.csv [--stats]

Why a second generator: every messy figure so far came from ``benchmarks/messy.py``, whose name, street
and city pools are small and fixed (74 cities, 146 street names), so at 1M references every city and street
word is a stop token. Here the vocabularies come from Faker's ``en_US`` providers and *grow with the
population* the way real ones do (Heaps' law): Faker's city names are composed (``{prefix} {first
name}{suffix}``, ``{last name}{suffix}`` ...) and its street names are ``{first or last name} {suffix}``,
so new addresses keep bringing new words, while a Zipf-weighted pool of "big cities" and "common streets"
(drawn from Faker once per run) keeps the head of the distribution frequent. Surnames and given names are
Faker's frequency-weighted lists (1,000 surnames, ~700 given names): that vocabulary does *not* grow, as
in a real population the common surnames dominate; double-barrelled names add a slowly growing tail.

Output: the same as ``messy.py``: a DWM sample file like ``S8P.txt`` (header line, then one reference a
line, the first comma field the record id ``F`` + 7 digits, unique, in a scrambled order, then unaligned
comma-separated text whose layout varies row by row) and a truth file ``RecID,IdTruth`` (integer entity ids,
in the same row order). LF endings, ASCII. Read by ``python -m hdwm --format dwm --truth`` and
``benchmarks/linkage_quality.py`` (inputs ``fakerNk-sS``). ``--stats`` prints ``messy.dwm_stats`` of the
written file next to S8P's (``messy.stats_table``).

Importable: ``generate(n, seed, with_layout=False)`` yields ``(rec_id, fields, entity_id[, kinds])``;
``write_dwm(out, truth, n, seed)`` writes both files and returns ``{"references", "entities"}``.

Determinism and memory: one ``random.Random(seed)`` drives the structure and one ``Faker("en_US")``
seeded with the same seed draws the words (bytes are reproducible for the pinned Faker version in
``benchmarks/requirements.txt``). Households are made one at a time; rows pass a 5,000-row shuffle window;
the only other state is a fixed-size pool of big cities, common streets and 64 recent apartment buildings,
so memory does not grow with N.

The model (designed for this file, not copied from ``messy.py``; probabilities are per household / person /
reference):

* Places. A new address lands in one of 250 "big cities" (Zipf weights 1/rank) with probability 0.45, else
  in a fresh Faker city; each city has a state (Faker ``state_abbr``, 50 states) and a base zip
  (``zipcode_in_state``); an address's zip is the base + 0-6. Its street is one of 120 "common streets"
  (Zipf) 0.25, else a fresh Faker ``street_name``; a direction prefix 0.15; a unit (Faker
  ``secondary_address``: ``Apt. 286`` / ``Suite 707``) 0.18. Apartment buildings: 0.07 of new addresses
  are another unit in one of the 64 most recent multi-unit buildings (unrelated households at the same
  house number, street and zip). A landline per household address 0.45; a PO box per address 0.12.
  A move goes to the same city 0.35, another city in the same state 0.30, anywhere 0.35.
* Households: single person 0.30; couple 0.20; family 0.22 (single parent 0.25; 1-4 children weights
  .30/.40/.20/.10; twins 0.22 when 2+ children: same birth date, given names with the same initial 0.5,
  consecutive SSNs 0.5); roommates 0.16 (2-4 unrelated adults sharing 1-2 addresses and their landline,
  each with an own earlier address 0.6 and a later one 0.4); junior/senior 0.12 (father and son with the
  same first, middle and surname; suffix pairs (SR, JR) 0.5, (-, JR) 0.3, (-, II) 0.1, (JR, III) 0.1,
  written on a reference 0.4; mother present 0.7; son moves out 0.6).
* Moves: a household has 1-6 addresses (moved 0-5 times; weights .32/.24/.18/.12/.08/.06); members move
  together; adult children move out 0.35 (1-2 own addresses; a daughter who moves out marries 0.3 and
  takes a new Faker surname).
* Couples: married 0.78 (else partners with their own surnames); same-sex 0.05. A married wife takes the
  husband's surname 0.68, keeps hers 0.18, writes ``MAIDEN-MARRIED`` 0.14; before the marriage she had 1-2
  own addresses 0.5 (references from then carry her maiden name); the husband had one 0.3.
* People: sex, first name by sex (Faker ``first_name_male``/``_female``), a middle name 0.65, a surname
  (Faker ``last_name``; double-barrelled ``A-B`` 0.03), a birth date, an SSN (Faker ``ssn``; collisions are
  possible, ~N^2/1.6e9 pairs, as real SSN data has), a mobile per adult 0.6 (Faker ``basic_phone_number``,
  the 10 digits). References per person: 1-8, weights .26/.20/.15/.12/.10/.08/.05/.04; each reference
  picks one address period of the person, later periods weighted more (weight = position).
* Sources. Each reference comes from one kind of source that decides which attributes it carries:
  credit 0.25 (SSN 0.8, DOB 0.6, phone 0.3), utility 0.20 (the landline of that address 0.8; no SSN/DOB),
  health 0.20 (DOB 0.95, SSN 0.3, phone 0.6), marketing 0.15 (nickname 0.3, phone 0.4, no SSN/DOB;
  address 0.9), government 0.10 (full middle name, suffix, SSN 0.9, DOB 0.9), postal 0.10 (the PO box
  instead of the street 0.6 when the address has one, no identifiers). The phone is the landline of the
  period's address if any and the source prefers it, else the person's mobile.
* Names: given name as is 0.66 (0.36 for marketing), nickname 0.12 (own small map, ``_NICK``), old-style
  abbreviation (WM, CHAS, THOS, ...) 0.02, initial 0.07, typo 0.08, missing 0.05; middle: initial 0.5,
  full 0.2, none 0.3. Surname: typo 0.07. Typos are a keyboard-adjacent substitution 0.4, an adjacent
  transposition 0.25, a dropped letter 0.25, a doubled letter 0.10.
* Address text: the street suffix written as Faker has it (``STRAVENUE``) 0.45, a USPS-style abbreviation
  0.35 (own map; the first 4 letters for the rest), left out 0.12, typo 0.08; street-name typo 0.06; house
  number digit error 0.03; unit as ``APT 5`` / ``#5`` / ``UNIT 5`` / ``STE 5`` (written 0.75); city typo
  0.06, its prefix abbreviated (N/E/W/S/PT/LK) 0.3; state code 0.65, full name 0.25, lower-grade typo
  0.04, missing 0.06; zip 5 digits 0.78, ZIP+4 0.12, missing 0.10, digit error 0.04.
* SSN: 123-45-6789 0.36, 123456789 0.30, 123 45 6789 0.12, masked ``XXX-XX-6789`` 0.10, leading zeros
  dropped (when it has them, else plain) 0.12; digit error 0.06 (substitution or transposition).
* DOB: MM/DD/YYYY 0.28, M/D/YY 0.10, YYYY-MM-DD 0.14, YYYYMMDD 0.10, DD-MON-YYYY 0.10, ``MON D YYYY``
  0.06, MMDDYYYY 0.05, MM/YYYY 0.05, year only 0.12; digit error 0.05; day and month swapped 0.03.
* Phone: (501) 555-1234 0.25, 501-555-1234 0.30, 501.555.1234 0.10, 5015551234 0.14, 1-501-555-1234
  0.06, +1 501 555 1234 0.05, 555-1234 0.10; digit error 0.04.
* Case per reference: upper 0.50, lower 0.15, title 0.20, mixed per field 0.15.

Layout kinds (``LAYOUT_KINDS``), per reference: the name as one field ``one_field`` 0.24 (``JOHN Q
PUBLIC JR``), ``split_name`` 0.46 (first, middle, last, suffix fields), ``last_first`` 0.22 (``PUBLIC,
JOHN Q``: the comma splits it), ``last_first_nocomma`` 0.08 (``PUBLIC JOHN Q`` in one field);
``ids_first`` 0.15 (identifiers before the name); ``exploded`` 0.45 (one token per field, else compact
``123 N OAK ST`` / ``CITY`` / ``ST`` / ``ZIP`` or ``CITY ST ZIP`` in one field 0.25); ``sparse`` 0.08 (the
name and exactly one other item); ``shifted`` 0.12 (1-3 empty fields inserted); ``glued`` 0.06 (two
adjacent fields joined without a separator); ``labelled`` 0.05 (``SSN 123-45-6789``, ``DOB: ...``,
``PH ...``). Trailing empty fields (1-3) 0.25.
"""

from __future__ import annotations

import argparse
import bisect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Iterator

from faker import Faker
from faker.providers.address.en_US import Provider as _AddressProvider

LAYOUT_KINDS = ("one_field", "split_name", "last_first", "last_first_nocomma", "ids_first", "exploded",
                "sparse", "shifted", "glued", "labelled")
HEADER = "RecID,Name,Address,City,State,Zip,SSN,DOB,Phone"
_WINDOW = 5000
_RID_P = 9_999_991  # prime < 10**7: sequence number -> distinct 7-digit record id (affine map)

# Faker's en_US state names and codes: the 50 states (its code list also has DC, which has no name there)
_STATES50 = [a for a in _AddressProvider.states_abbr if a != "DC"]
_STATE_NAME = {a: n.upper() for a, n in zip(_STATES50, _AddressProvider.states, strict=True)}

# Own nickname map (formal -> nicknames) and old-style abbreviations.
_NICK = {
    "WILLIAM": ["BILL", "WILL", "LIAM"], "ROBERT": ["BOB", "ROB", "BERT"], "JAMES": ["JIM", "JAMIE"],
    "JOHN": ["JACK", "JOHNNY"], "RICHARD": ["RICK", "DICK", "RICHIE"], "CHARLES": ["CHUCK", "CHARLIE"],
    "THOMAS": ["TOM", "TOMMY"], "MICHAEL": ["MIKE", "MICKY"], "ELIZABETH": ["LIZ", "BETH", "LIBBY", "ELIZA"],
    "MARGARET": ["MAGGIE", "PEG", "MARGIE", "GRETA"], "KATHERINE": ["KATE", "KATHY", "KAT"],
    "CATHERINE": ["CATHY", "CATE"], "KATHRYN": ["KATE", "KATIE"], "JENNIFER": ["JEN", "JENNY"],
    "CHRISTOPHER": ["CHRIS", "KIT"], "DANIEL": ["DAN", "DANNY"], "JOSEPH": ["JOE", "JOEY"],
    "ANTHONY": ["TONY"], "EDWARD": ["ED", "TED", "NED"], "HENRY": ["HANK", "HAL"], "NICHOLAS": ["NICK"],
    "ALEXANDER": ["ALEX", "XANDER"], "ALEXANDRA": ["ALEX", "SASHA", "LEXI"], "PATRICIA": ["PATTY", "TRISH"],
    "SARAH": ["SALLY", "SADIE"], "MARY": ["MOLLY", "POLLY"], "REBECCA": ["BECKY", "BECCA"],
    "SAMANTHA": ["SAM", "SAMMY"], "SAMUEL": ["SAM"], "BENJAMIN": ["BEN", "BENNY"], "JONATHAN": ["JON"],
    "TIMOTHY": ["TIM", "TIMMY"], "STEVEN": ["STEVE"], "STEPHEN": ["STEVE"], "JEFFREY": ["JEFF"],
    "MATTHEW": ["MATT"], "ANDREW": ["ANDY", "DREW"], "JOSHUA": ["JOSH"], "ZACHARY": ["ZACH", "ZACK"],
    "GREGORY": ["GREG"], "RONALD": ["RON"], "DONALD": ["DON", "DONNIE"], "KENNETH": ["KEN", "KENNY"],
    "DOUGLAS": ["DOUG"], "RAYMOND": ["RAY"], "GERALD": ["GERRY", "JERRY"], "LAWRENCE": ["LARRY"],
    "PETER": ["PETE"], "PHILLIP": ["PHIL"], "VICTORIA": ["TORI", "VICKI"], "SUSAN": ["SUE", "SUZY"],
    "DEBORAH": ["DEB", "DEBBIE"], "KIMBERLY": ["KIM"], "JESSICA": ["JESS", "JESSIE"], "ABIGAIL": ["ABBY"],
    "CYNTHIA": ["CINDY"], "SANDRA": ["SANDY"], "TERESA": ["TESS", "TERRI"], "CHRISTINA": ["TINA", "CHRISSY"],
    "CHRISTINE": ["CHRIS"], "ANGELA": ["ANGIE"], "PAMELA": ["PAM"], "MELISSA": ["MISSY", "MEL"],
    "JACQUELINE": ["JACKIE"], "NATHANIEL": ["NATE", "NAT"], "NATHAN": ["NATE"], "FREDERICK": ["FRED"],
    "EUGENE": ["GENE"], "THEODORE": ["TED", "TEDDY"], "ALBERT": ["AL"], "ALLISON": ["ALLIE"],
    "VALERIE": ["VAL"], "DOROTHY": ["DOT", "DOTTIE"], "JUDITH": ["JUDY"], "ANTHONIO": ["TONY"],
    "JOSEPHINE": ["JOSIE"], "GABRIEL": ["GABE"], "GABRIELLA": ["GABBY"], "ISABELLA": ["BELLA", "IZZY"],
    "MADISON": ["MADDIE"], "NICOLE": ["NIKKI"], "STEPHANIE": ["STEPH"], "JACOB": ["JAKE"], "DAVID": ["DAVE"],
}
_ABBREV = {"WILLIAM": "WM", "CHARLES": "CHAS", "THOMAS": "THOS", "JAMES": "JAS", "JOSEPH": "JOS",
           "GEORGE": "GEO", "ROBERT": "ROBT", "BENJAMIN": "BENJ", "SAMUEL": "SAML", "EDWARD": "EDW",
           "ELIZABETH": "ELIZ", "MARGARET": "MARGT", "FREDERICK": "FREDK", "DANIEL": "DANL"}
# Own USPS-style suffix abbreviations for the commoner Faker suffixes; others: first 4 letters.
_SUFFIX_ABBR = {
    "STREET": "ST", "AVENUE": "AVE", "ROAD": "RD", "DRIVE": "DR", "LANE": "LN", "COURT": "CT",
    "PLACE": "PL", "BOULEVARD": "BLVD", "CIRCLE": "CIR", "PARKWAY": "PKWY", "TERRACE": "TER", "TRAIL": "TRL",
    "HIGHWAY": "HWY", "SQUARE": "SQ", "MOUNT": "MT", "MOUNTAIN": "MTN", "HEIGHTS": "HTS", "JUNCTION": "JCT",
    "CROSSING": "XING", "EXPRESSWAY": "EXPY", "FREEWAY": "FWY", "POINT": "PT", "POINTS": "PTS",
    "CREEK": "CRK", "HARBOR": "HBR", "ISLAND": "IS", "GARDENS": "GDNS", "MEADOWS": "MDWS", "RIDGE": "RDG",
    "SPRINGS": "SPGS", "STATION": "STA", "VALLEY": "VLY", "VILLAGE": "VLG", "VIEW": "VW", "CENTER": "CTR",
    "ESTATES": "EST", "FORT": "FT", "GROVE": "GRV", "HOLLOW": "HOLW", "KNOLLS": "KNLS", "LAKE": "LK",
    "MANOR": "MNR", "MILL": "ML", "PINES": "PNES", "PRAIRIE": "PR", "SHORE": "SHR", "SHORES": "SHRS",
    "SUMMIT": "SMT", "TRACE": "TRCE", "TUNNEL": "TUNL", "UNION": "UN", "VISTA": "VIS", "WELLS": "WLS",
    "ALLEY": "ALY", "BRIDGE": "BRG", "BROOK": "BRK", "BYPASS": "BYP", "CANYON": "CYN", "COVE": "CV",
    "ISLE": "ISLE", "LOOP": "LOOP", "MALL": "MALL", "PASS": "PASS", "PATH": "PATH", "PIKE": "PIKE",
    "PLAZA": "PLZ", "RUN": "RUN", "WAY": "WAY", "WALK": "WALK", "FIELDS": "FLDS", "FALLS": "FLS",
}
_CITY_PREFIX_ABBR = {"NORTH": "N", "SOUTH": "S", "EAST": "E", "WEST": "W", "PORT": "PT", "LAKE": "LK"}
_DIRS = ["N", "S", "E", "W", "NE", "NW", "SE", "SW"]
_DIR_FULL = {"N": "NORTH", "S": "SOUTH", "E": "EAST", "W": "WEST"}
_MON = "JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split()
_KEYS = ["QWERTYUIOP", "ASDFGHJKL", "ZXCVBNM"]
_KEYPAD = {"0": "89", "1": "24", "2": "135", "3": "26", "4": "157", "5": "2468", "6": "359", "7": "48",
           "8": "5790", "9": "68"}


def _adjacent() -> dict[str, str]:
    """Letters next to each letter on a QWERTY keyboard (same row and the rows above and below)."""
    out = {}
    for r, row in enumerate(_KEYS):  # staggered rows: the row above is shifted left by half a key
        for i, c in enumerate(row):
            near = [(r, i - 1), (r, i + 1), (r - 1, i), (r - 1, i + 1), (r + 1, i - 1), (r + 1, i)]
            out[c] = "".join(_KEYS[a][b] for a, b in near if 0 <= a < 3 and 0 <= b < len(_KEYS[a]))
    return out


_ADJ = _adjacent()


def _cum(ws: list[float]) -> list[float]:
    out, s = [], 0.0
    for w in ws:
        s += w
        out.append(s)
    return out


def _pick(r: Random, cum: list[float]) -> int:
    return min(bisect.bisect_right(cum, r.random() * cum[-1]), len(cum) - 1)


_KIND = ["single", "couple", "family", "roommates", "junior_senior"]
_KIND_CUM = _cum([0.30, 0.20, 0.22, 0.16, 0.12])
_NADDR_CUM = _cum([0.32, 0.24, 0.18, 0.12, 0.08, 0.06])
_NREF_CUM = _cum([0.26, 0.20, 0.15, 0.12, 0.10, 0.08, 0.05, 0.04])
_SOURCES = ["credit", "utility", "health", "marketing", "government", "postal"]
_SOURCE_CUM = _cum([0.25, 0.20, 0.20, 0.15, 0.10, 0.10])


# --------------------------------------------------------------------------------------------- model

@dataclass
class _City:
    name: str
    state: str
    zip0: int


@dataclass
class _Addr:
    number: str
    predir: str | None
    street: str  # e.g. "ERICA"
    suffix: str  # e.g. "TRACE"
    unit: tuple[str, str] | None  # ("APT", "286")
    city: _City
    zip: str
    landline: str | None
    pobox: str | None


@dataclass
class _Person:
    eid: int
    sex: str
    first: str
    middle: str | None
    surname: str
    dob: tuple[int, int, int]
    ssn: str
    suffix: str | None = None
    mobile: str | None = None
    periods: list[tuple[_Addr, str]] = field(default_factory=list)  # (address, surname written then)


class _World:
    def __init__(self, seed: int):
        self.r = Random(seed)
        self.fk = Faker("en_US")
        self.fk.seed_instance(seed)
        self.next_eid = 1
        self.big_cities = [self._new_city() for _ in range(250)]
        self.big_cum = _cum([1.0 / (i + 1) for i in range(250)])
        self.streets = [self._street_words() for _ in range(120)]
        self.street_cum = _cum([1.0 / (i + 1) for i in range(120)])
        self.buildings: list[_Addr] = []  # the 64 most recent multi-unit addresses

    # ---- words from Faker
    def _new_city(self) -> _City:
        st = self.r.choice(_STATES50)
        return _City(self.fk.city().upper(), st, int(self.fk.zipcode_in_state(st)))

    def _street_words(self) -> tuple[str, str]:
        words = self.fk.street_name().upper().split()
        return " ".join(words[:-1]), words[-1]

    def phone(self) -> str:
        d = "".join(c for c in self.fk.basic_phone_number() if c.isdigit())
        return d[-10:].rjust(10, "2")

    def first(self, sex: str) -> str:
        return (self.fk.first_name_male() if sex == "M" else self.fk.first_name_female()).upper()

    def surname(self) -> str:
        s = self.fk.last_name().upper()
        return s + "-" + self.fk.last_name().upper() if self.r.random() < 0.03 else s

    # ---- people
    def person(self, sex: str, surname: str, year: int, first: str | None = None) -> _Person:
        r = self.r
        p = _Person(eid=self.next_eid, sex=sex, first=first or self.first(sex),
                    middle=self.first(sex) if r.random() < 0.65 else None, surname=surname,
                    dob=(year, r.randint(1, 12), r.randint(1, 28)), ssn=self.fk.ssn().replace("-", ""))
        self.next_eid += 1
        if year <= 2006 and r.random() < 0.6:
            p.mobile = self.phone()
        return p

    # ---- places
    def address(self, near: _Addr | None = None) -> _Addr:
        r = self.r
        if self.buildings and r.random() < 0.07:  # another unit of a recent apartment building
            b = r.choice(self.buildings)
            unit = (b.unit[0] if b.unit else "APT", str(r.randint(1, 40)) + r.choice(["", "", "A", "B"]))
            return _Addr(b.number, b.predir, b.street, b.suffix, unit, b.city, b.zip,
                         self.phone() if r.random() < 0.45 else None,
                         str(r.randint(1, 9999)) if r.random() < 0.12 else None)
        u = r.random()
        if near is not None and u < 0.35:
            city = near.city
        elif near is not None and u < 0.65:
            city = self._new_city()
            city.state = near.city.state
            city.zip0 = int(self.fk.zipcode_in_state(city.state))
        elif r.random() < 0.45:
            city = self.big_cities[_pick(r, self.big_cum)]
        else:
            city = self._new_city()
        street, suffix = self.streets[_pick(r, self.street_cum)] if r.random() < 0.25 else self._street_words()
        unit = None
        if r.random() < 0.18:
            sec = self.fk.secondary_address().upper().replace(".", "").split()
            unit = (sec[0], sec[-1].lstrip("0") or "1")
        a = _Addr(number=self.fk.building_number().lstrip("0") or "1",
                  predir=r.choice(_DIRS) if r.random() < 0.15 else None, street=street, suffix=suffix,
                  unit=unit, city=city, zip=f"{min(city.zip0 + r.randint(0, 6), 99999):05d}",
                  landline=self.phone() if r.random() < 0.45 else None,
                  pobox=str(r.randint(1, 99999)) if r.random() < 0.12 else None)
        if unit:
            self.buildings.append(a)
            if len(self.buildings) > 64:
                self.buildings.pop(0)
        return a

    def history(self, n: int, start: _Addr | None = None) -> list[_Addr]:
        out = [start or self.address()]
        while len(out) < n:
            out.append(self.address(out[-1]))
        return out


def _live(p: _Person, addrs: list[_Addr], surname: str | None = None) -> None:
    p.periods.extend((a, surname or p.surname) for a in addrs)


def _other_sex(s: str) -> str:
    return "F" if s == "M" else "M"


def _household(w: _World) -> list[_Person]:
    """One household's members, each with its address periods."""
    r = w.r
    kind = _KIND[_pick(r, _KIND_CUM)]
    home = w.history(_pick(r, _NADDR_CUM) + 1)
    y0 = r.randint(1938, 2000)
    if kind == "single":
        p = w.person(r.choice("MF"), w.surname(), y0)
        _live(p, home)
        return [p]
    if kind == "roommates":
        people = []
        shared = home[: r.randint(1, min(2, len(home)))]
        for _ in range(1 + _pick(r, _cum([0.6, 0.3, 0.1])) + 1):
            p = w.person(r.choice("MF"), w.surname(), max(1940, min(2003, y0 + r.randint(-6, 6))))
            if r.random() < 0.6:
                _live(p, w.history(r.randint(1, 2)))
            _live(p, shared)
            if r.random() < 0.4:
                _live(p, w.history(r.randint(1, 2), w.address(shared[-1])))
            people.append(p)
        return people
    if kind == "junior_senior":
        sur = w.surname()
        y0 = r.randint(1935, 1975)
        dad = w.person("M", sur, y0)
        son = w.person("M", sur, y0 + r.randint(18, 40), first=dad.first)
        son.middle = dad.middle
        dad.suffix, son.suffix = [("SR", "JR"), (None, "JR"), (None, "II"), ("JR", "III")][
            _pick(r, _cum([0.5, 0.3, 0.1, 0.1]))]
        _live(dad, home)
        people = [dad, son]
        if r.random() < 0.6 and len(home) > 1:
            k = r.randint(1, len(home) - 1)
            _live(son, home[:k])
            _live(son, w.history(r.randint(1, 2), w.address(home[k - 1])))
        else:
            _live(son, home)
        if r.random() < 0.7:
            mom = w.person("F", sur, y0 + r.randint(-4, 4))
            _live(mom, home)
            people.append(mom)
        return people
    # couple or family: two partners (or one parent), maybe children
    single_parent = kind == "family" and r.random() < 0.25
    s1 = r.choice("MF") if single_parent else "M"
    sur1 = w.surname()
    a = w.person(s1, sur1, y0)
    _live(a, home)
    people = [a]
    child_sur = sur1
    if not single_parent:
        same_sex = r.random() < 0.05
        b_sex = "M" if same_sex else "F"
        maiden = w.surname()
        b = w.person(b_sex, maiden, max(1935, min(2002, y0 + r.randint(-5, 5))))
        married = r.random() < 0.78 and not same_sex
        if married:
            if r.random() < 0.5:  # her addresses before the marriage, under her maiden name
                _live(b, w.history(r.randint(1, 2)), maiden)
            if r.random() < 0.3:
                a.periods.insert(0, (w.address(), sur1))
            u = r.random()
            b.surname = sur1 if u < 0.68 else maiden if u < 0.86 else f"{maiden}-{sur1}"
        _live(b, home)
        people.append(b)
    if kind == "family":
        n_kids = _pick(r, _cum([0.30, 0.40, 0.20, 0.10])) + 1
        base = max(a.dob[0], people[-1].dob[0]) + r.randint(18, 36)
        twins = n_kids >= 2 and r.random() < 0.22
        kids: list[_Person] = []
        for i in range(n_kids):
            sex = r.choice("MF")
            year = min(2018, base + 2 * i + r.randint(0, 2))
            if twins and i == 1:
                t = kids[0]
                first = None
                if r.random() < 0.5:  # same initial
                    for _ in range(30):
                        cand = w.first(sex)
                        if cand[0] == t.first[0] and cand != t.first:
                            first = cand
                            break
                k = w.person(sex, child_sur, t.dob[0])
                if first:
                    k.first = first
                k.dob = t.dob
                if r.random() < 0.5:
                    k.ssn = f"{(int(t.ssn) + 1) % 10**9:09d}"
            else:
                k = w.person(sex, child_sur, year)
            adult = k.dob[0] <= 2004
            if adult and len(home) > 1 and r.random() < 0.35:
                j = r.randint(1, len(home) - 1)
                _live(k, home[:j])
                own_sur = k.surname
                if k.sex == "F" and r.random() < 0.3:
                    own_sur = w.surname()
                _live(k, w.history(r.randint(1, 2), w.address(home[j - 1])), own_sur)
            else:
                _live(k, home)
            kids.append(k)
        people.extend(kids)
    return people


# --------------------------------------------------------------------------------------------- errors

def _typo(r: Random, s: str) -> str:
    letters = [i for i, c in enumerate(s) if c.isalpha()]
    if len(letters) < 3:
        return s
    i = r.choice(letters)
    u = r.random()
    if u < 0.4:
        return s[:i] + r.choice(_ADJ.get(s[i], "E")) + s[i + 1:]
    if u < 0.65:
        j = i + 1 if i + 1 < len(s) and s[i + 1].isalpha() else i - 1
        i, j = min(i, j), max(i, j)
        return s[:i] + s[j] + s[i] + s[j + 1:]
    if u < 0.9:
        return s[:i] + s[i + 1:]
    return s[:i] + s[i] + s[i:]


def _digit_error(r: Random, d: str) -> str:
    pos = [i for i, c in enumerate(d) if c.isdigit()]
    if len(pos) < 2:
        return d
    i = r.choice(pos)
    if r.random() < 0.6:
        return d[:i] + r.choice(_KEYPAD[d[i]]) + d[i + 1:]
    j = next((k for k in pos if k > i), None)
    if j is None:
        j, i = i, max(k for k in pos if k < i)
    return d[:i] + d[j] + d[i + 1:j] + d[i] + d[j + 1:]


def _given(r: Random, first: str, source: str) -> str | None:
    u = r.random()
    p_nick = 0.42 if source == "marketing" else 0.12
    if u < p_nick:
        return r.choice(_NICK[first]) if first in _NICK else first
    u -= p_nick
    if u < 0.02:
        return _ABBREV.get(first, first)
    if u < 0.09:
        return first[0]
    if u < 0.17:
        return _typo(r, first)
    if u < 0.22:
        return None
    return first


def _ssn_text(r: Random, ssn: str) -> str:
    if r.random() < 0.06:
        ssn = _digit_error(r, ssn)
    u = r.random()
    if u < 0.36:
        return f"{ssn[:3]}-{ssn[3:5]}-{ssn[5:]}"
    if u < 0.66:
        return ssn
    if u < 0.78:
        return f"{ssn[:3]} {ssn[3:5]} {ssn[5:]}"
    if u < 0.88:
        return f"XXX-XX-{ssn[5:]}"
    return ssn.lstrip("0") or "0"


def _dob_text(r: Random, dob: tuple[int, int, int]) -> str:
    y, m, d = dob
    if d <= 12 and r.random() < 0.03:
        m, d = d, m
    u = r.random()
    cum = _cum([0.28, 0.10, 0.14, 0.10, 0.10, 0.06, 0.05, 0.05, 0.12])
    k = bisect.bisect_right(cum, u * cum[-1])
    s = [f"{m:02d}/{d:02d}/{y}", f"{m}/{d}/{y % 100:02d}", f"{y}-{m:02d}-{d:02d}", f"{y}{m:02d}{d:02d}",
         f"{d:02d}-{_MON[m - 1]}-{y}", f"{_MON[m - 1]} {d} {y}", f"{m:02d}{d:02d}{y}", f"{m:02d}/{y}",
         str(y)][min(k, 8)]
    return _digit_error(r, s) if r.random() < 0.05 else s


def _phone_text(r: Random, ph: str) -> str:
    if r.random() < 0.04:
        ph = _digit_error(r, ph)
    a, b, c = ph[:3], ph[3:6], ph[6:]
    k = _pick(r, _cum([0.25, 0.30, 0.10, 0.14, 0.06, 0.05, 0.10]))
    return [f"({a}) {b}-{c}", f"{a}-{b}-{c}", f"{a}.{b}.{c}", ph, f"1-{a}-{b}-{c}", f"+1 {a} {b} {c}",
            f"{b}-{c}"][k]


def _state_text(r: Random, st: str) -> str | None:
    u = r.random()
    if u < 0.65:
        return st
    if u < 0.90:
        return _STATE_NAME[st]
    if u < 0.94:
        return _typo(r, _STATE_NAME[st])
    return None


def _city_text(r: Random, city: str) -> str:
    words = city.split()
    if len(words) > 1 and words[0] in _CITY_PREFIX_ABBR and r.random() < 0.3:
        words[0] = _CITY_PREFIX_ABBR[words[0]]
    s = " ".join(words)
    return _typo(r, s) if r.random() < 0.06 else s


def _street_tokens(r: Random, a: _Addr) -> list[str]:
    num = _digit_error(r, a.number) if r.random() < 0.03 and len(a.number) > 1 else a.number
    out = [num]
    if a.predir:
        out.append(_DIR_FULL.get(a.predir, a.predir) if r.random() < 0.25 else a.predir)
    street = _typo(r, a.street) if r.random() < 0.06 else a.street
    out.extend(street.split())
    u = r.random()
    if u < 0.45:
        out.append(a.suffix)
    elif u < 0.80:
        out.append(_SUFFIX_ABBR.get(a.suffix, a.suffix[:4]))
    elif u < 0.88:
        out.append(_typo(r, a.suffix))
    if a.unit and r.random() < 0.75:
        kind, n = a.unit
        v = r.random()
        if v < 0.45:
            out += [kind if kind != "SUITE" else "STE", n]
        elif v < 0.7:
            out.append("#" + n)
        elif v < 0.85:
            out += ["UNIT", n]
        else:
            out += ["STE" if kind == "SUITE" else "APT", n]
    return out


def _case(r: Random, fields: list[str]) -> list[str]:
    u = r.random()
    if u < 0.50:
        return fields
    if u < 0.65:
        return [f.lower() for f in fields]
    if u < 0.85:
        return [f.title() for f in fields]
    return [r.choice((str.upper, str.lower, str.title))(f) for f in fields]


# --------------------------------------------------------------------------------------------- rendering

def _render(r: Random, p: _Person) -> tuple[list[str], frozenset[str]]:
    kinds: set[str] = set()
    source = _SOURCES[_pick(r, _SOURCE_CUM)]
    period = p.periods[_pick(r, _cum([i + 1.0 for i in range(len(p.periods))]))]
    addr, surname = period

    # name
    given = _given(r, p.first, source)
    if source == "government":
        middle = p.middle
    else:
        u = r.random()
        middle = None if p.middle is None or u < 0.3 else p.middle[0] if u < 0.8 else p.middle
    if "-" in surname and r.random() < 0.3:  # the hyphenated name written as one of its halves
        surname = r.choice(surname.split("-"))
    if r.random() < 0.07:
        surname = _typo(r, surname)
    suffix = p.suffix if p.suffix and (source == "government" or r.random() < 0.4) else None
    if given is None and middle is not None:
        middle = None
    gm = " ".join(x for x in (given, middle) if x)
    k = _pick(r, _cum([0.24, 0.46, 0.22, 0.08]))
    name_kind = ("one_field", "split_name", "last_first", "last_first_nocomma")[k]
    if not gm:
        name_kind = "split_name"
    if name_kind == "one_field":
        name = [" ".join(x for x in (gm, surname, suffix) if x)]
    elif name_kind == "split_name":
        name = [x for x in (given, middle, surname, suffix) if x]
    elif name_kind == "last_first":
        name = [" ".join(x for x in (surname, suffix) if x) + ", " + gm]  # the comma makes two fields
    else:
        name = [" ".join(x for x in (surname, suffix, gm) if x)]
    kinds.add(name_kind)

    # identifiers carried by this source
    ids: list[tuple[str, str]] = []
    pr = {"credit": (0.8, 0.6, 0.3), "utility": (0.0, 0.0, 0.8), "health": (0.3, 0.95, 0.6),
          "marketing": (0.0, 0.0, 0.4), "government": (0.9, 0.9, 0.2), "postal": (0.0, 0.0, 0.0)}[source]
    if r.random() < pr[0]:
        ids.append(("SSN", _ssn_text(r, p.ssn)))
    if r.random() < pr[1]:
        ids.append(("DOB", _dob_text(r, p.dob)))
    if r.random() < pr[2]:
        ph = addr.landline if addr.landline and (source == "utility" or r.random() < 0.6) else p.mobile
        ph = ph or addr.landline
        if ph:
            ids.append(("PH", _phone_text(r, ph)))
    r.shuffle(ids)

    # address
    has_addr = r.random() < (0.9 if source in ("marketing", "health", "government") else 0.97)
    use_box = addr.pobox is not None and (source == "postal" and r.random() < 0.6 or r.random() < 0.08)
    exploded = r.random() < 0.45
    if exploded:
        kinds.add("exploded")
    addr_fields: list[str] = []
    if has_addr:
        if use_box:
            box = r.choice(["PO BOX", "P.O. BOX", "P O BOX", "BOX", "POB"]).split() + [addr.pobox]
        else:
            box = _street_tokens(r, addr)
        city = _city_text(r, addr.city.name)
        state = _state_text(r, addr.city.state)
        u = r.random()
        z = None if u < 0.10 else addr.zip + f"-{r.randint(1, 9999):04d}" if u < 0.22 else addr.zip
        if z and r.random() < 0.04:
            z = _digit_error(r, z)
        if exploded:
            addr_fields = box + city.split() + [x for x in (state, z) if x]
        elif r.random() < 0.25:
            addr_fields = [" ".join(box), " ".join(x for x in (city, state, z) if x)]
        else:
            addr_fields = [" ".join(box), city] + [x for x in (state, z) if x]

    # labelled identifiers
    if ids and r.random() < 0.05:
        kinds.add("labelled")
        ids = [(lab, r.choice([f"{lab} {v}", f"{lab}: {v}", f"{lab}:{v}"])) for lab, v in ids]
    id_fields = [v for _, v in ids]

    # sparse: the name and exactly one other item
    if r.random() < 0.08 and (id_fields or addr_fields):
        kinds.add("sparse")
        k = r.randrange(len(id_fields) + (1 if addr_fields else 0))
        if k < len(id_fields):
            id_fields, addr_fields = [id_fields[k]], []
        else:  # the street line or the box only
            id_fields, addr_fields = [], [" ".join(box)] if not exploded else box
    if id_fields and r.random() < 0.15:
        kinds.add("ids_first")
        fields = id_fields + name + addr_fields
    else:
        fields = name + addr_fields + id_fields
    fields = _case(r, fields)
    if len(fields) > 1 and r.random() < 0.06:
        kinds.add("glued")
        i = r.randrange(len(fields) - 1)
        fields[i:i + 2] = [fields[i] + fields[i + 1]]
    if r.random() < 0.12:
        kinds.add("shifted")
        for _ in range(r.randint(1, 3)):
            fields.insert(r.randint(1, len(fields)), "")
    if r.random() < 0.25:
        fields += [""] * r.randint(1, 3)
    return fields, frozenset(kinds)


# --------------------------------------------------------------------------------------------- output

def generate(n_references: int, seed: int, with_layout: bool = False) -> Iterator[tuple]:
    """Yield ``n_references`` references ``(rec_id, fields, entity_id)`` (plus the layout kinds when
    ``with_layout``), streaming and deterministic in ``(n_references, seed)``.

    Raises:
        ValueError: ``n_references`` < 1.
    """
    if not isinstance(n_references, int) or n_references < 1:
        raise ValueError(f"n_references must be a positive integer, got {n_references!r}")
    w = _World(seed)
    r = w.r
    rid_a = 1 + r.randrange(_RID_P - 1)
    rid_b = r.randrange(_RID_P)
    made = seq = 0
    buf: list[tuple[list[str], int, frozenset[str]]] = []

    def flush():
        nonlocal seq
        r.shuffle(buf)
        for fields, eid, kinds in buf:
            rid = f"F{(rid_a * seq + rid_b) % _RID_P:07d}"
            seq += 1
            yield (rid, fields, str(eid), kinds) if with_layout else (rid, fields, str(eid))
        buf.clear()

    while made < n_references:
        for p in _household(w):
            for _ in range(_pick(r, _NREF_CUM) + 1):
                if made >= n_references:
                    break
                fields, kinds = _render(r, p)
                buf.append((fields, p.eid, kinds))
                made += 1
        if len(buf) >= _WINDOW:
            yield from flush()
    yield from flush()


def write_dwm(out: str | Path, truth: str | Path, n_references: int, seed: int) -> dict[str, int]:
    """Write the DWM file ``out`` and its ``RecID,IdTruth`` truth file (LF endings);
    returns ``{"references": n, "entities": distinct entity ids}``."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:  # loaded by path: messy.py sits beside it
        sys.path.insert(0, here)
    import messy  # the writer only (benchmarks/messy.py write_references); the generator is this file's own

    return messy.write_references(out, truth, generate(n_references, seed), header=HEADER)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Messy household person references on Faker vocabularies (DWM layout).")
    ap.add_argument("--references", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--stats", action="store_true", help="print difficulty statistics next to S8P's")
    a = ap.parse_args(argv)
    if a.references < 1:
        ap.error("--references must be >= 1")
    try:
        info = write_dwm(a.out, a.truth, a.references, a.seed)
        print(f"wrote {info['references']:,} references of {info['entities']:,} entities to {a.out} "
              f"(truth {a.truth})", file=sys.stderr)
        if a.stats:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from messy import dwm_stats, stats_table

            cols = [(Path(a.out).name, dwm_stats(a.out, a.truth))]
            s8p = Path(__file__).resolve().parents[2] / "shared" / "data" / "dwm"
            if (s8p / "S8P.txt").is_file():
                cols.append(("S8P.txt", dwm_stats(s8p / "S8P.txt", s8p / "truthABCpoorDQ.txt")))
            print(stats_table(cols))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
