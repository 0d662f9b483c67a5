"""Fellegi–Sunter weights estimated from the input itself, unsupervised (washline).

Why: the evidence rules of ``hdwm.evidence`` are fixed. They were written for
household-heavy person data, where the pair that shares a surname and an
address but not a given name is a spouse or a child, so an initial that fits
no token of the other name part is a veto. On a file of long-lived persons who
move several times and write their middle initial first (``E LINDMAN`` /
``DONALD LINDMAN``), the same disagreement is mostly the same person, and the
fixed rules cut each person into one cluster per address. How much an agreeing
name, an agreeing address or a disagreeing given name means depends on the
file; Fellegi & Sunter (1969) give the measure, ``log2(m / u)``, and EM
estimates ``m`` and ``u`` from the file without labels (Winkler 1988;
Jaro 1989; Splink estimates its ``m`` the same way).

Comparison vector (schema-agnostic: the token classes are found by shape and
position, as ``hdwm.evidence`` finds them; ``CLASSES`` and ``LEVELS``):

* ``given`` – the first name token (``leading_names``, after
  ``givenNameFromData``): ``agree`` (``given_names_agree``),
  ``initial_agree`` (an initial equal to the other's first letter),
  ``initial_elsewhere`` (an initial that starts another of the other's name
  tokens), ``initial_conflict`` (an initial that starts none of them: the veto
  of ``given_name_conflict``), ``different`` (two full given names that do not
  agree), ``missing``;
* ``surname`` – the later name tokens: ``agree`` (one token equal),
  ``similar`` (no surname conflict, no equal token), ``disagree``
  (``surname_conflict``), ``missing``;
* ``street`` – ``street_key``: ``agree`` (``same_street``), ``disagree``, ``missing``;
* ``identifier`` – long numbers that are no date: ``agree`` (within one edit),
  ``disagree`` (both of one shape, none agrees), ``missing``;
* ``date`` – full dates (``date_readings``): ``agree`` (a reading in common or
  one edit apart), ``disagree``, ``missing``.

Estimation (``estimate``): the vectors of the candidate pairs (the pairs the
blocking makes; the pairs the engine decides on) are counted by pattern.
``u`` starts from the vectors of uniformly drawn random pairs (``u_random``:
the frequency-based u-probability, what ``identifyingAgreementRule`` reads
from token frequencies), ``m`` from a fixed prior that favours agreement, the
match share ``λ`` from 0.5. EM (the classic two-class latent model with
conditionally independent classes) then re-estimates ``λ``, ``m`` and ``u``
on the candidate pairs until the log-likelihood gains less than ``1e-9`` per
pair or 200 rounds. ``u`` is re-estimated rather than fixed because the
non-matches that matter are the candidate non-matches: in a household file
they share surnames and addresses (co-residents), which random pairs never
do; that is exactly what tells the two kinds of file apart.

Outputs (``AgreementEstimate``): ``lam``, per class and level ``m``, ``u``,
``u_random`` and the weight ``log2(m / u)`` (bits). Under
``agreementEvidence: adaptive`` the engine takes one decision from them
(``hdwm.compare``): ``match_patterns`` – the candidate patterns whose
posterior match probability ``λ·Πm / (λ·Πm + (1−λ)·Πu)`` reaches
``agreementMatchProbability``; a pair of such a pattern that no evidence rule
decided scores at least that posterior.

The same comparison vectors, counted directly, also give the engine's reading
of ``clusterIdentifierConflict: estimated`` (``identifiers_change_with_moves``):
is this a household file (an address shared by different given names), and do
its persons' identifiers change (same-name pairs with disagreeing phones)?

What the two-class model cannot do (measured; ``tests/unit/test_hdwm_agreement.py``):
on a household file the latent "match" class EM finds is co-residence, not
the person – the candidate pairs that share a surname and an address are
spouses and children as often as repeats of one person, and with classes taken
as independent nothing separates the two. On messy6k seed 1 the latent class
holds 42 % of the candidate pairs and 43 % of it disagree on the given name
(weight −0.65 bits, against −2.8 on a file of movers). So the estimate is not
allowed to lift a veto (``lifted_given_levels`` only reports which it would
lift); a third class (match / same household / unrelated) is the known remedy.

Cost: the vectors are a few Jaro–Winkler calls per pair; EM runs over the
distinct patterns (at most 6·4·3·3·3 = 648), not over the pairs.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field

from .evidence import (GENERATION_CLASSES, _numbers_agree, _comparable, date_readings, given_names_agree,
                       is_date_like, same_street, surname_conflict)
from rapidfuzz.distance import DamerauLevenshtein

CLASSES: tuple[str, ...] = ("given", "surname", "street", "identifier", "date")
#: level names per class; index 0 is always ``missing`` (weight 0 by definition: it is not estimated)
LEVELS: dict[str, tuple[str, ...]] = {
    "given": ("missing", "agree", "initial_agree", "initial_elsewhere", "initial_conflict", "different"),
    "surname": ("missing", "agree", "similar", "disagree"),
    "street": ("missing", "agree", "disagree"),
    "identifier": ("missing", "agree", "disagree"),
    "date": ("missing", "agree", "disagree"),
}
#: given-name levels the given-name veto covers, and that the estimate may lift
GIVEN_DISAGREEMENTS: tuple[str, ...] = ("initial_conflict", "different")
#: EM stops when the log-likelihood gains less than this per pair, or after ``EM_MAX_ROUNDS``
EM_TOLERANCE = 1e-9
EM_MAX_ROUNDS = 200
#: no probability is estimated below this (a level never seen in a class keeps a finite weight)
PROBABILITY_FLOOR = 1e-6


def _given_level(a: list, b: list) -> int:
    if len(a) < 2 or len(b) < 2:
        return 0
    ga, gb = a[0], b[0]
    if len(ga) >= 2 and len(gb) >= 2:
        return 1 if given_names_agree(a, b) else 5
    if len(ga) == 1 and len(gb) == 1:
        if ga == gb:
            return 2
        return 3 if (ga in b or gb in a) else 4
    init, other = (ga, b) if len(ga) == 1 else (gb, a)
    if other[0][0] == init:
        return 2
    return 3 if any(t[0] == init for t in other[1:]) else 4


def _surname_level(a: list, b: list) -> int:
    ra = [t for t in a[1:] if len(t) >= 2 and t not in GENERATION_CLASSES]
    rb = [t for t in b[1:] if len(t) >= 2 and t not in GENERATION_CLASSES]
    if len(a) < 2 or len(b) < 2 or not ra or not rb:
        return 0
    if set(ra) & set(rb):
        return 1
    return 3 if surname_conflict(a, b) else 2


def _date_level(na: list, nb: list) -> int:
    da = set().union(*[date_readings(t) for t in na]) if na else set()
    db = set().union(*[date_readings(t) for t in nb]) if nb else set()
    if not da or not db:
        return 0
    if da & db or any(DamerauLevenshtein.distance(x, y, score_cutoff=1) <= 1 for x in da for y in db):
        return 1
    return 2


def comparison_vector(ev_a, ev_b) -> tuple[int, ...]:
    """The level of each class of ``CLASSES`` for one pair (module doc).

    Args:
        ev_a, ev_b: evidence tuples ``(lead, nums[, shared, gstd[, street]])``
            (``hdwm.compare.comparison_tokens``' columns; None items are empty).
    Returns:
        a tuple of ``len(CLASSES)`` level indexes into ``LEVELS[class]``.
    """
    la = list(ev_a[0] if ev_a[0] is not None else ())
    lb = list(ev_b[0] if ev_b[0] is not None else ())
    na = list(ev_a[1] if ev_a[1] is not None else ())
    nb = list(ev_b[1] if ev_b[1] is not None else ())
    sa = list(ev_a[4]) if len(ev_a) >= 5 and ev_a[4] is not None else []
    sb = list(ev_b[4]) if len(ev_b) >= 5 and ev_b[4] is not None else []
    street = 0 if len(sa) != 2 or len(sb) != 2 else (1 if same_street(sa, sb) else 2)
    ia = [t for t in na if not is_date_like(t)]
    ib = [t for t in nb if not is_date_like(t)]
    if ia and ib and _numbers_agree(ia, ib, 1):
        ident = 1
    elif ia and ib and _comparable(ia, ib):
        ident = 2
    else:
        ident = 0
    return (_given_level(la, lb), _surname_level(la, lb), street, ident, _date_level(na, nb))


@dataclass
class AgreementEstimate:
    """EM's estimate for one input (module doc).

    ``m``/``u``/``u_random``: class → list of probabilities per level (index 0,
    ``missing``, is not estimated and holds 1.0). ``pairs``: candidate pairs
    counted; ``random_pairs``: random pairs drawn; ``rounds``: EM rounds run.
    """

    lam: float
    m: dict[str, list[float]]
    u: dict[str, list[float]]
    u_random: dict[str, list[float]]
    pairs: int
    random_pairs: int
    rounds: int
    converged: bool
    patterns: Counter = field(default_factory=Counter, repr=False)

    def weight(self, cls: str, level: int) -> float:
        """``log2(m / u)`` of one level, in bits (0 for ``missing``)."""
        if level == 0:
            return 0.0
        return math.log2(self.m[cls][level] / self.u[cls][level])

    def pattern_weight(self, pattern) -> float:
        """The sum of the level weights of one comparison vector, in bits."""
        return sum(self.weight(c, lv) for c, lv in zip(CLASSES, pattern))

    def posterior(self, pattern) -> float:
        """P(match | pattern) = λ·2^w / (λ·2^w + 1 − λ), w = ``pattern_weight``."""
        w = self.pattern_weight(pattern)
        if self.lam <= 0.0:
            return 0.0
        odds = math.log2(self.lam / (1.0 - self.lam)) + w if self.lam < 1.0 else math.inf
        if odds > 60:
            return 1.0
        return 1.0 / (1.0 + 2.0 ** -odds)

    def lifted_given_levels(self) -> list[str]:
        """The given-name disagreement levels (``GIVEN_DISAGREEMENTS``) whose weight is ≥ 0: where
        the estimate says such a disagreement is no evidence against a match (reported only). A level
        no candidate pair shows is never listed."""
        lv = LEVELS["given"]
        seen = {p[0] for p in self.patterns}
        return [name for name in GIVEN_DISAGREEMENTS
                if lv.index(name) in seen and self.weight("given", lv.index(name)) >= 0.0]

    def match_patterns(self, min_probability: float) -> dict[str, float]:
        """``pattern_key`` → posterior, for the candidate patterns whose posterior reaches ``min_probability``."""
        out = {}
        for p in self.patterns:
            q = self.posterior(p)
            if q >= min_probability:
                out[pattern_key(p)] = round(q, 6)
        return out

    def report(self) -> dict:
        """A JSON-ready summary: ``lambda``, ``pairs``, ``random_pairs``, ``rounds``, ``converged``
        and per class and level ``m``, ``u``, ``u_random`` and ``weight`` (bits), rounded."""
        classes = {}
        for c in CLASSES:
            classes[c] = {
                name: {"m": round(self.m[c][i], 5), "u": round(self.u[c][i], 5),
                       "u_random": round(self.u_random[c][i], 5), "weight": round(self.weight(c, i), 3)}
                for i, name in enumerate(LEVELS[c]) if i > 0
            }
        return {"lambda": round(self.lam, 5), "pairs": self.pairs, "random_pairs": self.random_pairs,
                "rounds": self.rounds, "converged": self.converged, "classes": classes,
                "lifted_given_levels": self.lifted_given_levels()}


#: ``clusterIdentifierConflict: estimated`` is read from inputs of at most this many references, on either
#: loop (the reading collects the input's tokens and features to the driver); larger inputs keep true
ESTIMATE_MAX_REFERENCES = 10_000
#: ``identifiers_change_with_moves``: a file is read as one of households when at least this share of
#: its candidate pairs at one street address conflict on the given name: an address is shared by
#: different persons (spouses, children, roommates) as often as by one person's repeats. Read by
#: ``benchmarks`` generators' files of 250 and 1,500 references (no truth involved, 2026-12-07):
#: long histories 0.32-0.43, household files 0.59-0.75.
CO_RESIDENCE_MIN = 0.5
#: ... and a person's identifiers are read as changing (a phone with a move) when at least this share
#: of the candidate pairs that agree on the given name and the surname and both carry a comparable
#: identifier disagree on it: one pair in twenty is more than typos beyond one edit
#: (long histories: 0.10-0.21 on the same files).
IDENTIFIER_CHANGE_MIN = 0.05


def identifiers_change_with_moves(patterns: Counter) -> tuple[bool, dict]:
    """Is an identifier conflict in this input no proof of two persons? Read from the comparison
    vectors of its candidate pairs (``candidate_patterns``), no labels.

    Rule (washline, for ``clusterIdentifierConflict: estimated``): true when the input is not one of
    households (of the candidate pairs with the same street address and both given names written,
    less than ``CO_RESIDENCE_MIN`` conflict on the given name: ``initial_conflict`` or
    ``different``) and its persons' identifiers change (of the pairs agreeing on given name and
    surname with comparable identifiers on both sides, at least ``IDENTIFIER_CHANGE_MIN`` disagree
    on them). A household file's phone disagreement may be a namesake in another household, so
    there the identifier conflict stays a cannot-link; a file of long-lived persons who move writes
    a new phone with each address (``benchmarks/messy_longhist.py``). An input without same-address
    pairs, or without same-name pairs carrying identifiers, gives false (nothing to go on: the
    cannot-link stays).

    The two-class EM of ``estimate`` was tried for this first and dropped: its latent match class
    was co-residence on household files of 6,000 references but persons on 250, so its ``m`` read
    the same kind of file two ways (2026-12-07).

    Returns:
        (decision, ``{"co_residence", "same_address_pairs", "identifier_change", "same_name_pairs"}``:
        the two shares, rounded to 5 decimals or None when undefined, and the pair counts they read).
    """
    g, sn, st, ident = (CLASSES.index(c) for c in ("given", "surname", "street", "identifier"))
    given_conflict = {LEVELS["given"].index(x) for x in GIVEN_DISAGREEMENTS}
    same_address = sum(n for p, n in patterns.items() if p[st] == 1 and p[g] != 0)
    co_resident = sum(n for p, n in patterns.items() if p[st] == 1 and p[g] in given_conflict)
    same_name = sum(n for p, n in patterns.items() if p[g] == 1 and p[sn] == 1 and p[ident] != 0)
    changed = sum(n for p, n in patterns.items() if p[g] == 1 and p[sn] == 1 and p[ident] == 2)
    co = co_resident / same_address if same_address else None
    change = changed / same_name if same_name else None
    decision = bool(co is not None and change is not None and co < CO_RESIDENCE_MIN
                    and change >= IDENTIFIER_CHANGE_MIN)
    return decision, {"co_residence": None if co is None else round(co, 5), "same_address_pairs": same_address,
                      "identifier_change": None if change is None else round(change, 5),
                      "same_name_pairs": same_name}


def pattern_key(pattern) -> str:
    """A comparison vector as a string key (``"1,1,2,0,0"``), for the profile's lookup table."""
    return ",".join(str(int(x)) for x in pattern)


