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
    JIM/JAMES, PETE/PETER), neither is in the other's ``NICKNAMES`` group, and
    neither matches (JW ≥ 0.85) one of the other reference's later name tokens
    (swapped given name and surname);
  - one is an initial: no name token of the other reference starts with it;
  - both are initials: they differ and neither occurs among the other's name tokens.
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
  token-bag score below mu.

String distances come from rapidfuzz (``JaroWinkler``, ``DamerauLevenshtein``).
"""

from __future__ import annotations

from pyspark.sql import functions as F

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


_GROUPS = _nickname_groups()


def same_nickname_group(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` (upper case) are one formal name and its nickname,
    or two nicknames of the same formal name (``BOB``/``ROBERT``, ``BOB``/``ROB``)."""
    ga, gb = _GROUPS.get(a), _GROUPS.get(b)
    return bool(ga and gb and ga & gb)


def is_date_token(t: str) -> bool:
    """True for an 8-digit ``YYYYMMDD`` token with year 1800–2099, month 1–12, day 1–31."""
    if len(t) != 8 or not t.isdigit():
        return False
    y, m, d = int(t[:4]), int(t[4:6]), int(t[6:])
    return 1800 <= y <= 2099 and 1 <= m <= 12 and 1 <= d <= 31


def leading_names(tokens) -> list[str]:
    """Tokens before the first token that contains a digit (the reference's name part)."""
    out = []
    for t in tokens if tokens is not None else ():
        if any(c.isdigit() for c in t):
            break
        out.append(t)
    return out


def long_numbers(tokens, min_len: int = 7) -> list[str]:
    """All-digit tokens of at least ``min_len`` digits (identifiers and dates)."""
    return [t for t in (tokens if tokens is not None else ()) if len(t) >= min_len and t.isdigit()]


def _numbers_agree(a, b, max_edits: int) -> bool:
    from rapidfuzz.distance import DamerauLevenshtein

    return any(DamerauLevenshtein.distance(x, y, score_cutoff=max_edits) <= max_edits for x in a for y in b)


def given_name_conflict(lead_a, lead_b, min_similarity: float = 0.7) -> bool:
    """Do the given names of two name parts (``leading_names``) conflict? See the module doc."""
    from rapidfuzz.distance import JaroWinkler

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
    from rapidfuzz.distance import JaroWinkler

    if lead_a is None or lead_b is None or len(lead_a) == 0 or len(lead_b) == 0:
        return False
    ga, gb = lead_a[0], lead_b[0]
    if len(ga) < 2 or len(gb) < 2:
        return False
    return JaroWinkler.normalized_similarity(ga, gb) >= 0.85 or same_nickname_group(ga, gb)


def conflicting(lead_a, nums_a, lead_b, nums_b, profile) -> bool:
    """True when a profile's negative-evidence rule vetoes the pair.

    Args:
        lead_a, lead_b: the references' leading name tokens (``leading_names``).
        nums_a, nums_b: their all-digit tokens with ≥ ``identifierMinLen`` digits.
        profile: ``givenNameConflictRule``, ``identifierConflictRule``,
            ``identifierMaxEdits``, ``givenNameMinSimilarity``.
    """
    na = list(nums_a if nums_a is not None else ())
    nb = list(nums_b if nums_b is not None else ())
    k = profile.identifierMaxEdits
    if profile.givenNameConflictRule and given_name_conflict(lead_a, lead_b, profile.givenNameMinSimilarity):
        if not (na and nb and _numbers_agree(na, nb, k)):
            return True
    if profile.identifierConflictRule:
        ia = [t for t in na if not is_date_token(t)]
        ib = [t for t in nb if not is_date_token(t)]
        # no long number agrees (identifiers, and dates: a shared date of birth lifts the veto)
        if ia and ib and not _numbers_agree(na, nb, k) and not given_names_agree(lead_a, lead_b):
            return True
    return False


def evidence_columns(tokens_col: str = "tokens", min_len: int = 7):
    """Spark columns ``(lead, nums)`` computed from the reference's full token
    array (built-in SQL only): ``lead`` = tokens before the first one containing
    a digit, ``nums`` = all-digit tokens of ≥ ``min_len`` digits."""
    t = tokens_col
    first_digit = f"array_position(transform({t}, x -> x rlike '[0-9]'), true)"
    lead = F.expr(f"CASE WHEN {first_digit} = 0 THEN {t} ELSE slice({t}, 1, {first_digit} - 1) END")
    nums = F.expr(f"filter({t}, x -> x rlike '^[0-9]{{{int(min_len)},}}$')")
    return lead.alias("lead"), nums.alias("nums")


def identifier_match(lead_a, nums_a, lead_b, nums_b, max_edits: int = 1) -> bool:
    """Given names agree (``given_names_agree``) and two identifiers (long
    numbers that are not ``YYYYMMDD`` dates) are within ``max_edits`` edits."""
    ia = [t for t in (nums_a if nums_a is not None else ()) if not is_date_token(t)]
    ib = [t for t in (nums_b if nums_b is not None else ()) if not is_date_token(t)]
    return bool(ia and ib and _numbers_agree(ia, ib, max_edits) and given_names_agree(lead_a, lead_b))


def evidence_score(lead_a, nums_a, lead_b, nums_b, profile):
    """The negative/positive evidence verdict for a pair: ``0.0`` (vetoed by
    ``conflicting``), ``1.0`` (``identifierMatchRule`` fires) or ``None``
    (no rule decides; the comparator's score stands)."""
    if conflicting(lead_a, nums_a, lead_b, nums_b, profile):
        return 0.0
    if profile.identifierMatchRule and identifier_match(lead_a, nums_a, lead_b, nums_b, profile.identifierMatchMaxEdits):
        return 1.0
    return None
