"""Slow DAG-run set-up started early, in one background thread (test-suite plumbing, not product).

The DAG-level tests (``tests/dags/test_faults.py``, ``test_nightly_e2e.py``, ``test_registry_e2e.py``)
spend nearly all their time in set-up that runs real ``airflow dags test washline_nightly`` pipelines:
real spark-submit, real staging databases, real GX. Each such pipeline runs in a data root, an Airflow
metadata DB copy and (for PostgreSQL) a database of its own, and nothing else in the suite reads or
writes them. Most of the rest of the suite is single-threaded Python, so on a two-core CI box one core
sits idle while it runs: this module lets those pipelines use it.

A test module opts in with a module-level ``EARLY = early.Chain(order, [early.Step(...), ...])``: named
steps, each a function of a :class:`Context` (``ctx.tmp`` is pytest's ``tmp_path_factory``,
``ctx["name"]`` the result of an earlier step, ``ctx.finalizer(fn)`` a clean-up run at the end of the
session). ``tests/conftest.py`` then

* at collection, works out which steps the selected tests use (a step is named after the fixture that
  returns its result, or after the test whose body it runs) and moves those modules to the end of the
  session (in ``order``), so their waiting overlaps everything else;
* when the session starts, runs the wanted steps of every chain in the background, one step at a time,
  chains in ``order``, steps in their declared order;
* at the end of the session, lets the running step finish (starting no other) and runs the finalizers.

A fixture or a test takes its step's result with ``EARLY.result("name")``: it waits for the background
step, or runs it right there when the background has not reached it yet (or there is no background),
and asserts on the result exactly what it asserted before. A step that raised (an ``assert``,
``pytest.skip``) raises the same exception in every fixture or test that takes it or a step that needs it,
as a failing module fixture did. ``needs`` are data dependencies (a failure propagates); ``after`` only
orders two steps that change the same state, as the order of two tests did (a failure of the first does
not stop the second; an ``after`` step that no selected test uses is ignored).

``WASHLINE_TEST_EARLY=0`` turns the background off: every step then runs where its fixture or test
takes it, as before (the modules still run last).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

#: pytest's ``tmp_path_factory`` for background steps (set by tests/conftest.py's session fixture)
TMP_PATH_FACTORY: Any = None
#: clean-ups registered by steps, run at the end of the session
FINALIZERS: list[Callable[[], Any]] = []
#: the chains of the session's selected tests (set by tests/conftest.py), for its summary
SESSION_CHAINS: list["Chain"] = []


class Context:
    """What a step function gets: the tmp path factory, the results of the steps it needs, finalizers."""

    def __init__(self, chain: "Chain", step: "Step"):
        self.chain, self.step = chain, step

    @property
    def tmp(self):
        if TMP_PATH_FACTORY is None:
            raise RuntimeError("tests/early.py: no tmp_path_factory (the conftest session fixture did not run)")
        return TMP_PATH_FACTORY

    def __getitem__(self, name: str) -> Any:
        if name not in self.step.needs:
            raise KeyError(f"step {self.step.name} reads {name} without needing it")
        return self.chain.result(name)

    @staticmethod
    def finalizer(fn: Callable[[], Any]) -> None:
        FINALIZERS.append(fn)


@dataclass(eq=False)
class Step:
    name: str
    run: Callable[[Context], Any]
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    done: bool = False
    result: Any = None
    error: BaseException | None = None
    seconds: float | None = None
    where: str = ""


class Chain:
    """The early set-up of one test module (see the module docstring)."""

    def __init__(self, order: int, steps: list[Step]):
        self.order = order
        self.module = sys._getframe(1).f_globals.get("__name__", "?")
        self.steps = {s.name: s for s in steps}
        if len(self.steps) != len(steps):
            raise ValueError("duplicate step names")
        for i, s in enumerate(steps):
            unknown = (set(s.needs) | set(s.after)) - {t.name for t in steps[:i]}
            if unknown:
                raise ValueError(f"step {s.name}: {sorted(unknown)} are not earlier steps")
        #: the steps the selected tests use (and what those need); set at collection by conftest
        self.wanted: set[str] = set()

    def want(self, names) -> None:
        todo = [n for n in names if n in self.steps]
        while todo:
            name = todo.pop()
            if name not in self.wanted:
                self.wanted.add(name)
                todo.extend(self.steps[name].needs)

    def result(self, name: str, *, where: str = "test") -> Any:
        """The step's result (running it now if nobody has); re-raises what the step raised."""
        step = self.steps[name]
        with step.lock:
            if not step.done:
                self._run(step, where)
        if step.error is not None:
            raise step.error
        return step.result

    def _run(self, step: Step, where: str) -> None:
        for name in step.after:  # the order of two steps on the same state; a failure does not matter
            if name in self.wanted:
                try:
                    self.result(name, where=where)
                except BaseException:  # noqa: BLE001 - that step's own tests report it
                    pass
        t0 = time.monotonic()
        try:
            for name in step.needs:
                self.result(name, where=where)
            step.result = step.run(Context(self, step))
        except BaseException as exc:  # noqa: BLE001 - re-raised where the result is taken
            step.error = exc
        finally:
            step.seconds, step.where, step.done = round(time.monotonic() - t0, 1), where, True

    def wanted_in_order(self) -> list[str]:
        return [n for n in self.steps if n in self.wanted]


