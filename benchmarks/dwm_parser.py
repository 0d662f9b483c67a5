"""Layout-agnostic field parser for DWM-layout person references (the Splink benchmark peer).

A DWM reference is an id followed by unaligned fields whose order and count differ from row
to row (``../shared/data/dwm/PARAMETERS.md``). A record-linkage tool with column
comparisons (Splink) needs those fields aligned first; this module does that by the *shape*
and *vocabulary* of the tokens, never by column position:

* SSN: nine digits with or without dashes/spaces (``010-52-5974``, ``010525974``); eight
  bare digits that are not a date are an SSN that lost its leading zero (spreadsheet export).
* date of birth: ``YYYYMMDD``, ``MM/DD/YYYY``, ``M/D/YY``, ``YYYY-MM-DD``, a year alone, or a
  five-digit spreadsheet day serial (days since 1899-12-30) outside the zip / house-number /
  PO-box positions. Normalised to ``YYYY-MM-DD`` or ``YYYY``.
* phone: ten digits (``(501) 555-0134``, ``501-555-0134``, ``5015550134``) or seven
  (``555-0134``), digits only.
* PO box: ``PO BOX n``, ``P.O. BOX n``, ``POST OFFICE BOX n`` and typos (``POMST OFFICE n``,
  ``PCO BOX n``, ``O BOX n``, ``PO OX n``).
* state + zip: a state code, name or abbreviation (also misspelled: ``CALIFONIA``, ``FLA.``,
  ``TFX``) followed by a zip (five digits, one stray character tolerated, ZIP+4 cut).
* street address: a house number followed by street words up to a street suffix (USPS
  Publication 28 suffixes and their misspellings), optional unit (``APT 8``, ``# B161``);
  the words between the street and the state are the city. When no suffix is found the split
  uses the cities learnt from the whole file (first pass).
* name: the remaining leading words. ``FIRST [M] LAST`` by default; ``LAST, FIRST [M]`` when
  a comma follows the first name word, or when the file-wide position counts of the words say
  so (a word seen mostly last in other references' names, its partner mostly first).

Entry points: :func:`parse_reference` (one reference's fields, after the RecID),
:class:`Hints` / :func:`learn_hints` (the optional first pass over a file) and
:func:`parse_file` (read a DWM file, two passes). Standard library only, with rapidfuzz
used for edit distances when it is installed. Never raises on odd input: a field that is
not found is ``None``.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

try:  # optional speed-up; the pure-Python distance below gives the same numbers
    from rapidfuzz.distance import OSA as _OSA

    def _dist(a: str, b: str) -> int:
        return _OSA.distance(a, b)
except ImportError:  # pragma: no cover - exercised only without rapidfuzz
    def _dist(a: str, b: str) -> int:
        """Optimal string alignment distance (Damerau-Levenshtein without re-edits)."""
        la, lb = len(a), len(b)
        prev2, prev = None, list(range(lb + 1))
        for i in range(1, la + 1):
            cur = [i] + [0] * lb
            for j in range(1, lb + 1):
                cost = a[i - 1] != b[j - 1]
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
                if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                    cur[j] = min(cur[j], prev2[j - 2] + 1)
            prev2, prev = prev, cur
        return prev[lb]

FIELDS = ("first_name", "middle_name", "last_name", "street_number", "street", "city", "state",
          "zip", "po_box", "ssn", "dob", "phone")

# --------------------------------------------------------------------------- vocabulary

STATES = {
    "AL": "ALABAMA", "AK": "ALASKA", "AZ": "ARIZONA", "AR": "ARKANSAS", "CA": "CALIFORNIA",
    "CO": "COLORADO", "CT": "CONNECTICUT", "DE": "DELAWARE", "DC": "DISTRICT OF COLUMBIA",
    "FL": "FLORIDA", "GA": "GEORGIA", "HI": "HAWAII", "ID": "IDAHO", "IL": "ILLINOIS",
    "IN": "INDIANA", "IA": "IOWA", "KS": "KANSAS", "KY": "KENTUCKY", "LA": "LOUISIANA",
    "ME": "MAINE", "MD": "MARYLAND", "MA": "MASSACHUSETTS", "MI": "MICHIGAN", "MN": "MINNESOTA",
    "MS": "MISSISSIPPI", "MO": "MISSOURI", "MT": "MONTANA", "NE": "NEBRASKA", "NV": "NEVADA",
    "NH": "NEW HAMPSHIRE", "NJ": "NEW JERSEY", "NM": "NEW MEXICO", "NY": "NEW YORK",
    "NC": "NORTH CAROLINA", "ND": "NORTH DAKOTA", "OH": "OHIO", "OK": "OKLAHOMA", "OR": "OREGON",
    "PA": "PENNSYLVANIA", "RI": "RHODE ISLAND", "SC": "SOUTH CAROLINA", "SD": "SOUTH DAKOTA",
    "TN": "TENNESSEE", "TX": "TEXAS", "UT": "UTAH", "VT": "VERMONT", "VA": "VIRGINIA",
    "WA": "WASHINGTON", "WV": "WEST VIRGINIA", "WI": "WISCONSIN", "WY": "WYOMING",
    "PR": "PUERTO RICO",
}
# newspaper (AP) abbreviations and other short forms people write
STATE_ABBREVIATIONS = {
    "ALA": "AL", "ARIZ": "AZ", "ARK": "AR", "CALIF": "CA", "CALI": "CA", "CAL": "CA", "COLO": "CO",
    "CONN": "CT", "DEL": "DE", "FLA": "FL", "FLOR": "FL", "ILL": "IL", "IND": "IN", "KAN": "KS",
    "KANS": "KS", "MASS": "MA", "MICH": "MI", "MINN": "MN", "MISS": "MS", "MONT": "MT",
    "NEB": "NE", "NEBR": "NE", "NEV": "NV", "OKLA": "OK", "ORE": "OR", "PENN": "PA", "TENN": "TN",
    "TEX": "TX", "WASH": "WA", "WIS": "WI", "WISC": "WI", "WYO": "WY",
}
_STATE_WORDS = {name: code for code, name in STATES.items()} | STATE_ABBREVIATIONS
_TWO_WORD_STATES = {tuple(n.split()): c for c, n in STATES.items() if n.count(" ") == 1}

# USPS Publication 28 street suffixes that rarely end a city name, with common spellings
SUFFIXES = {
    "ST": ("STREET", "STR", "STRT", "STRE", "STREE", "STRET"),
    "AVE": ("AVENUE", "AV", "AVEN", "AVENU", "AVN", "AVNUE", "AVNU", "AVE"),
    "BLVD": ("BOULEVARD", "BOUL", "BOULV", "BLV"),
    "DR": ("DRIVE", "DRIV", "DRV"),
    "RD": ("ROAD",),
    "LN": ("LANE",),
    "CT": ("COURT", "CRT"),
    "CIR": ("CIRCLE", "CIRC", "CIRCL", "CRCL", "CRCLE"),
    "PL": ("PLACE",),
    "TER": ("TERRACE", "TERR"),
    "TRL": ("TRAIL", "TRAILS", "TRLS", "TR"),
    "WAY": ("WY",),
    "PKWY": ("PARKWAY", "PARKWY", "PKY", "PKWAY"),
    "HWY": ("HIGHWAY", "HIWAY", "HWAY"),
    "LOOP": ("LOOPS",),
    "BND": ("BEND",),
    "CV": ("COVE",),
    "XING": ("CROSSING",),
    "PLZ": ("PLAZA",),
    "SQ": ("SQUARE",),
    "ALY": ("ALLEY",),
    "EXPY": ("EXPRESSWAY",),
    "FWY": ("FREEWAY",),
    "PASS": (),
    "PATH": (),
    "PIKE": (),
    "RUN": (),
    "WALK": (),
    "ROW": (),
}
_SUFFIX_OF = {}
for _abbr, _forms in SUFFIXES.items():
    _SUFFIX_OF[_abbr] = _abbr
    for _f in _forms:
        _SUFFIX_OF[_f] = _abbr
_SUFFIX_FULL = {forms[0]: abbr for abbr, forms in SUFFIXES.items()
                if forms and len(forms[0]) >= 5 and abbr not in ("ALY", "SQ", "PLZ", "XING", "EXPY")}
# words after which a number is part of the street (COUNTY ROAD 2801, US HIGHWAY 69, AVENUE 48)
_ROUTE_WORDS = {"HWY", "RD", "AVE", "ROUTE", "RT", "RTE", "FM", "CR", "SR"}

DIRECTIONS = {"N": "N", "S": "S", "E": "E", "W": "W", "NE": "NE", "NW": "NW", "SE": "SE", "SW": "SW",
              "NORTH": "N", "SOUTH": "S", "EAST": "E", "WEST": "W", "NORTHEAST": "NE",
              "NORTHWEST": "NW", "SOUTHEAST": "SE", "SOUTHWEST": "SW", "NORH": "N"}
UNITS = {"APT", "APARTMENT", "UNIT", "STE", "SUITE", "#", "SPC", "SPACE", "LOT", "BLDG", "RM", "ROOM",
         "TRLR", "DEPT", "NO"}
NAME_TITLES = {"MR", "MRS", "MS", "MISS", "DR", "PROF", "REV"}
NAME_SUFFIXES = {"JR", "SR", "II", "III", "IV", "ESQ", "PHD"}
_PO_WORDS = ("PO", "POST", "OFFICE", "POB")
# an expansion of a spreadsheet day serial (Excel / LibreOffice day 0 = 1899-12-30)
_SERIAL_EPOCH = date(1899, 12, 30)
_MIN_YEAR, _MAX_YEAR = 1900, date.today().year

# --------------------------------------------------------------------------- tokens

_SSN_RE = re.compile(r"(?<!\d)(\d{3})[- ](\d{2})[- ](\d{4})(?!\d)")
_PHONE10_RE = re.compile(r"(?<!\d)(?:\+?1[-. ]?)?\(?(\d{3})\)?[-. ]?(\d{3})[-. ](\d{4})(?!\d)")
_PHONE7_RE = re.compile(r"(?<![\d-])(\d{3})[-.](\d{4})(?![\d-])")
_SLASH_DATE_RE = re.compile(r"(?<!\d)(\d{1,2})[/.-](\d{1,2})[/.-](\d{4}|\d{2})(?!\d)")
_ISO_DATE_RE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_ZIP4_RE = re.compile(r"(?<!\d)(\d{5})-\d{4}(?!\d)")
_GLUED_RE = re.compile(r"(\d{2,6})([A-Z]{4,})")
_SPLIT_RE = re.compile(r"[\s,;:()\"\[\]{}<>|\\/_=+*!?~`^%$@&]+")


@dataclass
class Tok:
    """One token: upper-cased ``text``; ``kind`` word/num/alnum/sep or a typed value
    (ssn, phone, date); ``value`` the normalised typed value; ``comma`` when a comma
    separated it from the previous token inside the same raw field or the raw field started
    with a blank (``LAST, FIRST`` written into a comma-separated file)."""

    text: str
    kind: str
    value: str | None = None
    comma: bool = False
    used: bool = False


def _valid_date(y: int, m: int, d: int) -> str | None:
    try:
        date(y, m, d)
    except ValueError:
        return None
    if not _MIN_YEAR <= y <= _MAX_YEAR:
        return None
    return f"{y:04d}-{m:02d}-{d:02d}"


def _two_digit_year(yy: int) -> int:
    # a birth year: a two-digit year not after this year's is this century, else the last one
    return 2000 + yy if 2000 + yy <= _MAX_YEAR else 1900 + yy


def _typed_in_field(raw: str) -> tuple[str, list[Tok]]:
    """Pull SSNs, phones and dates written with separators out of one raw field.
    Returns the field with those parts blanked and the typed tokens found."""
    found: list[tuple[int, Tok]] = []

    def take(rx, make):
        nonlocal raw
        out = []
        last = 0
        for m in rx.finditer(raw):
            tok = make(m)
            if tok is None:
                continue
            found.append((m.start(), tok))
            out.append(raw[last:m.start()] + " ")
            last = m.end()
        out.append(raw[last:])
        raw = "".join(out)

    take(_SSN_RE, lambda m: Tok(m.group(0), "ssn", "".join(m.groups())))
    take(_ISO_DATE_RE, lambda m: (lambda v: v and Tok(m.group(0), "date", v))(
        _valid_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))))

    def slash(m):
        a, b, y = int(m.group(1)), int(m.group(2)), m.group(3)
        year = int(y) if len(y) == 4 else _two_digit_year(int(y))
        v = _valid_date(year, a, b) or _valid_date(year, b, a)  # US order first, then D/M
        return Tok(m.group(0), "date", v) if v else None

    take(_SLASH_DATE_RE, slash)
    take(_PHONE10_RE, lambda m: Tok(m.group(0), "phone", "".join(m.groups())))
    take(_ZIP4_RE, lambda m: Tok(m.group(1), "num"))
    take(_PHONE7_RE, lambda m: Tok(m.group(0), "phone", "".join(m.groups())))
    found.sort(key=lambda x: x[0])
    return raw, [t for _, t in found]


def _kind(text: str) -> str:
    if text.isdigit():
        return "num"
    if any(c.isdigit() for c in text):
        return "alnum"
    return "word"


def tokenize(fields: Sequence[object]) -> list[Tok]:
    """Tokens of one reference (its raw fields after the RecID), in field order. An empty
    field becomes a ``sep`` token; SSNs, phones and dates written with separators become
    typed tokens placed after the other words of their field."""
    toks: list[Tok] = []
    for f in fields or ():
        raw = "" if f is None else str(f)
        toks.extend(Tok(*t) for t in _field_tokens(raw))
    return toks


@lru_cache(maxsize=262144)
def _field_tokens(raw: str) -> tuple[tuple, ...]:
    if not raw.strip():
        return (("", "sep"),)
    lead_blank = raw[:1].isspace()
    raw = raw.upper().replace(".", " ").replace("'", "")
    if raw.isalnum():  # the common case: one plain word or number
        m = _GLUED_RE.fullmatch(raw)  # 2747COUNTY -> 2747 COUNTY
        parts = [m.group(1), m.group(2)] if m else [raw]
        return tuple((w, _kind(w), None, lead_blank and k == 0) for k, w in enumerate(parts))
    typed: list[Tok] = []
    if any(c.isdigit() for c in raw):
        raw, typed = _typed_in_field(raw)
    pieces: list[tuple] = []
    # commas inside a (quoted) field mark LAST, FIRST
    for ci, chunk in enumerate(raw.split(",")):
        words = [w for w in _SPLIT_RE.split(chunk.replace("#", " # ")) if w and w.strip("-")]
        for wi, w in enumerate(words):
            w = w.strip("-")
            m = _GLUED_RE.fullmatch(w)
            parts = [m.group(1), m.group(2)] if m else [w]
            for pi, part in enumerate(parts):
                pieces.append((part, _kind(part), None, ci > 0 and wi == 0 and pi == 0))
    if pieces:
        pieces[0] = pieces[0][:3] + (pieces[0][3] or lead_blank,)
    # typed tokens go after the words of the same field (their exact place does not matter)
    return tuple(pieces) + tuple((t.text, t.kind, t.value, False) for t in typed)


# --------------------------------------------------------------------------- classifiers

@lru_cache(maxsize=65536)
def state_code(text: str) -> str | None:
    """Two-letter code for a state code, name, abbreviation or a near miss of one
    (``CALIFONIA``, ``FCALIF``, ``TFX``); ``None`` otherwise."""
    t = re.sub(r"[^A-Z ]", "", text.upper()).strip()
    if not t:
        return None
    if len(t) == 2:
        return t if t in STATES else None
    if t in _STATE_WORDS:
        return _STATE_WORDS[t]
    if len(t) == 3:  # one stray letter in a code: TFX -> TX, CAD -> CA (first letter kept)
        cands = {t[0] + t[2], t[:2], t[1:]} & STATES.keys()
        return cands.pop() if len(cands) == 1 else None
    if len(t) >= 5:
        pref = {c for w, c in _STATE_WORDS.items() if len(w) > len(t) and w.startswith(t)}
        if len(pref) == 1:
            return pref.pop()
    best, best_d = None, 99
    for word, code in _STATE_WORDS.items():
        if len(word) < 4 or abs(len(word) - len(t)) > 2:
            continue
        d = _dist(t, word)
        lim = 1 if len(word) <= 5 else 2
        if d <= lim and d < best_d:
            best, best_d = code, d
    return best


@lru_cache(maxsize=65536)
def suffix_abbr(text: str) -> str | None:
    """USPS abbreviation of a street suffix or of a misspelling of one (``AVNUE``, ``DRIV``)."""
    t = text.upper()
    if t in _SUFFIX_OF:
        return _SUFFIX_OF[t]
    if len(t) >= 5:
        for full, abbr in _SUFFIX_FULL.items():
            if t[0] == full[0] and abs(len(full) - len(t)) <= 1 and _dist(t, full) <= 1:
                return abbr
    return None


@lru_cache(maxsize=65536)
def _is_po_word(t: str) -> bool:
    if t in _PO_WORDS or t in ("P", "O"):
        return True
    if not t.isalpha() or not 2 <= len(t) <= 8:
        return False
    return any(_dist(t, w) <= 1 for w in ("PO", "POST", "OFFICE")) or (len(t) >= 5 and _dist(t, "OFFICE") <= 2)


@lru_cache(maxsize=65536)
def _is_box_word(t: str) -> bool:
    return t in ("BOX", "BX", "OX", "BOXX", "BOC", "BOS", "APTDO", "APARTADO") or (t.isalpha() and 3 <= len(t) <= 4 and _dist(t, "BOX") <= 1
                                                             and t not in STATES and t not in _SUFFIX_OF)


def _digits(t: str) -> str:
    return "".join(c for c in t if c.isdigit())


def _numberish(t: Tok, max_junk: int = 1) -> bool:
    """A number, possibly with one mistyped character (``11R881``, ``J634``)."""
    if t.kind == "num":
        return True
    if t.kind != "alnum":
        return False
    d = len(_digits(t.text))
    return d >= 1 and len(t.text) - d <= max_junk and d >= len(t.text) - d


def _zip_of(t: Tok) -> str | None:
    if t.kind == "num" and len(t.text) == 5:
        return t.text
    if t.kind == "num" and len(t.text) == 9:  # ZIP+4 written without the dash
        return t.text[:5]
    if t.kind == "alnum":
        d = _digits(t.text)
        if len(d) == 5 and len(t.text) == 6:
            return d
    return None


def _serial_date(n: int) -> str | None:
    if not 1 <= n <= 60000:
        return None
    d = _SERIAL_EPOCH + timedelta(days=n)
    return d.isoformat() if _MIN_YEAR <= d.year <= _MAX_YEAR else None


def _eight_digit_date(s: str) -> str | None:
    return _valid_date(int(s[:4]), int(s[4:6]), int(s[6:]))


def _clean_word(t: str) -> str:
    return re.sub(r"[^A-Z0-9#-]", "", t)


# --------------------------------------------------------------------------- hints (first pass)

@dataclass
class Hints:
    """What a first pass over a whole file learns, layout-agnostically: how often each word
    opens / closes a name (``first_pos`` / ``last_pos``) and the city names seen in
    unambiguous positions (``cities``, word tuples)."""

    first_pos: Counter = field(default_factory=Counter)
    last_pos: Counter = field(default_factory=Counter)
    cities: Counter = field(default_factory=Counter)

    def is_city(self, words: Sequence[str]) -> bool:
        return self.cities.get(tuple(words), 0) >= 2


def learn_hints(references: Iterable[Sequence[object]]) -> Hints:
    """First pass: parse every reference without hints and count name positions and cities."""
    h = Hints()
    for fields in references:
        try:
            r = _parse(tokenize(fields), None)
        except Exception:  # a learning pass must never stop the run
            continue
        # names in the order this pass read them, when that order was not a guess
        if r.get("first_name") and r.get("last_name") and r.get("_name_swapped") in (False, "comma"):
            h.first_pos[r["first_name"]] += 1
            h.last_pos[r["last_name"]] += 1
        for c in r.pop("_cities", []):
            h.cities[c] += 1
    return h


# --------------------------------------------------------------------------- parser

def parse_reference(fields: Sequence[object], hints: Hints | None = None) -> dict:
    """Parse one reference's raw fields (after the RecID) into :data:`FIELDS`.

    Returns a dict with every key of ``FIELDS``; values are upper-case strings or ``None``:
    names, ``street_number`` (digits), ``street`` (pre-direction, name, USPS suffix),
    ``city``, ``state`` (two letters), ``zip`` (five digits), ``po_box`` (digits),
    ``ssn`` (nine digits), ``dob`` (``YYYY-MM-DD`` or ``YYYY``), ``phone`` (ten or seven
    digits). Never raises: on an internal error the fields found so far are ``None``.
    """
    try:
        r = _parse(tokenize(fields), hints)
    except Exception:
        return dict.fromkeys(FIELDS)
    return {k: r.get(k) for k in FIELDS}


def _parse(toks: list[Tok], hints: Hints | None) -> dict:
    out: dict = dict.fromkeys(FIELDS)
    cities_seen: list[tuple[str, ...]] = []
    n = len(toks)
    after: list[int | None] = [None] * n  # index of the next non-separator token
    nx = None
    for i in range(n - 1, -1, -1):
        after[i] = nx
        if toks[i].kind != "sep":
            nx = i
    nxt = after.__getitem__

    # 1. values written with separators (typed tokens)
    for t in toks:
        if t.kind in ("ssn", "phone", "date"):
            key = {"ssn": "ssn", "phone": "phone", "date": "dob"}[t.kind]
            if out[key] is None:
                out[key] = t.value
            t.used = True

    # 2. PO boxes: [PO-words] BOX n  |  PO-words n  (then the box's city, state, zip)
    po_spans: list[tuple[int, int]] = []
    i = 0
    while i < n:
        t = toks[i]
        if t.used or t.kind != "word":
            i += 1
            continue
        j = nxt(i)
        start = None
        if _is_box_word(t.text) and j is not None and _numberish(toks[j], 2) and not toks[j].used:
            start, num = i, j
        elif _is_po_word(t.text) and j is not None:
            k, steps = j, 0
            while k is not None and steps < 3 and toks[k].kind == "word" and \
                    (_is_po_word(toks[k].text) or _is_box_word(toks[k].text)):
                k, steps = nxt(k), steps + 1
            if k is not None and not toks[k].used and _numberish(toks[k], 2) and \
                    (steps > 0 or t.text in ("PO", "POB", "POST", "OFFICE")):
                start, num = i, k
        if start is None:
            i += 1
            continue
        # one typo'd PO word right before BOX (CARLL BOX 3243)
        p = start - 1
        while p >= 0 and toks[p].kind == "sep":
            p -= 1
        if p >= 0 and not toks[p].used and toks[p].kind == "word" and len(toks[p].text) <= 6 and \
                _is_box_word(toks[start].text) and state_code(toks[p].text) is None and \
                suffix_abbr(toks[p].text) is None and (p == 0 or toks[p - 1].kind != "word" or
                                                       _is_po_word(toks[p].text)):
            start = p
        for q in range(start, num + 1):
            toks[q].used = True
        if out["po_box"] is None:
            out["po_box"] = _digits(toks[num].text).lstrip("0") or "0"
        po_spans.append((start, num))
        i = num + 1

    # 3. state + zip anchors (state may be misspelled; a blank field or a zip tells it apart)
    #    anchor = (first state token, zip token or None, code or None, zip or None, last state token)
    anchors: list[tuple] = []
    for pos, t in enumerate(toks):
        if t.used or t.kind == "sep":
            continue
        if t.kind == "alnum":  # CA93004
            m = re.fullmatch(r"([A-Z]{2,})(\d{5})", t.text)
            if m and state_code(m.group(1)):
                anchors.append((pos, pos, state_code(m.group(1)), m.group(2), pos))
            continue
        if t.kind != "word" or _unit_word(t.text):
            continue
        last = pos
        j = nxt(pos)
        after_blank = pos > 0 and toks[pos - 1].kind == "sep"
        two = None
        if j is not None and toks[j].kind == "word":
            two = _two_word_state(t.text, toks[j].text)
            if two:
                last, j = j, nxt(j)
        nj = toks[j] if j is not None else None
        # a fuzzy state look-up only where a state can stand: after a blank field or before a number
        plausible = two or after_blank or t.text in STATES or t.text in _STATE_WORDS or \
            nj is None or nj.kind != "word"
        if not plausible:
            continue
        code = two or state_code(t.text)
        z = _zip_of(nj) if nj is not None and not nj.used else None
        ends_field = last + 1 >= n or toks[last + 1].kind == "sep" or j is None or \
            toks[j].kind in ("ssn", "date", "phone")
        exact = t.text in STATES or t.text in _STATE_WORDS or last > pos
        if z and (code or (after_blank and len(t.text) <= 12)):
            anchors.append((pos, j, code, z, last))
        elif code and ends_field and (exact or (after_blank and len(t.text) >= 6)):
            # a state without a zip: written exactly, or a long misspelled name after a blank field
            anchors.append((pos, None, code, None, last))
        elif code and (after_blank or exact) and j is not None and toks[j].kind in ("num", "alnum") and \
                3 <= len(toks[j].text) <= 6 and not toks[j].used:
            anchors.append((pos, j, code, None, last))  # a damaged zip (CA 9768)
    # overlapping anchors: keep the first
    seen_pos: set[int] = set()
    clean = []
    for a in anchors:
        if a[0] in seen_pos:
            continue
        clean.append(a)
        seen_pos.update(x for x in (a[0], a[1], a[4]) if x is not None)
    anchors = clean

    def anchor_after(p):
        for a in anchors:
            if a[0] > p:
                return a
        return None

    po_anchor_ids = set()
    for (ps, pn) in po_spans:  # the box's own city / state / zip
        a = anchor_after(pn)
        if a is not None:
            other_num = any(_numberish(toks[q]) and not toks[q].used for q in range(pn + 1, a[0]))
            if not other_num and a[0] - pn <= 6:
                po_anchor_ids.add(a[0])
                words = [toks[q].text for q in range(pn + 1, a[0]) if toks[q].kind == "word" and not toks[q].used]
                for q in range(pn + 1, a[0]):
                    toks[q].used = True
                if words:
                    cities_seen.append(tuple(words))
                    po_city = " ".join(words)
                else:
                    po_city = None
                _use_anchor(toks, a)
                if out.get("_po_state") is None:
                    out["_po_state"], out["_po_zip"], out["_po_city"] = a[2], a[3], po_city
    home = [a for a in anchors if a[0] not in po_anchor_ids]

    # 4. street address: house number, street words up to a suffix, unit, then city up to the state
    def street_candidates():
        for p in range(n):
            t = toks[p]
            if t.used or not _numberish(t) or len(_digits(t.text)) > 6:
                continue
            b = p - 1
            while b >= 0 and toks[b].kind == "sep":
                b -= 1
            if b >= 0 and (_unit_word(toks[b].text) or toks[b].text in _ROUTE_WORDS):
                continue  # APT 201, HWY 31: not a house number
            j = nxt(p)
            if j is None or toks[j].used or toks[j].kind not in ("word", "alnum") or \
                    not any(c.isalpha() for c in toks[j].text) or _unit_word(toks[j].text):
                continue
            yield p

    cands = list(street_candidates())
    best = None
    for p in cands:
        a = anchor_after(p)
        a = a if (a is not None and a[0] not in po_anchor_ids) else None
        end = a[0] if a is not None else n
        span = [q for q in range(p + 1, end) if not toks[q].used and toks[q].kind != "sep"]
        # stop the span at the next number that is not a unit id / ordinal
        cut = []
        for q in span:
            tq = toks[q]
            if tq.kind == "num" and cut and not _unit_word(toks[cut[-1]].text) and \
                    (suffix_abbr(toks[cut[-1]].text) or toks[cut[-1]].text) not in _ROUTE_WORDS:
                break  # the next house number (or another value) starts here
            cut.append(q)
        if len(cut) < len(span):
            a = None  # the street does not reach the state
        has_suffix = any(suffix_abbr(toks[q].text) for q in cut)
        score = (has_suffix, a is not None, -p)
        if best is None or score > best[0]:
            best = (score, p, cut, a)
    if best is not None:
        _, p, span, a = best
        street_num = _digits(toks[p].text)
        toks[p].used = True
        street_words, city_words, split_known = _split_street_city([toks[q].text for q in span], hints,
                                                                   a is not None)
        for q in span:
            toks[q].used = True
        out["street_number"] = street_num or None
        out["street"] = " ".join(street_words) or None
        if city_words:
            out["city"] = " ".join(city_words)
            if split_known:
                cities_seen.append(tuple(city_words))
        if a is not None:
            _use_anchor(toks, a)
            out["state"], out["zip"] = a[2], a[3]
            home = [h for h in home if h is not a]
    if out["state"] is None and home:
        a = home[0]
        _use_anchor(toks, a)
        out["state"], out["zip"] = a[2], a[3]
        if out["city"] is None:  # a state/zip without a street: its city is the words just before it
            run = []
            q = a[0] - 1
            while q >= 0 and (toks[q].kind == "sep" or (toks[q].kind == "word" and not toks[q].used)):
                if toks[q].kind == "word":
                    run.insert(0, q)
                q -= 1
            first_run = not any(toks[x].kind == "word" and not toks[x].used for x in range(0, run[0])) if run else True
            k = _city_start([toks[x].text for x in run], hints, keep_one=first_run)
            if k is not None:
                out["city"] = " ".join(toks[x].text for x in run[k:])
                for x in run[k:]:
                    toks[x].used = True
    if out["zip"] is None:  # a zip without a state: five digits right after a word
        for q, t in enumerate(toks):
            if t.used or t.kind != "num" or len(t.text) != 5:
                continue
            b = q - 1
            while b >= 0 and toks[b].kind == "sep":
                b -= 1
            if b >= 0 and toks[b].kind == "word":
                out["zip"], t.used = t.text, True
                break
    if out["city"] is None and out.get("_po_city"):
        out["city"] = out["_po_city"]
    if out["state"] is None and out.get("_po_state"):
        out["state"], out["zip"] = out["_po_state"], out["_po_zip"]

    # 5. the remaining numbers: SSN, DOB, phone
    for t in toks:
        if t.used or t.kind not in ("num", "alnum"):
            continue
        s = t.text if t.kind == "num" else None
        if s is None:
            d = _digits(t.text)
            # one stray character in a long identifier
            if len(d) in (8, 9) and len(t.text) == len(d) + 1:
                s = d
            else:
                continue
        L = len(s)
        if L == 9 and out["ssn"] is None:
            out["ssn"] = s
        elif L == 8:
            dd = _eight_digit_date(s)
            if dd and out["dob"] is None:
                out["dob"] = dd
            elif not dd and out["ssn"] is None:
                out["ssn"] = "0" + s
            else:
                continue
        elif L == 10 and out["phone"] is None:
            out["phone"] = s
        elif L == 7 and out["phone"] is None:
            out["phone"] = s
        elif L == 4 and out["dob"] is None and _MIN_YEAR <= int(s) <= _MAX_YEAR:
            out["dob"] = s
        elif L == 5 and out["dob"] is None and _serial_date(int(s)):
            out["dob"] = _serial_date(int(s))
        else:
            continue
        t.used = True

    # 6. name: the first run of unused words
    runs: list[list[Tok]] = []
    cur: list[Tok] = []
    for t in toks:
        if not t.used and t.kind == "word" and re.fullmatch(r"[A-Z][A-Z-]*", t.text):
            cur.append(t)
        elif cur and (t.used or t.kind != "sep"):
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    words = []
    if runs:
        run = runs[0]
        words = [t for t in run if t.text not in NAME_TITLES or len(run) <= 2]
        while len(words) > 1 and words[-1].text in NAME_SUFFIXES:
            words.pop()
        words = [t for t in words if t.text.strip("-")]
    if words:
        swapped = _last_first(words, hints)
        out["_name_swapped"] = swapped
        names = [t.text for t in words]
        if swapped:
            names = names[1:] + names[:1]
        elif len(names) == 1 and hints is not None:
            names = _split_glued(names[0], hints) or names
        if len(names) == 1:
            out["last_name"] = names[0]
        else:
            out["first_name"], out["last_name"] = names[0], names[-1]
            if len(names) > 2:
                out["middle_name"] = " ".join(names[1:-1])
    out["_cities"] = cities_seen
    return out


def _use_anchor(toks: list[Tok], a) -> None:
    for q in range(a[0], a[4] + 1):
        toks[q].used = True
    if a[1] is not None:
        toks[a[1]].used = True


@lru_cache(maxsize=65536)
def _two_word_state(w1: str, w2: str) -> str | None:
    """Code of a two-word state name (NEW YORK), one typo allowed in each word."""
    if (w1, w2) in _TWO_WORD_STATES:
        return _TWO_WORD_STATES[(w1, w2)]
    if len(w1) < 3 or len(w2) < 4:
        return None
    for (a, b), code in _TWO_WORD_STATES.items():
        if _dist(w1, a) <= 1 and _dist(w2, b) <= 1:
            return code
    return None


def _last_first(words: list[Tok], hints: Hints | None) -> bool | str:
    """Truthy when the name words read LAST FIRST [MIDDLE] rather than FIRST [MIDDLE] LAST
    (``"comma"`` when a comma after the first word says so)."""
    if len(words) < 2:
        return False
    if words[1].comma:  # "SMITH, JOHN M" or fields "SMITH" / " JOHN M"
        return "comma"
    first, last = words[0].text, words[-1].text
    if len(words) >= 3 and len(last) == 1 and len(words[1].text) > 1 and len(first) > 1:
        # SMITH JOHN M: a trailing initial after two full words (FIRST M LAST has it in the middle)
        if hints is None or _pos_score(hints, first) <= 0:
            return True
    if hints is not None and len(first) > 1 and len(last) > 1:
        return _pos_score(hints, first) < -1 and _pos_score(hints, last) > 1
    if len(words) == 2 and len(last) == 1 and len(first) > 1:  # SMITH J, unless the file says DONALD H
        return hints is None or _pos_score(hints, first) < 0
    return False


def _split_glued(word: str, h: Hints) -> list[str] | None:
    """[FIRST, LAST] of a name written as one word (DAVIDRHODES, SMITHJOHN), found with the
    file's name vocabulary: a part that opens names elsewhere and a rest that closes them (or
    is at least three letters long after a first name). ``None`` when the word is itself a
    known name or no split is convincing."""
    if "-" in word or len(word) < 6 or h.first_pos.get(word, 0) + h.last_pos.get(word, 0) >= 2:
        return None
    best, best_score = None, 0
    for i in range(2, len(word) - 1):
        a, b = word[:i], word[i:]
        fa, la, fb, lb = (h.first_pos.get(a, 0), h.last_pos.get(a, 0), h.first_pos.get(b, 0),
                          h.last_pos.get(b, 0))
        if fa >= 3 and (lb >= 2 or len(b) >= 3) and fa + lb > best_score:
            best, best_score = [a, b], fa + lb
        if la >= 3 and fb >= 3 and la + fb > best_score:
            best, best_score = [b, a], la + fb
    return best


def _pos_score(h: Hints, w: str) -> int:
    """How much more often ``w`` opened a name than closed one, over the file."""
    return h.first_pos.get(w, 0) - h.last_pos.get(w, 0)


_CITY_PREFIXES = {"SAN", "SANTA", "LOS", "LAS", "EL", "LA", "PORT", "PALM", "WEST", "EAST", "NORTH",
                  "SOUTH", "NEW", "FORT", "FT", "ST", "SAINT", "MOUNT", "MT", "LAKE", "CORAL", "DEL",
                  "DE", "BIG", "LITTLE", "GRAND", "SUN", "ELK", "BUENA", "PALOS", "CHULA", "COSTA",
                  "HUNTINGTON", "REDONDO", "PEMBROKE", "POMPANO", "DEERFIELD", "DELRAY", "BOYNTON",
                  "DAYTONA", "WINTER", "HOT", "PINE", "CEDAR", "RANCHO", "DIAMOND", "GARDEN", "BALDWIN"}
# last words of two-word city names (PANORAMA CITY, MIAMI BEACH, CORAL SPRINGS)
_CITY_TAILS = {"CITY", "BEACH", "SPRINGS", "PARK", "HEIGHTS", "VALLEY", "HILLS", "GARDENS", "GROVE",
               "LAKES", "ISLAND", "FALLS", "POINT", "CREEK", "VISTA", "ACRES", "VILLAGE", "JUNCTION"}
_ROUTE_PREFIXES = {"COUNTY", "US", "STATE", "ST", "SR", "CR", "FM", "HWY", "OLD"}


@lru_cache(maxsize=65536)
def _unit_word(w: str) -> bool:
    """APT, UNIT, #, STE ... and their one-letter misspellings (AVPT, WUNIT)."""
    if w in UNITS:
        return True
    if re.fullmatch(r"(APT|UNIT|STE|NO|#)\d+[A-Z]?", w):
        return True
    return w.isalpha() and len(w) >= 4 and w not in _SUFFIX_OF and (_dist(w, "UNIT") <= 1 or _dist(w, "APT") <= 1)


