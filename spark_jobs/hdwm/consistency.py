"""Cluster-level consistency: closure that never joins conflicting references (washline).

Why: plain transitive closure (connected components) is single linkage. On
person data one weak link chains a household into one cluster: ``J SMITH``
links to ``JOHN SMITH`` and to ``JANE SMITH`` at the same address, and the
closure puts John and Jane together although the pair John–Jane was vetoed
(``hdwm.evidence``: their given names conflict). The issue "Linkage accuracy
on messy household data" measured exactly that: precision fell with the input
size because components grew through such bridges.

Rule (cannot-link constrained single linkage): inside each connected
component of the iteration's links, the links are taken strongest first
(score descending, then ``id1``, ``id2``: Kruskal's order, deterministic) and
two groups are joined only when **no** reference of one conflicts with a
reference of the other. Conflict = the pairwise veto of ``hdwm.evidence``
(``conflicting``: given names, identifiers, dates of birth, generation
suffixes; not surnames, see ``_member_conflict``) or a human cannot-link decision; with
``clusterSurnameRule`` two groups that disagree on the surname also need a tie
(``_surname_group_veto``), and with ``clusterIdentifierRule`` two groups that
each confirm a different identifier stay apart (``_identifier_group_veto``). Must-link decisions are joined
first, unconditionally. This is the greedy approximation of correlation
clustering with hard cannot-link constraints (Bansal, Blum & Chawla 2004;
constrained clustering, Wagstaff et al. 2001); the result is a partition
whose every cluster is conflict-free, and a cluster is then graded by its
entropy quality as before (DWM, Talburt et al. 2020).

Only components of three or more references can hold a conflicting pair that
is not itself a link (a link's own pair was scored, so it is not vetoed), so
only those are regrouped. The regrouping is a pandas UDF over Arrow
(``cogroup().applyInPandas``) holding a bucket of whole components per call
(at most ``BUCKET_REFERENCES`` + ``consistencyMaxComponent`` references); a
component larger than ``consistencyMaxComponent`` is not a cluster at that
mu: its references are left out of the iteration's clusters (counted, a
warning in the log) and linked again at the next mu, so no Python worker
ever holds an unbounded group and no chain of thousands is accepted.
Cost per component: at most n²/2 pair checks for n references.
"""

from __future__ import annotations

import logging

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .config import LinkageProfile

log = logging.getLogger("hdwm")

#: edge kinds in the frame handed to the UDF
LINK, MUST_LINK, CANNOT_LINK = 1, 2, -1

CLUSTER_SCHEMA = "record_id string, cluster_id string"

#: references per UDF call of the regrouping (washline, speed; see ``consistent_clusters``)
BUCKET_REFERENCES = 4096
#: up to this many checked components, their bucket table is broadcast
BROADCAST_COMPONENTS = 200_000


def regroup_component(members: pd.DataFrame, edges: pd.DataFrame, conflict, group_veto=None) -> dict[str, str]:
    """Regroup one component; returns ``{record_id: cluster_id}`` (smallest member id).

    Args:
        members: rows of one component, column ``record_id`` (string) plus
            whatever ``conflict`` reads (row order is irrelevant).
        edges: columns ``id1``, ``id2`` (strings), ``score`` (double) and
            ``kind`` (int: ``LINK``, ``MUST_LINK`` or ``CANNOT_LINK``).
        conflict: ``conflict(i, j) -> bool`` on row positions of ``members``.
        group_veto: optional ``group_veto(ga, gb) -> bool`` on lists of row
            positions (see ``regroup``).

    Must-links are joined first; links are then taken by (score desc, id1,
    id2) and a link joins two groups only when no cross pair conflicts or
    is a cannot-link. The same as ``regroup`` on the frames' rows.
    """
    return regroup([str(x) for x in members["record_id"]],
                   list(zip(edges["id1"], edges["id2"], edges["score"], edges["kind"])), conflict, group_veto)


