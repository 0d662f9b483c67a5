"""Ablation of the HDWM evidence rules: what each rule adds, on one input, in minutes.

    .venv/bin/python benchmarks/ablation.py --input FILE --format dwm|csv [--truth FILE] [--profile default]

Run it with the PRODUCT venv (it imports ``hdwm``). Step 1 runs the engine's
own Spark stages once with the profile (tokens, frequencies, global
correction, comparison tokens with their evidence features, iteration-1
candidate pairs; ``hdwm.pipeline`` does the same). Step 2 replays the DWM
iteration loop in plain Python on those pairs for every variant of the
rules that act after blocking: each pair scored with
``hdwm.compare.score_with_profile`` (the function the pandas UDF runs),
links at ``mu``, clusters by plain transitive closure or by
``hdwm.consistency.regroup_component`` (the function the cluster-consistency
UDF runs), entropy quality against ``epsilon`` (``hdwm.quality``'s
formula), ``mu += muIterate``. The replay equals the Spark engine's partition
when no block is split (``maxBlockSize`` not reached, as on 1k–10k inputs):
S8P all rules on and all off give the engine's exact pairwise figures.

Rules that change tokens, blocks or step-1 features (``canonicalNumbers``,
``givenNameFromData``, ``rareTokenBlocks``, ``initialPairBlocks``, ``householdIdentifierRule``) need
step 1 again: pass ``--off RULE`` (or ``--on RULE``) to run the whole table
with that rule off (on); ``--set frequentPairMaxBlock=0`` sets a number.

Prints one Markdown table (variant, P, R, F1, predicted pairs, largest
cluster) on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "spark_jobs"))

#: rules replayed after blocking (profile switches)
REPLAYED = ("clusterConsistency", "dateOfBirthConflictRule", "generationConflictRule", "commonGivenNameRule",
            "identifierConflictRule", "identifierMatchRule", "givenNameConflictRule", "identifyingAgreementRule",
            "surnameConflictRule", "clusterSurnameRule", "clusterIdentifierRule")


def dump(path: str, fmt: str, truth: str | None, profile):
    """Spark step: (pdf, features {record_id: (ctokens, cweights, ev, tokens)}, pairs [(id1, id2)], n)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from hdwm.blocking import build_blocks
    from hdwm.compare import comparison_tokens
    from hdwm.frequency import apply_corrections, correction_map, token_frequencies
    from hdwm.readers import read_csv_refs, read_dwm, read_truth
    from hdwm.spark import get_spark
    from hdwm.tokenizer import tokenize

    pdf = read_dwm(path) if fmt == "dwm" else read_csv_refs(path)
    if truth:
        pdf = pdf.drop(columns=[c for c in ("truth_entity",) if c in pdf.columns]).merge(
            read_truth(truth), on="record_id", how="left")
    spark = get_spark("hdwm-ablation", {"spark.ui.enabled": "false", "spark.driver.memory": "4g"})
    spark.sparkContext.setLogLevel("ERROR")
    prof = profile.effective(len(pdf))
    refs = spark.createDataFrame(pdf[["record_id", "text"]].astype(object))
    tokens = tokenize(refs, prof).localCheckpoint()
    freq = token_frequencies(tokens).localCheckpoint()
    if prof.runGlobalCorrection:
        cmap = correction_map(freq, prof).localCheckpoint()
        tokens = apply_corrections(tokens, cmap, prof.removeDuplicateTokens).localCheckpoint()
        freq = token_frequencies(tokens).localCheckpoint()
    ct = comparison_tokens(tokens, freq, prof, len(pdf)).join(tokens, "record_id").toPandas()
    pairs = build_blocks(tokens, freq, prof).pairs.toPandas()
    spark.stop()
    feats = {r.record_id: (r.ctokens, r.cweights, (r.lead, r.nums, r.shared, r.gstd, r.street), r.tokens)
             for r in ct.itertuples()}
    return pdf, feats, list(zip(pairs.id1, pairs.id2)), len(pdf)


def _quality(members, feats) -> float:
    n = len(members)
    c = Counter(t for m in members for t in set(feats[m][3]))
    h = sum(-(v / n) * math.log2(v / n) for v in sorted(c.values()))
    base = sum(c.values()) / n * math.log2(n)
    return 1.0 - h / base if base > 0 else 1.0


