"""Time as an injected dependency, so queue, cache and Permit-timeout logic can be tested on a
fake clock."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def monotonic(self) -> float: ...

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        """Runs `fn` once, `delay` seconds from now, on some other thread (or, on a fake clock,
        on the thread that moves the clock past it); `cancel()` stops it if not yet run."""
        ...


class RealClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        timer = threading.Timer(max(delay, 0.0), fn)
        timer.daemon = True
        timer.start()
        return timer


class _FakeTimer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told to; `now` and `monotonic` advance together, and
    `step`/`set` run the `call_later` callbacks that fall due, in deadline order, on the
    calling thread (so a test drives timeouts without sleeping)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self._timers: list[tuple[float, int, _FakeTimer, Callable[[], None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        return self.now()

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        timer = _FakeTimer()
        with self._lock:
            heapq.heappush(self._timers, (self._now + max(delay, 0.0), next(self._seq), timer, fn))
        return timer

    def pending_timers(self) -> int:
        """Timers neither run nor cancelled."""
        with self._lock:
            return sum(1 for entry in self._timers if not entry[2].cancelled)

    def step(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
        self._run_due()

    def set(self, when: float) -> None:
        with self._lock:
            self._now = when
        self._run_due()

    def _run_due(self) -> None:
        while True:
            with self._lock:
                if not self._timers or self._timers[0][0] > self._now:
                    return
                _, _, timer, fn = heapq.heappop(self._timers)
            if not timer.cancelled:
                fn()
