"""The night's review page: ``lake/reports/<ds>/review.html``.

For a data steward: the night's merges (registry nights) and the pairs closest
to ``mu`` on both sides, the links just above it and the close calls just
below it, each shown side by side with its score, the tokens both references
hold (agreeing, green) and the tokens only one holds (conflicting, red). The
steward marks pairs must-link or cannot-link and exports a decisions file in
the format the link job reads (``--decisions``, default
``$WASHLINE_DATA/decisions/decisions.csv``; ``hdwm.incremental.read_decisions``):

    source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note

The export is the whole file: the decisions that were in ``decisions.csv``
when the page was written (or in a file loaded into the page), unchanged, plus
one new row per pair whose mark the steward changed (``decided_at`` now, UTC),
minus the rows of a pair whose mark was cleared. The latest row of a pair wins,
as in the reader. Exporting is a download in the browser: nothing is written on
the server and nothing reaches staging or published tables. The next night (or
a rebuild) applies the file once it is put in place.

Inputs (all of the night, read only when this run's link task succeeded):
``lake/linked/<ds>/pairs/`` (Parquet: ``source_a, record_id_a, source_b,
record_id_b, score, iteration, accepted, agreeing, conflicting``),
``metrics.json`` (mu per iteration), the references' fields from the registry
version's members (``attributes``) or, without the registry,
``lake/curated/<ds>/``; the merges from the version's change rows with the
base version's members to tell which side each reference came from. The
registry is read through :mod:`washline.registry`, so a format-1 version
(whole folders) and a format-2 one (delta layers) read alike.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from washline.paths import RunPaths

log = logging.getLogger(__name__)

REVIEW_FILE = "review.html"
#: the decisions file's columns, in order (the reader: hdwm.incremental.DECISIONS_COLUMNS)
DECISIONS_COLUMNS = ["source_a", "record_id_a", "source_b", "record_id_b", "decision", "decided_by", "decided_at",
                     "note"]
DECISIONS = ("must_link", "cannot_link")
#: curated columns that are not reference fields
META_COLUMNS = {"record_id", "source", "truth_entity", "ds", "source_file", "line_number"}
PAIRS_PER_SIDE = 30
MAX_MERGES = 30
PAIRS_PER_MERGE = 6
TOKEN = re.compile(r"[A-Za-z0-9]+")


def pair_key(source_a: str, record_a: str, source_b: str, record_b: str) -> str:
    """The unordered identity of a pair: the two ``source|record_id`` keys, sorted, joined by a tab."""
    a, b = f"{source_a}|{record_a}", f"{source_b}|{record_b}"
    return "\t".join(sorted((a, b)))


def read_decisions_file(path: Path) -> list[dict[str, str]]:
    """The rows of a decisions file (the eight columns; missing ones empty), in
    file order; [] when the file does not exist.

    Raises:
        ValueError: the file is not a CSV with the five required columns.
    """
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in DECISIONS_COLUMNS[:5] if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}")
    return [{c: (row.get(c) or "") for c in DECISIONS_COLUMNS} for row in reader]


def effective_decisions(rows: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """pair key → its decision in force: the latest row by ``decided_at``, then
    file order (the reader's rule); rows with an unknown decision are ignored."""
    ordered = sorted(enumerate(rows), key=lambda ir: (ir[1].get("decided_at") or "", ir[0]))
    out: dict[str, str] = {}
    for _, r in ordered:
        decision = (r.get("decision") or "").strip()
        if decision in DECISIONS:
            out[pair_key(r["source_a"].strip(), r["record_id_a"].strip(), r["source_b"].strip(),
                         r["record_id_b"].strip())] = decision
    return out


def decisions_csv(rows: Iterable[Mapping[str, str]]) -> str:
    """Decision rows as the CSV text the page exports (header first, RFC 4180
    quoting where needed, ``\\n`` line ends)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(DECISIONS_COLUMNS)
    for r in rows:
        writer.writerow([r.get(c, "") for c in DECISIONS_COLUMNS])
    return buf.getvalue()


def highlight(value: str, agreeing: set[str], conflicting: set[str]) -> list[tuple[str, str]]:
    """Split a field value into (text, class) segments: ``agree`` for a token
    both references hold, ``conflict`` for a token only one holds, ``""`` else.
    Tokens are compared upper-cased (the engine's tokens are); a value whose
    letters and digits together form one token (a date ``1976-12-01`` is the
    token ``19761201``) is one segment."""
    compact = "".join(TOKEN.findall(value)).upper()
    if compact and compact != value.upper() and (compact in agreeing or compact in conflicting):
        return [(value, "agree" if compact in agreeing else "conflict")]
    out: list[tuple[str, str]] = []
    pos = 0
    for m in TOKEN.finditer(value):
        if m.start() > pos:
            out.append((value[pos:m.start()], ""))
        tok = m.group(0).upper()
        out.append((m.group(0), "agree" if tok in agreeing else ("conflict" if tok in conflicting else "")))
        pos = m.end()
    if pos < len(value):
        out.append((value[pos:], ""))
    return out


# ---------------------------------------------------------------------------
# reading the night's files
# ---------------------------------------------------------------------------


def _read_pairs(paths: RunPaths):
    from washline.report_html import read_parquet_columns

    return read_parquet_columns(paths.linked / "pairs", ["source_a", "record_id_a", "source_b", "record_id_b", "score",
                                                         "iteration", "accepted", "agreeing", "conflicting"])


def closest_to_mu(pairs: list[dict[str, Any]], mus: Mapping[int, float], limit: int = PAIRS_PER_SIDE
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(links just above mu, close calls just below mu), each nearest first, at
    most ``limit`` each. A pair's mu is that of its iteration; each pair gets
    ``mu`` and ``margin`` (score − mu)."""
    above, below = [], []
    for p in pairs:
        mu = mus.get(p.get("iteration"))
        if mu is None or p.get("score") is None:
            continue
        q = {**p, "mu": mu, "margin": p["score"] - mu}
        (above if p.get("accepted") else below).append(q)
    above.sort(key=lambda p: (p["margin"], p["score"]))
    below.sort(key=lambda p: (-p["margin"], -p["score"]))
    return above[:limit], below[:limit]


def _members(entities: Path, ds: str | None, keys: set[tuple[str, str]], columns: list[str]) -> list[dict[str, Any]]:
    """The members of registry version ``ds`` among ``keys`` ((source, record_id)),
    read through :func:`washline.registry.read_part` (format 1 or 2, newest layer
    wins; the record ids are pushed into every layer as a key filter). Empty when
    there is no such complete version (logged)."""
    import pyarrow.compute as pc

    from washline.registry import RegistryVersionError, read_part

    ids = sorted({r for _, r in keys})
    if not ds or not ids:
        return []
    try:
        table = read_part(entities, ds, "members", columns=["source", "record_id", *columns],
                          key_filter=pc.field("record_id").isin(ids))
    except RegistryVersionError as exc:
        log.warning("review: registry version ds=%s not readable: %s", ds, exc)
        return []
    return [row for row in table.to_pylist() if (row["source"], row["record_id"]) in keys]


def _refs_fields(paths: RunPaths, keys: set[tuple[str, str]], registry: bool) -> dict[tuple[str, str], list]:
    """(source, record_id) → [(field, value), …] for the references in ``keys``:
    from the registry version's members (``attributes``), else (and for any
    reference not found there) from the night's curated Parquet."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    found: dict[tuple[str, str], list] = {}
    ids = sorted({r for _, r in keys})
    if not ids:
        return found
    if registry:
        for row in _members(paths.entities, paths.ds, keys, ["attributes"]):
            found[(row["source"], row["record_id"])] = [(k, v) for k, v in (row["attributes"] or [])
                                                        if v not in (None, "")]
    if len(found) < len(keys) and paths.curated.is_dir():
        ds_ = pads.dataset(str(paths.curated), format="parquet")
        table = ds_.to_table(filter=pc.field("record_id").isin(ids))
        for row in table.to_pylist():
            key = (str(row.get("source")), str(row["record_id"]))
            if key in keys and key not in found:
                found[key] = [(k, str(v)) for k, v in row.items() if k not in META_COLUMNS and v not in (None, "")]
    return found


def _merges(paths: RunPaths, summary: Mapping[str, Any], accepted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The night's merges: ``entity_id``, ``from`` (the merged entity ids),
    ``member_count`` and ``pairs``: the accepted pairs inside the entity whose
    two references came from different sides (a merged entity, or new tonight).
    The night's change rows, its members and the base version's come through
    :mod:`washline.registry` (format 1 or 2)."""
    import pyarrow.compute as pc

    from washline.registry import RegistryVersionError, read_part

    try:
        changes = read_part(paths.entities, paths.ds, "changes",
                            columns=["entity_id", "change", "from_entity_ids", "member_count"])
    except RegistryVersionError as exc:
        log.warning("review: no change rows of ds=%s: %s", paths.ds, exc)
        return []
    changes = changes.filter(pc.equal(changes.column("change"), "merge"))
    merges = sorted(changes.to_pylist(), key=lambda m: (-(m["member_count"] or 0), m["entity_id"]))[:MAX_MERGES]
    if not merges:
        return []
    wanted = {m["entity_id"] for m in merges}
    # the references of the accepted pairs: a key filter, so the newest row of each is found in any layer
    refs = {(p["source_a"], p["record_id_a"]) for p in accepted} | {(p["source_b"], p["record_id_b"]) for p in accepted}
    entity_of = {(m["source"], m["record_id"]): m["entity_id"]
                 for m in _members(paths.entities, paths.ds, refs, ["entity_id"]) if m["entity_id"] in wanted}
    base_ds = (summary.get("registry") or {}).get("base_ds")
    origin = {(m["source"], m["record_id"]): m["entity_id"]
              for m in _members(paths.entities, base_ds, set(entity_of), ["entity_id"])}
    by_entity: dict[str, list] = {e: [] for e in wanted}
    for p in accepted:
        a, b = (p["source_a"], p["record_id_a"]), (p["source_b"], p["record_id_b"])
        e = entity_of.get(a)
        if e is not None and e == entity_of.get(b) and origin.get(a, "new") != origin.get(b, "new"):
            by_entity[e].append(p)
    out = []
    for m in merges:
        pairs = sorted(by_entity[m["entity_id"]], key=lambda p: p["score"])[:PAIRS_PER_MERGE]
        out.append({"entity_id": m["entity_id"], "from": (m["from_entity_ids"] or "").split(","),
                    "member_count": m["member_count"], "pairs": pairs})
    return out


def review_data(paths: RunPaths, summary: Mapping[str, Any], limit: int = PAIRS_PER_SIDE) -> dict[str, Any]:
    """Everything the review page shows.

    Returns:
        ``{"ds", "run_id", "missing" (why there are no pairs, or None),
        "sections": [{"id", "title", "note", "pairs": [...]}, …],
        "merges": [...], "existing": decision rows of ``decisions.csv``,
        "decisions_path"}``; each pair: ``key, source_a, record_id_a,
        source_b, record_id_b, score, mu, margin, iteration, accepted,
        agreeing, conflicting, fields`` ([(name, segments of A, segments of B)]),
        ``existing`` (the decision in force or None).
    """
    from washline.report_html import iteration_mus

    data: dict[str, Any] = {"ds": paths.ds, "run_id": summary.get("run_id"), "missing": None, "sections": [],
                            "merges": [], "existing": [], "decisions_path": str(paths.decisions),
                            "decisions_error": None}
    try:
        data["existing"] = read_decisions_file(paths.decisions)
    except (OSError, ValueError) as exc:
        data["decisions_error"] = str(exc)
    if summary.get("clusters") is None:
        data["missing"] = "the link task did not succeed in this run"
        return data
    try:
        metrics = json.loads(paths.link_metrics.read_text())
        pairs = _read_pairs(paths).to_pylist()
    except Exception as exc:  # noqa: BLE001 - the page says so
        data["missing"] = f"no pair output: {exc}"
        return data
    mus = iteration_mus(metrics)
    above, below = closest_to_mu(pairs, mus, limit)
    registry = bool(summary.get("registry"))
    merges = _merges(paths, summary, [p for p in pairs if p.get("accepted")]) if registry else []
    for m in merges:
        for p in m["pairs"]:
            p.setdefault("mu", mus.get(p.get("iteration")))
            p.setdefault("margin", p["score"] - p["mu"] if p["mu"] is not None else None)
    shown = [p for m in merges for p in m["pairs"]] + above + below
    keys = {(p["source_a"], p["record_id_a"]) for p in shown} | {(p["source_b"], p["record_id_b"]) for p in shown}
    fields = _refs_fields(paths, keys, registry)
    existing = effective_decisions(data["existing"])
    for p in shown:
        _dress(p, fields, existing)
    data["merges"] = merges
    data["sections"] = [
        {"id": "above", "title": f"Links just above mu ({len(above)})",
         "note": "accepted links with the smallest margin over their iteration's mu", "pairs": above},
        {"id": "below", "title": f"Close calls just below mu ({len(below)})",
         "note": "rejected pairs with the highest score under their iteration's mu", "pairs": below},
    ]
    return data


def _dress(p: dict[str, Any], fields: Mapping[tuple[str, str], list], existing: Mapping[str, str]) -> None:
    """Add ``key``, ``existing`` and ``fields`` (side by side, highlighted) to a pair."""
    agree = {t.upper() for t in p.get("agreeing") or []}
    conflict = {t.upper() for t in p.get("conflicting") or []}
    a = dict(fields.get((p["source_a"], p["record_id_a"]), []))
    b = dict(fields.get((p["source_b"], p["record_id_b"]), []))
    names = list(a) + [k for k in b if k not in a]
    p["key"] = pair_key(p["source_a"], p["record_id_a"], p["source_b"], p["record_id_b"])
    p["existing"] = existing.get(p["key"])
    p["fields"] = [(n, highlight(str(a.get(n, "")), agree, conflict), highlight(str(b.get(n, "")), agree, conflict))
                   for n in names]
    p["found"] = bool(a) and bool(b)


def render_review(data: Mapping[str, Any]) -> str:
    """The review page as HTML text (self-contained: inline style and script)."""
    from washline.report_html import _environment

    existing_json = json.dumps(data["existing"]).replace("</", "<\\/")
    return _environment().get_template("review.html.j2").render(
        d=data, columns=DECISIONS_COLUMNS, existing_json=existing_json,
        generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))


def write_review(paths: RunPaths, summary: Mapping[str, Any]) -> Path:
    """Write ``review.html`` of the night; returns its path."""
    from washline.report_html import write_text_atomic

    return write_text_atomic(paths.reports / REVIEW_FILE, render_review(review_data(paths, summary)))