def regroup(ids: list[str], edges: list[tuple], conflict, group_veto=None) -> dict[str, str]:
    """``regroup_component`` on plain lists (what the UDF runs, with no pandas
    work per component: at 100k references that per-component set-up was most
    of the regrouping's time).

    Args:
        ids: the component's record ids; ``conflict(i, j)`` takes positions in it.
        edges: ``(id1, id2, score, kind)`` tuples.
        group_veto: optional ``group_veto(ga, gb) -> bool`` on two lists of
            positions, asked only when no cross pair conflicts; True keeps the
            groups apart (``_surname_group_veto``). Must-links ignore it.
    Returns:
        ``{record_id: cluster_id}`` (the smallest record id of each refined cluster).
    """
    pos = {r: i for i, r in enumerate(ids)}
    parent = list(range(len(ids)))
    group: dict[int, list[int]] = {i: [i] for i in range(len(ids))}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(a: int, b: int) -> None:
        if len(group[a]) < len(group[b]):
            a, b = b, a
        parent[b] = a
        group[a].extend(group.pop(b))

    cannot = set()
    for a, b, _, k in edges:
        if k == CANNOT_LINK and a in pos and b in pos:
            cannot.add((min(pos[a], pos[b]), max(pos[a], pos[b])))
    memo: dict[tuple[int, int], bool] = {}

    def clash(i: int, j: int) -> bool:
        key = (i, j) if i < j else (j, i)
        hit = memo.get(key)
        if hit is None:
            hit = key in cannot or bool(conflict(key[0], key[1]))
            memo[key] = hit
        return hit

    for a, b, _, k in edges:
        if k == MUST_LINK and a in pos and b in pos:
            ra, rb = find(pos[a]), find(pos[b])
            if ra != rb:
                join(ra, rb)
    # strongest first; ties by (id1, id2): Kruskal's order, deterministic (a stable sort, as before)
    links = sorted((e for e in edges if e[3] == LINK), key=lambda e: (-e[2], e[0], e[1]))
    for a, b, _, _ in links:
        if a not in pos or b not in pos:
            continue
        ra, rb = find(pos[a]), find(pos[b])
        if ra == rb:
            continue
        ga, gb = group[ra], group[rb]
        if any(clash(i, j) for i in ga for j in gb):
            continue
        if group_veto is not None and group_veto(ga, gb):
            continue
        join(ra, rb)
    out = {}
    for root, mem in group.items():
        cid = min(ids[i] for i in mem)
        for i in mem:
            out[ids[i]] = cid
    return out


def _member_conflict(members: pd.DataFrame, profile: LinkageProfile):
    """``conflict(i, j)`` on row positions of ``members``: the pairwise veto of
    ``hdwm.evidence.conflicting`` without ``surnameConflictRule``, and without
    ``identifierConflictRule`` when ``clusterIdentifierConflict`` is false.

    A surname is an attribute a person changes (marriage), like an address; a
    given name, a date of birth or a generation is not. Between two references
    that were scored, a disagreeing surname with nothing to bridge it vetoes
    the pair; inside a component the pairwise surname veto would split every
    married name from her maiden name (S8P: F1 0.866 with it, 0.915 without,
    benchmarks/README.md), so groups are judged by ``_surname_group_veto``
    instead, which looks for a tie anywhere across the two groups.

    Identifiers likewise (``clusterIdentifierConflict: false``): a phone changes
    with a move. On a file of long-lived persons who move 2–5 times
    (``benchmarks/messy_longhist.py``, seed 1) 986 true pairs were vetoed by
    ``identifierConflictRule``, nearly all two different 10-digit phones beside a
    given name written as an initial, and one such pair anywhere in an entity
    kept it split; ``_identifier_group_veto`` still separates two groups that
    each confirm their own identifier (two people with their own SSNs).
    """
    from .evidence import conflicting

    if getattr(profile, "surnameConflictRule", False):
        profile = profile.model_copy(update={"surnameConflictRule": False})
    # ``estimated`` not yet resolved (hdwm.pipeline resolves it) keeps the cannot-link, as true does
    if getattr(profile, "clusterIdentifierConflict", True) is False and profile.identifierConflictRule:
        profile = profile.model_copy(update={"identifierConflictRule": False})

    lead = members["lead"].tolist()
    nums = members["nums"].tolist()
    shared = members["shared"].tolist() if "shared" in members.columns else [None] * len(lead)
    # the given name is a standard token (commonGivenNameRule): the same verdict as the pair's scoring
    std = [bool(x) for x in members["gstd"]] if "gstd" in members.columns else [False] * len(lead)
    street = members["street"].tolist() if "street" in members.columns else [None] * len(lead)

    def conflict(i: int, j: int) -> bool:
        return conflicting(lead[i], nums[i], lead[j], nums[j], profile, shared[i], shared[j], std[i], std[j],
                           street[i], street[j])

    return conflict


