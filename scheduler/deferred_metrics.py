"""Metric writes made many at a time, gathered and written once per label child at the end.

A victim deletion asks every waiting preemptor whether it may fit now: two QueueingHint durations, a
PreEnqueue duration and two incoming-pod counts per pod, each a locked prometheus-client call with a
linear bucket search (a third of that path's CPU); a sampled preemption attempt observes every
Filter call of its dry run, hundreds of thousands at 5000 nodes. Written once per child at the end
of the move or the attempt, the exported values are the same: a counter gets the sum of its
increments, a histogram the same bucket counts and sum. One thread at a time writes through one
object (the queue under its lock; the framework from the scheduling loop), so it needs no lock of
its own.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


class DeferredMetrics:
    """Writes through at once, or, inside `deferred()`, at the end of the outermost one."""

    __slots__ = ("_counts", "_depth", "_values")

    def __init__(self) -> None:
        self._depth = 0
        self._counts: dict[Any, float] = {}
        self._values: dict[Any, list[float]] = {}

    @contextmanager
    def deferred(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._flush()

    def inc(self, child: Any) -> None:
        """counter_child.inc()"""
        if self._depth:
            counts = self._counts
            counts[child] = counts.get(child, 0.0) + 1.0
        else:
            child.inc()

    def observe(self, child: Any, value: float) -> None:
        """histogram_child.observe(value)"""
        if self._depth:
            values = self._values.get(child)
            if values is None:
                self._values[child] = [value]
            else:
                values.append(value)
        else:
            child.observe(value)

    def _flush(self) -> None:
        counts, values = self._counts, self._values
        self._counts, self._values = {}, {}
        for child, amount in counts.items():
            child.inc(amount)
        for child, observed in values.items():
            observe_all(child, observed)


def observe_all(child: Any, values: Sequence[float]) -> None:
    """Histogram.observe for each value, with one write per bucket and one to the sum.

    Reads prometheus-client's histogram child internals (`_upper_bounds`, `_buckets`, `_sum`:
    stable since 0.4); if they are not there, it observes value by value, so a library change
    costs speed, never a wrong figure (tests/backend/queue/test_deferred_metrics.py compares
    both ways)."""
    bounds = getattr(child, "_upper_bounds", None)
    buckets = getattr(child, "_buckets", None)
    total = getattr(child, "_sum", None)
    if bounds is None or buckets is None or total is None or len(bounds) != len(buckets):
        for value in values:
            child.observe(value)
        return
    per_bucket: dict[int, int] = {}
    for value in values:
        # Histogram.observe counts a value in the first bucket whose bound is >= it.
        index = bisect_left(bounds, value)
        per_bucket[index] = per_bucket.get(index, 0) + 1
    total.inc(sum(values))
    for index, count in per_bucket.items():
        if index < len(buckets):
            buckets[index].inc(count)