def _level_shares(patterns: Counter) -> dict[str, list[float]]:
    """Per class, the share of each non-missing level among the pairs where the class is not missing."""
    out = {}
    for k, c in enumerate(CLASSES):
        cnt = [0.0] * len(LEVELS[c])
        for p, n in patterns.items():
            cnt[p[k]] += n
        seen = sum(cnt[1:])
        out[c] = [1.0] + [max(x / seen, PROBABILITY_FLOOR) if seen else 1.0 / (len(cnt) - 1) for x in cnt[1:]]
    return out


def _prior_m() -> dict[str, list[float]]:
    """EM's starting m: the first non-missing level (agreement) 0.9, the rest share 0.1 evenly."""
    out = {}
    for c in CLASSES:
        k = len(LEVELS[c]) - 1
        out[c] = [1.0, 0.9] + [0.1 / (k - 1)] * (k - 1)
    return out


def estimate(patterns: Counter, random_patterns: Counter, max_rounds: int = EM_MAX_ROUNDS,
             tolerance: float = EM_TOLERANCE) -> AgreementEstimate:
    """EM for the two-class Fellegi–Sunter model on counted comparison vectors.

    Args:
        patterns: comparison vector (tuple, ``comparison_vector``) → number of candidate pairs.
        random_patterns: the same for uniformly drawn random pairs (the starting ``u``).
    Returns:
        an ``AgreementEstimate``. A class missing in every pair keeps its starting values.
    Raises:
        ValueError: no candidate pair, or a vector of the wrong length or level.
    """
    total = sum(patterns.values())
    if total <= 0:
        raise ValueError("no candidate pairs to estimate agreement weights from")
    for p in patterns:
        if len(p) != len(CLASSES) or any(not 0 <= lv < len(LEVELS[c]) for c, lv in zip(CLASSES, p)):
            raise ValueError(f"comparison vector {p!r} does not fit CLASSES/LEVELS")
    u_random = _level_shares(random_patterns) if random_patterns else _level_shares(patterns)
    m = _prior_m()
    u = {c: list(v) for c, v in u_random.items()}
    lam = 0.5
    items = list(patterns.items())
    last = -math.inf
    rounds, converged = 0, False
    for rounds in range(1, max_rounds + 1):
        mc = {c: [0.0] * len(LEVELS[c]) for c in CLASSES}
        uc = {c: [0.0] * len(LEVELS[c]) for c in CLASSES}
        matched, ll = 0.0, 0.0
        for p, n in items:
            pm, pu = lam, 1.0 - lam
            for c, lv in zip(CLASSES, p):
                if lv:
                    pm *= m[c][lv]
                    pu *= u[c][lv]
            z = pm + pu
            ll += n * math.log(z)
            g = pm / z
            matched += n * g
            for c, lv in zip(CLASSES, p):
                if lv:
                    mc[c][lv] += n * g
                    uc[c][lv] += n * (1.0 - g)
        lam = min(max(matched / total, PROBABILITY_FLOOR), 1.0 - PROBABILITY_FLOOR)
        for c in CLASSES:
            sm, su = sum(mc[c][1:]), sum(uc[c][1:])
            if sm > 0:
                m[c] = [1.0] + [max(x / sm, PROBABILITY_FLOOR) for x in mc[c][1:]]
            if su > 0:
                u[c] = [1.0] + [max(x / su, PROBABILITY_FLOOR) for x in uc[c][1:]]
        if ll - last < tolerance * total:
            converged = True
            break
        last = ll
    return AgreementEstimate(lam=lam, m=m, u=u, u_random=u_random, pairs=int(total),
                             random_pairs=int(sum(random_patterns.values())), rounds=rounds,
                             converged=converged, patterns=Counter(patterns))


