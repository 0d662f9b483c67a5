"""Negative evidence: two rules that veto a pair whose references disagree on
who they are, although their other tokens (an address) agree (washline).

Why: DWM's comparators (Talburt et al. 2020) and washline's WeightedTokenMatch
only count *agreement*. On person data the classic false match is the
co-resident – a spouse, child or flat-mate: same street, number, city and
often surname, but another given name and another SSN. Positive evidence alone
cannot tell that from the same person (an error analysis of S8P's false pairs
at the default profile: 226 of 248 false links above mu were such pairs).
Record-linkage systems handle it with disagreement weights
(Fellegi & Sunter 1969: a disagreeing identifier carries a large negative log
weight; Splink's comparison levels do the same). washline's inputs are
schema-agnostic token bags, so the rules find the fields by shape:

* **leading name tokens** – the tokens before the first token that contains a
  digit (a person reference starts with its name: DWM sample layouts, FEBRL,
  washline's curated rows). Its first token is taken as the given name
  when the name has at least two tokens (``JOHN SMITH``; a lone ``SMITH``
  says nothing about a given name).
* **identifier tokens** – all-digit tokens of at least ``identifierMinLen``
  digits (after ``CompressNbr``/``stripLeadingZeros``: an SSN ``010-52-5974``
  is ``10525974``; phones too) that are *not* a valid ``YYYYMMDD`` date
  (1800–2099): a date of birth is shared by far more people and is written in
  too many forms to be an identifier.

Rules (each on/off in the profile):

* ``givenNameConflictRule`` – veto when both given names are present and
  conflict (below) and no long number (identifier or date, ≥
  ``identifierMinLen`` digits) agrees within ``identifierMaxEdits``
  Damerau–Levenshtein edits. Given names conflict when
  - both have ≥ 2 letters: Jaro–Winkler similarity < ``givenNameMinSimilarity``,
    different first letters (most nicknames and typos keep the first letter:
    JIM/JAMES, PETE/PETER), no nickname relation joins them (``same_nickname_group``), and
    neither matches (JW ≥ 0.85) one of the other reference's later name tokens
    (swapped given name and surname);
  - one is an initial: no name token of the other reference starts with it;
  - both are initials: they differ and neither occurs among the other's name tokens.
* ``surnameConflictRule`` – veto when the name tokens after the given name
  disagree (``surname_conflict``: none of one within Jaro–Winkler 0.8 of a
  name token of the other) and no long number agrees within
  ``identifierMaxEdits`` edits: two people of one given name in one city.
* ``identifierConflictRule`` – veto when both references carry identifier
  tokens, no long number (identifier or date) of one is within
  ``identifierMaxEdits`` edits of one of the other's, and the given names do
  not agree (both ≥ 2 letters with JW ≥ 0.85). Given-name or date-of-birth
  agreement lifts the veto because data sets such as FEBRL replace a
  duplicate's SSN by another value.

And one positive rule, the mirror image of ``identifierConflictRule``:

* ``identifierMatchRule`` – when the given names agree (both ≥ 2 letters,
  JW ≥ 0.85 or one nickname group) and an identifier of one reference is
  within ``identifierMatchMaxEdits`` edits of an identifier of the other, the
  pair scores 1.0 (Fellegi–Sunter: agreement on a rare identifier outweighs
  any disagreement of the address). Error analysis of S8P's missed pairs: people
  who moved house keep name and SSN, but 6–10 new address tokens drag every
  token-bag score below mu. With ``identifierMatchInitials`` a name part that
  gives initials instead of a given name also counts when its initials and
  its surname agree with the other name part (``initials_agree``): the same
  error analysis (2026-12-05, 67c903d) found 110 of S8P's 354 missed pairs sharing
  surname and SSN (within one edit) across a move, 68 of them with an
  initial or no given name on one side.

String distances come from rapidfuzz (``JaroWinkler``, ``DamerauLevenshtein``).
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd
from pyspark.sql import functions as F
from rapidfuzz.distance import DamerauLevenshtein, JaroWinkler

#: Common English hypocorisms whose first letter differs from the formal name
#: (a hand-picked subset of the classic lists, e.g. the public "nicknames"
#: collection by C. Northern / Old Dominion University, and genealogy
#: nickname tables). Nicknames that keep the first letter (JIM, JAMIE,
#: PETE, MAMIE ...) need no entry: the first-letter test already keeps them.
NICKNAMES: dict[str, tuple[str, ...]] = {
    "ROBERT": ("BOB", "BOBBY", "ROB", "ROBBIE", "BERT"),
    "WILLIAM": ("BILL", "BILLY", "WILL", "WILLIE", "LIAM"),
    "RICHARD": ("DICK", "RICK", "RICH", "RICKY"),
    "EDWARD": ("TED", "TEDDY", "NED", "ED", "EDDIE"),
    "THEODORE": ("TED", "TEDDY", "THEO"),
    "HENRY": ("HANK", "HARRY"),
    "JOHN": ("JACK", "JOHNNY", "JON"),
    "CHARLES": ("CHUCK", "CHARLIE", "CHAS"),
    "MARGARET": ("PEGGY", "PEG", "MAGGIE", "MEG", "GRETA", "DAISY"),
    "MARY": ("POLLY", "MOLLY", "MAE", "MAMIE"),
    "MARTHA": ("PATSY", "MATTIE"),
    "SARAH": ("SALLY", "SADIE"),
    "ELIZABETH": ("BETTY", "BETH", "LIZ", "LIZZIE", "LIBBY", "BESS", "BESSIE", "ELIZA", "LISA"),
    "ANTHONY": ("TONY",),
    "ANTONIO": ("TONY",),
    "ALEXANDER": ("SANDY", "ALEX", "XANDER"),
    "ALEXANDRA": ("SANDY", "SANDRA", "ALEX", "LEXI"),
    "FRANCISCO": ("PACO", "PANCHO", "FRANK"),
    "JOSE": ("PEPE",),
    "ANNE": ("NANCY", "NAN", "ANNIE"),
    "ANN": ("NANCY", "NAN", "ANNIE"),
    "KATHERINE": ("KATE", "KATHY", "KITTY", "CATHY"),
    "CATHERINE": ("KATE", "KATHY", "KITTY", "CATHY"),
    "CHRISTOPHER": ("KIT", "CHRIS"),
    "CHRISTINE": ("KRIS", "TINA", "CHRIS"),
    "PATRICIA": ("TRISH", "TRICIA", "PATTY", "PAT"),
    "DOROTHY": ("DOT", "DOTTY", "DOLLY"),
    "HELEN": ("NELL", "NELLIE"),
    "ELEANOR": ("NELL", "NELLIE", "ELLIE"),
    "ISABEL": ("BELLA", "IZZY", "ISA"),
    "LAWRENCE": ("LARRY",),
    "ROGER": ("HODGE",),
    "JAMES": ("JIM", "JIMMY", "JAMIE"),
    "GEOFFREY": ("JEFF",),
    "JENNIFER": ("JENNY", "JEN"),
    "VIRGINIA": ("GINNY", "GINGER"),
    "SUSAN": ("SUE", "SUSIE", "SUZY"),
    "ABIGAIL": ("ABBY", "GAIL"),
    "ZACHARY": ("ZACK",),
}


def _nickname_groups() -> dict[str, frozenset]:
    groups: dict[str, set] = {}
    for formal, nicks in NICKNAMES.items():
        for name in (formal, *nicks):
            groups.setdefault(name, set()).add(formal)
    return {k: frozenset(v) for k, v in groups.items()}


def _library_pairs() -> frozenset:
    """Unordered (name, nickname) pairs, upper case, of the ``nicknames`` package (C. Northern's
    public collection: about 2,550 distinct pairs of English given names). Only direct relations: two
    nicknames of one formal name (ERIN and RON, both of AARON) are not a pair, since the
    collection's groups are wide and a couple or two siblings can carry such names."""
    from nicknames import NickNamer

    pairs = set()
    for formal, nicks in NickNamer().nickname_lookup.items():
        for nick in nicks:
            a, b = formal.strip().upper(), nick.strip().upper()
            if a != b:
                pairs.add((a, b) if a < b else (b, a))
    return frozenset(pairs)


