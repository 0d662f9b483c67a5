"""hdwm.progress: the one-line progress format of the Spark jobs' task logs,
stage timing, and the estimate of the time left in the engine's mu loop."""

from __future__ import annotations

import io
import logging

import pytest

from hdwm import progress as P


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(job: str = "link", total: bool = True):
    clock, out = FakeClock(), io.StringIO()
    return P.Progress(job, stream=out, clock=clock, total=total), clock, out


def test_say_writes_one_prefixed_line_with_counts_and_elapsed():
    p, clock, out = make()
    clock.now += 2.3
    line = p.say("read curated", {"references": 1000}, sources=2)
    assert line == "[link] read curated: references=1000 sources=2 (2.3s since start)"
    assert out.getvalue() == line + "\n"
    assert p.say("by reason", by_reason={"malformed": 1, "column_count": 2}, empty={}, ratio=0.123456) == (
        "[link] by reason: by_reason=(malformed=1 column_count=2) empty=none ratio=0.1235 (2.3s since start)")


def test_stage_times_its_body_and_reports_a_failure():
    p, clock, out = make("cleanse")
    clock.now += 1.0
    with p.stage("write") as counts:
        clock.now += 3.5
        counts.update(curated=7, quarantined=1)
    assert out.getvalue().splitlines()[-1] == "[cleanse] write: curated=7 quarantined=1 (stage 3.5s; 4.5s since start)"
    with pytest.raises(KeyError):
        with p.stage("link"):
            clock.now += 2.0
            raise KeyError("x")
    assert out.getvalue().splitlines()[-1] == "[cleanse] link: failed (KeyError) (stage 2.0s; 6.5s since start)"


def test_reporter_is_the_active_job_or_the_library_default():
    outer = P.reporter("registry")
    assert outer.job == "registry" and outer.line("x") == "[registry] x"  # no "since start" outside a job
    p, _, _ = make("link")
    with P.activate(p):
        assert P.reporter("registry") is p
    assert P.reporter("incremental").job == "incremental"


def test_the_estimate_counts_the_engines_own_mu_levels():
    """link.py gives the estimate len(hdwm.pipeline.mu_levels(profile)): the
    default profile runs mu 0.50, 0.55, ... 1.00, so 10 levels are left after
    iteration 1 and none after iteration 11."""
    from hdwm.config import load_profile
    from hdwm.pipeline import mu_levels

    levels = mu_levels(load_profile("default"))
    assert [mu for mu, _ in levels][0] == 0.5 and [mu for mu, _ in levels][-1] == 1.0
    e = P.IterationEstimate(len(levels))
    assert e.record(1, 2.0)["levels_left"] == 10
    assert e.record(len(levels), 2.0)["levels_left"] == 0


def test_estimate_is_levels_left_times_the_mean_of_recent_iterations():
    e = P.IterationEstimate(11, window=3)
    assert e.record(1, 10.0) == {"levels_left": 10, "mean_seconds": 10.0, "seconds_left": 100.0}
    e.record(2, 20.0)
    e.record(3, 30.0)
    last = e.record(4, 6.0)  # the first iteration has left the window
    assert last["levels_left"] == 7
    assert last["mean_seconds"] == pytest.approx((20 + 30 + 6) / 3)
    assert last["seconds_left"] == pytest.approx(7 * (20 + 30 + 6) / 3)


def test_watch_engine_turns_engine_iteration_lines_into_estimates():
    p, clock, out = make()
    engine = logging.getLogger("hdwm")
    before = engine.level
    with P.watch_engine(p, 11, clock=clock):
        engine.info("distinct tokens=10 stop tokens (freq>=5)=0 (1.0s since start)")
        engine.info("iteration 1: mu=0.50 eps=0.20 refs=9 blocks=3 largest_block=4 oversize_blocks=0 pairs=6 "
                    "links=2 cc_rounds=2 clusters=2 accepted=2 mean_quality=0.9 (4.0s: blocking 1.0s, "
                    "scoring 1.0s, components 1.0s, quality 1.0s)")
        clock.now += 2.0  # a line without its own seconds: the time since the previous line
        engine.info("iteration 2: mu=0.55 eps=0.20 refs=5 links=1: the links of iteration 1, so its 1 cluster(s), "
                    "none accepted (nothing recomputed)")
        clock.now += 0.5
        clock.now += 7.0
        engine.info("iteration 3: mu=0.60 eps=0.20 refs=5 blocks=1 pairs=1 links=0, stop")
        logging.getLogger("hdwm.incremental").info("iteration 9: mu=0.90 not the engine's line")
    assert engine.level == before and not any(isinstance(h, P._EngineWatcher) for h in engine.handlers)
    lines = out.getvalue().splitlines()
    assert lines == [
        "[link] engine: iteration 1 at mu=0.50 took 4.0s; at most 10 mu level(s) left, about 40s more at "
        "4.0s per iteration (mean of the last 1; the loop may stop sooner) (0.0s since start)",
        "[link] engine: iteration 2 at mu=0.55 took 2.0s; at most 9 mu level(s) left, about 27s more at "
        "3.0s per iteration (mean of the last 2; the loop may stop sooner) (2.0s since start)",
        "[link] engine: iteration 3 at mu=0.60 ended the loop (nothing left to link) (9.5s since start)",
    ]


def test_watch_engine_without_seconds_in_the_line_uses_the_time_between_lines():
    p, clock, out = make()
    with P.watch_engine(p, 5, clock=clock):
        clock.now += 6.0
        logging.getLogger("hdwm").info("iteration 4: mu=0.75 refs=3 (a line of another shape)")
        clock.now += 1.0
        logging.getLogger("hdwm").info("iteration 5: mu=1.00 refs=3 (1.5s: blocking 0.1s)")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[link] engine: iteration 4 at mu=0.75 took 6.0s; at most 1 mu level(s) left, "
                               "about 6s more")
    assert lines[1].startswith("[link] engine: iteration 5 at mu=1.00 took 1.5s; it was the last mu level")
