"""Progress lines for the Spark jobs' task logs.

A job (``cleanse.py``, ``link.py``) makes one :class:`Progress` and says one
line per event on stderr, the same shape as the engine's ``[hdwm] ...``
lines (``hdwm.pipeline._say``)::

    [link] read curated: references=1000 sources=1 (3.1s since start)
    [link] registry: neighbourhood pulled in: references=42 entities=17 (stage 1.9s; 12.0s since start)

``[<job>]`` first, then the event, its counts as ``key=value``, and the
seconds: of the stage (when the event ends one) and since the job started.
Under ``spark-submit`` the Python process's stderr reaches spark-submit's
stdout, which Airflow's ``SparkSubmitHook`` logs line by line, so each line
is one line of the Airflow task log. Lines carry counts, names and paths only:
never a row's values, never a credential.

Library code (``hdwm.incremental``, ``hdwm.registry``) calls :func:`reporter`:
inside a job that made its ``Progress`` active (:func:`activate`) the lines carry the
job's prefix and its elapsed seconds; elsewhere (benchmarks, the rebuild
command) they carry the library's own prefix and the stage seconds only.

:class:`IterationEstimate` estimates the time left in the engine's mu loop,
and :func:`watch_engine` feeds it from the engine's own iteration lines (the
``hdwm`` logger), so the estimate needs no change to ``hdwm.pipeline``.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TextIO

log = logging.getLogger("hdwm.progress")


def fmt_value(value: Any) -> str:
    """``value`` as it appears after ``key=``: floats with at most 4 decimals,
    dicts as ``(a=1 b=2)`` (``none`` when empty), everything else ``str``."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{round(value, 4):g}"
    if isinstance(value, dict):
        return "(" + " ".join(f"{k}={fmt_value(v)}" for k, v in value.items()) + ")" if value else "none"
    return str(value)


def fmt_counts(counts: dict[str, Any] | None) -> str:
    """``key=value`` pairs joined by spaces, in the dict's order."""
    return " ".join(f"{k}={fmt_value(v)}" for k, v in (counts or {}).items())


class Progress:
    """One job's progress reporter.

    Args:
        job: the prefix, without brackets (``"link"``, ``"cleanse"``).
        stream: where lines go; default ``sys.stderr`` at the time of each line.
        clock: seconds, monotonic (tests pass a fake one).
        total: append the seconds since the job started to every line.
    """

    def __init__(self, job: str, *, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic,
                 total: bool = True) -> None:
        self.job = job
        self._stream = stream
        self._clock = clock
        self._total = total
        self.started = clock()

    def elapsed(self) -> float:
        """Seconds since this reporter was made (the job's start)."""
        return self._clock() - self.started

    def line(self, event: str, counts: dict[str, Any] | None = None, stage_seconds: float | None = None) -> str:
        """The text of one line (no newline): ``[job] event: counts (seconds)``."""
        text = f"[{self.job}] {event}"
        if counts:
            text += f": {fmt_counts(counts)}"
        times = []
        if stage_seconds is not None:
            times.append(f"stage {stage_seconds:.1f}s")
        if self._total:
            times.append(f"{self.elapsed():.1f}s since start")
        if times:
            text += f" ({'; '.join(times)})"
        return text

    def say(self, event: str, counts: dict[str, Any] | None = None, *, stage_seconds: float | None = None,
            **more: Any) -> str:
        """Write one line; ``counts`` and keyword counts are appended as ``key=value``.

        Returns: the line written (without the newline).
        """
        text = self.line(event, {**(counts or {}), **more}, stage_seconds)
        print(text, file=self._stream or sys.stderr, flush=True)
        log.info(text)
        return text

    @contextmanager
    def stage(self, name: str, **counts: Any) -> Iterator[dict[str, Any]]:
        """Time a stage; the caller fills the yielded dict with its counts.

        On success one line ``name: counts (stage Xs; Ys since start)``; when
        the body raises, ``name: failed after Xs`` and the exception goes on.
        """
        info: dict[str, Any] = dict(counts)
        t = self._clock()
        try:
            yield info
        except BaseException as exc:
            self.say(f"{name}: failed ({type(exc).__name__})", stage_seconds=self._clock() - t)
            raise
        self.say(name, info, stage_seconds=self._clock() - t)


_active: list[Progress] = []


@contextmanager
def activate(progress: Progress) -> Iterator[Progress]:
    """Make ``progress`` the one :func:`reporter` returns inside the block."""
    _active.append(progress)
    try:
        yield progress
    finally:
        _active.remove(progress)


