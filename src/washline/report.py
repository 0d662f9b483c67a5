"""The run summary: what came in, what was quarantined, loaded, linked, checked
and published for one logical date, with seconds per task.

Written as ``lake/reports/<ds>/run_summary.json`` (atomically) and logged.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jobcontract


def read_cleanse_metrics(path: Path, ds: str, not_before: datetime | None = None) -> dict[str, Any] | None:
    """The cleanse job's metrics file of ``ds``, if it is this run's.

    The cleanse task pushes no XCom when it fails after the job wrote its
    metrics (e.g. "no valid rows": every row quarantined), so the summary
    reads the counts from the file instead. A file from an earlier run of the
    same date is not this run's figures: it is ignored when its ``ds`` differs
    or it finished before ``not_before`` (the run's start; seconds resolution).

    Returns:
        The metrics dict, or None (missing, unreadable, another date, stale).
    """
    try:
        metrics = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(metrics, dict) or metrics.get("ds") != ds:
        return None
    if not_before is not None:
        try:
            finished = datetime.fromisoformat(str(metrics.get("finished_at")))
            if finished.tzinfo is None or finished < not_before.replace(microsecond=0):
                return None
        except (TypeError, ValueError):
            return None
    return metrics


def ratio(num: float | None, den: float | None, digits: int = 4) -> float | None:
    """``num / den`` rounded to ``digits``; None when either is None or ``den``
    is 0. Every ratio in the run summary goes through this: a share of no rows
    is undefined (JSON null, "n/a" when printed), never 0."""
    if num is None or den is None or den == 0:
        return None
    return round(num / den, digits)


def build_summary(ds: str, run_id: str, results: dict[str, Any],
                  errors: dict[str, str | None] | None = None,
                  cleanse_metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """Assemble the summary from the tasks' XCom results.

    Args:
        ds: logical date.
        run_id: Airflow run id.
        results: task id → that task's XCom (None when the task did not
            succeed). Keys used: ``cleanse``, ``link``, ``load_staging``,
            ``check_integrity``, ``check_quality``, ``publish``.
        errors: task id → the one-line cause the task pushed when it failed
            (XCom key ``error``); it replaces "did not succeed" in the reasons.
        cleanse_metrics: the cleanse job's metrics file (see
            ``read_cleanse_metrics``), used for the row counts when the cleanse
            task failed after the job wrote them (no ``cleanse`` XCom).

    Returns:
        JSON-ready dict: ``rows`` (in, curated, quarantined and quarantined by
        reason, values fixed by rule, loaded, published), ``quarantined_share``
        (quarantined / in, 4 decimals; None when no row came in or a count is
        missing), ``clusters``, ``pairwise`` (the night's clusters against the
        truth, over the night's references with a ``truth_entity``: None without
        truth; precision, recall or F1 None where undefined, see ``hdwm.metrics``),
        ``registry_pairwise`` (the entity registry after the night against the
        truth of every reference in it that carries one, all nights so far:
        ``precision, recall, f1, tp, predicted_pairs, true_pairs, references,
        members``; None without the registry or without truth; see
        :func:`pairwise_undefined` for why a figure is None), ``checks`` (integrity
        verdict and finding count, both None when the check did not run;
        ``integrity_report`` and ``expectations``, see :func:`integrity_detail`
        and :func:`expectation_rows`; ``data_docs``, the index of the run's Data Docs),
        ``registry`` (the night's entity figures, see :func:`registry_summary`;
        None without the registry), ``published`` (bool) and
        ``not_published_because``, ``seconds`` per task.
    """
    cleanse = results.get("cleanse") or cleanse_metrics or {}
    link = results.get("link") or {}
    load = results.get("load_staging") or {}
    integrity = results.get("check_integrity") or {}
    quality = results.get("check_quality") or {}
    publish = results.get("publish")

    errors = {k: v for k, v in (errors or {}).items() if v}
    reasons = []
    for task in ("cleanse", "link", "load_staging"):
        if results.get(task) is None:
            reasons.append(errors.get(task) or f"{task} did not succeed")
            break  # later tasks never ran; the first failure is the cause
    staged = not reasons
    if staged and integrity.get("verdict") not in ("PASS", "WARN"):
        finding = (integrity.get("findings") or [{}])[0].get("message")
        reasons.append(f"check_integrity verdict {integrity.get('verdict', 'not run')}"
                       + (f" ({integrity.get('error')})" if integrity.get("error") else "")
                       + (f"; first finding: {finding}" if finding else ""))
    if staged and quality.get("status") not in ("PASS", "WARN"):
        failed = [f"{e['expectation']}({e['column'] or ''})" for e in quality.get("expectations", [])
                  if e["status"] == "ERROR" or (e["status"] == "FAIL" and e["severity"] == "critical")]
        reasons.append(f"check_quality status {quality.get('status', 'not run')}"
                       + (f": {', '.join(failed)}" if failed else "")
                       + (f" ({errors['check_quality']})" if not quality and errors.get("check_quality") else ""))
    if publish is None and not reasons:
        reasons.append(errors.get("publish") or "publish did not succeed")

    seconds = {
        "cleanse": cleanse.get("task_seconds"),
        "link": link.get("task_seconds"),
        "load_staging": load.get("seconds"),
        "check_integrity": integrity.get("duration_s"),
        "check_quality": quality.get("seconds"),
        "publish": (publish or {}).get("seconds"),
    }
    return {
        "ds": ds,
        "run_id": run_id,
        "rows": {
            "in": cleanse.get("rows_in"),
            "curated": cleanse.get("rows_curated"),
            "quarantined": cleanse.get("rows_quarantined"),
            "quarantined_by_reason": cleanse.get("quarantined_by_reason"),
            "fixed_by_rule": cleanse.get("fixed_by_rule"),
            "loaded": (load.get("rows") or {}).get("staging_records"),
            "published": ((publish or {}).get("rows") or {}).get("published_records"),
        },
        "quarantined_share": ratio(cleanse.get("rows_quarantined"), cleanse.get("rows_in")),
        "clusters": link.get("clusters"),
        "singletons": link.get("singletons"),
        "largest_cluster": link.get("largest_cluster"),
        "pairwise": link.get("pairwise"),
        "registry_pairwise": link.get("registry_pairwise"),
        "checks": {
            "integrity": integrity.get("verdict"),
            "integrity_findings": len(integrity.get("findings") or []) if integrity else None,
            "quality": quality.get("status"),
            "data_docs": quality.get("data_docs"),
            "integrity_report": integrity_detail(integrity),
            "expectations": expectation_rows(quality),
        },
        "registry": registry_summary(link.get("registry"), (publish or {}).get("rows")),
        "published": publish is not None,
        "not_published_because": reasons if publish is None else [],
        "seconds": seconds,
    }


#: integrity findings kept in the summary (the task log and XCom have them all)
MAX_FINDINGS = 50


def _short(value: Any, limit: int = 300) -> Any:
    """``value`` unchanged when a short scalar, else its text cut to ``limit`` characters."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def integrity_detail(report: dict[str, Any] | None) -> dict[str, Any] | None:
    """The integrity report for the run report: ``engine, database, mode,
    verdict, error, duration_s, truncated, allocation_errors,
    consistency_errors``, ``count_notes`` (where the engine's counts disagree), ``findings`` (the first
    ``MAX_FINDINGS``: ``severity, code, obj, index, location, message``) and
    ``findings_total``; None when the check did not run."""
    if not report:
        return None
    findings = report.get("findings") or []
    out = {k: report.get(k) for k in ("engine", "database", "mode", "verdict", "error", "duration_s", "truncated",
                                      "allocation_errors", "consistency_errors")}
    out["count_notes"] = [_short(n, 500) for n in (report.get("count_notes") or [])[:10]]
    out["findings"] = [{k: _short((f or {}).get(k), 1000) for k in ("severity", "code", "obj", "index", "location",
                                                                     "message")}
                       for f in findings[:MAX_FINDINGS]]
    out["findings_total"] = len(findings)
    return out


def expectation_rows(quality: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The GX result per expectation for the run report (``suite, expectation,
    column, severity, status, unexpected_count, unexpected_percent,
    element_count, observed_value, exception``; no sample values); None when
    the check did not run."""
    if not quality:
        return None
    keys = ("suite", "expectation", "column", "severity", "status", "unexpected_count", "unexpected_percent",
            "element_count", "observed_value", "exception")
    return [{k: _short(e.get(k)) for k in keys} for e in quality.get("expectations") or []]


def registry_summary(registry: dict[str, Any] | None, published_rows: dict[str, Any] | None = None
                     ) -> dict[str, Any] | None:
    """The entity registry part of the summary, from the link XCom's
    ``registry`` (its ``complete`` is the version's ``_COMPLETE.json``).

    Returns:
        None when the night did not use the registry; else ``{"version": ds,
        "base_ds", "rebuild", "references_total", "entities_total",
        "night_references", "new_references", "joined_existing",
        "joined_share" (joined_existing / night_references, None for an empty
        night), "new_entities", "grows", "merges", "splits", "updates",
        "published_members", "published_entities", "rebuild_f1"}``
        (``rebuild_f1``: pairwise F1 of a rebuild against the incremental
        partition, when the link job reports it).
    """
    if not registry or not registry.get("enabled"):
        return None
    complete = registry.get("complete") or {}
    night = complete.get("night_references")
    joined = complete.get("joined_existing")
    rebuild = complete.get("rebuild") if isinstance(complete.get("rebuild"), dict) else {}
    return {
        "version": complete.get("ds"),
        "base_ds": complete.get("base_ds"),
        "rebuild": bool(registry.get("rebuild")),
        **{k: complete.get(k) for k in ("references_total", "entities_total", "night_references",
                                        "new_references", "joined_existing", "new_entities", "grows",
                                        "merges", "splits", "updates")},
        "joined_share": round(joined / night, 4) if isinstance(joined, int) and night else None,
        "published_members": (published_rows or {}).get("entity_members"),
        "published_entities": (published_rows or {}).get("entities"),
        "rebuild_f1": complete.get("rebuild_f1", rebuild.get("f1")),
    }


#: what a pairwise figure is measured over, by scope (``pairwise`` / ``registry_pairwise`` of the summary)
PAIRWISE_SCOPES = {"night": ("this night's", "cluster"), "registry": ("the registry's", "entity")}


def pairwise_undefined(pw: dict[str, Any] | None, scope: str = "night") -> dict[str, str]:
    """Why each undefined pairwise figure is undefined.

    Args:
        pw: a ``pairwise`` or ``registry_pairwise`` dict of the summary
            (``precision, recall, f1, predicted_pairs, true_pairs``), or None
            (no reference of the scope carries truth).
        scope: ``"night"`` (the night's own clusters) or ``"registry"`` (the
            entity registry after the night).

    Returns:
        figure (``precision`` / ``recall`` / ``f1``) → the reason, for the
        figures that are None only (empty when all three are defined).

    Raises:
        ValueError: unknown ``scope``.
    """
    if scope not in PAIRWISE_SCOPES:
        raise ValueError(f"scope must be one of {sorted(PAIRWISE_SCOPES)}, not {scope!r}")
    where, group = PAIRWISE_SCOPES[scope]
    if pw is None:
        why = "no reference of this night carries truth" if scope == "night" else \
            "no reference in the registry carries truth"
        return {"precision": why, "recall": why, "f1": why}
    out: dict[str, str] = {}
    if pw.get("precision") is None:
        out["precision"] = f"no predicted pair (no {group} holds two of {where} references with truth)"
    if pw.get("recall") is None:
        out["recall"] = f"no true pair (no truth entity has two of {where} references)"
    if pw.get("f1") is None:
        out["f1"] = "; ".join(out.values()) or "undefined"
    return out


def pairwise_note(pw: dict[str, Any] | None, scope: str = "night") -> str | None:
    """One line saying which figures are "n/a" and why (see :func:`pairwise_undefined`);
    None when all are defined."""
    gaps = pairwise_undefined(pw, scope)
    if not gaps:
        return None
    by_reason: dict[str, list[str]] = {}
    for figure in ("precision", "recall", "f1"):
        if figure in gaps and figure != "f1":
            by_reason.setdefault(gaps[figure], []).append(figure)
    if not by_reason:  # only F1 undefined (never from hdwm.metrics, but say so all the same)
        return f"F1 n/a: {gaps['f1']}"
    parts = []
    for reason, figures in by_reason.items():
        names = figures + (["F1"] if len(by_reason) == 1 else [])
        parts.append(f"{', '.join(names[:-1])} and {names[-1]} n/a: {reason}" if len(names) > 1
                     else f"{names[0]} n/a: {reason}")
    if len(by_reason) > 1:
        parts.append("F1 n/a: both undefined")
    return "; ".join(parts)


def write_json_atomic(path: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as JSON to ``path`` atomically (``jobcontract.write_json_atomic``;
    values JSON cannot hold are written as ``str``)."""
    return jobcontract.write_json_atomic(path, payload, default=str)


def _show(value: Any) -> str:
    return "-" if value is None else str(value)


def _ratio_text(value: float | None, percent: bool = False) -> str:
    """A ratio for people: "n/a" when undefined (None), else 4 decimals or a percentage."""
    if value is None:
        return "n/a"
    return f"{value:.2%}" if percent else f"{value:.4f}"


def _nonzero(counts: dict[str, Any] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in (counts or {}).items() if v)


def render(summary: dict[str, Any]) -> str:
    """Human-readable multi-line rendering of a run summary ("-" where a task
    did not run or did not succeed, "n/a" for an undefined ratio)."""
    rows = summary["rows"]
    pw = summary.get("pairwise")
    fixed = rows.get("fixed_by_rule")
    lines = [
        f"washline run summary for ds={summary['ds']} ({summary['run_id']})",
        f"  rows in          {_show(rows['in'])}",
        (f"  quarantined      {_show(rows['quarantined'])}"
         + (f" ({_ratio_text(summary.get('quarantined_share'), percent=True)})" if rows["quarantined"] is not None else "")
         + "  " + _nonzero(rows.get("quarantined_by_reason"))).rstrip(),
        f"  curated          {_show(rows['curated'])}",
    ]
    if fixed is not None:
        lines.append((f"  values fixed     {sum(v or 0 for v in fixed.values())}  " + _nonzero(fixed)).rstrip())
    lines += [
        f"  loaded (staging) {_show(rows['loaded'])}",
        f"  published        {_show(rows['published'])}",
        f"  clusters         {_show(summary['clusters'])} (singletons {_show(summary['singletons'])}, "
        f"largest {_show(summary['largest_cluster'])})",
    ]
    lines += render_pairwise(pw, summary.get("registry_pairwise"), (summary.get("registry") or {}).get("version"))
    if summary.get("registry") is None and "registry" in summary and summary.get("clusters") is not None:
        # the night was linked in isolation (Param entity_registry=false)
        lines.append("  entities         not tracked across nights (entity_registry=false: linked in isolation)")
    lines += render_registry(summary.get("registry"))
    checks = summary["checks"]
    if checks["integrity"] is None:
        lines.append("  integrity        no result")
    else:
        lines.append(f"  integrity        {checks['integrity']} ({_show(checks['integrity_findings'])} finding(s))")
    if checks["quality"] is None:
        lines.append("  quality (GX)     no result")
    else:
        lines.append(f"  quality (GX)     {checks['quality']}  data docs: {checks['data_docs']}")
    lines.append(f"  published        {'yes' if summary['published'] else 'NO'}")
    for reason in summary["not_published_because"]:
        lines.append(f"    because {reason}")
    secs = ", ".join(f"{k} {v:.1f}s" for k, v in summary["seconds"].items() if v is not None)
    lines.append(f"  seconds          {secs or '-'}")
    return "\n".join(lines)


def _figures(pw: dict[str, Any] | None) -> str:
    pw = pw or {}
    return (f"precision {_ratio_text(pw.get('precision'))}  recall {_ratio_text(pw.get('recall'))}"
            f"  F1 {_ratio_text(pw.get('f1'))}")


def render_pairwise(night: dict[str, Any] | None, registry: dict[str, Any] | None,
                    version: str | None = None) -> list[str]:
    """The summary's pairwise lines: the night's own figures and, when the
    night used the entity registry, the registry's after the night (all
    nights' references with truth), each "n/a" figure followed by a note
    saying why (:func:`pairwise_note`). None when no truth is known (neither
    scope has a labelled reference)."""
    if night is None and registry is None:
        return []
    pad = " " * 19
    lines = [f"  pairwise         {_figures(night)}  (this night's references with truth)"]
    note = pairwise_note(night, "night")
    if note:
        lines.append(pad + note)
    if registry is not None:
        after = f" after {version}" if version else ""
        lines.append(f"  entity pairwise  {_figures(registry)}  (the entity registry{after}: "
                     f"{registry.get('references', 0):,} references with truth, every night so far)")
        note = pairwise_note(registry, "registry")
        if note:
            lines.append(pad + note)
    return lines


def render_registry(reg: dict[str, Any] | None) -> list[str]:
    """The summary's entity registry lines (none when the night did not use it)."""
    if not reg:
        return []
    base = f"linked against the published {reg['base_ds']}" if reg.get("base_ds") else "first version (empty base)"
    kind = "full rebuild" if reg.get("rebuild") else "incremental"
    lines = [
        f"  entities         {_show(reg.get('references_total'))} references in {_show(reg.get('entities_total'))} "
        f"entities after {reg.get('version')} ({kind}, {base})",
        f"  this night       {_show(reg.get('night_references'))} references: {_show(reg.get('new_references'))} new, "
        f"{_show(reg.get('joined_existing'))} joined existing entities"
        + (f" ({reg['joined_share']:.1%})" if reg.get("joined_share") is not None else ""),
        f"  entity changes   {_show(reg.get('new_entities'))} new entities, {_show(reg.get('grows'))} grown, "
        f"{_show(reg.get('merges'))} merges, {_show(reg.get('splits'))} splits"
        + (f", {reg['updates']} golden records updated" if reg.get("updates") else ""),
    ]
    if reg.get("rebuild_f1") is not None:
        lines.append(f"  rebuild vs incremental pairwise F1 {reg['rebuild_f1']:.4f}")
    if reg.get("published_members") is not None:
        lines.append(f"  entity_members   {reg['published_members']} rows published "
                     f"({_show(reg.get('published_entities'))} entities)")
    return lines
