"""activeQ ordering, pop bookkeeping, blocking and close."""

from __future__ import annotations

import threading

from scheduler.clock import FakeClock
from scheduler.framework.events import EVENT_NODE_ADD, ClusterEventWithHint
from scheduler.framework.types import QueuedPodInfo
from scheduler.testing import make_pod
from tests.backend.queue.helpers import make_queue


def test_pop_orders_by_priority_then_arrival() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    low = make_pod("low", priority=1)
    high = make_pod("high", priority=10)
    early = make_pod("early", priority=5)
    late = make_pod("late", priority=5)
    q.add(low)
    q.add(early)
    clock.step(1)
    q.add(late)
    q.add(high)
    popped = [q.pop(timeout=0) for _ in range(4)]
    assert [p.pod.name for p in popped if p] == ["high", "early", "late", "low"]


def test_pop_uses_less_when_no_sort_key() -> None:
    def by_name_desc(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.pod.name > b.pod.name

    q = make_queue(FakeClock(), less=by_name_desc)
    for name in ("a", "c", "b"):
        q.add(make_pod(name))
    popped = [q.pop(timeout=0) for _ in range(3)]
    assert [p.pod.name for p in popped if p] == ["c", "b", "a"]


def test_pop_uses_sort_key_over_less() -> None:
    def never(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise AssertionError("less must not be called when sort_key is given")

    q = make_queue(FakeClock(), less=never, sort_key=lambda p: p.pod.name)
    for name in ("b", "a"):
        q.add(make_pod(name))
    first = q.pop(timeout=0)
    assert first is not None and first.pod.name == "a"


def test_pop_increments_attempts_cycle_and_sets_initial_attempt_timestamp_once() -> None:
    clock = FakeClock()
    q = make_queue(clock, {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD)]})
    added_at = clock.now()
    q.add(make_pod("p"))
    first = q.pop(timeout=0)
    assert first is not None
    assert (first.attempts, q.scheduling_cycle) == (1, 1)
    assert first.initial_attempt_timestamp == added_at
    # Fail with an event during the cycle so it comes back, then pop it again later.
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    first.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(first, q.scheduling_cycle)
    clock.step(5)
    q.flush_backoff_q_completed()
    second = q.pop(timeout=0)
    assert second is first
    assert (second.attempts, q.scheduling_cycle) == (2, 2)
    assert second.initial_attempt_timestamp == added_at


def test_pop_with_timeout_returns_none_when_nothing_is_ready() -> None:
    q = make_queue(FakeClock())
    assert q.pop(timeout=0) is None


def test_add_unschedulable_rejects_pod_already_queued() -> None:
    q = make_queue(FakeClock())
    pod = make_pod("p")
    q.add(pod)
    duplicate = QueuedPodInfo(pod=pod)
    assert q.add_unschedulable_if_not_present(duplicate, 0) is False
    assert q.active_len() == 1 and q.unschedulable_len() == 0


def _pop_in_thread(
    q: object,
) -> tuple[threading.Thread, list[QueuedPodInfo | None], threading.Event]:
    result: list[QueuedPodInfo | None] = []
    started = threading.Event()

    def run() -> None:
        started.set()
        result.append(q.pop())  # type: ignore[attr-defined]

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(5)
    return thread, result, started


def test_blocked_pop_wakes_when_pod_added_to_activeq() -> None:
    q = make_queue(FakeClock())
    thread, result, _ = _pop_in_thread(q)
    pod = make_pod("p")
    q.add(pod)
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert result[0] is not None and result[0].pod is pod
    q.close()


def test_blocked_pop_wakes_when_pod_added_to_backoffq() -> None:
    clock = FakeClock()
    q = make_queue(clock, {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD)]})
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    pinfo.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(pod.uid) == "unschedulable"
    thread, result, _ = _pop_in_thread(q)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)  # -> backoffQ
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert result[0] is not None and result[0].pod is pod
    q.close()


def test_close_wakes_blocked_pop_which_returns_none() -> None:
    q = make_queue(FakeClock())
    thread, result, _ = _pop_in_thread(q)
    q.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert result == [None]
    q.add(make_pod("late"))
    assert q.pop() is None


def test_run_flushes_backoffq_periodically() -> None:
    clock = FakeClock()
    q = make_queue(
        clock,
        {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD)]},
        gates={"SchedulerPopFromBackoffQ": False},
        backoff_flush_period=0.01,
    )
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, None)
    pinfo.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(pod.uid) == "backoff"
    clock.step(2)
    q.run()
    thread, result, _ = _pop_in_thread(q)
    thread.join(timeout=10)
    q.close()
    assert result and result[0] is not None and result[0].pod is pod
