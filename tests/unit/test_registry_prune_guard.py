"""Retention and manifest reading on a damaged registry lake: a truncated or
malformed ``_COMPLETE.json`` is refused with a message naming the file, and
``prune`` then removes nothing (its layers could not be told apart from
unused ones). The lake is built by hand (manifests and layer folders), so no
Spark session is started."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hdwm.registry import COMPLETE, LAYERS, PUBLISHED, RegistryError, main, prune, read_complete

D1, D2 = "2025-01-01", "2025-01-02"
L1 = {"members": "2025-01-01-aaaaaaaaaaaa", "entities": "2025-01-01-bbbbbbbbbbbb",
      "changes": "2025-01-01-cccccccccccc", "frequencies": "2025-01-01-dddddddddddd"}
L2 = {"members": "2025-01-02-aaaaaaaaaaaa", "entities": "2025-01-02-bbbbbbbbbbbb",
      "changes": "2025-01-02-cccccccccccc", "frequencies": "2025-01-02-dddddddddddd"}


def _lake(root: Path) -> Path:
    """Two published format-2 versions, D2 layered on D1's layers, every layer an hour old."""
    old = time.time() - 3 * 3600
    for ds, own, base, layers in ((D1, L1, None, {p: [L1[p]] for p in L1 if p != "changes"}),
                                  (D2, L2, D1, {p: [L1[p], L2[p]] for p in L2 if p != "changes"})):
        v = root / f"ds={ds}"
        v.mkdir(parents=True)
        (v / COMPLETE).write_text(json.dumps({"ds": ds, "base_ds": base, "format": 2, "layers": layers,
                                              "own": own}, indent=2))
        (v / PUBLISHED).write_text(json.dumps({"ds": ds}))
        for part, lid in own.items():
            d = root / LAYERS / part / lid
            d.mkdir(parents=True)
            (d / "part-0.parquet").write_bytes(b"rows of " + lid.encode())
            os.utime(d, (old, old))
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_prune_of_a_sound_lake_keeps_every_layer_a_remaining_manifest_names(tmp_path):
    root = _lake(tmp_path / "entities")
    out = prune(root, keep=1, grace_seconds=0)
    assert out["removed_versions"] == [D1] and out["removed_layers"] == 1  # D1's changes: no one names it
    left = {(p.parent.name, p.name) for p in (root / LAYERS).glob("*/*")}
    named = {(part, lid) for part, ids in json.loads((root / f"ds={D2}" / COMPLETE).read_text())["layers"].items()
             for lid in ids} | {(part, lid) for part, lid in L2.items()}
    assert left == named


@pytest.mark.parametrize("damage", [
    "truncated",
    "empty",
    "a JSON list",
    "layers not lists",
])
def test_prune_removes_nothing_when_a_manifest_is_unreadable(tmp_path, damage):
    root = _lake(tmp_path / "entities")
    m = root / f"ds={D2}" / COMPLETE
    if damage == "truncated":
        _truncate(m)
    elif damage == "empty":
        m.write_text("")
    elif damage == "a JSON list":
        m.write_text("[]")
    else:
        c = json.loads(m.read_text())
        c["layers"]["members"] = L2["members"]  # a string: iterating it would name no layer
        m.write_text(json.dumps(c))
    before = _files(root)
    with pytest.raises(RegistryError, match=f"nothing removed.*ds={D2}/_COMPLETE.json"):
        prune(root, keep=1, grace_seconds=0)
    assert _files(root) == before


def test_prune_refuses_an_unreadable_stash_manifest_too(tmp_path):
    root = _lake(tmp_path / "entities")
    stash = root / f".published-ds={D2}"
    stash.mkdir()
    (stash / COMPLETE).write_text('{"ds": "2025-01-02", "layers": {"members": ["2025-01-')
    before = _files(root)
    with pytest.raises(RegistryError, match=r"\.published-ds=2025-01-02/_COMPLETE.json is unreadable"):
        prune(root, keep=1, grace_seconds=0)
    assert _files(root) == before


@pytest.mark.parametrize("grace", [-1.0, float("nan")])
def test_prune_refuses_a_grace_period_that_is_negative_or_not_a_number(tmp_path, grace):
    root = _lake(tmp_path / "entities")
    before = _files(root)
    with pytest.raises(ValueError, match="grace_seconds must be 0 or more"):
        prune(root, keep=1, grace_seconds=grace)
    assert _files(root) == before


def test_read_complete_names_a_truncated_manifest(tmp_path):
    root = _lake(tmp_path / "entities")
    _truncate(root / f"ds={D2}" / COMPLETE)
    with pytest.raises(RegistryError, match=f"ds={D2}/_COMPLETE.json is unreadable"):
        read_complete(root, D2)


def test_prune_command_exits_2_with_one_line_naming_the_manifest(tmp_path, capsys):
    root = _lake(tmp_path / "entities")
    _truncate(root / f"ds={D2}" / COMPLETE)
    before = _files(root)
    assert main(["prune", "--registry", str(root), "--keep", "1", "--grace-seconds", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: retention refused") and f"ds={D2}/_COMPLETE.json" in err and "\n" not in err
    assert _files(root) == before
