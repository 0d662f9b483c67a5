"""The GX run folders of a date (``lake/reports/<ds>/gx/<run>/``): keep the newest, remove the rest.

What it owns: :func:`prune_run_folders`, which ``validate_slice`` calls after
each validation with ``keep_runs`` of ``quality.yaml``.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("washline.quality.runner")


def prune_run_folders(parent: Path, keep: int, current: Path | None = None) -> list[Path]:
    """Delete all but the newest ``keep`` GX run folders under ``parent``.

    ``parent`` is a date's ``lake/reports/<ds>/gx/``; each child holding a
    ``gx/`` project is one run's GX project and Data Docs. Folders are ordered
    by modification time (newest first); ``current`` (this run) is always kept.
    Anything else in ``parent`` is left alone. A folder that cannot be removed
    is logged as a warning, not raised: pruning never fails a validation.

    Returns:
        The folders removed.
    """
    import shutil

    parent = Path(parent)
    if keep < 1 or not parent.is_dir():
        return []
    runs = [p for p in parent.iterdir() if p.is_dir() and (p / "gx").is_dir()]
    runs.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    if current is not None:
        current = Path(current).resolve()
        runs.sort(key=lambda p: p.resolve() != current)  # stable: the current run first
    removed = []
    for old in runs[keep:]:
        try:
            shutil.rmtree(old)
            removed.append(old)
        except OSError as exc:
            log.warning("could not remove the old GX run folder %s: %s", old, exc)
    if removed:
        log.info("removed %d old GX run folder(s) under %s (keep_runs=%d)", len(removed), parent, keep)
    return removed