def _surname_group_veto(members: pd.DataFrame, profile: LinkageProfile):
    """``group_veto(ga, gb)`` on row positions of ``members`` for
    ``clusterSurnameRule``, else None.

    Rule (washline): two groups are kept apart when a reference of one and a
    reference of the other disagree on the surname
    (``hdwm.evidence.surname_conflict``) and nothing ties the two groups: no
    cross pair of references with agreeing surname tokens (a name token
    after the given name of each), whose long numbers agree (within ``identifierMaxEdits``
    edits: an SSN, a date of birth) or that give the same street address
    (``same_street``). A married name beside the maiden name is one person
    because an SSN, a date of birth, an address or a member already carrying
    the other name says so, somewhere in the two groups; two people of one
    given name in one city whose groups share none of these are two people,
    however many weak links chain them. The pairwise ``surnameConflictRule``
    sees one pair at a time, so a sparse reference without a surname
    (``MARY LANCASTER CA``) links to both women and bridges them: the chaining
    the issue "Linkage accuracy on messy household data" measured. A
    disagreeing surname weighs heavily against a match in Fellegi–Sunter
    models (Fellegi & Sunter 1969); the ties are the lifts the pairwise veto
    has, taken over the groups.
    """
    if not getattr(profile, "clusterSurnameRule", False):
        return None
    from .evidence import GENERATION_CLASSES, _name_tokens_agree, _numbers_agree, same_street, surname_conflict

    lead = [list(x) if x is not None else [] for x in members["lead"].tolist()]
    nums = [list(x) if x is not None else [] for x in members["nums"].tolist()]
    street = members["street"].tolist() if "street" in members.columns else [None] * len(lead)
    # the surname tokens: the name tokens after the given name (two letters or more, no JR/SR)
    rest = [[t for t in ld[1:] if len(t) >= 2 and t not in GENERATION_CLASSES and t != ld[0]] for ld in lead]
    k = profile.identifierMaxEdits
    memo: dict[tuple[int, int], tuple[bool, bool]] = {}

    def pair(i: int, j: int) -> tuple[bool, bool]:  # (surnames conflict, the pair ties its groups)
        key = (i, j) if i < j else (j, i)
        hit = memo.get(key)
        if hit is None:
            sc = surname_conflict(lead[i], lead[j])
            # a tie by name needs the surname of each to agree: the first surname token of one
            # against the first two of the other (a double-barrelled name, a middle name written
            # out). Later tokens of a name part can be the city of a reference without a street
            # (``MARY TORRES LANCASTER CA``), and one city ties nobody; a given name written last
            # (``TORRES, MARY``) makes two name parts merely not conflict, which ties nothing either
            tie = (any(_name_tokens_agree(x, y) for x, y in
                       [(a, b) for a in rest[i][:1] for b in rest[j][:2]]
                       + [(a, b) for a in rest[j][:1] for b in rest[i][:2]])
                   or same_street(street[i], street[j])
                   or bool(nums[i] and nums[j] and _numbers_agree(nums[i], nums[j], k)))
            hit = memo[key] = (sc and not tie, tie)
        return hit

    def veto(ga: list[int], gb: list[int]) -> bool:
        cross = [pair(i, j) for i in ga for j in gb]
        return any(c for c, _ in cross) and not any(t for _, t in cross)

    return veto


