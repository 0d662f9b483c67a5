"""The Airflow side of the entity registry: its versions in the lake, their
layers, and their markers.

The link job (``spark_jobs/link.py --registry <lake>/entities``) writes one
version per logical date. Two lake formats are read (the contract:
``notes/registry-format.md`` of the project, mirrored by ``hdwm.registry``):

* format 2 (``_COMPLETE.json`` carries ``"format": 2``): the Parquet lives in
  immutable layers ``lake/entities/_layers/<part>/<layer_id>/``; the version's
  manifest ``ds=<d>/_COMPLETE.json`` lists ``layers[part]`` (oldest first, the
  layers that make up the version) and ``own[part]`` (the layer the night wrote:
  its delta). ``changes`` is never layered: a version's changes are its own layer.
* format 1 (no ``"format"``): ``ds=<d>/<part>/`` holds the whole version; it is
  read as one layer per part that is both the version and its own layer.

:func:`own_layers` gives the folders of a night's delta (what an incremental
publish stages), :func:`version_layers` every layer of a version, and
:func:`read_part` / :func:`read_version` the *merged* version (members and
tokens: the newest row per ``(source, record_id)``; entities: the newest row per
``entity_id``, without the removed ones; frequencies: summed per token, kept
when positive), which a full publish stages. :func:`staging_sources` picks one
or the other for the staging tables.

The night's figures come from ``_COMPLETE.json`` (:func:`require_complete`),
and this module writes the two markers the link job of a later date decides by:

* ``_PUBLISHED.json`` ``{ds, published_at}``: written by the ``publish`` task
  right after its database transaction committed. A later night links against
  the latest published version before it.
* ``_REJECTED.json`` ``{ds, reason}``: written by the ``report`` task when the
  run of ``d`` did not publish, so that the next date is not refused as
  "previous date not published yet"; the next date links against the last
  published version instead.

Both are written atomically (temp file + ``os.replace``).

A rerun of a published date: the link job moves the published version aside
to ``lake/entities/.published-ds=<d>/`` before it writes the new one
(``hdwm.registry.stash_published``). ``publish`` deletes that folder after its
commit (:func:`drop_stash`); when the rerun does not publish, ``report`` moves
it back (:func:`restore_published`): the published tables still hold d's
earlier publish, so the lake must say the same, and the next date links
against it. The rejected attempt's version is kept as ``.rejected-ds=<d>/``
for inspection (replaced by the next one). In format 2 these folders hold a
manifest and markers only; the layers they name stay under ``_layers/``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from washline.paths import RunPaths, validate_ds

COMPLETE = "_COMPLETE.json"
PUBLISHED = "_PUBLISHED.json"
REJECTED = "_REJECTED.json"

#: Staging table → the part of a registry version it is loaded from.
STAGED_PARTS = {
    "staging_entity_members": "members",
    "staging_entities": "entities",
    "staging_entity_changes": "changes",
}
#: Parts every version has; ``frequencies`` and ``tokens`` are optional here (the
#: Airflow side does not stage them).
REQUIRED_PARTS = ("members", "entities", "changes")
#: Every part of the contract.
PARTS = ("members", "entities", "changes", "frequencies", "tokens")
#: The folder of the layers (format 2), under ``lake/entities``.
LAYERS_DIR = "_layers"
#: A layer id: ``<ds>-<12 lowercase hex>``.
LAYER_ID = re.compile(r"^\d{4}-\d{2}-\d{2}-[0-9a-f]{12}$")
#: Upsert parts → their key; the newest layer holding a key wins.
PART_KEYS = {"members": ("source", "record_id"), "entities": ("entity_id",), "tokens": ("source", "record_id")}
#: Publish modes (see :func:`publish_mode`).
INCREMENTAL, FULL = "incremental", "full"

#: The night's figures in ``_COMPLETE.json``, all counts.
NIGHT_FIGURES = ("references_total", "night_references", "new_references", "joined_existing",
                 "entities_total", "new_entities", "grows", "merges", "splits")


class RegistryVersionError(RuntimeError):
    """A registry version is missing, incomplete or not the date's (message says which)."""