class Background(threading.Thread):
    """Runs the wanted steps of ``chains`` one at a time, in order, until done or stopped."""

    def __init__(self, chains: list[Chain]):
        super().__init__(name="washline-early-setup", daemon=True)
        self.chains = sorted(chains, key=lambda c: c.order)
        self.stopping = threading.Event()

    def run(self) -> None:
        for chain in self.chains:
            for name in chain.wanted_in_order():
                if self.stopping.is_set():
                    return
                try:
                    chain.result(name, where="background")
                except BaseException:  # noqa: BLE001 - reported by the tests that take it
                    pass

    def stop(self) -> None:
        """Start no further step; wait for the one running."""
        self.stopping.set()
        self.join()


def run_finalizers() -> None:
    while FINALIZERS:
        fn = FINALIZERS.pop()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a clean-up must not hide the others
            print(f"tests/early.py: finalizer {fn!r} failed: {exc!r}", file=sys.stderr)


def airflow_home_copy(tmp_path_factory, name: str):
    """A private AIRFLOW_HOME holding a consistent copy (SQLite online backup) of the migrated metadata DB
    of ``$AIRFLOW_HOME`` (the repo's ``.airflow``), so a background run never writes the shared one;
    pass it as ``AIRFLOW_HOME`` with ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`` (:func:`airflow_db_env`).
    Skips when the shared DB is missing, as the tests did."""
    import os
    import sqlite3
    from pathlib import Path

    import pytest

    shared = Path(os.environ.get("AIRFLOW_HOME", str(Path(__file__).resolve().parents[1] / ".airflow")))
    if not (shared / "airflow.db").exists():
        pytest.skip("Airflow metadata DB missing: run the suite through `make test`")
    home = tmp_path_factory.mktemp(name)
    source, target = sqlite3.connect(shared / "airflow.db"), sqlite3.connect(home / "airflow.db")
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return home


def airflow_db_env(home) -> dict[str, str]:
    return {"AIRFLOW_HOME": str(home), "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}"}


def summary_lines() -> list[str]:
    """One line per step run: module, step, seconds, and where it ran (background or the test)."""
    return [f"{chain.module}: {step.name} {step.seconds} s in the {step.where}"
            + (f" ({type(step.error).__name__})" if step.error is not None else "")
            for chain in sorted(SESSION_CHAINS, key=lambda c: c.order) for step in chain.steps.values() if step.done]
