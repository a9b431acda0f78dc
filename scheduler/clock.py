"""Time as an injected dependency, so queue and cache logic can be tested on a fake clock."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def monotonic(self) -> float: ...


class RealClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to; `now` and `monotonic` advance together."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        return self.now()

    def step(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def set(self, when: float) -> None:
        with self._lock:
            self._now = when