def _write_json_atomic(path: Path, payload: dict[str, Any]) -> Path:
    from washline.report import write_json_atomic

    return write_json_atomic(path, payload)


def read_complete(paths: RunPaths) -> dict[str, Any] | None:
    """``_COMPLETE.json`` of the date's version, or None when it is absent (an
    incomplete version: the link job was killed or has not run)."""
    path = paths.registry_version / COMPLETE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise RegistryVersionError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise RegistryVersionError(f"{path} holds {type(payload).__name__}, expected an object")
    return payload


def require_complete(paths: RunPaths) -> dict[str, Any]:
    """The date's ``_COMPLETE.json``, checked.

    Returns:
        The payload (``ds``, ``base_ds``, the counts of :data:`NIGHT_FIGURES`, ...).

    Raises:
        RegistryVersionError: the file is missing (the version is incomplete),
            names another date, lacks a figure or holds a negative or
            non-integer count; the message names the file.
    """
    path = paths.registry_version / COMPLETE
    payload = read_complete(paths)
    if payload is None:
        raise RegistryVersionError(
            f"the link job left no complete registry version for ds={paths.ds}: {path} is missing")
    if payload.get("ds") != paths.ds:
        raise RegistryVersionError(f"{path} is for ds={payload.get('ds')!r}, not {paths.ds}")
    bad = [k for k in NIGHT_FIGURES
           if not isinstance(payload.get(k), int) or isinstance(payload.get(k), bool) or payload[k] < 0]
    if bad:
        raise RegistryVersionError(f"{path}: missing or invalid count(s) {bad}")
    version_layers(paths.entities, paths.ds, payload)  # every layer it names exists (raises otherwise)
    return payload


# ---------------------------------------------------------------------------
# Layers and the merged version
# ---------------------------------------------------------------------------

def _part_schemas() -> dict[str, Any]:
    """The parts' Arrow schemas (``hdwm.registry`` *_SCHEMA, in Arrow types)."""
    import pyarrow as pa

    s = pa.string()
    return {
        "members": pa.schema([("source", s), ("record_id", s), ("entity_id", s), ("first_seen_ds", s),
                              ("last_changed_ds", s), ("text", s), ("attributes", pa.map_(s, s))]),
        "entities": pa.schema([("entity_id", s), ("member_count", pa.int32()), ("first_seen_ds", s),
                               ("last_changed_ds", s), ("golden_record", s), ("removed", pa.bool_())]),
        "changes": pa.schema([("ds", s), ("entity_id", s), ("change", s), ("from_entity_ids", s),
                              ("member_count", pa.int32())]),
        "frequencies": pa.schema([("token", s), ("freq", pa.int64())]),
        "tokens": pa.schema([("source", s), ("record_id", s), ("tokens", pa.list_(s))]),
    }


def manifest(entities: Path, ds: str) -> dict[str, Any]:
    """``lake/entities/ds=<ds>/_COMPLETE.json`` of any version (unchecked figures).

    Raises:
        RegistryVersionError: missing, not a JSON object, or for another date.
    """
    validate_ds(ds)
    path = Path(entities) / f"ds={ds}" / COMPLETE
    try:
        payload = json.loads(path.read_text())
    except FileNotFoundError:
        raise RegistryVersionError(f"registry version ds={ds} is not complete: {path} is missing") from None
    except ValueError as exc:
        raise RegistryVersionError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("ds") != ds:
        raise RegistryVersionError(f"{path} is not the manifest of ds={ds}")
    return payload


