"""backoffQ: exponential backoff, error backoff, windows, flushes and popping early."""

from __future__ import annotations

import pytest

from scheduler.api.objects import Pod
from scheduler.backend.queue import SchedulingQueue
from scheduler.clock import FakeClock
from scheduler.framework.events import EVENT_NODE_ADD, ClusterEventWithHint
from scheduler.testing import make_pod
from tests.backend.queue.helpers import fail, incoming, make_queue

FIT_EVENTS = {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD)]}


def _fail_into_backoff(q: SchedulingQueue, expected: Pod) -> None:
    """Pops `expected` and fails it by Fit with a NodeAdd during the cycle -> backoffQ."""
    pinfo = q.pop(timeout=0)
    assert pinfo is not None and pinfo.pod is expected
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    fail(q, pinfo, "Fit")
    assert q.where(expected.uid) == "backoff"


def test_backoff_doubles_per_unschedulable_attempt_up_to_max() -> None:
    clock = FakeClock()
    # Without ordering windows the expiry is exact.
    q = make_queue(clock, FIT_EVENTS, gates={"SchedulerPopFromBackoffQ": False})
    pod = make_pod("p")
    q.add(pod)
    for expected in (1.0, 2.0, 4.0, 8.0, 10.0, 10.0):
        _fail_into_backoff(q, pod)
        clock.step(expected - 0.001)
        q.flush_backoff_q_completed()
        assert q.where(pod.uid) == "backoff", expected
        clock.step(0.002)
        q.flush_backoff_q_completed()
        assert q.where(pod.uid) == "active", expected


def test_backoff_bounds_are_constructor_parameters() -> None:
    clock = FakeClock()
    q = make_queue(
        clock,
        FIT_EVENTS,
        gates={"SchedulerPopFromBackoffQ": False},
        pod_initial_backoff=3.0,
        pod_max_backoff=5.0,
    )
    pod = make_pod("p")
    q.add(pod)
    for expected in (3.0, 5.0):
        _fail_into_backoff(q, pod)
        clock.step(expected - 0.001)
        q.flush_backoff_q_completed()
        assert q.where(pod.uid) == "backoff"
        clock.step(0.002)
        q.flush_backoff_q_completed()
        assert q.where(pod.uid) == "active"


def test_zero_max_backoff_disables_backoff() -> None:
    clock = FakeClock()
    q = make_queue(clock, FIT_EVENTS, pod_max_backoff=0.0)
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    fail(q, pinfo, "Fit")
    assert q.where(pod.uid) == "active"


def test_error_backoff_never_popped_early() -> None:
    clock = FakeClock()
    q = make_queue(clock, FIT_EVENTS)
    pod = make_pod("err")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    fail(q, pinfo)  # no rejector plugins: an error
    assert q.where(pod.uid) == "backoff"
    assert pinfo.consecutive_errors_count == 1 and pinfo.unschedulable_count == 0
    assert q.pop(timeout=0) is None  # activeQ empty, but error backoff is not poppable
    clock.step(2)
    q.flush_backoff_q_completed()
    assert q.where(pod.uid) == "active"


def test_error_backoff_uses_consecutive_errors_count() -> None:
    clock = FakeClock()
    q = make_queue(clock, FIT_EVENTS, gates={"SchedulerPopFromBackoffQ": False})
    pod = make_pod("err")
    q.add(pod)
    for expected in (1.0, 2.0, 4.0):
        pinfo = q.pop(timeout=0)
        assert pinfo is not None
        fail(q, pinfo)
        clock.step(expected - 0.001)
        q.flush_backoff_q_completed()
        assert q.where(pod.uid) == "backoff"
        clock.step(0.002)
        q.flush_backoff_q_completed()
        assert q.where(pod.uid) == "active"
    # A plugin rejection resets the error streak.
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    fail(q, pinfo, "Fit")
    assert pinfo.consecutive_errors_count == 0 and pinfo.unschedulable_count == 1


def test_pop_from_backoffq_when_activeq_empty_counts_event_label() -> None:
    clock = FakeClock()
    q = make_queue(clock, FIT_EVENTS)
    pod = make_pod("p")
    q.add(pod)
    _fail_into_backoff(q, pod)
    before = incoming("active", "PopFromBackoffQ")
    pinfo = q.pop(timeout=0)
    assert pinfo is not None and pinfo.pod is pod
    assert pinfo.attempts == 2 and q.scheduling_cycle == 2
    assert incoming("active", "PopFromBackoffQ") == before + 1
    assert q.in_flight_pods() == [pod]


def test_pop_prefers_activeq_over_backoffq() -> None:
    q = make_queue(FakeClock(), FIT_EVENTS)
    backing_off = make_pod("b", priority=100)
    q.add(backing_off)
    _fail_into_backoff(q, backing_off)
    fresh = make_pod("a", priority=0)
    q.add(fresh)
    first = q.pop(timeout=0)
    assert first is not None and first.pod is fresh


def test_pop_from_backoffq_disabled_waits_for_flush() -> None:
    clock = FakeClock()
    q = make_queue(clock, FIT_EVENTS, gates={"SchedulerPopFromBackoffQ": False})
    pod = make_pod("p")
    q.add(pod)
    _fail_into_backoff(q, pod)
    assert q.pop(timeout=0) is None
    clock.step(1.5)
    q.flush_backoff_q_completed()
    pinfo = q.pop(timeout=0)
    assert pinfo is not None and pinfo.pod is pod


def test_backoffq_orders_by_priority_within_one_second_window() -> None:
    clock = FakeClock(1_700_000_000.0)
    q = make_queue(clock, FIT_EVENTS)
    low = make_pod("low", priority=1)
    high = make_pod("high", priority=10)
    q.add(low)
    _fail_into_backoff(q, low)  # expires at floor(t0 + 1) = t0 + 1
    clock.step(0.5)
    q.add(high)
    _fail_into_backoff(q, high)  # expires at floor(t0 + 1.5) = t0 + 1: same window
    first = q.pop(timeout=0)
    assert first is not None and first.pod is high


def test_backoffq_orders_by_expiry_across_windows() -> None:
    clock = FakeClock(1_700_000_000.0)
    q = make_queue(clock, FIT_EVENTS)
    low = make_pod("low", priority=1)
    high = make_pod("high", priority=10)
    q.add(low)
    _fail_into_backoff(q, low)  # window t0 + 1
    clock.step(1.2)
    q.add(high)
    _fail_into_backoff(q, high)  # window t0 + 2
    first = q.pop(timeout=0)
    assert first is not None and first.pod is low


def test_backoff_in_current_window_is_still_backing_off() -> None:
    clock = FakeClock(1_700_000_000.0)
    q = make_queue(clock, FIT_EVENTS)
    pod = make_pod("p")
    q.add(pod)
    _fail_into_backoff(q, pod)  # window t0 + 1
    clock.step(1.0)  # now inside that window
    q.flush_backoff_q_completed()
    assert q.where(pod.uid) == "backoff"
    clock.step(1.0)
    q.flush_backoff_q_completed()
    assert q.where(pod.uid) == "active"


def test_flush_backoff_completed_every_second_moves_with_backoff_complete_event() -> None:
    clock = FakeClock()
    q = make_queue(clock, FIT_EVENTS)
    pods = [make_pod(f"p{i}") for i in range(2)]
    for pod in pods:
        q.add(pod)
        _fail_into_backoff(q, pod)
    before = incoming("active", "BackoffComplete")
    clock.step(2)
    q.flush_backoff_q_completed()
    assert [q.where(p.uid) for p in pods] == ["active", "active"]
    assert incoming("active", "BackoffComplete") == before + 2


@pytest.mark.parametrize(("max_backoff", "destination"), [(10.0, "active"), (1000.0, "backoff")])
def test_flush_unschedulable_leftover_after_max_duration(
    max_backoff: float, destination: str
) -> None:
    clock = FakeClock()
    q = make_queue(
        clock,
        FIT_EVENTS,
        pod_initial_backoff=max_backoff,
        pod_max_backoff=max_backoff,
        pod_max_in_unschedulable_pods_duration=300.0,
    )
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    fail(q, pinfo, "Fit")
    assert q.where(pod.uid) == "unschedulable"
    clock.step(300)
    q.flush_unschedulable_pods_leftover()
    assert q.where(pod.uid) == "unschedulable"
    before = incoming(destination, "UnschedulableTimeout")
    clock.step(0.5)
    q.flush_unschedulable_pods_leftover()
    assert q.where(pod.uid) == destination
    assert pinfo.was_flushed_from_unschedulable
    assert incoming(destination, "UnschedulableTimeout") == before + 1