def replay(feats, pairs, prof) -> dict[str, str]:
    """The iteration loop in Python; returns {record_id: cluster_id}."""
    import pandas as pd

    from hdwm.compare import score_with_profile
    from hdwm.consistency import LINK, group_veto, regroup_component
    from hdwm.evidence import conflicting

    scores = [(a, b, score_with_profile(feats[a][0], feats[a][1], feats[b][0], feats[b][1], prof,
                                        feats[a][2], feats[b][2])) for a, b in pairs]
    assigned: dict[str, str] = {}
    mu, eps = prof.mu, prof.epsilon
    while mu <= 1 + 1e-9:
        links = [(a, b, s) for a, b, s in scores if s >= mu - 1e-12 and a not in assigned and b not in assigned]
        if not links:
            break
        parent: dict[str, str] = {}

        def find(x):
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b, _ in links:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        comps = defaultdict(list)
        for x in list(parent):
            comps[find(x)].append(x)
        clusters = []
        for mem in comps.values():
            if prof.clusterConsistency and len(mem) >= 3:
                mem = sorted(mem)
                ms = set(mem)
                ed = pd.DataFrame([(a, b, s, LINK) for a, b, s in links if a in ms and b in ms],
                                  columns=["id1", "id2", "score", "kind"])
                ev = [feats[m][2] for m in mem]

                cprof = prof.model_copy(update={"surnameConflictRule": False})  # as hdwm.consistency._member_conflict
                if not prof.clusterIdentifierConflict:
                    cprof = cprof.model_copy(update={"identifierConflictRule": False})

                def clash(i, j, ev=ev):
                    return conflicting(ev[i][0], ev[i][1], ev[j][0], ev[j][1], cprof, ev[i][2], ev[j][2],
                                       ev[i][3], ev[j][3], ev[i][4], ev[j][4])

                evf = pd.DataFrame({"record_id": mem, "lead": [e[0] for e in ev], "nums": [e[1] for e in ev],
                                    "street": [e[4] for e in ev]})
                out = regroup_component(evf, ed, clash, group_veto(evf, prof))
                sub = defaultdict(list)
                for r, c in out.items():
                    sub[c].append(r)
                clusters.extend(sub.values())
            else:
                clusters.append(mem)
        for mem in clusters:
            if len(mem) >= 2 and _quality(mem, feats) >= eps - 1e-12:
                cid = min(mem)
                for m in mem:
                    assigned[m] = cid
        mu = round(mu + prof.muIterate, 2)
        eps = round(min(1.0, eps + prof.epsilonIterate), 2)
    return {r: assigned.get(r, r) for r in feats}


def pairwise(lab: dict, truth: dict) -> dict:
    ids = [r for r in lab if truth.get(r) is not None and truth.get(r) == truth.get(r)]

    def npairs(keys):
        return sum(v * (v - 1) // 2 for v in Counter(keys).values())

    pred, true = npairs(lab[r] for r in ids), npairs(truth[r] for r in ids)
    tp = npairs((lab[r], truth[r]) for r in ids)
    p = tp / pred if pred else None
    r = tp / true if true else None
    f = 2 * p * r / (p + r) if p and r else None
    return {"P": p, "R": r, "F1": f, "pred": pred, "largest": max(Counter(lab.values()).values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--format", choices=("dwm", "csv"), required=True)
    ap.add_argument("--truth")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--off", action="append", default=[], help="profile switch off for the whole table (repeatable)")
    ap.add_argument("--on", action="append", default=[], help="profile switch on for the whole table (repeatable)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=INT",
                    help="integer profile setting for the whole table, e.g. frequentPairMaxBlock=0 (repeatable)")
    ap.add_argument("--compare", action="append", default=[], metavar="KEY=VALUE",
                    help="replay only 'profile as is' and one row per KEY=VALUE (a replayed setting; "
                         "true/false, an integer or a word), e.g. givenNameConflictLift=identifier (repeatable)")
    a = ap.parse_args(argv)
    from hdwm.config import load_profile

    prof = load_profile(a.profile)
    if a.off or a.on or a.set:
        sets = {k: int(v) for k, v in (kv.split("=", 1) for kv in a.set)}
        prof = prof.model_copy(update={**{k: False for k in a.off}, **{k: True for k in a.on}, **sets})
    pdf, feats, pairs, n = dump(a.input, a.format, a.truth, prof)
    if "truth_entity" not in pdf.columns:
        print("error: the ablation needs truth (a truth_entity column or --truth)", file=sys.stderr)
        return 2
    truth = dict(zip(pdf.record_id, pdf.truth_entity))
    eff = prof.effective(n)
    on = [r for r in REPLAYED if getattr(eff, r)]
    variants = [("profile as is", {})] + [(f"without {r}", {r: False}) for r in on]
    variants += [(f"with {r}", {r: True}) for r in REPLAYED if r not in on]
    if a.compare:
        def _value(v: str):
            return {"true": True, "false": False}.get(v.lower(), int(v) if v.lstrip("-").isdigit() else v)

        variants = [("profile as is", {})] + [
            (kv, {k: _value(v)}) for kv in a.compare for k, v in [kv.split("=", 1)]]
    print(f"input {a.input} ({n} references, {len(pairs)} candidate pairs; off for all rows: {a.off or 'none'}, "
          f"on: {a.on or 'none'}, set: {a.set or 'none'})\n")
    print("| variant | P | R | F1 | predicted pairs | largest cluster |\n|---|---|---|---|---|---|")
    for name, upd in variants:
        print(f"[ablation] {name}", file=sys.stderr, flush=True)
        m = pairwise(replay(feats, pairs, eff.model_copy(update=upd)), truth)
        fmt = lambda v: "n/a" if v is None else f"{v:.4f}"  # noqa: E731
        print(f"| {name} | {fmt(m['P'])} | {fmt(m['R'])} | {fmt(m['F1'])} | {m['pred']} | {m['largest']} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