def version_format(complete: Mapping[str, Any]) -> int:
    """1 (``_COMPLETE.json`` without ``format``: whole folders) or 2 (layers).

    Raises:
        RegistryVersionError: another ``format`` value.
    """
    fmt = complete.get("format", 1)
    if fmt not in (1, 2) or isinstance(fmt, bool):
        raise RegistryVersionError(f"registry version ds={complete.get('ds')} has format {fmt!r}; "
                                   "this washline reads formats 1 and 2")
    return int(fmt)


def layer_dir(entities: Path, part: str, layer_id: str) -> Path:
    """``lake/entities/_layers/<part>/<layer_id>/``.

    Raises:
        RegistryVersionError: an unknown part or a layer id that is not ``<ds>-<12 hex>``.
    """
    if part not in PARTS:
        raise RegistryVersionError(f"unknown registry part {part!r}; expected one of {PARTS}")
    if not isinstance(layer_id, str) or not LAYER_ID.match(layer_id):
        raise RegistryVersionError(f"layer id {layer_id!r} of part {part} is not '<ds>-<12 lowercase hex>'")
    return Path(entities) / LAYERS_DIR / part / layer_id


def _require_dir(path: Path, ds: str, part: str) -> Path:
    if not path.is_dir():
        raise RegistryVersionError(f"registry version ds={ds} names {path} for {part}, which does not exist")
    return path


