"""Entity registry versions shaped like the link job's, fabricated with pyarrow
so the Airflow side is tested without the Spark side. Format 1
(:func:`write_version`, whole folders per version):

    <lake>/entities/ds=<d>/members/    source, record_id, entity_id, first_seen_ds, last_changed_ds,
                                       text, attributes map<string,string>
    <lake>/entities/ds=<d>/entities/   entity_id, member_count int, first_seen_ds, last_changed_ds, golden_record
    <lake>/entities/ds=<d>/changes/    ds, entity_id, change, from_entity_ids, member_count int
    <lake>/entities/ds=<d>/_COMPLETE.json

Two nights are provided (:func:`two_nights`): night 1 mints four entities from
source ``a``; night 2 adds source ``b``: one reference grows an entity, one
bridges two entities (a merge: the oldest id survives), one is new.

Format 2 (:func:`write_layered`, the delta layers of ``notes/registry-format.md``):
the night's own layers are the difference between a version and its base
(:func:`delta`): members added or changed, entities created or changed, and
entities gone as ``removed`` rows; ``_COMPLETE.json`` lists the base's layers
plus the own ones. :func:`three_nights` adds a night 3 with a split and an
``update`` on top of :func:`two_nights`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

D1, D2, D3 = "2025-01-01", "2025-01-02", "2025-01-03"


def entity_id(ds: str, ref_key: str) -> str:
    """The contract's id: ``E`` + 16 hex digits of sha1("<ds>|<smallest ref_key>")."""
    return "E" + hashlib.sha1(f"{ds}|{ref_key}".encode()).hexdigest()[:16]


@dataclass
class Version:
    ds: str
    base_ds: str | None
    members: list[tuple[str, str, str, str, str]]  # source, record_id, entity_id, first_seen_ds, last_changed_ds
    changes: list[tuple[str, str, str, int]]  # entity_id, change, from_entity_ids, member_count
    night_references: int
    joined_existing: int
    extra: dict = field(default_factory=dict)

    def entities(self) -> list[tuple[str, int, str, str, str]]:
        groups: dict[str, list[tuple]] = {}
        for m in self.members:
            groups.setdefault(m[2], []).append(m)
        out = []
        for eid in sorted(groups):
            ms = groups[eid]
            golden = json.dumps({"given_name": ms[-1][1].upper()}, sort_keys=True)
            out.append((eid, len(ms), min(m[3] for m in ms), max(m[4] for m in ms), golden))
        return out

    def complete(self) -> dict:
        kinds = Counter(c[1] for c in self.changes)
        return {
            "ds": self.ds, "base_ds": self.base_ds, "references_total": len(self.members),
            "night_references": self.night_references,
            "new_references": sum(1 for m in self.members if m[3] == self.ds),
            "joined_existing": self.joined_existing, "entities_total": len(self.entities()),
            "new_entities": kinds["new"], "grows": kinds["grow"], "merges": kinds["merge"],
            "splits": kinds["split"], "seconds": 1.5, "profile": "default", **self.extra,
        }


def two_nights() -> tuple[Version, Version]:
    e = {k: entity_id(D1, f"a|{k}") for k in ("a1", "a3", "a5", "a6")}
    night1 = Version(
        D1, None,
        [("a", "a1", e["a1"], D1, D1), ("a", "a2", e["a1"], D1, D1), ("a", "a3", e["a3"], D1, D1),
         ("a", "a4", e["a3"], D1, D1), ("a", "a5", e["a5"], D1, D1), ("a", "a6", e["a6"], D1, D1)],
        [(e[k], "new", "", n) for k, n in (("a1", 2), ("a3", 2), ("a5", 1), ("a6", 1))],
        night_references=6, joined_existing=0)
    e5 = entity_id(D2, "b|b3")
    merged = ",".join(sorted([e["a5"], e["a6"]]))
    survivor = min(e["a5"], e["a6"])  # same age: the contract's tie-break is the Spark side's; any one of them
    night2 = Version(
        D2, D1,
        [("a", "a1", e["a1"], D1, D1), ("a", "a2", e["a1"], D1, D1), ("b", "b1", e["a1"], D2, D2),
         ("a", "a3", e["a3"], D1, D1), ("a", "a4", e["a3"], D1, D1),
         ("a", "a5", survivor, D1, D2), ("a", "a6", survivor, D1, D2), ("b", "b2", survivor, D2, D2),
         ("b", "b4", survivor, D2, D2), ("b", "b3", e5, D2, D2)],
        [(e["a1"], "grow", "", 3), (survivor, "merge", merged, 4), (e5, "new", "", 1)],
        night_references=4, joined_existing=3)
    return night1, night2


