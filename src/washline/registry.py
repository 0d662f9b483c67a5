"""The Airflow side of the entity registry (issue 13): its versions in the lake
and their markers.

The link job (``spark_jobs/link.py --registry <lake>/entities``) writes one
version per logical date under ``lake/entities/ds=<d>/``: ``members/``,
``entities/``, ``changes/``, ``frequencies/`` (Parquet) and, last,
``_COMPLETE.json`` with the night's figures. This module reads that file and
writes the two markers the link job of a later date decides by:

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
for inspection (replaced by the next one).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from washline.paths import RunPaths, validate_ds

COMPLETE = "_COMPLETE.json"
PUBLISHED = "_PUBLISHED.json"
REJECTED = "_REJECTED.json"

#: Staging table → the folder of a registry version it is loaded from.
VERSION_FOLDERS = {
    "staging_entity_members": "members",
    "staging_entities": "entities",
    "staging_entity_changes": "changes",
}

#: The night's figures in ``_COMPLETE.json`` (contract of issue 13), all counts.
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
    for name, folder in VERSION_FOLDERS.items():
        if not (paths.registry_version / folder).is_dir():
            raise RegistryVersionError(
                f"registry version {paths.registry_version} has {COMPLETE} but no {folder}/ (for {name})")
    return payload


def version_sources(paths: RunPaths) -> dict[str, Path]:
    """Staging entity table → the Parquet folder of the date's version."""
    return {table: paths.registry_version / folder for table, folder in VERSION_FOLDERS.items()}


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
