"""SchedulerQueueingHints off: legacy rules and moveRequestCycle."""

from __future__ import annotations

from scheduler.api.objects import replace_pod
from scheduler.clock import FakeClock
from scheduler.framework.events import (
    EVENT_NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.testing import make_node, make_pod
from tests.backend.queue.helpers import always, make_queue, pop_and_fail

SKIP = always(QueueingHint.QUEUE_SKIP)
NODE_LABEL = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
EVENTS = {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, SKIP)]}
OFF = {"SchedulerQueueingHints": False}


def test_hints_disabled_any_registered_event_of_rejector_moves_pod() -> None:
    q = make_queue(FakeClock(), EVENTS, gates=OFF)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "backoff"  # the QueueSkip hint is ignored


def test_hints_disabled_unrelated_event_does_not_move_pod() -> None:
    q = make_queue(FakeClock(), EVENTS, gates=OFF)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    q.move_all_to_active_or_backoff_queue(NODE_LABEL, None, make_node("n"))
    assert q.where(pod.uid) == "unschedulable"


def test_hints_disabled_move_request_during_cycle_sends_pod_to_backoff() -> None:
    q = make_queue(FakeClock(), {"Fit": [ClusterEventWithHint(NODE_LABEL)]}, gates=OFF)
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    # Any event of interest during the cycle counts, whatever plugin registered it.
    q.move_all_to_active_or_backoff_queue(NODE_LABEL, None, make_node("n"))
    assert q.in_flight_event_count() == 0  # no event recording in legacy mode
    pinfo.unschedulable_plugins = {"Other"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(pod.uid) == "backoff"


def test_hints_disabled_no_move_request_leaves_pod_unschedulable() -> None:
    q = make_queue(FakeClock(), EVENTS, gates=OFF)
    pod = make_pod("p")
    q.add(pod)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))  # before pop
    pop_and_fail(q, "Fit")
    assert q.where(pod.uid) == "unschedulable"


def test_hints_disabled_update_of_unschedulable_pod_requeues_on_spec_change() -> None:
    clock = FakeClock()
    q = make_queue(clock, EVENTS, gates=OFF)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    status_only = replace_pod(pod, resource_version="2", nominated_node_name="n1")
    q.update(pod, status_only)
    assert q.where(pod.uid) == "unschedulable"
    q.update(status_only, replace_pod(status_only, labels={"a": "b"}, resource_version="3"))
    assert q.where(pod.uid) == "backoff"
    clock.step(30)
    q.flush_backoff_q_completed()
    assert q.where(pod.uid) == "active"