def write_version(lake: Path, v: Version, *, complete: bool = True, changes_files: bool = True) -> Path:
    """Write ``v`` under ``<lake>/entities/ds=<ds>/`` as the link job would; returns that folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(lake) / "entities" / f"ds={v.ds}"
    for sub in ("members", "entities", "changes"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    members = pa.table({
        "source": [m[0] for m in v.members], "record_id": [m[1] for m in v.members],
        "entity_id": [m[2] for m in v.members], "first_seen_ds": [m[3] for m in v.members],
        "last_changed_ds": [m[4] for m in v.members],
        "text": [f"{m[1].upper()} SMITH 2000" for m in v.members],
        "attributes": pa.array([[("given_name", m[1].upper()), ("postcode", "2000")] for m in v.members],
                               pa.map_(pa.string(), pa.string())),
    })
    pq.write_table(members, root / "members" / "part-00000.parquet")
    ents = v.entities()
    pq.write_table(pa.table({
        "entity_id": [x[0] for x in ents], "member_count": pa.array([x[1] for x in ents], pa.int32()),
        "first_seen_ds": [x[2] for x in ents], "last_changed_ds": [x[3] for x in ents],
        "golden_record": [x[4] for x in ents],
    }), root / "entities" / "part-00000.parquet")
    if changes_files or v.changes:
        pq.write_table(pa.table({
            "ds": pa.array([v.ds] * len(v.changes), pa.string()),
            "entity_id": pa.array([c[0] for c in v.changes], pa.string()),
            "change": pa.array([c[1] for c in v.changes], pa.string()),
            "from_entity_ids": pa.array([c[2] for c in v.changes], pa.string()),
            "member_count": pa.array([c[3] for c in v.changes], pa.int32()),
        }), root / "changes" / "part-00000.parquet")
    for sub in ("members", "entities", "changes"):
        (root / sub / "_SUCCESS").write_text("")
    if complete:
        (root / "_COMPLETE.json").write_text(json.dumps(v.complete()))
    return root


def three_nights() -> tuple[Version, Version, Version]:
    """:func:`two_nights` plus night 3: the merged entity splits (``b2``, ``b4``
    leave it for a new id), ``a3``'s entity gets another golden record
    (``update``) and ``c1`` is new. No reference is removed."""
    night1, night2 = two_nights()
    survivor = next(m[2] for m in night2.members if m[1] == "a5")
    part = entity_id(D3, "b|b2")
    e3 = next(m[2] for m in night2.members if m[1] == "a3")
    ec = entity_id(D3, "c|c1")
    members = []
    for m in night2.members:
        if m[1] in ("b2", "b4"):
            m = (m[0], m[1], part, m[3], D3)
        members.append(m)
    members.append(("c", "c1", ec, D3, D3))
    night3 = Version(
        D3, D2, members,
        [(survivor, "split", survivor, 2), (part, "split", survivor, 2), (e3, "update", "", 2), (ec, "new", "", 1)],
        night_references=2, joined_existing=0, extra={"split_rows": 2, "updates": 1})
    night3.golden = {e3: json.dumps({"given_name": "A3-UPDATED"}, sort_keys=True)}
    return night1, night2, night3


def _entities(v: Version) -> dict[str, tuple]:
    golden = getattr(v, "golden", {})
    return {e[0]: (*e[:4], golden.get(e[0], e[4])) for e in v.entities()}


def delta(v: Version, base: Version | None) -> tuple[list[tuple], list[tuple]]:
    """The night's own layers of ``v`` over ``base``: (members added or changed,
    entities created or changed plus ``removed`` rows for the ids gone). Entity
    rows are ``(entity_id, member_count, first_seen_ds, last_changed_ds, golden_record, removed)``."""
    old_members = {(m[0], m[1]): m for m in (base.members if base else [])}
    members = [m for m in v.members if old_members.get((m[0], m[1])) != m]
    old, new = (_entities(base) if base else {}), _entities(v)
    ents = [(*e, False) for eid, e in sorted(new.items()) if old.get(eid) != e]
    ents += [(eid, 0, old[eid][2], v.ds, None, True) for eid in sorted(set(old) - set(new))]
    return members, ents


def _write_layer(entities: Path, part: str, ds: str, table) -> str:
    import pyarrow.parquet as pq

    layer = f"{ds}-{secrets.token_hex(6)}"
    folder = entities / "_layers" / part / layer
    folder.mkdir(parents=True)
    if table is not None:
        pq.write_table(table, folder / "part-00000.parquet")
    (folder / "_SUCCESS").write_text("")
    return layer


def write_layered(lake: Path, v: Version, base: Version | None, *, compact: bool = False,
                  frequencies: dict[str, int] | None = None) -> Path:
    """Write ``v`` as a format-2 version over ``base`` (whose version must be in
    the lake already, unless None): own layers from :func:`delta`, manifest
    last. ``compact``: ``layers`` is one full layer per part (a compaction), while
    ``own`` still names the delta. Returns the version folder."""
    import pyarrow as pa

    entities = Path(lake) / "entities"
    base_manifest = json.loads((entities / f"ds={base.ds}" / "_COMPLETE.json").read_text()) if base else None
    members, ents = delta(v, base)

    def members_table(rows):
        return pa.table({
            "source": pa.array([m[0] for m in rows], pa.string()), "record_id": pa.array([m[1] for m in rows], pa.string()),
            "entity_id": pa.array([m[2] for m in rows], pa.string()),
            "first_seen_ds": pa.array([m[3] for m in rows], pa.string()),
            "last_changed_ds": pa.array([m[4] for m in rows], pa.string()),
            "text": pa.array([f"{m[1].upper()} SMITH 2000" for m in rows], pa.string()),
            "attributes": pa.array([[("given_name", m[1].upper()), ("postcode", "2000")] for m in rows],
                                   pa.map_(pa.string(), pa.string())),
        })

    def entities_table(rows):
        return pa.table({
            "entity_id": pa.array([e[0] for e in rows], pa.string()),
            "member_count": pa.array([e[1] for e in rows], pa.int32()),
            "first_seen_ds": pa.array([e[2] for e in rows], pa.string()),
            "last_changed_ds": pa.array([e[3] for e in rows], pa.string()),
            "golden_record": pa.array([e[4] for e in rows], pa.string()),
            "removed": pa.array([e[5] for e in rows], pa.bool_()),
        })

    changes = pa.table({
        "ds": pa.array([v.ds] * len(v.changes), pa.string()),
        "entity_id": pa.array([c[0] for c in v.changes], pa.string()),
        "change": pa.array([c[1] for c in v.changes], pa.string()),
        "from_entity_ids": pa.array([c[2] for c in v.changes], pa.string()),
        "member_count": pa.array([c[3] for c in v.changes], pa.int32()),
    }) if v.changes else None
    freq = frequencies if frequencies is not None else {f"T{v.ds[-2:]}": 1}
    freq_table = pa.table({"token": pa.array(list(freq), pa.string()), "freq": pa.array(list(freq.values()), pa.int64())})
    own = {"members": _write_layer(entities, "members", v.ds, members_table(members)),
           "entities": _write_layer(entities, "entities", v.ds, entities_table(ents)),
           "changes": _write_layer(entities, "changes", v.ds, changes),
           "frequencies": _write_layer(entities, "frequencies", v.ds, freq_table)}
    if compact:
        layers = {"members": [_write_layer(entities, "members", v.ds, members_table(v.members))],
                  "entities": [_write_layer(entities, "entities", v.ds,
                                            entities_table([(*e, False) for e in _entities(v).values()]))],
                  "frequencies": [own["frequencies"]] if base is None else
                  [*base_manifest["layers"]["frequencies"], own["frequencies"]]}
    else:
        layers = {part: [*(base_manifest["layers"][part] if base_manifest else []), own[part]]
                  for part in ("members", "entities", "frequencies")}
    root = entities / f"ds={v.ds}"
    root.mkdir(parents=True, exist_ok=True)
    for stale in ("_COMPLETE.json", "_PUBLISHED.json", "_REJECTED.json"):
        (root / stale).unlink(missing_ok=True)
    complete = {**v.complete(), "entities_total": len(_entities(v)), "format": 2,
                "base_ds": base.ds if base else None, "layers": layers, "own": own}
    (root / "_COMPLETE.json").write_text(json.dumps(complete))
    return root
