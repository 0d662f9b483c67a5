"""Entity registry versions shaped like the link job's (the registry contract),
fabricated with pyarrow so the Airflow side is tested without the Spark side:

    <lake>/entities/ds=<d>/members/    source, record_id, entity_id, first_seen_ds, last_changed_ds,
                                       text, attributes map<string,string>
    <lake>/entities/ds=<d>/entities/   entity_id, member_count int, first_seen_ds, last_changed_ds, golden_record
    <lake>/entities/ds=<d>/changes/    ds, entity_id, change, from_entity_ids, member_count int
    <lake>/entities/ds=<d>/_COMPLETE.json

Two nights are provided (:func:`two_nights`): night 1 mints four entities from
source ``a``; night 2 adds source ``b``: one reference grows an entity, one
bridges two entities (a merge: the oldest id survives), one is new.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

D1, D2 = "2025-01-01", "2025-01-02"


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
