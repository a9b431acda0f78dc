"""Deferred metric writes export exactly what writing each value at once would."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from scheduler.clock import FakeClock
from scheduler.deferred_metrics import DeferredMetrics, observe_all
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.testing import make_pod
from tests.backend.queue.helpers import SwitchPlugin, always, incoming, make_queue, pop_and_fail

BUCKETS = (0.001, 0.01, 0.1, 1.0, 10.0)


def _pair() -> tuple[CollectorRegistry, Histogram, Counter]:
    registry = CollectorRegistry()
    histogram = Histogram("h", "h", ["x"], buckets=BUCKETS, registry=registry)
    counter = Counter("c", "c", ["x"], registry=registry)
    return registry, histogram, counter


def test_deferred_writes_export_the_same_text_as_immediate_ones() -> None:
    rng = random.Random(7)
    # Values on bucket bounds, between them, below the first and above the last.
    values = [*BUCKETS, 0.0, 20.0, *(rng.uniform(0, 12) for _ in range(500))]
    at_once, h1, c1 = _pair()
    later, h2, c2 = _pair()
    writes = DeferredMetrics()
    for value in values:
        h1.labels("a").observe(value)
        c1.labels("a").inc()
    with writes.deferred():
        for value in values:
            writes.observe(h2.labels("a"), value)
            writes.inc(c2.labels("a"))
        assert generate_latest(later) != generate_latest(at_once)  # nothing written yet
    assert generate_latest(later) == generate_latest(at_once)


def test_outside_deferred_writes_go_through_at_once() -> None:
    registry, histogram, counter = _pair()
    writes = DeferredMetrics()
    writes.observe(histogram.labels("a"), 0.5)
    writes.inc(counter.labels("a"))
    assert registry.get_sample_value("h_count", {"x": "a"}) == 1.0
    assert registry.get_sample_value("c_total", {"x": "a"}) == 1.0


def test_nested_deferral_writes_at_the_end_of_the_outermost() -> None:
    registry, _, counter = _pair()
    writes = DeferredMetrics()
    with writes.deferred():
        with writes.deferred():
            writes.inc(counter.labels("a"))
        assert registry.get_sample_value("c_total", {"x": "a"}) == 0.0
    assert registry.get_sample_value("c_total", {"x": "a"}) == 1.0


def test_observe_all_falls_back_to_observe_without_the_internals() -> None:
    class Child:
        def __init__(self) -> None:
            self.seen: list[float] = []

        def observe(self, value: float) -> None:
            self.seen.append(value)

    child = Child()
    observe_all(child, [1.0, 2.0])
    assert child.seen == [1.0, 2.0]


def test_a_move_of_many_gated_pods_counts_every_pod() -> None:
    """The queue path the deferral serves: each gated preemptor re-gated by a deletion is
    counted once in scheduler_queue_incoming_pods_total, as before."""
    delete = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
    events = {
        "DefaultPreemption": [ClusterEventWithHint(delete, always(QueueingHint.QUEUE_SKIP))],
        "NodeResourcesFit": [ClusterEventWithHint(delete, always(QueueingHint.QUEUE))],
    }
    gate = SwitchPlugin("DefaultPreemption", reject=False)
    q = make_queue(FakeClock(), events, pre_enqueue=[gate])
    for i in range(5):
        q.add(make_pod(f"p{i}"))
    for _ in range(5):
        pop_and_fail(q, "NodeResourcesFit")
    gate.reject = True
    before = incoming("unschedulable", delete.label)
    q.move_all_to_active_or_backoff_queue(delete, make_pod("v", node_name="n"), None)
    assert incoming("unschedulable", delete.label) == before + 5
    assert q.gated_len() == 5