def _city_start(words: list[str], hints: Hints | None, keep_one: bool) -> int | None:
    """Where the city begins in a run of words that ends at a state (no street before it):
    the longest tail seen as a city elsewhere in the file, else the last word (two after a
    common city prefix). ``keep_one`` leaves at least one word (the run also holds the name)."""
    lo = 1 if keep_one else 0
    if len(words) <= lo:
        return None
    if hints is not None:
        for k in range(lo, len(words)):
            if hints.is_city(words[k:]):
                return k
    if keep_one and len(words) < 3:
        return None
    k = len(words) - 1
    if k - 1 >= lo and (words[k - 1] in _CITY_PREFIXES or words[k] in _CITY_TAILS):
        k -= 1
    return k


def _split_street_city(words: list[str], hints: Hints | None, before_state: bool):
    """Split the words after a house number into (street words, city words, split_was_clear).

    The street ends at a route number (COUNTY ROAD 2801), else at its last clear USPS suffix
    that still leaves words for the city, else before a unit (APT 8, # B161); the rest up to
    the state is the city. A tail that the first pass saw as a city elsewhere wins. Without
    any of these, the last word is the city (two when the first of them is a common city
    prefix such as SAN or PORT). Units are dropped."""
    words = [_clean_word(w) for w in words if _clean_word(w)]
    if not words:
        return [], [], False
    # units out, remembering where the first one was
    w2: list[str] = []
    unit_pos = None
    k = 0
    while k < len(words):
        w = words[k]
        if k >= 1 and _unit_word(w):
            if unit_pos is None:
                unit_pos = len(w2)
            if k + 1 < len(words) and words[k + 1] == "#":  # APT # 10B
                k += 1
            nxt_w = words[k + 1] if k + 1 < len(words) else ""
            glued = bool(re.search(r"\d", w))
            if not glued and nxt_w and len(nxt_w) <= 5 and (any(c.isdigit() for c in nxt_w) or len(nxt_w) == 1):
                k += 1
            k += 1
            continue
        w2.append(w)
        k += 1
    W = w2
    n = len(W)
    if n == 0:
        return [], [], False
    # route numbers belong to the street
    route_end = None
    for k in range(n - 1):
        if (suffix_abbr(W[k]) or W[k]) in _ROUTE_WORDS and re.search(r"\d", W[k + 1]) and \
                (k == 0 or W[k - 1] in _ROUTE_PREFIXES or suffix_abbr(W[k]) == "HWY"):
            route_end = k + 2
            if route_end < n - 1 and W[route_end] in DIRECTIONS:
                route_end += 1
    clear = True
    e = None
    if hints is not None and before_state:
        lo = route_end or 1
        for k in range(lo, n):
            if hints.is_city(W[k:]):
                e = k
                break
    if e is None and route_end is not None:
        e = route_end
    if e is None:
        limit = unit_pos if unit_pos is not None else n
        exact = [k for k in range(limit) if W[k] in _SUFFIX_OF and (k >= 1 or limit == 1)]
        fuzzy = [k for k in range(limit) if k >= 1 and suffix_abbr(W[k])]
        pos = exact or fuzzy
        if pos:
            with_city = [k for k in pos if k < n - 1] if before_state else []
            p = with_city[-1] if with_city else pos[-1]
            e = p + 1
            if e < n - 1 and W[e] in DIRECTIONS and len(W[e]) <= 2:
                e += 1  # 41ST LN N ROYAL PALM BEACH
            elif unit_pos is not None and e < unit_pos and all(w in DIRECTIONS for w in W[e:unit_pos]):
                e = unit_pos  # 18TH ST WEST APT 2
        elif unit_pos is not None:
            e = unit_pos
    if e is None:
        clear = False
        if not before_state or n == 1:
            e = n
        else:
            e = n - 1
            if e - 1 >= 1 and (W[e - 1] in _CITY_PREFIXES or W[e] in _CITY_TAILS):
                e -= 1
    city = [w for w in W[e:] if w.isalpha() and w not in DIRECTIONS or (w in DIRECTIONS and len(w) > 2)]
    if not city:
        clear = False
    return _norm_street(W[:e]), city, clear


