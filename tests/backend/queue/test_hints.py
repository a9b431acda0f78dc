"""QueueingHints: which events move an unschedulable pod, and in-flight event replay."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.backend.queue.hints import QueueingHints, Strategy
from scheduler.clock import FakeClock
from scheduler.framework.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_FORCE_ACTIVATE,
    EVENT_NODE_ADD,
    EVENT_NODE_DELETE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.types import QueuedPodInfo
from scheduler.testing import make_node, make_pod
from tests.backend.queue.helpers import PROFILE, always, make_queue, pop_and_fail, sample

QUEUE = always(QueueingHint.QUEUE)
SKIP = always(QueueingHint.QUEUE_SKIP)
NODE_LABEL = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)


def test_unschedulable_pod_waits_without_event() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    assert q.where(pod.uid) == "unschedulable"
    assert q.pop(timeout=0) is None


def test_registered_event_with_queue_hint_moves_pod() -> None:
    clock = FakeClock()
    q = make_queue(clock, {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    still_backing_off, backed_off = make_pod("a"), make_pod("b")
    q.add(backed_off)
    pop_and_fail(q, "Fit")
    clock.step(30)
    q.add(still_backing_off)
    pop_and_fail(q, "Fit")
    node = make_node("n1")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, node)
    assert q.where(backed_off.uid) == "active"
    assert q.where(still_backing_off.uid) == "backoff"


def test_hint_receives_pod_and_objects() -> None:
    seen: list[tuple[str, Any, Any]] = []

    def hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
        seen.append((pod.name, old, new))
        return QueueingHint.QUEUE

    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, hint)]})
    q.add(make_pod("p"))
    pop_and_fail(q, "Fit")
    node = make_node("n1")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, node)
    assert seen == [("p", None, node)]


def test_hint_skip_keeps_pod_unschedulable() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)]})
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n1"))
    assert q.where(pod.uid) == "unschedulable"


def test_unrelated_event_does_not_move_pod() -> None:
    q = make_queue(
        FakeClock(),
        {
            "Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)],
            "NodeAffinity": [ClusterEventWithHint(NODE_LABEL, QUEUE)],
        },
    )
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(NODE_LABEL, make_node("n"), make_node("n"))
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_DELETE, make_node("n"), None)
    assert q.where(pod.uid) == "unschedulable"


def test_hint_only_of_rejecting_plugin_counts() -> None:
    q = make_queue(
        FakeClock(),
        {
            "Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)],
            "Other": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)],
        },
    )
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "unschedulable"


def test_hint_error_counts_as_queue() -> None:
    def broken(pod: Pod, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("boom")

    clock = FakeClock()
    q = make_queue(clock, {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, broken)]})
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    labels = {"plugin": "Fit", "event": "NodeAdd", "hint": "Error"}
    before = sample("scheduler_queueing_hint_execution_duration_seconds_count", **labels)
    clock.step(30)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "active"
    after = sample("scheduler_queueing_hint_execution_duration_seconds_count", **labels)
    assert after == before + 1


def test_pending_plugin_hint_queues_immediately_skipping_backoff() -> None:
    q = make_queue(FakeClock(), {"Waiter": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, pending=["Waiter"])
    assert q.where(pod.uid) == "unschedulable"
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "active"  # though its backoff has not ended


def test_pod_without_rejector_plugins_is_worth_requeuing_on_any_event() -> None:
    hints = QueueingHints({PROFILE: {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)]}}, True)
    pinfo = QueuedPodInfo(pod=make_pod("p"))
    assert hints.worth_requeuing(pinfo, NODE_LABEL, None, None) == Strategy.AFTER_BACKOFF


def test_rejector_without_registered_events_is_interested_in_everything() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)]})
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Unregistered")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "backoff"


def test_wildcard_event_moves_every_unschedulable_pod() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)]})
    pods = [make_pod(f"p{i}") for i in range(2)]
    for pod in pods:
        q.add(pod)
        pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(EVENT_FORCE_ACTIVATE, None, None)
    assert [q.where(p.uid) for p in pods] == ["backoff", "backoff"]


def test_wildcard_event_about_another_pod_does_not_move_pod() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)]})
    pod, other = make_pod("p"), make_pod("other")
    q.add(pod)
    pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(EVENT_FORCE_ACTIVATE, None, other)
    assert q.where(pod.uid) == "unschedulable"
    q.move_all_to_active_or_backoff_queue(EVENT_FORCE_ACTIVATE, None, pod)
    assert q.where(pod.uid) == "backoff"


def test_pre_check_limits_which_pods_are_considered() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, QUEUE)]})
    low, high = make_pod("low", priority=1), make_pod("high", priority=100)
    for pod in (low, high):
        q.add(pod)
        pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(
        EVENT_ASSIGNED_POD_ADD, None, make_pod("x"), lambda p: p.priority < 50
    )
    assert q.where(low.uid) == "backoff"
    assert q.where(high.uid) == "unschedulable"


def test_event_during_scheduling_cycle_is_not_lost() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.in_flight_event_count() == 1
    pinfo.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(pod.uid) == "backoff"
    assert q.in_flight_pods() == [] and q.in_flight_event_count() == 0


def test_event_during_cycle_with_skip_hint_leaves_pod_unschedulable() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)]})
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    pinfo.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(pod.uid) == "unschedulable"


def test_event_before_pop_is_not_replayed() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    pod = make_pod("p")
    q.add(pod)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.in_flight_event_count() == 0  # nothing in flight: not recorded
    pop_and_fail(q, "Fit")
    assert q.where(pod.uid) == "unschedulable"


def test_uninteresting_event_is_not_recorded_for_in_flight_pods() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    q.add(make_pod("p"))
    assert q.pop(timeout=0) is not None
    q.move_all_to_active_or_backoff_queue(NODE_LABEL, None, make_node("n"))
    assert q.in_flight_event_count() == 0


def test_done_drops_events_no_in_flight_pod_needs() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    first, second = make_pod("a", priority=2), make_pod("b", priority=1)
    q.add(first)
    q.add(second)
    a = q.pop(timeout=0)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n1"))
    b = q.pop(timeout=0)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n2"))
    assert a is not None and b is not None
    assert q.in_flight_event_count() == 2
    q.done(a.pod.uid)  # the event before b's pop is needed by no one now
    assert q.in_flight_event_count() == 1
    # b only saw the second event; it is still replayed.
    b.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(b, q.scheduling_cycle)
    assert q.where(second.uid) == "backoff"
    assert q.in_flight_event_count() == 0
