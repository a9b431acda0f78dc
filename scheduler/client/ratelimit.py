"""Client-side rate limiting: client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter).

The bucket holds up to `burst` tokens, starts full and refills at `qps` per second. A caller
takes a token, waiting for it if the bucket is empty; tokens are reserved under the lock and the
wait happens outside it, so waiting callers are served in arrival order, `1/qps` apart, like
golang.org/x/time/rate's Wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from scheduler.clock import Clock, RealClock

# Clock readings are large floats; without some slack a token due "now" can look a hair short.
_EPSILON = 1e-6


class TokenBucket:
    __slots__ = ("_clock", "_last", "_lock", "_sleep", "_tokens", "burst", "qps")

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Clock | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive (a negative qps means no rate limiter)")
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock or RealClock()
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = self._clock.monotonic()

    def _advance(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
            self._last = now

    def reserve(self) -> float:
        """Takes a token now; returns how many seconds to wait before using it."""
        with self._lock:
            self._advance(self._clock.monotonic())
            self._tokens -= 1.0
            if self._tokens >= -_EPSILON:
                return 0.0
            return -self._tokens / self.qps

    def try_accept(self) -> bool:
        """Takes a token only if one is available now."""
        with self._lock:
            self._advance(self._clock.monotonic())
            if self._tokens >= 1.0 - _EPSILON:
                self._tokens -= 1.0
                return True
            return False

    def wait(self) -> float:
        """Blocks until a token is ours; returns the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay
