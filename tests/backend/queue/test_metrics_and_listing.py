"""scheduler_pending_pods / incoming pods metrics and pending_pods()."""

from __future__ import annotations

from scheduler.clock import FakeClock
from scheduler.framework.events import EVENT_NODE_ADD, ClusterEventWithHint, QueueingHint
from scheduler.testing import make_node, make_pod
from tests.backend.queue.helpers import (
    GatePlugin,
    always,
    incoming,
    make_queue,
    pending,
    pop_and_fail,
)

EVENTS = {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, always(QueueingHint.QUEUE))]}


def _gauges() -> tuple[float, float, float, float]:
    return (pending("active"), pending("backoff"), pending("unschedulable"), pending("gated"))


def test_pending_pods_gauge_is_exact_through_the_lifecycle() -> None:
    clock = FakeClock()
    q = make_queue(clock, EVENTS, pre_enqueue=[GatePlugin()])
    a, b = make_pod("a"), make_pod("b")
    gated = make_pod("g", scheduling_gates=["x"])
    q.add(a)
    q.add(b)
    q.add(gated)
    assert _gauges() == (2, 0, 0, 1)
    pop_and_fail(q, "Fit")
    assert _gauges() == (1, 0, 1, 1)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert _gauges() == (1, 1, 0, 1)
    clock.step(5)
    q.flush_backoff_q_completed()
    assert _gauges() == (2, 0, 0, 1)
    assert q.pop(timeout=0) is not None
    assert _gauges() == (1, 0, 0, 1)
    q.delete(gated)
    assert _gauges() == (1, 0, 0, 0)


def test_incoming_pods_counted_with_event_labels() -> None:
    q = make_queue(FakeClock(), EVENTS, pre_enqueue=[GatePlugin()])
    before = {
        key: incoming(*key)
        for key in [
            ("active", "UnscheduledPodAdd"),
            ("unschedulable", "UnscheduledPodAdd"),
            ("unschedulable", "ScheduleAttemptFailure"),
            ("backoff", "NodeAdd"),
        ]
    }
    q.add(make_pod("a"))
    q.add(make_pod("g", scheduling_gates=["x"]))
    pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    after = {key: incoming(*key) for key in before}
    assert {k: after[k] - before[k] for k in before} == {
        ("active", "UnscheduledPodAdd"): 1,
        ("unschedulable", "UnscheduledPodAdd"): 1,
        ("unschedulable", "ScheduleAttemptFailure"): 1,
        ("backoff", "NodeAdd"): 1,
    }


def test_pending_pods_lists_every_queue_with_summary() -> None:
    q = make_queue(FakeClock(), EVENTS, pre_enqueue=[GatePlugin()])
    a, b = make_pod("a", priority=2), make_pod("b", priority=1)
    gated = make_pod("g", scheduling_gates=["x"])
    q.add(a)
    q.add(b)
    q.add(gated)
    pop_and_fail(q, "Fit")  # a -> unschedulable
    pods, summary = q.pending_pods()
    assert summary == "activeQ:1; backoffQ:0; unschedulableEntities:2"
    assert {p.name for p in pods} == {"a", "b", "g"}
    assert (q.active_len(), q.backoff_len(), q.unschedulable_len(), q.gated_len()) == (1, 0, 2, 1)
