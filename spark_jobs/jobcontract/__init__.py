"""The contract between washline's Spark jobs and the Airflow operator that starts them.

What it owns, and nothing else (standard library only, so both sides may import it):

* the jobs' exit codes (``EXIT_*``) and which of them a retry cannot fix
  (``PERMANENT_EXIT_CODES``, read by ``washline.operators.SparkJobOperator``);
* where a failed job leaves its one-line error (``error_path``: beside the
  metrics file, ``<metrics stem>.error.json`` holding ``{"exit_code", "error"}``);
* the logical date's shape (``DS_PATTERN``, ``validate_ds``);
* how a job, the engine and the operator write a JSON or text file so that a
  reader never sees half of it (``write_json_atomic``, ``write_text_atomic``);
* the ``--py-files`` archive of the engine (``pyfiles_zip``: ``hdwm`` and this
  package, named by a hash of their sources).

Why a package of its own: the Airflow side (``dags/``, ``washline``) may not
import ``hdwm`` or pyspark, and the Spark jobs (``spark_jobs/*.py``, ``hdwm``)
may not import ``washline`` (``tests/unit/test_import_rules.py``). This
package sits on neither side; it ships inside the ``--py-files`` zip.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import zipfile
from datetime import date
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "DS_PATTERN", "EXIT_CONFIG", "EXIT_ERROR", "EXIT_INVARIANT", "EXIT_NO_INPUT", "EXIT_OK", "EXIT_SPARK_OOM",
    "PERMANENT_EXIT_CODES", "PYFILES_PACKAGES", "SPARK_JOBS", "error_path", "pyfiles_zip", "validate_ds",
    "write_json_atomic", "write_text_atomic",
]

#: Exit codes of ``spark_jobs/cleanse.py`` and ``spark_jobs/link.py``.
EXIT_OK = 0
EXIT_ERROR = 1  # anything unexpected: Airflow may retry
EXIT_CONFIG = 2  # bad arguments, configuration or input: a retry fails the same way
EXIT_NO_INPUT = 3  # (cleanse) no landing file for the date
EXIT_INVARIANT = 4  # (cleanse) rows in != curated + quarantined
#: What spark-submit returns when the driver or an executor JVM ran out of memory.
EXIT_SPARK_OOM = 52

_OOM = "Spark ran out of memory; raise spark.driver.memory / executor memory"

#: spark-submit exit codes that a retry cannot fix, per job, with what they mean.
PERMANENT_EXIT_CODES: dict[str, dict[int, str]] = {
    "cleanse": {EXIT_CONFIG: "bad arguments, source configuration or schema drift",
                EXIT_NO_INPUT: "no input for the date",
                EXIT_INVARIANT: "row-count invariant failed (rows in != curated + quarantined)",
                EXIT_SPARK_OOM: _OOM},
    "link": {EXIT_CONFIG: "bad arguments or linkage profile; bad input (no record_id/source column, a bad source "
                          "name, duplicate (source, record_id)); a bad decisions file or an incomplete base version; "
                          "or the entity registry refused the date (relinking it would fork the registry, or the "
                          "previous date is not published yet; the job's error names that date); or the transitive "
                          "closure did not converge within the profile's ccMaxRounds",
             EXIT_SPARK_OOM: _OOM},
}

#: A logical date as every path and SQL parameter carries it.
DS_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def validate_ds(ds: object, what: str = "logical date (ds)") -> str:
    """Return ``ds`` if it is a real calendar date written ``YYYY-MM-DD``.

    Raises:
        ValueError: any other value; the message starts with ``what``.
    """
    if not isinstance(ds, str) or not DS_PATTERN.match(ds):
        raise ValueError(f"{what} must be YYYY-MM-DD, got {ds!r}")
    try:
        date.fromisoformat(ds)
    except ValueError as exc:
        raise ValueError(f"{what} {ds!r} is not a calendar date") from exc
    return ds


def error_path(metrics: str | os.PathLike) -> Path:
    """Where a failed run whose metrics go to ``metrics`` leaves its one-line
    error: the same folder, ``<metrics stem>.error.json`` (absolute)."""
    path = Path(metrics).expanduser().resolve()
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return path.with_name(stem + ".error.json")


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temp file in the same folder,
    ``fsync`` and ``os.replace``: a reader sees the old file or the new one.

    The folder is created. The file gets the mode ``open()`` would give it
    (0666 less the umask), not the temp file's 0600: reports and markers are
    read by other users' processes (the api-server). Returns ``path`` as a Path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_json_atomic(path: str | os.PathLike, payload: Any, default: Callable[[Any], Any] | None = None) -> Path:
    """``write_text_atomic`` of ``payload`` as indented JSON plus a newline
    (``default``: ``json.dumps``' fallback for other types, e.g. ``str``)."""
    return write_text_atomic(path, json.dumps(payload, indent=2, default=default) + "\n")


#: Where the engine's packages live (this package's parent folder).
SPARK_JOBS = Path(__file__).resolve().parent.parent
#: The packages the Python workers need: the engine and this contract (the
#: cleanse job's ``cleansing`` and ``sourcecontract`` run on the driver only).
PYFILES_PACKAGES = ("hdwm", "jobcontract")


def pyfiles_zip(dest_dir: str | os.PathLike, root: str | os.PathLike = SPARK_JOBS) -> Path:
    """Zip ``PYFILES_PACKAGES`` (their ``.py`` files below ``root``) for
    ``--py-files`` / ``addPyFile``.

    The name ``hdwm-<sha12>.zip`` carries a hash of the files' names and
    bytes, so an unchanged engine is not zipped again and two concurrent runs
    never write the same file half-way (temp file + ``os.replace``).

    Returns:
        The zip's path inside ``dest_dir`` (created).
    """
    root = Path(root)
    files = sorted(p for pkg in PYFILES_PACKAGES for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"hdwm-{digest.hexdigest()[:12]}.zip"
    if not target.exists():
        fd, tmp = tempfile.mkstemp(dir=dest, suffix=".zip.tmp")
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
                for path in files:
                    zf.write(path, str(path.relative_to(root)))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return target