def own_layers(entities: Path, ds: str, complete: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Part → the folder of the night's own layer (its delta) of version ``ds``.

    Format 1: ``ds=<d>/<part>/`` (the whole version is its own layer). Optional
    parts (frequencies, tokens) the version lacks are left out.

    Raises:
        RegistryVersionError: no manifest, a bad layer id, or a required part
            (:data:`REQUIRED_PARTS`) missing or pointing at no folder.
    """
    complete = manifest(entities, ds) if complete is None else complete
    out: dict[str, Path] = {}
    if version_format(complete) == 1:
        for part in PARTS:
            folder = Path(entities) / f"ds={ds}" / part
            if folder.is_dir() or part in REQUIRED_PARTS:
                out[part] = _require_dir(folder, ds, part)
        return out
    own = complete.get("own")
    if not isinstance(own, Mapping):
        raise RegistryVersionError(f"registry version ds={ds} (format 2) has no 'own' layers in {COMPLETE}")
    for part in PARTS:
        if own.get(part) is None and part not in REQUIRED_PARTS:
            continue
        out[part] = _require_dir(layer_dir(entities, part, own.get(part)), ds, part)
    return out


def version_layers(entities: Path, ds: str, complete: Mapping[str, Any] | None = None) -> dict[str, list[Path]]:
    """Part → the folders of the layers that make up version ``ds``, oldest first
    (``changes``: the own layer only; format 1: ``[ds=<d>/<part>/]``).

    Raises:
        RegistryVersionError: as :func:`own_layers`, or a listed layer is missing.
    """
    complete = manifest(entities, ds) if complete is None else complete
    own = own_layers(entities, ds, complete)
    if version_format(complete) == 1:
        return {part: [folder] for part, folder in own.items()}
    layers = complete.get("layers")
    if not isinstance(layers, Mapping):
        raise RegistryVersionError(f"registry version ds={ds} (format 2) has no 'layers' in {COMPLETE}")
    out: dict[str, list[Path]] = {}
    for part in PARTS:
        if part == "changes":
            out[part] = [own[part]]
            continue
        ids = layers.get(part)
        if not ids and part not in REQUIRED_PARTS:
            continue  # an optional part the version does not have (``[]``: e.g. no stored tokens)
        if not isinstance(ids, list) or not ids:
            raise RegistryVersionError(f"registry version ds={ds} lists no layers for {part}")
        out[part] = [_require_dir(layer_dir(entities, part, i), ds, part) for i in ids]
    return out


def _read_layer(folder: Path, part: str, columns: list[str], filter: Any = None):
    """One layer's rows of ``columns`` (Arrow table, cast to the part's schema);
    a layer without data files is an empty table. ``removed`` missing from an
    entities layer (format 1) reads as false.

    Raises:
        RegistryVersionError: schema drift, or a data file that is not readable
            Parquet (e.g. truncated); the message names the layer.
    """
    import pyarrow as pa

    try:
        return _read_layer_files(folder, part, columns, filter)
    except (pa.ArrowException, OSError) as exc:
        raise RegistryVersionError(f"registry layer {folder} ({part}) is unreadable: {exc}") from exc


def _read_layer_files(folder: Path, part: str, columns: list[str], filter: Any = None):
    import pyarrow as pa
    import pyarrow.dataset as pads

    schema = _part_schemas()[part]
    target = pa.schema([schema.field(c) for c in columns])
    dataset = pads.dataset(str(folder), format="parquet", ignore_prefixes=["_", "."])
    if not dataset.files:
        return target.empty_table()
    have = set(dataset.schema.names)
    unknown = sorted(have - set(schema.names))
    if unknown:
        raise RegistryVersionError(f"schema drift in registry layer {folder}: column(s) {unknown} are not in "
                                   f"the contract's {part} schema {schema.names}")
    read = [c for c in columns if c in have]
    missing = [c for c in columns if c not in have]
    if set(missing) - {"removed"}:
        raise RegistryVersionError(f"registry layer {folder} lacks column(s) {sorted(set(missing) - {'removed'})}")
    table = dataset.to_table(columns=read, filter=filter)
    if missing:
        table = table.append_column("removed", pa.array([False] * table.num_rows, pa.bool_()))
    return table.select(columns).cast(target)


def _key(table, key: tuple[str, ...]):
    import pyarrow.compute as pc

    cols = [table.column(k).combine_chunks() for k in key]
    return cols[0] if len(cols) == 1 else pc.binary_join_element_wise(*cols, "\x1f")


def read_part(entities: Path, ds: str, part: str, *, complete: Mapping[str, Any] | None = None,
              columns: list[str] | None = None, key_filter: Any = None):
    """The merged rows of one part of version ``ds`` (a ``pyarrow.Table``).

    * members, tokens: per ``(source, record_id)`` the row of the newest layer
      holding it; entities: per ``entity_id`` the newest row, rows with
      ``removed`` true dropped (the column stays, all false);
    * frequencies: ``freq`` summed per ``token`` over all layers, tokens with a
      sum <= 0 dropped; changes: the version's own change rows.

    Args:
        columns: columns to return (default: the part's schema; see
            ``hdwm.registry``); key columns are read anyway.
        key_filter: a ``pyarrow.compute`` expression on KEY columns only (e.g.
            ``pc.field("record_id").isin(ids)``), pushed into every layer; a
            filter on other columns would pick an older row, so filter those after.

    Raises:
        RegistryVersionError: the manifest or a layer is missing or malformed,
            or a layer holds a key twice.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = _part_schemas()[part]
    wanted = list(columns or schema.names)
    unknown = [c for c in wanted if c not in schema.names]
    if unknown:
        raise ValueError(f"registry part {part} has no column(s) {unknown}")
    folders = version_layers(entities, ds, complete).get(part)
    if folders is None:
        raise RegistryVersionError(f"registry version ds={ds} has no {part}")
    key = PART_KEYS.get(part, ("token",) if part == "frequencies" else ())
    extra = ["removed"] if part == "entities" else []
    read = list(dict.fromkeys([*key, *wanted, *extra]))
    if part == "frequencies":
        table = pa.concat_tables([_read_layer(f, part, ["token", "freq"], key_filter) for f in folders])
        summed = table.group_by("token").aggregate([("freq", "sum")]).rename_columns(["token", "freq"])
        summed = summed.filter(pc.greater(summed.column("freq"), 0)).sort_by("token")
        return summed.select(wanted)
    if part == "changes":
        return pa.concat_tables([_read_layer(f, part, read, key_filter) for f in folders]).select(wanted)
    kept, seen = [], None
    for folder in reversed(folders):  # newest first
        table = _read_layer(folder, part, read, key_filter)
        keys = _key(table, key)
        if pc.count_distinct(keys).as_py() != len(keys):
            raise RegistryVersionError(f"registry layer {folder} holds a {part} key {key} more than once")
        if seen is not None and len(seen):
            fresh = pc.invert(pc.is_in(keys, value_set=seen))
            table, keys = table.filter(fresh), keys.filter(fresh)
        kept.append(table)
        seen = keys if seen is None else pa.concat_arrays([seen, keys])
    merged = pa.concat_tables(kept) if kept else pa.schema([schema.field(c) for c in read]).empty_table()
    if part == "entities":
        merged = merged.filter(pc.invert(pc.fill_null(merged.column("removed"), False)))
    return merged.sort_by([(k, "ascending") for k in key]).select(wanted)


