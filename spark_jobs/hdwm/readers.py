"""Small readers for the command line: DWM sample files, CSV, truth files.

These run on the driver (the CLI is for files that fit in memory); the
Airflow path (``spark_jobs/link.py``) reads Parquet with Spark instead.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd


def _lines(path: str | Path) -> list[str]:
    """Text lines of ``path`` with CR, LF or CRLF endings (all three accepted)."""
    raw = Path(path).read_bytes().decode("utf-8", errors="replace")
    return [ln for ln in raw.replace("\r\n", "\n").replace("\r", "\n").split("\n") if ln.strip()]


def read_dwm(path: str | Path) -> pd.DataFrame:
    """Read a DWM sample file (header line; RecID first; unaligned comma fields).

    Returns:
        pandas DataFrame (``record_id`` str, ``text`` str = the fields after RecID joined by ``,``).

    Raises:
        ValueError: empty file or a line without a RecID.
    """
    lines = _lines(path)
    if not lines:
        raise ValueError(f"{path}: empty DWM file")
    ids, texts = [], []
    for n, ln in enumerate(lines[1:], start=2):
        rid, _, rest = ln.partition(",")
        rid = rid.strip()
        if not rid:
            raise ValueError(f"{path}:{n}: line without a RecID")
        ids.append(rid)
        texts.append(rest)
    return pd.DataFrame({"record_id": ids, "text": texts})


def read_csv_refs(path: str | Path) -> pd.DataFrame:
    """Read a CSV with a header: the column named ``record_id`` (or ``rec_id``,
    ``RecID``), else the first column = record id; a ``truth_entity``
    column (if any) is the truth; every other column is reference text
    (joined by spaces, empty cells skipped)."""
    df = pd.read_csv(io.StringIO("\n".join(_lines(path))), dtype=str, keep_default_na=False)
    named = [c for c in df.columns if str(c).strip().lower() in ("record_id", "rec_id", "recid")]
    idc = named[0] if named else df.columns[0]
    attrs = [c for c in df.columns if c not in (idc, "truth_entity")]
    if df.empty:
        cols = ["record_id", "text"] + (["truth_entity"] if "truth_entity" in df.columns else [])
        return pd.DataFrame(columns=cols, dtype=object)
    out = pd.DataFrame({"record_id": df[idc].str.strip()})
    out["text"] = df[attrs].apply(lambda r: " ".join(v for v in r if v), axis=1) if attrs else ""
    if "truth_entity" in df.columns:
        out["truth_entity"] = df["truth_entity"].replace("", None)
    return out


def read_truth(path: str | Path) -> pd.DataFrame:
    """Read a ``RecID,IdTruth`` file → pandas (``record_id``, ``truth_entity``)."""
    rows = list(csv.reader(_lines(path)))
    body = rows[1:] if rows and not rows[0][0].strip().isdigit() and rows[0][0].strip().lower().startswith("rec") else rows
    return pd.DataFrame(
        [(r[0].strip(), r[1].strip()) for r in body if len(r) >= 2],
        columns=["record_id", "truth_entity"],
    ).drop_duplicates("record_id")
