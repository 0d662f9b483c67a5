"""Operators used by washline's DAGs.

``SparkJobOperator`` is a ``SparkSubmitOperator`` that knows washline's job
layout: it validates the run's Params, derives the job's input and output
folders from the logical date, ships the ``hdwm`` package to the executors with
``--py-files``, and returns the job's metrics JSON (plus wall seconds) as its
XCom, so downstream tasks reconcile against what Spark actually wrote.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from jobcontract import PERMANENT_EXIT_CODES, error_path, pyfiles_zip
from washline.paths import MEMORY_PATTERN, PROFILE_PATTERN, REPO_ROOT, ParamError, RunPaths, run_ds, validate_name

SPARK_JOBS = REPO_ROOT / "spark_jobs"
JOBS = ("cleanse", "link")

#: Spark settings every washline job gets; the operator's ``conf`` overrides them.
#: Driver memory is in JVM units ("2g"); in local mode the driver is also the executor.
BASE_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": os.environ.get("WASHLINE_SPARK_DRIVER_MEMORY", "2g"),
}

EXIT_CODE = re.compile(r"Error code is: (\d+)")


def build_pyfiles_zip(dest_dir: Path) -> Path:
    """The ``--py-files`` zip of the engine in ``dest_dir`` (``jobcontract.pyfiles_zip``)."""
    return pyfiles_zip(dest_dir, SPARK_JOBS)


def job_arguments(job: str, paths: RunPaths, profile: str, *, registry: bool = False,
                  rebuild: bool = False) -> list[str]:
    """The command-line arguments of ``spark_jobs/<job>.py`` for one run.

    Args:
        registry: (link) link against the entity registry: adds ``--registry
            <lake>/entities --landing <landing root>`` and ``--decisions
            <data>/decisions/decisions.csv`` when that file exists.
        rebuild: (link, with ``registry``) relink the whole history: ``--rebuild``.

    Raises:
        ValueError: unknown job, or ``rebuild`` without ``registry``.
    """
    if rebuild and not (job == "link" and registry):
        raise ValueError("rebuild needs the link job with the entity registry")
    if job == "cleanse":
        return [
            "--landing", str(paths.landing), "--ds", paths.ds,
            "--curated", str(paths.curated), "--quarantine", str(paths.quarantine),
            "--metrics", str(paths.cleanse_metrics),
        ]
    if job == "link":
        return [
            "--curated", str(paths.curated), "--out", str(paths.linked), "--ds", paths.ds,
            "--profile", profile, "--checkpoint-dir", str(paths.checkpoints),
        ] + (registry_arguments(paths, rebuild) if registry else [])
    raise ValueError(f"unknown Spark job {job!r}; expected one of {JOBS}")


def registry_arguments(paths: RunPaths, rebuild: bool = False) -> list[str]:
    """The link job's registry options (the entity registry's contract)."""
    args = ["--registry", str(paths.entities), "--landing", str(paths.landing)]
    if paths.decisions.is_file():
        args += ["--decisions", str(paths.decisions)]
    if rebuild:
        args.append("--rebuild")
    return args


def link_mode(params: Any) -> dict[str, bool]:
    """Whether this run's link job uses the entity registry and rebuilds it.

    Params: ``entity_registry`` (default true: link the night against the
    latest published registry version; false: link it in isolation, with
    per-night cluster ids, no ``lake/entities`` version and no entity tables
    staged or published) and ``rebuild`` (default false; true: the link job's
    ``--rebuild``, which relinks the base version's whole history with the
    night in one batch and records the differences as merges and splits).

    Returns:
        ``{"registry": bool, "rebuild": bool}`` for :func:`job_arguments`.

    Raises:
        ParamError: ``entity_registry`` or ``rebuild`` is not a boolean, or
            ``rebuild=true`` with ``entity_registry=false``.
    """
    registry = params.get("entity_registry", True)
    rebuild = params.get("rebuild", False)
    for name, value in (("entity_registry", registry), ("rebuild", rebuild)):
        if not isinstance(value, bool):
            raise ParamError(f"Param {name} must be true or false, got {value!r}")
    if rebuild and not registry:
        raise ParamError("Param rebuild=true needs entity_registry=true: a rebuild relinks the entity registry's "
                         "whole history, and entity_registry=false links the night in isolation")
    return {"registry": registry, "rebuild": rebuild}


def executor_memory(params: Any) -> str | None:
    """The run's Param ``executor_memory`` for spark-submit's ``--executor-memory``.

    JVM units (``"2g"``, ``"1536m"``): the heap of each executor on a
    standalone or Kubernetes cluster (in ``local[*]`` the driver is the
    executor and ``WASHLINE_SPARK_DRIVER_MEMORY`` sizes it). Empty or absent
    means the operator's own ``executor_memory``, else Spark's default (1g).

    Raises:
        ParamError: the value is not a positive number followed by m or g.
    """
    value = params.get("executor_memory", "") or ""
    validate_name(value, MEMORY_PATTERN, "executor_memory")
    return value.lower() or None


def spark_conf(overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The Spark settings of a washline job: ``BASE_CONF``, then
    ``spark.pyspark.python`` (``WASHLINE_PYSPARK_PYTHON``, else this
    interpreter), then ``overrides`` (the operator's ``conf``), which win."""
    conf = dict(BASE_CONF)
    conf["spark.pyspark.python"] = os.environ.get("WASHLINE_PYSPARK_PYTHON", sys.executable)
    conf.update(overrides or {})
    return conf


