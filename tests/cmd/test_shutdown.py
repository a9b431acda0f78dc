"""The bounded shutdown's parts: the watchdog, stopping in parallel within a budget."""

from __future__ import annotations

import threading
import time

import structlog

from scheduler.cmd import shutdown


class _Stuck:
    """A stop that waits on a call that never returns (until released)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked = threading.Event()

    def stop(self, timeout: float = 10.0) -> None:
        self.asked.set()
        self.release.wait()


def test_stop_all_asks_every_one_at_once_and_returns_at_the_timeout() -> None:
    stuck = [_Stuck() for _ in range(5)]
    start = time.monotonic()
    shutdown.stop_all(stuck, timeout=0.2)
    # Five stuck stops did not add up: all were asked, and the call came back.
    assert all(s.asked.is_set() for s in stuck)
    assert time.monotonic() - start < 5 * 0.2
    for s in stuck:
        s.release.set()


def test_the_watchdog_reports_then_exits_with_0() -> None:
    exited: list[int] = []
    done = threading.Event()
    reported: list[bool] = []

    def exit_process(code: int) -> None:
        exited.append(code)
        done.set()

    dog = shutdown.Watchdog(lambda: reported.append(True), 0.01, exit_process)
    with structlog.testing.capture_logs() as logs:
        dog.start()
        dog.start()  # a second start is the same watchdog
        assert done.wait(10)
    assert exited == [0] and reported == [True]
    assert [r["event"] for r in logs] == [
        "shutdown did not finish in time; exiting with calls still waiting"
    ]


def test_a_cancelled_watchdog_does_not_fire() -> None:
    fired = threading.Event()
    dog = shutdown.Watchdog(fired.set, 0.05, lambda code: None)
    dog.start()
    dog.cancel()
    assert not fired.wait(0.3)


def test_the_budgets_fit_under_the_deadline_and_the_deadline_under_the_bound() -> None:
    steps = (
        shutdown.STOP_SCHEDULER
        + shutdown.STOP_ELECTOR
        + shutdown.STOP_INFORMERS
        + shutdown.STOP_EVENTS
    )
    assert steps < shutdown.SHUTDOWN_DEADLINE < shutdown.SHUTDOWN_BOUND <= 10.0
