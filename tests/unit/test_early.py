"""tests/early.py: background set-up steps keep the order, dependencies and failures of the fixtures they replace."""

from __future__ import annotations

import threading
import time

import early
import pytest


def recorder(log: list, name: str, *, fail: bool = False, pause: float = 0.0):
    def run(ctx):
        log.append((name, threading.current_thread().name))
        time.sleep(pause)
        if fail:
            raise AssertionError(f"{name} failed")
        return name.upper()

    return run


def test_steps_run_once_in_order_and_results_are_shared():
    log: list = []
    chain = early.Chain(1, [early.Step("a", recorder(log, "a")),
                            early.Step("b", lambda ctx: ctx["a"] + "B", needs=("a",))])
    assert chain.result("b") == "AB" and chain.result("a") == "A" and chain.result("b") == "AB"
    assert [n for n, _ in log] == ["a"]


def test_a_failed_step_raises_in_every_step_that_needs_it_but_not_in_a_step_only_after_it():
    log: list = []
    chain = early.Chain(1, [early.Step("a", recorder(log, "a", fail=True)),
                            early.Step("b", recorder(log, "b"), needs=("a",)),
                            early.Step("c", recorder(log, "c"), after=("a",))])
    chain.want({"a", "b", "c"})
    for name in ("a", "b"):
        with pytest.raises(AssertionError, match="a failed"):
            chain.result(name)
    assert chain.result("c") == "C"
    assert [n for n, _ in log] == ["a", "c"]


def test_after_orders_wanted_steps_and_ignores_the_others():
    log: list = []
    chain = early.Chain(1, [early.Step("a", recorder(log, "a")), early.Step("b", recorder(log, "b"), after=("a",))])
    assert chain.result("b") == "B" and [n for n, _ in log] == ["b"]  # "a" not wanted: not run
    log.clear()
    chain = early.Chain(1, [early.Step("a", recorder(log, "a")), early.Step("b", recorder(log, "b"), after=("a",))])
    chain.want({"a", "b"})
    assert chain.result("b") == "B" and [n for n, _ in log] == ["a", "b"]


def test_skip_in_a_step_skips_where_it_is_taken():
    chain = early.Chain(1, [early.Step("a", lambda ctx: pytest.skip("no database"))])
    with pytest.raises(pytest.skip.Exception, match="no database"):
        chain.result("a")


def test_background_runs_the_wanted_steps_and_a_test_waits_for_the_running_one():
    log: list = []
    first = early.Chain(2, [early.Step("x", recorder(log, "x", pause=0.2))])
    second = early.Chain(1, [early.Step("a", recorder(log, "a", pause=0.2)), early.Step("unwanted", recorder(log, "u"))])
    first.want({"x"})
    second.want({"a"})
    background = early.Background([first, second])
    background.start()
    time.sleep(0.05)
    assert second.result("a") == "A"  # waited for the background, did not run it again
    background.join(timeout=10)
    assert log == [("a", "washline-early-setup"), ("x", "washline-early-setup")]  # chains by order


def test_unknown_or_later_steps_are_refused():
    with pytest.raises(ValueError, match="not earlier steps"):
        early.Chain(1, [early.Step("a", lambda ctx: 1, needs=("b",)), early.Step("b", lambda ctx: 2)])