def _identifier_group_veto(members: pd.DataFrame, profile: LinkageProfile):
    """``group_veto(ga, gb)`` on row positions of ``members`` for
    ``clusterIdentifierRule``, else None.

    Rule (washline): two groups are kept apart when each *confirms* an
    identifier – the same identifier token (all-digit, at least
    ``identifierMinLen`` digits, not a date: ``hdwm.evidence.is_date_like``)
    held by two or more references of the group – the confirmed identifiers
    of the two groups have one shape (``hdwm.evidence._comparable``: the same
    number of digits, or one the suffix of the other), and no identifier of
    one group agrees with any identifier of the other within
    ``identifierMaxEdits`` edits.

    Why: the pairwise ``identifierConflictRule`` is lifted when the given
    names agree, because a single reference's identifier may be a typo or a
    replaced value (FEBRL replaces a duplicate's SSN). An identifier written
    the same way by two references of a group is neither; two groups that
    confirm two different identifiers are two people of one given name – a
    junior and a senior, two CHARLOTTEs bridged by a double-barrelled
    surname, two LARRY BAUMSKIs in two states – however many weak links chain
    them (error analysis of messy100k seed 2's largest clusters,
    benchmarks/README.md, 2026-12-04, dcb2085). A person who changed a number that
    moves with the address (a landline) keeps the others (an SSN, a mobile):
    any agreeing identifier across the groups lifts the veto. Agreement on a
    rare identifier dominates a Fellegi–Sunter match weight (Fellegi & Sunter
    1969); two independent confirmations of different values dominate it
    the other way.
    """
    if not getattr(profile, "clusterIdentifierRule", False):
        return None
    from .evidence import _comparable, _numbers_agree, is_date_like

    ids = [[t for t in (x if x is not None else ()) if not is_date_like(t)] for x in members["nums"].tolist()]
    k = profile.identifierMaxEdits

    def confirmed(g: list[int]) -> set[str]:
        seen: set[str] = set()
        twice: set[str] = set()
        for i in g:
            for t in set(ids[i]):
                (twice if t in seen else seen).add(t)
        return twice

    def veto(ga: list[int], gb: list[int]) -> bool:
        ca = confirmed(ga) if len(ga) >= 2 else set()
        cb = confirmed(gb) if len(gb) >= 2 else set()
        if not ca or not cb or not _comparable(ca, cb):
            return False
        all_a = {t for i in ga for t in ids[i]}
        all_b = {t for i in gb for t in ids[i]}
        return not _numbers_agree(all_a, all_b, k)

    return veto


def group_veto(members: pd.DataFrame, profile: LinkageProfile):
    """The cluster-level vetoes of the profile as one ``group_veto(ga, gb)``
    for ``regroup`` (``_surname_group_veto``, ``_identifier_group_veto``), or
    None when neither rule is on. Row positions of ``members``."""
    vetoes = [v for v in (_surname_group_veto(members, profile), _identifier_group_veto(members, profile))
              if v is not None]
    if not vetoes:
        return None
    if len(vetoes) == 1:
        return vetoes[0]
    return lambda ga, gb: any(v(ga, gb) for v in vetoes)


