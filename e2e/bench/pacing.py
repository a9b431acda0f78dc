"""Fixed-rate creation (`--create-qps`): pod i is due at i / rate seconds after the start.

A monotonic-clock timetable: workers wait for each pod's time and create it. How late each
create started and the rate achieved are recorded beside the asked rate, so a run that fell
behind says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from e2e.bench.measure import percentile
from e2e.bench.record import PacingFigures

#: A paced run counts as having reached its rate when it achieved at least this share of it.
REACHED_SHARE = 0.95


def creation_offsets(rate: float, count: int) -> list[float]:
    """Seconds after the start at which each of `count` pods is due: i / rate."""
    if rate <= 0:
        raise ValueError(f"the creation rate must be positive, not {rate}")
    return [i / rate for i in range(count)]


def achieved_rate(done: Sequence[float]) -> float:
    """Creations per second over the completion times `done` (any order): (n - 1) over the
    span from the first completion to the last, so a perfectly paced run gives the asked rate.
    0 for fewer than two creations (no span to divide by)."""
    if len(done) < 2:
        return 0.0
    span = max(done) - min(done)
    return (len(done) - 1) / span if span > 0 else 0.0


@dataclass(frozen=True)
class Pacing:
    """How a paced creation went; all times are offsets from its start, in seconds."""

    asked: float
    due: Sequence[float]
    started: Sequence[float]
    done: Sequence[float]

    @property
    def achieved(self) -> float:
        return achieved_rate(self.done)

    @property
    def reached(self) -> bool:
        """At least REACHED_SHARE of the asked rate (a single pod has no rate to miss)."""
        return len(self.done) < 2 or self.achieved >= REACHED_SHARE * self.asked

    def lags(self) -> list[float]:
        """How late each create started against its due time (never negative)."""
        return [max(0.0, s - d) for s, d in zip(self.started, self.due, strict=True)]

    def figures(self) -> PacingFigures:
        """The record's creation figures: asked and achieved rate, whether it was reached, and
        how late creates started (p50, p99, max)."""
        lags = self.lags()
        return PacingFigures(
            create_qps_asked=self.asked,
            create_qps_achieved=round(self.achieved, 1),
            create_qps_reached=self.reached,
            create_lag_p50_ms=round(percentile(lags, 50) * 1000, 1),
            create_lag_p99_ms=round(percentile(lags, 99) * 1000, 1),
            create_lag_max_ms=round(max(lags, default=0.0) * 1000, 1),
        )


def create_paced(
    create: Callable[[int], object],
    count: int,
    rate: float,
    *,
    threads: int,
    clock: Callable[[], float] = time.monotonic,
    wait: Callable[[float], object] = time.sleep,
) -> Pacing:
    """Calls create(i) for i in range(count), each no earlier than i / rate seconds after the
    start, from `threads` workers (so a slow create does not hold back the ones after it).
    Re-raises the first failure once every worker has stopped."""
    due = creation_offsets(rate, count)
    started = [0.0] * count
    done = [0.0] * count
    failed: list[BaseException] = []
    start = clock()

    def one(i: int) -> None:
        if failed:  # a create failed: the rest are not made
            return
        delay = start + due[i] - clock()
        if delay > 0:
            wait(delay)  # the schedule itself, not a guess at when something is ready
        started[i] = clock() - start
        try:
            create(i)
        except BaseException as err:
            failed.append(err)
            return
        done[i] = clock() - start

    # The pool's queue hands the pods to the workers in order.
    with ThreadPoolExecutor(max(1, min(threads, count)), thread_name_prefix="bench-paced") as pool:
        pool.map(one, range(count))
    if failed:
        raise failed[0]
    return Pacing(rate, due, started, done)
