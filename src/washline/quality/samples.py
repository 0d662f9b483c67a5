"""Sample unexpected values, fetched after the validation run and only where there are some.

What it owns: :data:`SAMPLE_COUNT`, :data:`SAMPLE_FORMAT` and
:func:`fetch_samples`, which re-validates on the same batch just the
expectations whose ``unexpected_count`` is above zero and copies GX's sample
lists into the stored results (the main run asks for counts only,
``washline.quality.runner.RESULT_FORMAT``).
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Mapping

from washline.quality.results import raised_exception

log = logging.getLogger("washline.quality.runner")

#: Result format of the targeted sample run (see :func:`fetch_samples`): only
#: expectations that found unexpected values, at most this many values each.
SAMPLE_COUNT = 5

SAMPLE_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": SAMPLE_COUNT}


def fetch_samples(context: Any, run_results: Mapping[Any, Any], batches: Mapping[str, Any],
                  params: Mapping[str, Any]) -> dict[str, Any]:
    """Add up to :data:`SAMPLE_COUNT` unexpected values to each expectation that found some.

    The validation run asks GX for counts only (:data:`RESULT_FORMAT`). For
    the expectations whose ``unexpected_count`` is above zero (a FAIL, or a
    ``mostly`` expectation that passed with some unexpected rows) this
    re-validates just those expectations on the same batch with
    :data:`SAMPLE_FORMAT`, so GX's own definition of "unexpected" picks the
    values (one ``… LIMIT 5`` query each, which stops at the fifth hit), and
    copies ``partial_unexpected_list``/``partial_unexpected_counts`` into the
    stored validation result, where Data Docs and :func:`expectation_rows`
    find them. Passing expectations with nothing unexpected cost no query.
    Expectations that raised are left alone (their ERROR stands).

    Returns:
        ``{"expectations": number re-validated for samples, "error": message
        or None}``. A failure here is logged and leaves the counts and
        statuses of the main run untouched.
    """
    import great_expectations as gx

    done, errors = 0, []
    for identifier, validation_result in run_results.items():
        targets = [res for res in validation_result.results
                   if raised_exception(res.exception_info) is None
                   and isinstance(res.result, dict) and (res.result.get("unexpected_count") or 0) > 0]
        if not targets:
            continue
        suite_name = validation_result.suite_name
        try:
            sample_suite = gx.ExpectationSuite(
                name=f"{suite_name}_samples",
                expectations=[copy.copy(res.expectation_config.to_domain_obj()) for res in targets])
            batch = batches[suite_name].get_batch()
            sampled = batch.validate(sample_suite, result_format=SAMPLE_FORMAT,
                                     expectation_parameters=dict(params))
            for original, again in zip(targets, sampled.results):
                for key in ("partial_unexpected_list", "partial_unexpected_counts"):
                    if again.result and again.result.get(key) is not None:
                        original.result[key] = again.result[key]
            context.validation_results_store.set(identifier, validation_result)
            done += len(targets)
        except Exception as exc:  # noqa: BLE001 - samples are an aid; counts and statuses stand
            log.warning("GX %s: could not fetch sample values: %s: %s", suite_name, type(exc).__name__, exc)
            errors.append(f"{suite_name}: {type(exc).__name__}: {exc}")
    return {"expectations": done, "error": "; ".join(errors) or None}