#: random pairs drawn for ``u_random`` (seeded: the same input gives the same estimate)
RANDOM_PAIRS = 100_000
#: candidate pairs at most counted (a seeded uniform sample above it)
MAX_CANDIDATE_PAIRS = 500_000
SEED = 20261206


def candidate_patterns(evidence: dict, pairs, max_pairs: int = MAX_CANDIDATE_PAIRS,
                       rng: random.Random | None = None) -> Counter:
    """Comparison vectors (``comparison_vector``) of the candidate ``pairs`` → count. Pairs with an id
    missing from ``evidence`` are skipped; above ``max_pairs`` a uniform sample drawn by ``rng``
    (seeded with ``SEED`` when None) is counted."""
    rng = rng or random.Random(SEED)
    live = [(a, b) for a, b in pairs if a in evidence and b in evidence]
    if len(live) > max_pairs:
        live = rng.sample(live, max_pairs)
    return Counter(comparison_vector(evidence[a], evidence[b]) for a, b in live)


def estimate_from_pairs(evidence: dict, pairs, random_pairs: int = RANDOM_PAIRS,
                        max_pairs: int = MAX_CANDIDATE_PAIRS, seed: int = SEED) -> AgreementEstimate:
    """``estimate`` on an input's candidate pairs.

    Args:
        evidence: record_id → evidence tuple ``(lead, nums, shared, gstd, street)``.
        pairs: iterable of (id1, id2) candidate pairs (ids missing from ``evidence`` are skipped).
        random_pairs: random pairs to draw for ``u_random`` (two distinct references each).
        max_pairs: candidate pairs at most (a seeded sample above it).
        seed: the random generator's seed.
    Raises:
        ValueError: fewer than two references, or no candidate pair with evidence on both sides.
    """
    rng = random.Random(seed)
    pats = candidate_patterns(evidence, pairs, max_pairs, rng)
    ids = sorted(evidence)
    if len(ids) < 2:
        raise ValueError("agreement weights need at least two references")
    rnd = Counter()
    for _ in range(random_pairs):
        i, j = rng.randrange(len(ids)), rng.randrange(len(ids) - 1)
        j = j + 1 if j >= i else j
        rnd[comparison_vector(evidence[ids[i]], evidence[ids[j]])] += 1
    return estimate(pats, rnd)


def profile_update(est: AgreementEstimate, min_probability: float) -> dict:
    """The runtime profile field ``agreementEvidence: adaptive`` reads (``LinkageProfile``):
    ``agreementMatchPatterns``."""
    return {"agreementMatchPatterns": est.match_patterns(min_probability)}