def reporter(default_job: str) -> Progress:
    """The active job's reporter, or one with prefix ``default_job`` that
    shows stage seconds only (outside a job, "since start" means nothing)."""
    return _active[-1] if _active else Progress(default_job, total=False)


# ---------------------------------------------------------------- estimate of the mu loop


class IterationEstimate:
    """Seconds left in the engine's mu loop: mu levels left x the mean seconds
    of the last ``window`` iterations. ``levels``: how many iterations the
    loop has at most (``len(hdwm.pipeline.mu_levels(profile))``).

    It is a rough figure, and says so: the loop stops early when no pair or
    link is left (then less time is needed), later iterations see fewer
    references (usually faster), and an iteration that reblocks or scores many
    new pairs is slower than the mean.
    """

    def __init__(self, levels: int, window: int = 3) -> None:
        self.levels = int(levels)
        self.recent: deque[float] = deque(maxlen=window)

    def record(self, iteration: int, seconds: float) -> dict[str, Any]:
        """Record iteration ``iteration`` (1-based) that took ``seconds``; returns
        ``levels_left``, ``mean_seconds`` (of the recent iterations) and
        ``seconds_left`` (levels_left x mean_seconds)."""
        self.recent.append(max(0.0, float(seconds)))
        left = max(0, self.levels - int(iteration))
        mean = sum(self.recent) / len(self.recent)
        return {"levels_left": left, "mean_seconds": mean, "seconds_left": left * mean}


#: the engine's line for a finished iteration (``hdwm.pipeline``): "iteration 3: mu=0.60 ...";
#: the loop's last line ends ", stop" (and may lack mu: "iteration 9: fewer than 2 references left, stop")
ENGINE_ITERATION = re.compile(r"^iteration (\d+): (?:mu=(\d+(?:\.\d+)?)\b)?")
#: its own seconds: "... (12.3s: blocking 1.0s, ...)" (a line that recomputed nothing has none)
ENGINE_SECONDS = re.compile(r"\((\d+(?:\.\d+)?)s: ")


class _EngineWatcher(logging.Handler):
    """Turns the engine's ``iteration N: mu=...`` records into estimate lines."""

    def __init__(self, progress: Progress, estimate: IterationEstimate, clock: Callable[[], float]) -> None:
        super().__init__(logging.INFO)
        self.progress, self.estimate, self.clock = progress, estimate, clock
        self.last = clock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name != "hdwm":
                return
            msg = record.getMessage()
            now = self.clock()
            m = ENGINE_ITERATION.match(msg)
            if not m:
                self.last = now  # an engine stage before the loop: the next iteration starts here
                return
            since, self.last = now - self.last, now
            at = f" at mu={m.group(2)}" if m.group(2) else ""
            if msg.endswith(", stop"):
                self.progress.say(f"engine: iteration {m.group(1)}{at} ended the loop (nothing left to link)")
                return
            if not m.group(2):
                return
            s = ENGINE_SECONDS.search(msg)
            seconds = float(s.group(1)) if s else since
            e = self.estimate.record(int(m.group(1)), seconds)
            if e["levels_left"] == 0:
                self.progress.say(f"engine: iteration {m.group(1)} at mu={m.group(2)} took {seconds:.1f}s; "
                                  f"it was the last mu level")
            else:
                self.progress.say(
                    f"engine: iteration {m.group(1)} at mu={m.group(2)} took {seconds:.1f}s; at most "
                    f"{e['levels_left']} mu level(s) left, about {e['seconds_left']:.0f}s more at "
                    f"{e['mean_seconds']:.1f}s per iteration (mean of the last {len(self.estimate.recent)}; "
                    f"the loop may stop sooner)")
        except Exception:  # a progress line must never break the job
            pass


@contextmanager
def watch_engine(progress: Progress, levels: int, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Inside the block, each engine iteration (the ``hdwm`` logger's
    ``iteration N: mu=...`` records, which ``hdwm.pipeline`` writes beside its
    ``[hdwm]`` lines) adds one ``engine: ...`` line with the estimate of the
    time left (:class:`IterationEstimate`; ``levels`` = the loop's mu levels,
    ``len(hdwm.pipeline.mu_levels(profile))``). An iteration line without its
    seconds (one that recomputed nothing) counts the time since the previous line.

    The ``hdwm`` logger is set to INFO for the block (its records are made at
    all) and restored after. When the engine's lines change shape no estimate
    is written; nothing else changes.
    """
    logger = logging.getLogger("hdwm")
    handler = _EngineWatcher(progress, IterationEstimate(levels), clock)
    level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
