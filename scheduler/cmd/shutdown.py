"""The bounded shutdown after SIGTERM/SIGINT: each step has a budget, and a watchdog ends the
process at SHUTDOWN_DEADLINE whatever is still waiting.

With the API server gone, every call the shutdown makes (the last bindings and status patches,
Events, the Lease release) can only wait for its timeout. The orderly stop therefore gives each
step a budget (the STOP_* constants, together under the deadline), drops the Events it could not
send with one log line, and exits with os._exit: the interpreter's own exit would join worker
threads still inside a call. If a step overruns anyway, the watchdog logs one line, reports the
unsent Events and exits at SHUTDOWN_DEADLINE. SHUTDOWN_BOUND, the documented promise, leaves a
margin above it for the signal's delivery and the process's teardown.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import structlog

log = structlog.get_logger(__name__)

SHUTDOWN_BOUND = 10.0  # seconds from the signal to the process's exit (docs/operations.md)
SHUTDOWN_DEADLINE = 8.0  # the watchdog's exit
STOP_SCHEDULER = 3.0  # the loop, bindings under way, the API dispatcher's queued calls
STOP_ELECTOR = 1.0  # releasing the Lease
STOP_INFORMERS = 1.0  # all reflectors at once
STOP_EVENTS = 2.0  # posting what is buffered


class _Stoppable(Protocol):
    def stop(self, timeout: float = ...) -> None: ...


class Deadline:
    """Seconds left until a fixed moment, never negative."""

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def left(self, cap: float | None = None) -> float:
        remaining = max(0.0, self._at - time.monotonic())
        return remaining if cap is None else min(cap, remaining)


def stop_all(stoppables: Sequence[_Stoppable], timeout: float) -> None:
    """Stops every one on a thread of its own, so one slow stop does not delay the others;
    returns after `timeout` at the latest."""
    deadline = Deadline(timeout)
    threads = [
        threading.Thread(target=s.stop, kwargs={"timeout": timeout}, daemon=True)
        for s in stoppables
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(deadline.left())


def exit_now(code: int) -> None:
    """Ends the process without joining threads still waiting on the API server (what
    kube-scheduler's klog.FlushAndExit does): the log is flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class Watchdog:
    """Started at the first signal: at `deadline` seconds it calls `report` (which logs what
    is dropped), logs one line and exits with code 0, the signal's outcome."""

    def __init__(
        self,
        report: Callable[[], Any],
        deadline: float = SHUTDOWN_DEADLINE,
        exit_process: Callable[[int], None] = exit_now,
    ) -> None:
        self._report = report
        self._deadline = deadline
        self._exit = exit_process
        self._timer: threading.Timer | None = None

    def start(self) -> None:
        if self._timer is not None:
            return
        self._timer = threading.Timer(self._deadline, self._fire)
        self._timer.daemon = True
        self._timer.name = "shutdown-watchdog"
        self._timer.start()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _fire(self) -> None:
        try:
            self._report()
        finally:
            log.warning(
                "shutdown did not finish in time; exiting with calls still waiting",
                deadline_seconds=self._deadline,
            )
            self._exit(0)
