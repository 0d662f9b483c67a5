"""The HDWM iteration loop on the driver, for small inputs (washline; HDWM speed).

Why: an iteration on Spark is about fifteen Spark jobs (blocks, candidate
pairs, scores, links, components, quality, accepted references), and each job
costs scheduling round trips whatever its size. A FEBRL-sized input (5,000
references) ran about 180 jobs for 9 s of executor CPU: the loop's wall time
was job overhead, not work. Once tokens, frequencies, the correction and the
comparison features are computed (on Spark, as for any input), an input of at
most ``localMaxReferences`` references is collected once (Arrow) and its
iterations run here, in plain Python on the driver, with the same functions
the Spark path runs in its UDFs: the pair scorer (``hdwm.compare``), the
closure (``hdwm.closure.local_components``), the consistency regrouping
(``hdwm.consistency.regroup_components``) and the same entropy quality
(``hdwm.quality``'s formula, DWM, Talburt et al. 2020).

Every rule is the Spark path's, step for step (``hdwm.pipeline._Iterations``
with ``iterationShortcut``): the same block keys (``hdwm.blocking``: pair
keys, rare tokens, frequent pairs under their cap, splitting at
``maxBlockSize`` in ``xxhash64(record_id)`` order), the same score cache and
restricted candidates, the same stop rules and iteration records, the same
why-linked rows. ``tests/integration/test_hdwm_local.py`` checks that the
partition, the iteration records and the why-linked pairs equal the Spark
path's on several inputs and profiles. The one difference: ``log2`` is
Python's (``math.log(x) / math.log(2)``, as Spark's ``StrictMath.log(x) /
StrictMath.log(2)``), so a quality may differ from Spark's in its last bit.

Bounded by design: the caller only takes this path for at most
``localMaxReferences`` references (default 10,000), so the driver holds a few
hundred thousand candidate pairs at most; larger inputs run on Spark.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from .compare import score_many, uses_evidence
from .config import LinkageProfile
from .pipeline import NEAR_MISS_BAND, _Iterations

log = logging.getLogger("hdwm")

_NUMERIC = re.compile(r"[0-9]+")
_DIGIT = re.compile(r"[0-9]")
_INITIAL = re.compile(r"[A-Z]")

#: the why-linked rows of the local loop: (id1, id2, score, iteration, accepted)
WhyRow = tuple[str, str, float, int, bool]
#: an accepted reference: (record_id, cluster_id, iteration, mu, quality, cluster_size)
AssignedRow = tuple[str, str, int, float, float, int]


@dataclass
class LocalInputs:
    """What the driver loop needs, collected once from the Spark frames.

    ``tokens``: record_id → the reference's (corrected) tokens.
    ``hashes``: record_id → Spark's ``xxhash64(record_id)`` (the order of
    members when a block is split). ``freq``: token → global frequency, for
    every token of ``tokens`` that has one. ``features``: pandas frame of
    ``hdwm.compare.comparison_tokens`` (``record_id``, ``ctokens``,
    ``cweights``, ``lead``, ``nums``, ``shared``, ``gstd``, ``street``), one
    row per reference. ``must_link`` / ``cannot_link``: (id1 < id2) pairs of
    references of this run.
    """

    tokens: dict[str, list[str]]
    hashes: dict[str, int]
    freq: dict[str, int]
    features: pd.DataFrame
    must_link: list[tuple[str, str]] = field(default_factory=list)
    cannot_link: list[tuple[str, str]] = field(default_factory=list)


# -- blocking (hdwm.blocking, row for row) --------------------------------------------------------


def _distinct(tokens) -> list[str]:
    seen, out = set(), []
    for t in tokens if tokens is not None else ():
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def block_members(active: list[str], inp: LocalInputs, profile: LinkageProfile):
    """Blocks of the references ``active`` (``hdwm.blocking.build_blocks``).

    Returns:
        (members, pairs): ``members`` a list of (``block_key``, ``sub_block``,
        ``record_id``, ``block_size``) rows, ``pairs`` a set of (``id1``,
        ``id2``) with ``id1 < id2`` (Python string order = Spark's).
    """
    beta, sigma, cap = profile.beta, profile.sigma, profile.maxBlockSize
    freq = inp.freq
    rare = int(beta ** 0.5)
    fp_cap = profile.frequentPairMaxBlock
    min_len = profile.minBlkTokenLen
    min_digits = max(profile.minNumBlkTokenLen, profile.minBlkTokenLen)
    keys: list[tuple[str, str, int]] = []  # (record_id, block_key, ub)
    fp_rows: list[tuple[str, str]] = []  # frequent-pair candidates before the cap
    for rid in active:
        toks = _distinct(inp.tokens.get(rid))
        bt = []
        for t in toks:
            f = freq.get(t)
            if f is None or f < 2 or f > beta or len(t) < min_len:
                continue
            if profile.excludeNumericBlocks and _NUMERIC.fullmatch(t):
                if not (profile.minNumBlkTokenLen > 0 and len(t) >= profile.minNumBlkTokenLen):
                    continue
            bt.append((t, f))
        if not profile.blockByPairs:
            keys.extend((rid, t, f) for t, f in bt)
            continue
        for i, (t1, f1) in enumerate(bt):
            for t2, f2 in bt[i + 1:]:
                a, b = (t1, t2) if t1 < t2 else (t2, t1)
                keys.append((rid, f"{a} {b}", min(f1, f2)))
        if profile.rareTokenBlocks:
            keys.extend((rid, t, f) for t, f in bt if f <= rare)
        if fp_cap > 0:
            words = [(t, freq[t]) for t in toks
                     if t in freq and 2 <= freq[t] < sigma and len(t) >= min_len and not _DIGIT.search(t)]
            for i, (t1, f1) in enumerate(words):
                for t2, f2 in words[i + 1:]:
                    if max(f1, f2) > beta:
                        a, b = (t1, t2) if t1 < t2 else (t2, t1)
                        fp_rows.append((rid, f"{a} {b}"))
            if profile.initialPairBlocks:
                initials = [t for t in toks if _INITIAL.fullmatch(t)]
                fp_rows.extend((rid, f"{w} {x}") for w, _ in words for x in initials)
            if profile.numberPairBlocks:
                numbers = [t for t in toks if t in freq and 2 <= freq[t] < sigma and len(t) >= min_digits
                           and _NUMERIC.fullmatch(t)]
                frequent = [w for w, f in words if f > beta]
                fp_rows.extend((rid, f"{n} {w}") for n in numbers for w in frequent)
    if fp_rows:
        count: dict[str, int] = {}
        for _, k in fp_rows:
            count[k] = count.get(k, 0) + 1
        keys.extend((rid, k, count[k]) for rid, k in fp_rows if count[k] <= fp_cap)

    h = inp.hashes
    groups: list[tuple[str, int, list[str], int]] = []  # (block_key, sub_block, ids, block_size)
    small: dict[str, set[str]] = {}
    big: dict[str, set[tuple[str, int]]] = {}
    for rid, k, ub in keys:
        if profile.beta <= cap or ub <= cap:
            small.setdefault(k, set()).add(rid)
        else:
            big.setdefault(k, set()).add((rid, ub))
    for k, ids in small.items():
        groups.append((k, 0, sorted(ids, key=lambda r: (h[r], r)), len(ids)))
    for k, rows in big.items():
        ordered = sorted(rows, key=lambda x: (h[x[0]], x[0]))
        size = len(ordered)
        n_sub = math.ceil(size / cap)
        subs: dict[int, list[str]] = {}
        for rn, (rid, _) in enumerate(ordered):
            subs.setdefault(rn % n_sub, []).append(rid)
        groups.extend((k, sub, ids, size) for sub, ids in subs.items())
    members, pairs = [], set()
    for k, sub, ids, size in groups:
        if size < 2:
            continue
        members.extend((k, sub, r, size) for r in ids)
        for i in range(len(ids) - 1):
            a = ids[i]
            for b in ids[i + 1:]:
                pairs.add((a, b) if a <= b else (b, a))
    return members, pairs


def block_stats(members, profile: LinkageProfile) -> dict:
    """``hdwm.blocking.block_stats`` of local members."""
    distinct = {(k, size) for k, _, _, size in members}
    return {
        "blocks": len(distinct),
        "largest_block": max((s for _, s in distinct), default=0),
        "oversize_blocks": sum(1 for _, s in distinct if s > profile.maxBlockSize),
    }


# -- scoring ---------------------------------------------------------------------------------------


def pair_scorer(features: pd.DataFrame, profile: LinkageProfile) -> Callable[[list], list]:
    """``score(pairs)``: for a list of ``(id1, id2)``, the pandas UDF's score of
    each pair (``hdwm.compare.score_many``, as ``make_score_udf`` runs it), or
    None where a reference has no feature row (the Spark path's inner join
    drops such a pair). One call scores the whole list as one batch."""
    evidence = uses_evidence(profile)
    n = len(features)
    t = features["ctokens"].tolist()
    w = features["cweights"].tolist() if "cweights" in features.columns else [None] * n
    empty = np.array([], dtype=object)
    ev = None
    if evidence:
        if "lead" not in features.columns:
            raise ValueError("negative-evidence rules need comparison_tokens' lead/nums columns")

        def take(c, default):
            return features[c].tolist() if c in features.columns else [default] * n

        ev = list(zip(take("lead", None), take("nums", None), take("shared", empty), take("gstd", False),
                      take("street", empty)))
    pos = {str(r): i for i, r in enumerate(features["record_id"].tolist())}

    def score(pairs: list) -> list:
        known = [(pos.get(a), pos.get(b)) for a, b in pairs]
        live = [(i, j) for i, j in known if i is not None and j is not None]
        got = score_many([t[i] for i, _ in live], [w[i] for i, _ in live], [t[j] for _, j in live],
                         [w[j] for _, j in live], profile,
                         [ev[i] for i, _ in live] if evidence else None,
                         [ev[j] for _, j in live] if evidence else None).tolist() if live else []
        it = iter(got)
        return [None if i is None or j is None else next(it) for i, j in known]

    return score


# -- quality (hdwm.quality) ------------------------------------------------------------------------


def _log2(x: float) -> float:
    return math.log(x) / math.log(2)


def cluster_quality(members: list[str], tokens: dict[str, list[str]]) -> float:
    """Normalised entropy quality of one cluster: ``1 − H/H_base`` (DWM,
    Talburt et al. 2020; the formula and summation order of
    ``hdwm.quality.cluster_quality``: counts ascending)."""
    n = len(members)
    if n <= 1:
        return 1.0
    counts: dict[str, int] = {}
    for r in members:
        for tok in _distinct(tokens.get(r)):
            counts[tok] = counts.get(tok, 0) + 1
    if not counts:
        return 1.0
    h, total = 0.0, 0
    for c in sorted(counts.values()):
        h = h - (c / n) * _log2(c / n)
        total += c
    base = total / n * _log2(n)
    return 1.0 - h / base if base > 0 else 1.0


# -- the loop (hdwm.pipeline._Iterations, on driver structures) ------------------------------------


@dataclass
class _Candidates:
    members: list
    scored: dict  # (id1, id2) -> score
    stats: dict
    links: dict
    how: str
    built: int
    close_calls: list = field(default_factory=list)
    retired: bool = False


class LocalIterations(_Iterations):
    """The DWM iteration loop on the driver (module docstring).

    The loop itself (``run``: iteration records, stop rules, the shortcut's
    skipped iterations) is ``hdwm.pipeline._Iterations``'; this class gives
    it driver versions of its three steps (candidates, evaluation, close
    calls). After ``run()``: ``assigned`` (``AssignedRow`` list), ``why``
    (``WhyRow`` list) and ``records``.
    """

    def __init__(self, profile: LinkageProfile, levels, clock, n_refs: int, inp: LocalInputs):
        from .consistency import CANNOT_LINK, LINK, MUST_LINK

        self.profile, self.levels, self.clock, self.n_refs, self.inp = profile, levels, clock, n_refs, inp
        self.shortcut = True  # the plain loop (iterationShortcut: false) runs on Spark
        self.n_assigned = 0
        self.kinds = (LINK, MUST_LINK, CANNOT_LINK)
        self.order = sorted(inp.tokens)  # every reference of the run
        self.assigned_ids: set[str] = set()
        self.assigned: list[AssignedRow] = []
        self.cache: dict[tuple[str, str], float] = {}
        self.why: list[WhyRow] = []
        self.records: list[dict] = []
        self.score = pair_scorer(inp.features, profile)
        self.must = set(inp.must_link)
        self.cannot = set(inp.cannot_link)
        fcols = [c for c in ("lead", "nums", "shared", "gstd", "street") if c in inp.features.columns]
        self.fcols = fcols
        self.frows = inp.features.set_index(inp.features["record_id"].astype(str))[fcols] if fcols else None

    def _candidates(self, it: int, previous: _Candidates | None, accepted: set | None) -> _Candidates:
        restrict = previous is not None and accepted is not None and previous.stats["oversize_blocks"] == 0
        with self.clock("blocking"):
            if restrict:
                kept = [m for m in previous.members if m[2] not in accepted]
                size: dict[str, int] = {}
                for k, _, _, _ in kept:
                    size[k] = size.get(k, 0) + 1
                members = [(k, sub, r, size[k]) for k, sub, r, _ in kept if size[k] >= 2]
                pairs = None
            else:
                active = [r for r in self.order if r not in self.assigned_ids]
                members, pairs = block_members(active, self.inp, self.profile)
                if self.must:
                    live = set(active)
                    pairs |= {p for p in self.must if p[0] in live and p[1] in live}
            stats = block_stats(members, self.profile)
        with self.clock("scoring"):
            if restrict:
                scored = {p: s for p, s in previous.scored.items() if p[0] not in accepted and p[1] not in accepted}
            else:
                scored = {}
                fresh = [p for p in pairs if p not in self.cache]
                batch = dict(zip(fresh, self.score(fresh)))
                for p in pairs:
                    s = self.cache.get(p)
                    if s is None:
                        s = batch[p]
                        if s is None:
                            continue  # a reference without features: the Spark path's inner join drops it
                        if p in self.cannot:
                            s = 0.0
                        elif p in self.must:
                            s = 1.0
                        self.cache[p] = s
                    scored[p] = s
            later = [(k, mu) for k, (mu, _) in enumerate(self.levels, 1) if k >= it]
            values = np.fromiter(scored.values(), dtype=np.float64, count=len(scored))
            links = {k: int(np.count_nonzero(values >= mu - 1e-12)) for k, mu in later}
        stats["pairs"] = len(scored)
        how = "restricted" if restrict else "reblocked" if previous is not None else "blocked"
        return _Candidates(members, scored, stats, links, how, it)

    def _evaluate(self, rec: dict, cands: _Candidates, it: int, mu: float, eps: float):
        from .closure import local_components
        from .consistency import regroup_components

        profile = self.profile
        LINK, MUST_LINK, CANNOT_LINK = self.kinds
        with self.clock("components"):
            links = [(a, b, s) for (a, b), s in cands.scored.items() if s >= mu - 1e-12]
            nodes, comp = local_components([a for a, _, _ in links], [b for _, b, _ in links])
            label = dict(zip(nodes, comp))
            if profile.clusterConsistency:
                cap = int(profile.consistencyMaxComponent)
                size: dict[str, int] = {}
                for c in comp:
                    size[c] = size.get(c, 0) + 1
                checked = sum(1 for n in size.values() if 3 <= n <= cap)
                oversize = sum(1 for n in size.values() if n > cap)
                if oversize:
                    log.warning("cluster consistency: %d component(s) above consistencyMaxComponent=%d are not "
                                "clusters at this mu; their references stay unassigned (largest %s references)",
                                oversize, cap, max(size.values()))
                new_label = {r: c for r, c in label.items() if size[c] < 3}
                if checked:
                    big = {r: c for r, c in label.items() if 3 <= size[c] <= cap}
                    mb = self.frows.loc[list(big)].reset_index(names="record_id")
                    mb.insert(1, "cluster_id", [big[r] for r in mb["record_id"]])
                    edges = [(a, b, s, LINK) for a, b, s in links]
                    edges += [(a, b, 1.0, MUST_LINK) for a, b in self.must]
                    edges += [(a, b, 0.0, CANNOT_LINK) for a, b in self.cannot]
                    edges = [(big[a], a, b, s, k) for a, b, s, k in edges
                             if a in big and b in big and big[a] == big[b]]
                    eb = pd.DataFrame(edges, columns=["cluster_id", "id1", "id2", "score", "kind"])
                    out = regroup_components(mb, eb, profile)
                    new_label.update(zip(out["record_id"].astype(str), out["cluster_id"].astype(str)))
                label = new_label
                rec["components_checked"] = checked
                rec["oversize_components"] = oversize
        with self.clock("quality"):
            clusters: dict[str, list[str]] = {}
            for r, c in label.items():
                clusters.setdefault(c, []).append(r)
            forced = {label[a] for a, b in self.must if a in label and b in label and label[a] == label[b]}
            quality = {c: cluster_quality(m, self.inp.tokens) for c, m in clusters.items()}
            ok = {c for c, q in quality.items() if q >= eps - 1e-12 or c in forced}
            rec.update(clusters=len(clusters), accepted_clusters=len(ok),
                       mean_quality=round(float(np.mean(list(quality.values()))), 4) if quality else None)
            if not ok:
                return 0, None
            acc = set()
            for c in sorted(ok):
                m = clusters[c]
                acc.update(m)
                self.assigned.extend((r, c, it, float(mu), quality[c], len(m)) for r in m)
            self.assigned_ids |= acc
            self.n_assigned = len(self.assigned_ids)
            self.why.extend((a, b, s, it, True) for a, b, s in links
                            if label.get(a) in ok and label.get(a) == label.get(b))
            return 0, acc  # (closure rounds: none, the accepted ids)

    def _retire(self, cands: _Candidates | None) -> None:
        if cands is None or cands.retired:
            return
        cands.retired = True
        if not cands.close_calls:
            return
        calls = list(reversed(cands.close_calls))
        band = NEAR_MISS_BAND
        with self.clock("quality"):
            for (a, b), s in cands.scored.items():
                for it, mu in calls:
                    if mu - band - 1e-12 <= s < mu - 1e-12:
                        self.why.append((a, b, s, it, False))
                        break