_GROUPS = _nickname_groups()
_LIBRARY_PAIRS = _library_pairs()


def same_nickname_group(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` (upper case) are one formal name and its nickname in the
    ``nicknames`` package's collection (``GERALD``/``JERRY``), or in one group of ``NICKNAMES``,
    which also pairs two nicknames of its formal name (``BOB``/``ROBERT``, ``BOB``/``ROB``)."""
    ga, gb = _GROUPS.get(a), _GROUPS.get(b)
    if ga and gb and ga & gb:
        return True
    return ((a, b) if a < b else (b, a)) in _LIBRARY_PAIRS


def _is_number(t: str) -> bool:
    """``t`` is all ASCII digits (``^[0-9]+$``), as in the Spark forms (``evidence_frame``,
    the tokenizer's numbers). ``str.isdigit`` is not: it is also true for other digits the
    tokenizer keeps in tokens (``１２３``, ``١٢٣``, ``²²``), which the Spark forms treat as
    words, and ``int`` refuses superscripts."""
    return t.isascii() and t.isdigit()


def _has_digit(t: str) -> bool:
    """``t`` holds an ASCII digit (Spark: ``rlike '[0-9]'``)."""
    return any("0" <= c <= "9" for c in t)


#: the pair scorer asks the same per-token questions pair after pair; the answers are
#: pure functions of the tokens, cached per Python worker (65,536 entries each: a few MB)
@lru_cache(maxsize=1 << 16)
def is_date_token(t: str) -> bool:
    """True for an 8-digit ``YYYYMMDD`` token with year 1800–2099, month 1–12, day 1–31."""
    if len(t) != 8 or not _is_number(t):
        return False
    y, m, d = int(t[:4]), int(t[4:6]), int(t[6:])
    return 1800 <= y <= 2099 and 1 <= m <= 12 and 1 <= d <= 31


def leading_names(tokens, min_len: int = 7) -> list[str]:
    """The reference's name part: the tokens before the first token that
    contains a digit, after skipping identifiers written first (all-digit
    tokens of at least ``min_len`` digits: ``123456789 JOHN SMITH 12 ELM ST``
    gives ``JOHN SMITH``). A short number first (a house number: an address
    with no name) still means no name part."""
    toks = list(tokens if tokens is not None else ())
    i = 0
    while i < len(toks) and len(toks[i]) >= min_len and _is_number(toks[i]):
        i += 1
    out = []
    for t in toks[i:]:
        if _has_digit(t):
            break
        out.append(t)
    return out


def street_key(tokens, min_len: int = 7) -> list[str]:
    """The reference's street address key: ``[house number, next token]``.

    The house number is the first token after the name part (``leading_names``)
    that contains a digit, when it is not a long number (an identifier of
    ``min_len`` digits or more), and the next token is not all digits (the street
    name: ``5247 MONOGRAM``). Empty otherwise (``JUSTIN WARREN LANCASTER CA
    93539``: the first number is a zip with nothing after it). By position and
    shape only, as ``leading_names``; the Spark form is ``evidence_frame``.
    """
    toks = list(tokens if tokens is not None else ())
    i = 0
    while i < len(toks) and len(toks[i]) >= min_len and _is_number(toks[i]):
        i += 1
    while i < len(toks) and not _has_digit(toks[i]):
        i += 1
    if i + 1 >= len(toks):
        return []
    num, nxt = toks[i], toks[i + 1]
    if (len(num) >= min_len and _is_number(num)) or _is_number(nxt):
        return []
    return [num, nxt]


def same_street(street_a, street_b) -> bool:
    """Two ``street_key`` values name one street address: the same house number
    and street tokens that agree (equal, one a prefix of the other: ``E`` /
    ``ECHURCH``, or Jaro–Winkler ≥ ``SURNAME_MIN_SIMILARITY``: typos)."""
    a = list(street_a if street_a is not None else ())
    b = list(street_b if street_b is not None else ())
    if len(a) != 2 or len(b) != 2 or a[0] != b[0]:
        return False
    x, y = a[1], b[1]
    return (x.startswith(y) or y.startswith(x)
            or JaroWinkler.normalized_similarity(x, y) >= SURNAME_MIN_SIMILARITY)


def long_numbers(tokens, min_len: int = 7) -> list[str]:
    """All-digit tokens of at least ``min_len`` digits (identifiers and dates)."""
    return [t for t in (tokens if tokens is not None else ()) if len(t) >= min_len and _is_number(t)]


@lru_cache(maxsize=1 << 16)
def _number_pair_agrees(x: str, y: str, max_edits: int) -> bool:
    if DamerauLevenshtein.distance(x, y, score_cutoff=max_edits) <= max_edits:
        return True
    # a local number and the same number with its area code (4544412 / 2174544412)
    short, long_ = (x, y) if len(x) < len(y) else (y, x)
    return len(short) >= 7 and long_.endswith(short)


def _numbers_agree(a, b, max_edits: int) -> bool:
    return any(_number_pair_agrees(x, y, max_edits) for x in a for y in b)


def _given_conflict_lifted(na, nb, max_edits: int, mode: str) -> bool:
    """Does a long number shared by two references lift their given-name conflict?

    ``mode`` is the profile's ``givenNameConflictLift``: ``number`` – any two
    long numbers (identifiers or dates) within ``max_edits`` edits;
    ``identifier`` – two identifiers (not ``YYYYMMDD`` dates) within
    ``max_edits`` edits; ``exact_identifier`` – one identifier held by both.
    """
    if not (na and nb):
        return False
    if mode == "number":
        return _numbers_agree(na, nb, max_edits)
    ia = [t for t in na if not is_date_like(t)]
    ib = [t for t in nb if not is_date_like(t)]
    if not (ia and ib):
        return False
    if mode == "exact_identifier":
        return bool(set(ia) & set(ib))
    return _numbers_agree(ia, ib, max_edits)


def _comparable(a, b) -> bool:
    """Two identifier lists hold numbers of one shape (the same number of
    digits, or one number the suffix of the other: a phone with or without
    its area code), so their disagreement means something. An SSN in one
    reference and a phone in the other say nothing about each other.

    Lengths one digit apart are not one shape: on messy person data nearly
    every such veto of a true pair was a 9-digit SSN against a 10-digit phone
    (error analysis of 2026-12-01, a5b7846; benchmarks/README.md); an SSN that lost its
    leading zero (8 digits) still *agrees* with itself (one edit)."""
    return any(len(x) == len(y) or x.endswith(y) or y.endswith(x) for x in a for y in b)


def given_name_conflict(lead_a, lead_b, min_similarity: float = 0.7) -> bool:
    """Do the given names of two name parts (``leading_names``) conflict? See the module doc."""
    a = list(lead_a if lead_a is not None else ())
    b = list(lead_b if lead_b is not None else ())
    if len(a) < 2 or len(b) < 2:
        return False
    ga, gb = a[0], b[0]
    if len(ga) == 1 and len(gb) == 1:
        return ga != gb and ga not in b and gb not in a
    if len(ga) == 1 or len(gb) == 1:
        init, other = (ga, b) if len(ga) == 1 else (gb, a)
        return not any(t[0] == init for t in other)
    if ga[0] == gb[0] or JaroWinkler.normalized_similarity(ga, gb) >= min_similarity:
        return False
    if same_nickname_group(ga, gb):
        return False
    if any(JaroWinkler.normalized_similarity(ga, t) >= 0.85 for t in b[1:]):
        return False
    if any(JaroWinkler.normalized_similarity(gb, t) >= 0.85 for t in a[1:]):
        return False
    return True


def given_names_agree(lead_a, lead_b) -> bool:
    """Both given names have ≥ 2 letters and Jaro–Winkler ≥ 0.85 (or are nickname-equivalent)."""
    if lead_a is None or lead_b is None or len(lead_a) == 0 or len(lead_b) == 0:
        return False
    ga, gb = lead_a[0], lead_b[0]
    if len(ga) < 2 or len(gb) < 2:
        return False
    return JaroWinkler.normalized_similarity(ga, gb) >= 0.85 or same_nickname_group(ga, gb)


GENERATION_CLASSES: dict[str, str] = {
    "JR": "2", "JUN": "2", "JUNIOR": "2", "II": "2", "2ND": "2",
    "SR": "1", "SEN": "1", "SENIOR": "1",
    "III": "3", "3RD": "3", "IV": "4", "4TH": "4",
}
"""Generation suffixes (name part only) and the generation they name: JR and
II are the second of a name, SR the first (US naming convention)."""


def generation_conflict(lead_a, lead_b) -> bool:
    """Both name parts carry a generation suffix (``GENERATION_CLASSES``) and they differ (JR vs SR)."""
    ga = {GENERATION_CLASSES[t] for t in (lead_a if lead_a is not None else ()) if t in GENERATION_CLASSES}
    gb = {GENERATION_CLASSES[t] for t in (lead_b if lead_b is not None else ()) if t in GENERATION_CLASSES}
    return bool(ga and gb and not (ga & gb))


#: two surname tokens at or above this Jaro–Winkler similarity agree (typos,
#: dropped or doubled letters: BRANDHL/BRANDAHL 0.97, RTOS/RIOS 0.85, THOLOR/HOLER
#: 0.82; other surnames: ROBERTSON/PETERSON 0.75, KELSEN/NELSON 0.78)
SURNAME_MIN_SIMILARITY = 0.8


def _name_tokens_agree(x: str, y: str) -> bool:
    if x == y:
        return True
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    # a dropped first letter (IGUEROA) or a glued field (PELLEYSPRINGFIELD)
    if len(short) >= 4 and short in long_:
        return True
    return JaroWinkler.normalized_similarity(x, y) >= SURNAME_MIN_SIMILARITY


def surname_conflict(lead_a, lead_b) -> bool:
    """Do the other name tokens of two name parts (``leading_names``) conflict?

    Each name part needs its given name (first token) and at least one more
    token of two letters or more that is not a generation suffix
    (``GENERATION_CLASSES``). They conflict when no such later token of one
    agrees with any token of the other's whole name part, and vice versa
    (agree: equal, Jaro–Winkler ≥ ``SURNAME_MIN_SIMILARITY``, or the shorter of
    ≥ 4 letters inside the longer). Comparing against the whole other name part
    keeps a swapped given name and surname (``SMITH JOHN``) agreeing; tokens of
    a city written before any number (``ALAN ROBERTSON LAS VEGAS``) can only
    make two name parts agree, never conflict.

    Why: the false merges left on messy person data at 100,000 references were
    people of one frequent given name in one city (``JUSTIN WARREN LANCASTER``
    and ``JUSTIN HENIAN LANCASTER``): given name, city and zip agree, which is
    enough weight among many references, and no rule looked at the surname.
    A disagreeing surname carries a large negative weight in Fellegi–Sunter
    models (Fellegi & Sunter 1969; Splink's name comparisons); as a veto it is
    lifted, like the given-name veto, when a long number agrees (a married
    name beside the maiden name with the same SSN or date of birth).
    """
    a = [t for t in (lead_a if lead_a is not None else ()) if len(t) >= 2 and t not in GENERATION_CLASSES]
    b = [t for t in (lead_b if lead_b is not None else ()) if len(t) >= 2 and t not in GENERATION_CLASSES]
    la = list(lead_a if lead_a is not None else ())
    lb = list(lead_b if lead_b is not None else ())
    if len(la) < 2 or len(lb) < 2:
        return False
    rest_a = [t for t in a if t != la[0]]
    rest_b = [t for t in b if t != lb[0]]
    if not rest_a or not rest_b:
        return False
    if any(_name_tokens_agree(x, y) for x in rest_a for y in b):
        return False
    if any(_name_tokens_agree(x, y) for x in rest_b for y in a):
        return False
    return True


@lru_cache(maxsize=1 << 16)
def date_readings(t: str) -> frozenset[str]:
    """The ``YYYYMMDD`` readings of an all-digit token that can be a full date.

    Accepted shapes (after ``CompressNbr``/``stripLeadingZeros``): 8 digits as
    ``YYYYMMDD``, ``MMDDYYYY`` or ``DDMMYYYY``, and 7 digits as ``MDDYYYY`` or
    ``DMMYYYY`` (a leading zero stripped). Years 1800–2099. Empty when the
    token is no date. Cached per token (a pure function of it; the pair
    scorer asks for the same tokens again and again).
    """
    out: set[str] = set()
    if not _is_number(t) or len(t) not in (7, 8):
        return frozenset()

    def ok(y: str, m: str, d: str) -> None:
        if 1800 <= int(y) <= 2099 and 1 <= int(m) <= 12 and 1 <= int(d) <= 31:
            out.add(f"{y}{int(m):02d}{int(d):02d}")

    if len(t) == 8:
        ok(t[:4], t[4:6], t[6:])
        ok(t[4:], t[:2], t[2:4])
        ok(t[4:], t[2:4], t[:2])
    else:
        ok(t[3:], t[:1], t[1:3])
        ok(t[3:], t[1:3], t[:1])
    return frozenset(out)


@lru_cache(maxsize=1 << 16)
def is_date_like(t: str) -> bool:
    """True when ``t`` reads as a full date in one of the shapes of ``date_readings``."""
    return is_date_token(t) or bool(date_readings(t))


#: years between two dates of birth that make two people of one name a generation apart
GENERATION_YEARS = 15


def date_of_birth_conflict(nums_a, nums_b) -> bool:
    """Each reference holds exactly one full date (``date_readings``), no
    reading of one is within one Damerau–Levenshtein edit of a reading of the
    other (a digit typo or a transposition keeps a date of birth the same),
    and every pair of readings is at least ``GENERATION_YEARS`` years apart
    (a junior and a senior; a mistyped year of the same person is closer).

    One date per reference is taken as its date of birth; a reference with
    several dates (an event date beside the birth date) says nothing here.
    """
    da = [r for r in (date_readings(t) for t in (nums_a if nums_a is not None else ())) if r]
    db = [r for r in (date_readings(t) for t in (nums_b if nums_b is not None else ())) if r]
    if len(da) != 1 or len(db) != 1:
        return False
    if any(DamerauLevenshtein.distance(x, y, score_cutoff=1) <= 1 for x in da[0] for y in db[0]):
        return False
    # a generation apart: a date mangled by more than one edit (FEBRL swaps and
    # retypes digits) still names the same person when the years are close
    return min(abs(int(x[:4]) - int(y[:4])) for x in da[0] for y in db[0]) >= GENERATION_YEARS


def common_given_name_conflict(lead_a, lead_b, std_a: bool, std_b: bool, min_similarity: float = 0.7) -> bool:
    """Two *standard* given names (both frequent tokens of the input, so neither
    is a typo) that share a first letter but are different names: Jaro–Winkler
    below ``min_similarity``, not one nickname group, neither a prefix of the
    other (JOHN/JAMES, twins or siblings; not JIM/JAMES, ROB/ROBERT)."""
    if not (std_a and std_b):
        return False
    a = list(lead_a if lead_a is not None else ())
    b = list(lead_b if lead_b is not None else ())
    if len(a) < 2 or len(b) < 2:
        return False
    ga, gb = a[0], b[0]
    if len(ga) < 3 or len(gb) < 3 or ga == gb or ga[0] != gb[0]:
        return False
    if ga.startswith(gb) or gb.startswith(ga) or same_nickname_group(ga, gb):
        return False
    if JaroWinkler.normalized_similarity(ga, gb) >= min_similarity:
        return False
    # swapped given name and surname
    if gb in a[1:] or ga in b[1:]:
        return False
    return True


def conflicting(lead_a, nums_a, lead_b, nums_b, profile, shared_a=None, shared_b=None,
                std_a: bool = False, std_b: bool = False, street_a=None, street_b=None) -> bool:
    """True when a profile's negative-evidence rule vetoes the pair.

    Args:
        lead_a, lead_b: the references' leading name tokens (``leading_names``).
        nums_a, nums_b: their all-digit tokens with ≥ ``identifierMinLen`` digits.
        profile: the rule switches and thresholds (``givenNameConflictRule``,
            ``identifierConflictRule``, ``surnameConflictRule``, ``householdIdentifierRule``,
            ``dateOfBirthConflictRule``, ``generationConflictRule``,
            ``commonGivenNameRule``, ``identifierMaxEdits``, ``givenNameMinSimilarity``).
        shared_a, shared_b: the long numbers of each reference that are
            household identifiers (``shared_identifiers``); with
            ``householdIdentifierRule`` they never count as personal evidence.
        std_a, std_b: the given name (first name token) is a standard token
            (frequency ≥ ``minFreqStdToken``), for ``commonGivenNameRule``.
        street_a, street_b: the references' ``street_key``; the same street
            address lifts ``surnameConflictRule`` (a married name at the
            address where the maiden name was written).
    """
    na = list(nums_a if nums_a is not None else ())
    nb = list(nums_b if nums_b is not None else ())
    if getattr(profile, "householdIdentifierRule", False):
        shared = set(shared_a if shared_a is not None else ()) | set(shared_b if shared_b is not None else ())
        if shared:
            na = [t for t in na if t not in shared]
            nb = [t for t in nb if t not in shared]
    k = profile.identifierMaxEdits
    given_conflict = profile.givenNameConflictRule and (
        given_name_conflict(lead_a, lead_b, profile.givenNameMinSimilarity)
        or (getattr(profile, "commonGivenNameRule", False)
            and common_given_name_conflict(lead_a, lead_b, std_a, std_b, profile.givenNameMinSimilarity))
    )
    if given_conflict and not _given_conflict_lifted(na, nb, k, getattr(profile, "givenNameConflictLift", "number")):
        return True
    if (getattr(profile, "surnameConflictRule", False) and not given_conflict
            and surname_conflict(lead_a, lead_b) and not same_street(street_a, street_b)
            and not (na and nb and _numbers_agree(na, nb, k))):
        return True
    if getattr(profile, "generationConflictRule", False) and generation_conflict(lead_a, lead_b):
        return True
    ia = [t for t in na if not is_date_like(t)]
    ib = [t for t in nb if not is_date_like(t)]
    if getattr(profile, "dateOfBirthConflictRule", False) and date_of_birth_conflict(nums_a, nums_b):
        # a junior and a senior: same name and address, another date of birth a
        # generation away (Fellegi-Sunter: a disagreeing date of birth weighs
        # heavily) – unless an identifier is within identifierMatchMaxEdits
        # Damerau-Levenshtein edits of one of the other (data sets such as FEBRL
        # replace a duplicate's date of birth by another value, and may mistype
        # its SSN as well); a local number inside a longer one (a landline with
        # and without its area code) does not lift it: a junior and a senior
        # share the landline
        k_match = getattr(profile, "identifierMatchMaxEdits", 0)
        if not (ia and ib and any(DamerauLevenshtein.distance(x, y, score_cutoff=k_match) <= k_match
                                  for x in ia for y in ib)):
            return True
    if profile.identifierConflictRule:
        # no long number agrees (identifiers, and dates: a shared date of birth lifts the veto)
        if (ia and ib and _comparable(ia, ib) and not _numbers_agree(na, nb, k)
                and not given_names_agree(lead_a, lead_b)):
            return True
    return False


#: a name token seen first in at least this share of its name parts (two tokens or more) is a
#: given name (``given_name_first``): the majority of the input's layouts put it first
GIVEN_NAME_FIRST_RATE = 0.5


def given_name_first(features):
    """Move each reference's given name to the front of its name part, learnt from the data.

    Layouts differ row by row (``JOHN A SMITH``, ``SMITH, JOHN A``,
    ``SMITH JOHN``), so the first name token is not always the given name. A
    token's *first-position rate* is the share of its occurrences in name
    parts of two or more tokens where it comes first. Over a whole input
    given names come first far more often than surnames (most layouts put
    them first). A first token whose rate is at least ``GIVEN_NAME_FIRST_RATE``
    stays first: a middle name that is also a given name (``KEVIN SEAN
    OLIVER``) must not displace it. Otherwise, among the second and third
    name tokens (two letters or more), the earliest with that rate is the
    given name (``OLIVER, KEVIN SEAN`` gives ``KEVIN``), failing that the
    token of the highest rate (ties: the earlier); it moves to the front and
    the other tokens keep their order. A name
    part that starts with an initial is left as it is (``J SMITH``). Schema-
    agnostic: no column names, only positions and counts over the input
    (with ``link_references(frequencies=…)``, over the references linked).

    Args:
        features: DataFrame (``record_id``, ``lead`` array<string>, …).
    Returns:
        the same columns, ``lead`` reordered.
    """
    named = features.filter(F.size("lead") >= 2)
    rate = (
        named.select(F.posexplode("lead").alias("pos", "tok"))
        .groupBy("tok")
        .agg(F.avg((F.col("pos") == 0).cast("double")).alias("rate"))
    )
    cand = (
        named.filter(F.length(F.col("lead")[0]) > 1)
        .select("record_id", F.posexplode(F.slice("lead", 1, 3)).alias("pos", "tok"))
        .filter(F.length("tok") >= 2)
        .join(rate, "tok")
    )
    # A first token seen first in most of its name parts is a given name and stays (KEVIN SEAN
    # OLIVER: SEAN, a middle name here, may be first more often than KEVIN, but KEVIN is no
    # surname). Otherwise the earliest later token seen first in most of its name parts is the
    # given name (OLIVER, KEVIN SEAN -> KEVIN); failing that, the token of the highest rate.
    first = GIVEN_NAME_FIRST_RATE
    best = cand.groupBy("record_id").agg(
        F.max(F.when(F.col("pos") == 0, F.col("rate"))).alias("_r0"),
        F.min(F.when(F.col("rate") >= first, F.struct("pos", "tok")))["tok"].alias("_early"),
        F.max(F.struct("rate", (-F.col("pos")).alias("npos"), "tok"))["tok"].alias("_top"),
    ).select("record_id", F.when(F.col("_r0") >= first, F.lit(None).cast("string"))
             .otherwise(F.coalesce("_early", "_top")).alias("_given"))
    cols = [c for c in features.columns if c != "lead"]
    g = F.col("_given")
    return features.join(best, "record_id", "left").select(
        *cols,
        F.when(g.isNotNull() & (g != F.col("lead")[0]),
               F.concat(F.array(g), F.array_remove("lead", g))).otherwise(F.col("lead")).alias("lead"),
    ).select(*features.columns)


def shared_identifiers(features, profile):
    """Household identifiers: long numbers held by references whose given names conflict.

    A phone line or a date of birth shared by a couple, twins or flatmates is
    evidence of a household, not of a person, and must neither lift a
    given-name veto nor make an identifier match. Found by shape and data
    alone: a long number (≥ ``identifierMinLen`` digits) is *shared* when the
    references holding it carry at least two given names that conflict
    (``given_name_conflict`` on the leading names; at most 50 distinct given
    names per number are looked at).

    Args:
        features: DataFrame (``record_id``, ``lead`` array<string>, ``nums`` array<string>).
    Returns:
        DataFrame (``record_id``, ``shared`` array<string>) for the references
        holding at least one shared number.
    """
    ex = features.filter(F.size("lead") >= 2).select(
        "record_id", F.col("lead"), F.explode(F.array_distinct("nums")).alias("num")
    )
    per = ex.groupBy("num").agg(
        F.slice(F.array_sort(F.collect_set("lead")), 1, HOUSEHOLD_MAX_NAMES).alias("leads"))
    per = per.filter(F.size("leads") >= 2)
    sim = profile.givenNameMinSimilarity

    @F.pandas_udf("boolean")
    def any_conflict(leads: pd.Series) -> pd.Series:
        return pd.Series([_names_conflict([list(x) for x in ls], sim) for ls in leads], dtype=bool)

    shared_nums = per.filter(any_conflict("leads")).select("num")
    return (
        features.select("record_id", F.explode(F.array_distinct("nums")).alias("num"))
        .join(shared_nums, "num")
        .groupBy("record_id")
        .agg(F.array_sort(F.collect_list("num")).alias("shared"))
    )


#: distinct name parts per long number that the household rule compares (the first ones, sorted)
HOUSEHOLD_MAX_NAMES = 50


def _names_conflict(leads, sim: float) -> bool:
    """Do two of ``leads`` (name parts) have given names that conflict (``given_name_conflict``)?"""
    return any(given_name_conflict(leads[i], leads[j], sim)
               for i in range(len(leads)) for j in range(i + 1, len(leads)))


def needs_household_numbers(profile) -> bool:
    """Does a rule of ``profile`` read the household identifiers (``shared``)?
    ``householdIdentifierRule``, and the initials path of ``identifierMatchRule``."""
    return bool(getattr(profile, "householdIdentifierRule", False) or (
        getattr(profile, "identifierMatchRule", False) and getattr(profile, "identifierMatchInitials", False)))


def household_numbers(record_ids, leads, nums, profile) -> dict:
    """``shared_identifiers`` on the driver, for an input small enough to be
    collected (``hdwm.local``): record_id → the sorted household identifiers it
    holds, for the references holding one. The same rule, step for step: a
    long number is shared when the distinct name parts (``lead``, two tokens
    or more) of the references holding it, sorted, hold two among their first
    50 whose given names conflict (``given_name_conflict``).

    Args:
        record_ids, leads, nums: equal-length sequences (``comparison_tokens``'
            ``record_id``, ``lead``, ``nums``; a lead or nums may be None).
    """
    per: dict[str, set] = {}
    for lead, ns in zip(leads, nums):
        if lead is None or len(lead) < 2:
            continue
        key = tuple(lead)
        for n in set(ns if ns is not None else ()):
            per.setdefault(n, set()).add(key)
    sim = profile.givenNameMinSimilarity
    # Spark: slice(array_sort(collect_set(lead)), 1, HOUSEHOLD_MAX_NAMES)
    shared = {n for n, held in per.items()
              if len(held) >= 2 and _names_conflict([list(x) for x in sorted(held)[:HOUSEHOLD_MAX_NAMES]], sim)}
    out = {}
    for rid, ns in zip(record_ids, nums):
        mine = sorted(set(ns if ns is not None else ()) & shared)
        if mine:
            out[rid] = mine
    return out


def evidence_frame(tokens, min_len: int = 7, tokens_col: str = "tokens"):
    """DataFrame (``record_id``, ``lead``, ``nums``, ``street``) from the
    references' full token arrays (built-in SQL only; the Python forms are
    ``leading_names``, ``long_numbers`` and ``street_key``): ``lead`` =
    ``leading_names`` (identifiers written first skipped, then the tokens
    before the first one containing a digit), ``nums`` = all-digit tokens of
    ≥ ``min_len`` digits, ``street`` = ``street_key`` (array of 0 or 2 strings).

    Args:
        tokens: DataFrame with ``record_id`` and ``tokens_col`` (array<string>).

    The positions the three share (where the name part starts, where its
    first number is) are computed once each, as columns of their own, in
    successive projections: written as one nested expression, every use
    repeated the array scans, and at 100,000 references the staged form took
    1.1–1.2 s against 1.9–3.3 s (2026-12-05, f61b4be; Spark collapses two projections
    only when no costly expression would be computed twice).
    """
    ident = f"x rlike '^[0-9]{{{int(min_len)},}}$'"
    df = tokens.select("record_id", F.col(tokens_col).alias("_t"))
    # identifiers written before the name are skipped (leading_names): the name part starts at _start
    df = df.select("record_id", "_t", F.expr(f"array_position(transform(_t, x -> NOT ({ident})), true)").alias("_s"))
    df = df.select("record_id", "_t", F.expr(
        "CASE WHEN _s = 0 THEN slice(_t, 1, 0) ELSE slice(_t, _s, size(_t)) END").alias("_rest"))
    # 1-based position of the first token of the rest that holds a digit (0: none)
    df = df.select("record_id", "_t", "_rest",
                   F.expr("CAST(array_position(transform(_rest, x -> x rlike '[0-9]'), true) AS INT)").alias("_fd"))
    lead = F.expr("CASE WHEN _fd = 0 THEN _rest ELSE slice(_rest, 1, _fd - 1) END")
    nums = F.expr(f"filter(_t, x -> {ident})")
    # street_key: the first digit token after the name part and the token after it, when that one
    # holds a letter and the first is no long number; tokens hold letters and digits only (the
    # tokenizer splits on the rest), so "holds a letter" = not all digits
    num, nxt = "element_at(_rest, _fd)", "element_at(_rest, _fd + 1)"
    street = F.expr(
        f"CASE WHEN _fd > 0 AND size(_rest) > _fd AND NOT ({num} rlike '^[0-9]{{{int(min_len)},}}$')"
        f" AND NOT ({nxt} rlike '^[0-9]+$') THEN array({num}, {nxt}) ELSE CAST(array() AS array<string>) END")
    return df.select("record_id", lead.alias("lead"), nums.alias("nums"), street.alias("street"))


def _initials_side_agrees(short, other) -> bool:
    """``short`` (a name part that starts with an initial) agrees with ``other``:
    it holds a token of two letters or more (not a generation suffix) that
    agrees with one of ``other``'s (``_name_tokens_agree``: the surname), and
    each of its one-letter tokens is the first letter of one of ``other``'s
    remaining tokens (not of the surname: ``S SMITH`` is no ``J SMITH``). When
    ``other`` starts with a given name (two letters or more), the surname is
    looked for after it."""
    words = [t for t in short if len(t) >= 2 and t not in GENERATION_CLASSES]
    # the other's given name (a first token of two letters or more) is no surname: M JAMES is no JAMES MILLER
    later = other[1:] if len(other[0]) >= 2 else other
    surnames = {y for y in later if len(y) >= 2 and y not in GENERATION_CLASSES
                and any(_name_tokens_agree(x, y) for x in words)}
    if not surnames:
        return False
    firsts = {t[0] for t in other if t and t not in surnames}
    return all(t in firsts for t in short if len(t) == 1)


def initials_agree(lead_a, lead_b) -> bool:
    """One name part gives an initial where a given name would be (its first
    token has one letter: ``C ROY`` / ``BRYANT C ROY``, ``S L TREZONA`` /
    ``L TREZONA``), every initial of it is the first letter of a token of the
    other name part, and its surname agrees with a token of the other
    (Jaro–Winkler ≥ ``SURNAME_MIN_SIMILARITY``, or the shorter of ≥ 4 letters
    inside the longer). Two full given names never agree here
    (``given_names_agree`` decides those): an initial is the absence of a
    given name, not a different one."""
    if lead_a is None or lead_b is None or len(lead_a) == 0 or len(lead_b) == 0:
        return False
    a, b = list(lead_a), list(lead_b)
    if len(a[0]) == 1 and _initials_side_agrees(a, b):
        return True
    return len(b[0]) == 1 and _initials_side_agrees(b, a)


def identifier_match(lead_a, nums_a, lead_b, nums_b, max_edits: int = 1, shared_a=None, shared_b=None,
                     initials: bool = False, household_a=None, household_b=None) -> bool:
    """Given names agree (``given_names_agree``) and two identifiers (long
    numbers that are not ``YYYYMMDD`` dates, nor household identifiers listed
    in ``shared_a``/``shared_b``) are within ``max_edits`` edits.

    With ``initials``, an initial that ``initials_agree`` with the other name
    part also counts, but only through an identifier that is no household
    number (``household_a``/``household_b``: ``shared_identifiers``, a number
    held by references whose given names conflict): ``J SMITH`` of a landline
    that ``JANE SMITH`` and ``JOHN SMITH`` both write could be either.
    """
    shared = set(shared_a if shared_a is not None else ()) | set(shared_b if shared_b is not None else ())
    ia = [t for t in (nums_a if nums_a is not None else ()) if not is_date_like(t) and t not in shared]
    ib = [t for t in (nums_b if nums_b is not None else ()) if not is_date_like(t) and t not in shared]
    if not (ia and ib and _numbers_agree(ia, ib, max_edits)):
        return False
    if given_names_agree(lead_a, lead_b):
        return True
    if not (initials and initials_agree(lead_a, lead_b)):
        return False
    house = set(household_a if household_a is not None else ()) | set(household_b if household_b is not None else ())
    if house:
        ia = [t for t in ia if t not in house]
        ib = [t for t in ib if t not in house]
    return bool(ia and ib and _numbers_agree(ia, ib, max_edits))


def evidence_score(lead_a, nums_a, lead_b, nums_b, profile, shared_a=None, shared_b=None,
                   std_a: bool = False, std_b: bool = False, street_a=None, street_b=None):
    """The negative/positive evidence verdict for a pair: ``0.0`` (vetoed by
    ``conflicting``), ``1.0`` (``identifierMatchRule`` fires) or ``None``
    (no rule decides; the comparator's score stands)."""
    if conflicting(lead_a, nums_a, lead_b, nums_b, profile, shared_a, shared_b, std_a, std_b, street_a, street_b):
        return 0.0
    household_a, household_b = shared_a, shared_b  # the initials path never ties through these
    if not getattr(profile, "householdIdentifierRule", False):
        shared_a = shared_b = None
    if profile.identifierMatchRule and identifier_match(
        lead_a, nums_a, lead_b, nums_b, profile.identifierMatchMaxEdits, shared_a, shared_b,
        getattr(profile, "identifierMatchInitials", False), household_a, household_b,
    ):
        return 1.0
    return None