def _norm_street(ws: list[str]) -> list[str]:
    """USPS abbreviations: suffixes (AVENUE, AVNUE -> AVE) and directions (NORTH -> N) at the
    ends of the street."""
    out = []
    last = len(ws) - 1
    for k, w in enumerate(ws):
        if w in _SUFFIX_OF and (k > 0 or last > 0):
            out.append(_SUFFIX_OF[w])
        elif k == last and k > 0 and suffix_abbr(w):
            out.append(suffix_abbr(w))
        elif w in DIRECTIONS and (k == 0 or k == last or (k > 0 and ws[k - 1] in _SUFFIX_OF)):
            out.append(DIRECTIONS[w])
        else:
            out.append(w)
    return out


# --------------------------------------------------------------------------- files

def read_references(path: str | Path) -> list[tuple[str, list[str]]]:
    """``(rec_id, raw fields)`` of a DWM file: header line skipped, CR / LF / CRLF endings,
    comma-separated with optional double quotes."""
    raw = Path(path).read_bytes().decode("utf-8", "replace")
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    rows = []
    for k, rec in enumerate(csv.reader(io.StringIO(raw))):
        if k == 0 or not rec or not rec[0].strip():
            continue
        rows.append((rec[0].strip(), rec[1:]))
    return rows


def parse_file(path: str | Path) -> list[dict]:
    """Parse every reference of a DWM file (two passes: :func:`learn_hints`, then
    :func:`parse_reference`). Returns one dict per reference: ``unique_id`` plus ``FIELDS``. References that
    the parser fails on keep ``None`` fields and are counted in a ``UserWarning``."""
    rows = read_references(path)
    hints = learn_hints(f for _, f in rows)
    out, failed = [], 0
    for rid, f in rows:
        try:
            r = _parse(tokenize(f), hints)
        except Exception:
            failed, r = failed + 1, {}
        out.append({"unique_id": rid, **{k: r.get(k) for k in FIELDS}})
    if failed:
        warnings.warn(f"{path}: {failed} of {len(rows)} references could not be parsed; their fields are None",
                      stacklevel=2)
    return out
