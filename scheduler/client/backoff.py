"""Exponential backoff with jitter, as apimachinery's wait.Backoff, and retry-on-error.

`Backoff` is the reflector's delay source (800 ms doubling to 30 s, full jitter, reset after two
minutes); `retry_on_error` is client-go's retry.OnError, which the scheduler uses around binds
and status patches.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from scheduler.clock import Clock, RealClock

T = TypeVar("T")


class Backoff:
    """The successive delays of wait.Backoff.DelayWithReset; thread-safe.

    Each `step()` returns the current duration plus up to `jitter` times itself at random, then
    multiplies the duration by `factor` up to `cap`. If `reset_after` seconds have passed since
    the backoff last started over, it starts over from `initial` (as client-go's
    backoffManager measures it).
    """

    __slots__ = (
        "_clock",
        "_duration",
        "_last_start",
        "_lock",
        "_rng",
        "_steps",
        "cap",
        "factor",
        "initial",
        "jitter",
        "max_steps",
        "reset_after",
    )

    def __init__(
        self,
        initial: float,
        *,
        factor: float = 2.0,
        jitter: float = 0.0,
        cap: float = 0.0,
        steps: int = 0,
        reset_after: float = 0.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.factor = factor
        self.jitter = jitter
        self.cap = cap
        self.max_steps = steps
        self.reset_after = reset_after
        self._clock = clock or RealClock()
        self._rng = rng  # None: the module's shared generator (seeding one is not cheap)
        self._lock = threading.Lock()
        self._duration = initial
        self._steps = steps
        self._last_start = self._clock.monotonic()

    @classmethod
    def for_reflector(cls, clock: Clock | None = None, rng: random.Random | None = None) -> Backoff:
        """client-go's reflector defaults: 800 ms, x2, jitter 1.0, cap 30 s, reset after 2 min."""
        return cls(
            0.8,
            factor=2.0,
            jitter=1.0,
            cap=30.0,
            steps=38,  # ceil(cap / initial), as client-go computes it
            reset_after=120.0,
            clock=clock,
            rng=rng,
        )

    def reset(self) -> None:
        with self._lock:
            self._duration = self.initial
            self._steps = self.max_steps
            self._last_start = self._clock.monotonic()

    def step(self) -> float:
        """The next delay in seconds."""
        with self._lock:
            if self.reset_after > 0:
                now = self._clock.monotonic()
                if now - self._last_start > self.reset_after:
                    self._duration = self.initial
                    self._steps = self.max_steps
                    self._last_start = now
            current = self._duration
            if self._steps >= 1:
                self._steps -= 1
                if self.factor:
                    grown = current * self.factor
                    if self.cap > 0 and grown > self.cap:
                        grown = self.cap
                        self._steps = 0
                    self._duration = grown
            if self.jitter > 0:
                rand = self._rng.random() if self._rng is not None else random.random()
                current += rand * self.jitter * current
            return current


def jittered(duration: float, max_factor: float, rng: random.Random | None = None) -> float:
    """wait.Jitter: `duration` plus up to `max_factor` times itself (1.0 when not positive)."""
    if max_factor <= 0:
        max_factor = 1.0
    return duration + (rng or random).random() * max_factor * duration


# retry.DefaultBackoff: what kube-scheduler retries binds and status patches with.
DEFAULT_RETRY_STEPS = 4
DEFAULT_RETRY_INITIAL = 0.010
DEFAULT_RETRY_FACTOR = 5.0
DEFAULT_RETRY_JITTER = 0.1


def retry_on_error(
    fn: Callable[[], T],
    retriable: Callable[[BaseException], bool],
    *,
    steps: int = DEFAULT_RETRY_STEPS,
    initial: float = DEFAULT_RETRY_INITIAL,
    factor: float = DEFAULT_RETRY_FACTOR,
    jitter: float = DEFAULT_RETRY_JITTER,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """retry.OnError: call `fn` up to `steps` times while it raises a `retriable` error.

    The last error is re-raised; a non-retriable one at once.
    """
    backoff: Backoff | None = None  # built on the first failure: the common path never needs it
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as err:
            attempt += 1
            if attempt >= steps or not retriable(err):
                raise
        if backoff is None:
            backoff = Backoff(initial, factor=factor, jitter=jitter, steps=steps, rng=rng)
        sleep(backoff.step())