def read_version(entities: Path, ds: str, parts: tuple[str, ...] = REQUIRED_PARTS,
                 complete: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Part → the merged ``pyarrow.Table`` of version ``ds`` (see :func:`read_part`)."""
    complete = manifest(entities, ds) if complete is None else complete
    return {part: read_part(entities, ds, part, complete=complete) for part in parts}


def publish_mode(complete: Mapping[str, Any], held_ds: str | None) -> tuple[str, str]:
    """How the night's version reaches the published tables, and why.

    Incremental (the night's own layers upserted) only when the version is
    format 2 and the database holds exactly its ``base_ds``; otherwise full
    (the merged version replaces the tables).

    Args:
        complete: the version's ``_COMPLETE.json``.
        held_ds: the registry version the database holds (None: none recorded).

    Returns:
        ``(INCREMENTAL or FULL, reason)``.
    """
    ds, base = complete.get("ds"), complete.get("base_ds")
    if version_format(complete) == 1:
        return FULL, f"ds={ds} is a format-1 version (whole folders, no delta layers)"
    if base is None:
        return FULL, f"ds={ds} has no base version (first night or a rebuild)"
    if held_ds is None:
        return FULL, "the database records no published registry version"
    if held_ds == ds:
        return FULL, f"the database already holds ds={ds} (a rerun of the date): its delta applies to {base} only"
    if held_ds != base:
        return FULL, f"the database holds ds={held_ds}, not the night's base ds={base}"
    return INCREMENTAL, f"the database holds the night's base ds={base}"


def staging_sources(paths: RunPaths, mode: str, complete: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Staging entity table → what it is loaded from for the date's version.

    Incremental: the Parquet folders of the night's own layers (members it
    added or changed, entities it created, changed or removed, its changes).
    Full: the merged version as ``pyarrow.Table`` (members without the
    lake-only ``text``/``attributes``; entities with ``removed`` all false) and
    the own change rows.

    Raises:
        RegistryVersionError: as :func:`version_layers`.
        ValueError: an unknown mode.
    """
    complete = require_complete(paths) if complete is None else complete
    if mode == INCREMENTAL:
        own = own_layers(paths.entities, paths.ds, complete)
        return {table: own[part] for table, part in STAGED_PARTS.items()}
    if mode != FULL:
        raise ValueError(f"publish mode {mode!r} is neither {INCREMENTAL!r} nor {FULL!r}")
    members = ["source", "record_id", "entity_id", "first_seen_ds", "last_changed_ds"]
    return {
        "staging_entity_members": read_part(paths.entities, paths.ds, "members", complete=complete, columns=members),
        "staging_entities": read_part(paths.entities, paths.ds, "entities", complete=complete),
        "staging_entity_changes": own_layers(paths.entities, paths.ds, complete)["changes"],
    }


def expected_change_rows(complete: dict[str, Any]) -> int:
    """Rows the version's ``changes/`` holds: one per new, grown, merged or
    updated entity and one per *part* of a split entity (``new_entities +
    grows + merges + split_rows + updates`` of ``_COMPLETE.json``; ``splits``
    counts the entities that split, each into two parts or more, so it is not
    the number of split rows). A version written before ``split_rows`` /
    ``updates`` existed falls back to ``splits`` / 0."""
    split_rows = complete.get("split_rows", complete["splits"])
    return (sum(int(complete[k]) for k in ("new_entities", "grows", "merges")) + int(split_rows)
            + int(complete.get("updates") or 0))


def write_published(paths: RunPaths, published_at: datetime | None = None) -> Path:
    """Write ``ds=<d>/_PUBLISHED.json`` ``{ds, published_at}`` (after the commit);
    a stale ``_REJECTED.json`` of the date is removed first."""
    when = (published_at or datetime.now(timezone.utc)).isoformat()
    (paths.registry_version / REJECTED).unlink(missing_ok=True)
    return _write_json_atomic(paths.registry_version / PUBLISHED, {"ds": paths.ds, "published_at": when})


def stash_path(paths: RunPaths) -> Path:
    """``lake/entities/.published-ds=<d>/``: the date's published version while it is linked again."""
    return paths.entities / f".published-ds={paths.ds}"


def restore_published(paths: RunPaths) -> bool:
    """After a rerun of a published date that did not publish: move the
    earlier published version back from :func:`stash_path` to ``ds=<d>/``
    (its ``_PUBLISHED.json`` included); the rerun's own version, if any, goes
    to ``.rejected-ds=<d>/``. Nothing moves when the date's version is itself
    published (a stale stash is then deleted) or there is no stash.

    Returns:
        True when the earlier published version was restored.
    """
    import os
    import shutil

    stash, version = stash_path(paths), paths.registry_version
    if not (stash / PUBLISHED).is_file():
        return False
    if (version / PUBLISHED).is_file():
        shutil.rmtree(stash, ignore_errors=True)
        return False
    rejected = paths.entities / f".rejected-ds={paths.ds}"
    if rejected.exists():
        shutil.rmtree(rejected)
    if version.exists():
        os.rename(version, rejected)
    os.rename(stash, version)
    return True


def drop_stash(paths: RunPaths) -> None:
    """After a publish of the date: its earlier published version is history."""
    import shutil

    shutil.rmtree(stash_path(paths), ignore_errors=True)


def write_rejected(paths: RunPaths, reason: str) -> Path | None:
    """Write ``ds=<d>/_REJECTED.json`` ``{ds, reason}`` for a run that did not publish.

    Nothing is written when the date carries ``_PUBLISHED.json``: the run
    failed before its link job replaced the version (which deletes both
    markers), or :func:`restore_published` brought the earlier published
    version back, so the earlier publish of the date still stands.

    Returns:
        The marker's path, or None when the date's earlier publish stands.
    """
    version = paths.registry_version
    if (version / PUBLISHED).exists():
        return None
    return _write_json_atomic(version / REJECTED, {"ds": paths.ds, "reason": str(reason)[:2000]})


def marker_state(paths: RunPaths) -> str | None:
    """``"published"``, ``"rejected"`` or None (neither marker) for the date."""
    if (paths.registry_version / PUBLISHED).exists():
        return "published"
    if (paths.registry_version / REJECTED).exists():
        return "rejected"
    return None


def published_after(paths: RunPaths) -> list[str]:
    """Dates after ``paths.ds`` whose version is published (sorted); the link job
    refuses to relink ``ds`` while any exists (it would fork the registry)."""
    validate_ds(paths.ds)
    out = []
    if paths.entities.is_dir():
        for child in paths.entities.iterdir():
            if child.name.startswith("ds=") and (child / PUBLISHED).exists():
                d = child.name[3:]
                if d > paths.ds:
                    out.append(d)
    return sorted(out)