def landing_files(paths: RunPaths) -> list[Path]:
    """CSV files landed for the run's date: ``<landing>/<source>/<ds>/*.csv``."""
    if not paths.landing.is_dir():
        return []
    return sorted(paths.landing.glob(f"*/{paths.ds}/*.csv"))


def job_metrics_path(job: str, paths: RunPaths) -> Path:
    return paths.cleanse_metrics if job == "cleanse" else paths.link_metrics


def job_error_path(job: str, paths: RunPaths) -> Path:
    """Where a job leaves the one-line message of a documented failure
    (``jobcontract.error_path``: ``<metrics stem>.error.json``)."""
    return error_path(job_metrics_path(job, paths))


def _job_error_file(job: str, context: Any) -> dict[str, Any]:
    """The job's error file for this run (``{}`` when it wrote none or it is unreadable)."""
    try:
        paths = RunPaths.for_run(run_ds(context), context["params"].get("input_folder", "landing"))
        data = json.loads(job_error_path(job, paths).read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def job_error(job: str, context: Any) -> str | None:
    """The job's own one-line error for this run, if it wrote one (<= 1,500 chars)."""
    error = _job_error_file(job, context).get("error")
    return str(error)[:1500] if error else None


def job_kept_pending(job: str, context: Any) -> bool:
    """The link job refused the run's date before linking anything of it, for a
    reason outside its data (the entity registry's order: a pending earlier
    date or a later published one; or an unreadable decisions file): its error
    file says ``"keep_pending": true``, and the report leaves the date pending."""
    return job == "link" and _job_error_file(job, context).get("keep_pending") is True


class SparkJobOperator(SparkSubmitOperator):
    """Run one of washline's Spark jobs (``cleanse`` or ``link``) with spark-submit.

    The master comes from the Spark connection (``conn_id``, default
    ``spark_default``), so the same DAG runs on ``local[*]``, a standalone
    cluster or Kubernetes. Params read at run time: ``input_folder`` (landing
    root, inside the data root), ``profile`` (linkage profile name) and, for
    ``link``, ``entity_registry`` and ``rebuild`` (:func:`link_mode`), and
    ``executor_memory`` (:func:`executor_memory`). The date is
    ``washline.paths.run_ds``: the logical date, or for a run without one the
    UTC date of its ``run_after``.

    The link job gets the entity registry options (:func:`registry_arguments`)
    unless the run's Param ``entity_registry`` is false (:func:`link_mode`);
    its XCom carries ``registry`` (``enabled`` false, or the version's
    ``_COMPLETE.json``), which the load, check, publish and report tasks follow.

    ``prepare`` sets the templated fields spark-submit is built from
    (``application_args``, ``py_files``, ``conf``); ``spark_submit_command``
    is the argv ``execute`` then runs (``tests/unit/test_operators.py``).

    Returns (XCom):
        The job's metrics JSON as a dict, with ``task_seconds`` (wall seconds
        of the whole spark-submit, JVM start-up included) added.

    Raises:
        washline.paths.ParamError: a Param is malformed or escapes the data root.
        AirflowFailException: a permanent spark-submit exit (``PERMANENT_EXIT_CODES``),
            not retried; the message quotes the job's own error when it wrote
            one (e.g. cleanse's "schema drift in <file>: unexpected column 'x'").
        AirflowException: spark-submit exited non-zero otherwise (retried).
        FileNotFoundError: the job succeeded but wrote no metrics file.
    """

    ui_color = "#f4a261"

    def __init__(self, *, job: str, **kwargs: Any) -> None:
        if job not in JOBS:
            raise ValueError(f"unknown Spark job {job!r}; expected one of {JOBS}")
        kwargs.setdefault("application", str(SPARK_JOBS / f"{job}.py"))
        kwargs.setdefault("name", f"washline-{job}")
        super().__init__(**kwargs)
        self.job = job
        self._own_executor_memory = self._executor_memory  # what a run without the Param gets

    def execute(self, context: Any) -> dict[str, Any]:
        """Run the job; a permanent failure (bad Param, no input, bad profile,
        out of memory) fails without retries, and every failure's one-line
        cause is pushed to XCom under key ``error`` for the run summary."""
        from airflow.sdk.exceptions import AirflowFailException

        try:
            return self._run(context)
        except Exception as exc:
            code = None
            match = EXIT_CODE.search(str(exc))
            if match:
                code = int(match.group(1))
            meaning = PERMANENT_EXIT_CODES.get(self.job, {}).get(code) if code is not None else None
            detail = job_error(self.job, context) if code is not None else None
            if isinstance(exc, AirflowFailException):
                message = str(exc)
            elif meaning and detail:
                message = f"{self.job} failed permanently (spark-submit exit {code}): {detail}"
            elif meaning:
                message = f"{self.job} failed permanently (spark-submit exit {code}: {meaning}); see the task log"
            else:
                message = f"{self.job}: {type(exc).__name__}: {str(exc)[:500]}"
            context["ti"].xcom_push(key="error", value=message)
            if meaning and job_kept_pending(self.job, context):
                # the report leaves such a date pending (no _REJECTED.json), so the next date waits for it
                context["ti"].xcom_push(key="keep_pending", value=True)
            if meaning or isinstance(exc, ParamError):
                raise AirflowFailException(message) from exc
            raise

    @staticmethod
    def _registry_result(paths: RunPaths, mode: dict[str, bool]) -> dict[str, Any]:
        """The registry part of the link XCom: ``enabled``, ``rebuild``,
        ``version`` (folder) and ``complete`` (its ``_COMPLETE.json``).

        Raises:
            washline.registry.RegistryVersionError: the job succeeded with
                ``--registry`` but left no complete version (retried).
        """
        from washline.registry import require_complete

        if not mode["registry"]:
            return {"enabled": False, "rebuild": False, "version": None, "complete": None}
        return {"enabled": True, "rebuild": mode["rebuild"], "version": str(paths.registry_version),
                "complete": require_complete(paths)}

    def prepare(self, context: Any) -> tuple[RunPaths, dict[str, bool]]:
        """Read this run's Params and set the fields spark-submit is built from.

        Sets ``application_args`` (:func:`job_arguments`), ``py_files`` (the
        engine zip in ``<lake>/_build``, :func:`build_pyfiles_zip`), ``conf``
        (:func:`spark_conf` over the operator's own, rendered ``conf``) and
        the executor memory (:func:`executor_memory`, else the operator's
        own). Calling it again for the same run gives the same fields.

        Returns:
            The run's folders and its link mode (:func:`link_mode`; both false
            for ``cleanse``).

        Raises:
            washline.paths.ParamError: a Param is malformed or escapes the data root.
        """
        params = context["params"]
        paths = RunPaths.for_run(run_ds(context), params.get("input_folder", "landing"))
        profile = validate_name(params.get("profile", "default"), PROFILE_PATTERN, "profile")
        mode = link_mode(params) if self.job == "link" else {"registry": False, "rebuild": False}
        self.application_args = job_arguments(self.job, paths, profile, **mode)
        self.py_files = str(build_pyfiles_zip(paths.lake / "_build"))
        self.conf = spark_conf(self.conf)
        self._executor_memory = executor_memory(params) or self._own_executor_memory
        return paths, mode

    def spark_submit_command(self, context: Any) -> list[str]:
        """The spark-submit argv ``execute`` runs for this context, without running it.

        :meth:`prepare`, then the Spark provider's own command builder over
        the Spark connection (``conn_id``), as ``SparkSubmitOperator.execute``
        does: ``[spark-submit, --master <master>, --conf k=v ..., --py-files
        <zip>, --name washline-<job>, ..., spark_jobs/<job>.py, <job args>]``.

        Raises:
            washline.paths.ParamError: as :meth:`prepare`.
        """
        self.prepare(context)
        return self._get_hook()._build_spark_submit_command(self.application)

    def _run(self, context: Any) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        paths, mode = self.prepare(context)
        if self.job == "cleanse" and not landing_files(paths):
            # Decision (documented in README): a night without input FAILS,
            # without retries, so on-call sees a missing feed; nothing is
            # published and the next date's run is not blocked.
            raise AirflowFailException(f"no input for {paths.ds} in {paths.landing} (expected <source>/{paths.ds}/*.csv)")
        metrics_path = job_metrics_path(self.job, paths)
        metrics_path.unlink(missing_ok=True)  # never report a previous attempt's figures
        job_error_path(self.job, paths).unlink(missing_ok=True)  # nor its error
        self.log.info("washline %s for ds=%s: %s", self.job, paths.ds, " ".join(self.application_args))
        started = time.monotonic()
        super().execute(context)
        seconds = round(time.monotonic() - started, 2)
        if not metrics_path.exists():
            raise FileNotFoundError(f"{self.job} finished but wrote no metrics at {metrics_path}")
        metrics = json.loads(metrics_path.read_text())
        metrics["task_seconds"] = seconds
        self.log.info("washline %s done in %.1f s: %s", self.job, seconds, json.dumps(metrics)[:2000])
        if self.job == "link":
            # Checkpoints only cut lineage while the job runs; a rerun starts afresh.
            shutil.rmtree(paths.checkpoints, ignore_errors=True)
            metrics["registry"] = self._registry_result(paths, mode)
        if self.job == "cleanse" and not metrics.get("rows_curated"):
            raise AirflowFailException(
                f"no valid rows for {paths.ds}: {metrics.get('rows_in', 0)} row(s) in, "
                f"{metrics.get('rows_quarantined', 0)} quarantined {metrics.get('quarantined_by_reason') or ''}")
        return metrics