def regroup_components(mb: pd.DataFrame, eb: pd.DataFrame, profile: LinkageProfile) -> pd.DataFrame:
    """Regroup whole components at once (what ``consistent_clusters`` runs
    per bucket, in its UDF or on the driver, and ``hdwm.local`` runs per
    iteration).

    Args:
        mb: members, one row per reference: ``record_id``, ``cluster_id``
            (the component) and the feature columns of
            ``hdwm.compare.comparison_tokens`` (``lead``, ``nums``[, ``shared``,
            ``gstd``, ``street``]); any row order.
        eb: edges inside those components: ``cluster_id``, ``id1``, ``id2``,
            ``score`` (double), ``kind`` (``LINK``, ``MUST_LINK``,
            ``CANNOT_LINK``).
        profile: the evidence rule settings.

    Returns:
        pandas DataFrame (``record_id``, ``cluster_id``): every member once,
        ``cluster_id`` the smallest record id of its refined cluster.
    """
    if mb.empty:
        return pd.DataFrame({"record_id": pd.Series([], dtype=object), "cluster_id": pd.Series([], dtype=object)})
    # one sort and one conflict function for the whole bucket, then plain-Python work per
    # component on bucket positions (a pandas groupby/sort/filter per component cost
    # milliseconds each: most of the stage at 100k references)
    mb = mb.sort_values(["cluster_id", "record_id"], kind="mergesort").reset_index(drop=True)
    conflict = _member_conflict(mb, profile)
    veto = group_veto(mb, profile)
    edges: dict[str, list[tuple]] = {}
    for cid, a, b, sc, k in zip(eb["cluster_id"].tolist(), eb["id1"].tolist(), eb["id2"].tolist(),
                                eb["score"].tolist(), eb["kind"].tolist()):
        edges.setdefault(cid, []).append((a, b, sc, k))
    rid, cid_of = [str(x) for x in mb["record_id"]], mb["cluster_id"].tolist()
    ids, cids = [], []
    s = 0
    while s < len(rid):
        e = s
        while e < len(rid) and cid_of[e] == cid_of[s]:
            e += 1
        # a component's members by record_id, so conflict() sees the positions it saw per component
        out = regroup(rid[s:e], edges.get(cid_of[s], []), lambda i, j, s=s: conflict(s + i, s + j),
                      None if veto is None else lambda ga, gb, s=s: veto([s + i for i in ga], [s + j for j in gb]))
        ids.extend(out.keys())
        cids.extend(out.values())
        s = e
    return pd.DataFrame({"record_id": ids, "cluster_id": cids})


def consistent_clusters(
    comps: DataFrame,
    links: DataFrame,
    features: DataFrame,
    profile: LinkageProfile,
    cannot_link: DataFrame | None = None,
    must_link: DataFrame | None = None,
    local_max_references: int = 0,
) -> tuple[DataFrame, dict]:
    """Split each connected component into conflict-free clusters.

    Args:
        comps: (``record_id``, ``cluster_id``) connected components of ``links``.
        links: (``id1``, ``id2``, ``score``) the iteration's links (score ≥ mu).
        features: (``record_id``, ``lead`` array<string>, ``nums`` array<string>
            [, ``shared`` array<string>, ``gstd`` boolean, ``street`` array<string>]) –
            ``hdwm.compare.comparison_tokens``
            output; ``shared`` are the household identifiers
            (``hdwm.evidence.shared_identifiers``).
        profile: ``consistencyMaxComponent`` and the evidence rule settings.
        cannot_link / must_link: optional (``id1``, ``id2``) human decisions.
        local_max_references: when > 0 and the components to check hold at
            most this many references, they and their links are collected
            (Arrow) and regrouped on the driver by the same function the UDF
            runs, in one call: the same clusters (each component is regrouped
            on its own either way) without a Python-worker job. 0: always the UDF.

    Returns:
        (DataFrame (``record_id``, ``cluster_id``) for every record of
        ``comps`` except those of components above ``consistencyMaxComponent``, stats dict ``{components_checked,
        oversize_components}``). ``cluster_id`` is the smallest record id of
        the refined cluster.
    """
    cap = int(profile.consistencyMaxComponent)
    sizes = comps.groupBy("cluster_id").agg(F.count(F.lit(1)).alias("n"))
    tagged = comps.join(sizes, "cluster_id")
    big = tagged.filter((F.col("n") >= 3) & (F.col("n") <= cap))
    # A component above the cap is not a cluster at this mu: the truth's entities hold a handful of
    # references, so thousands linked together are a chain through households and common names.
    # Its references are left out of the iteration's clusters (none is accepted) and are linked
    # again at the next, higher mu, where the chain breaks up.
    keep = tagged.filter(F.col("n") < 3).select("record_id", "cluster_id")
    srow = sizes.agg(
        F.sum(F.when((F.col("n") >= 3) & (F.col("n") <= cap), 1).otherwise(0)).alias("checked"),
        F.sum(F.when(F.col("n") > cap, 1).otherwise(0)).alias("oversize"),
        F.max("n").alias("largest"),
        F.sum(F.when((F.col("n") >= 3) & (F.col("n") <= cap), F.col("n")).otherwise(0)).alias("checked_refs"),
    ).first()
    checked, oversize = int(srow["checked"] or 0), int(srow["oversize"] or 0)
    if oversize:
        log.warning("cluster consistency: %d component(s) above consistencyMaxComponent=%d are not clusters "
                    "at this mu; their references stay unassigned (largest %s references)",
                    oversize, cap, srow["largest"])
    if checked == 0:
        return keep, {"components_checked": 0, "oversize_components": oversize}

    fcols = [c for c in ("lead", "nums", "shared", "gstd", "street") if c in features.columns]
    mem = big.select("record_id", "cluster_id").join(features.select("record_id", *fcols), "record_id")
    e = links.select("id1", "id2", "score", F.lit(LINK).alias("kind"))
    for df, kind in ((must_link, MUST_LINK), (cannot_link, CANNOT_LINK)):
        if df is not None:
            e = e.unionByName(df.select("id1", "id2", F.lit(1.0 if kind == MUST_LINK else 0.0).alias("score"),
                                        F.lit(kind).alias("kind")))
    # an edge belongs to a component when both ends are in it
    c1 = big.select(F.col("record_id").alias("id1"), F.col("cluster_id").alias("c1"))
    c2 = big.select(F.col("record_id").alias("id2"), F.col("cluster_id").alias("c2"))
    e = (
        e.join(c1, "id1")
        .join(c2, "id2")
        .filter(F.col("c1") == F.col("c2"))
        .select(F.col("c1").alias("cluster_id"), "id1", "id2", "score", F.col("kind").cast("int").alias("kind"))
    )

    # washline (speed): one UDF call per *bucket* of components, not per component. A Python call
    # per group costs milliseconds of Arrow and pandas set-up, which at 100k references (10k+
    # components) was most of the closure's time. Components are dealt into buckets in
    # cluster_id order by their running size, so a bucket holds at most BUCKET_REFERENCES +
    # consistencyMaxComponent references: a Python worker's group stays bounded.
    start = F.sum("n").over(Window.orderBy("cluster_id").rowsBetween(Window.unboundedPreceding, 0)) - F.col("n")
    buckets = (sizes.filter((F.col("n") >= 3) & (F.col("n") <= cap))
               .select("cluster_id", F.floor(start / F.lit(BUCKET_REFERENCES)).cast("long").alias("bucket")))

    def bucket_of(df):  # each side gets its own copy of the column (a cogroup of one lineage is ambiguous)
        b = buckets.select("cluster_id", F.col("bucket").alias("bucket"))
        return df.join(F.broadcast(b) if checked <= BROADCAST_COMPONENTS else b, "cluster_id")

    def fn(mb: pd.DataFrame, eb: pd.DataFrame) -> pd.DataFrame:
        return regroup_components(mb, eb, profile)

    if 0 < int(srow["checked_refs"] or 0) <= local_max_references:
        # a small iteration (a night of a registry run, FEBRL-sized inputs): one driver call
        out = fn(mem.toPandas(), e.toPandas())
        refined = comps.sparkSession.createDataFrame(out if len(out) else [], CLUSTER_SCHEMA)
    else:
        mem, e = bucket_of(mem), bucket_of(e)
        refined = mem.groupBy("bucket").cogroup(e.groupBy("bucket")).applyInPandas(fn, CLUSTER_SCHEMA)
    return keep.unionByName(refined), {"components_checked": checked, "oversize_components": oversize}
