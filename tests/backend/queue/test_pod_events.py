"""update / delete / activate / assigned-pod events."""

from __future__ import annotations

from scheduler.api.objects import replace_pod
from scheduler.clock import FakeClock
from scheduler.framework.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.testing import make_node, make_pod
from tests.backend.queue.helpers import (
    always,
    incoming,
    make_queue,
    pop_and_fail,
    sample,
)

QUEUE = always(QueueingHint.QUEUE)
TARGET_LABEL = ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_LABEL)
EVENTS = {
    "Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)],
    "PodTopologySpread": [ClusterEventWithHint(TARGET_LABEL, QUEUE)],
    "InterPodAffinity": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, QUEUE)],
}


def test_update_in_activeq_updates_in_place_and_reorders() -> None:
    q = make_queue(FakeClock(), EVENTS)
    a, b = make_pod("a", priority=1), make_pod("b", priority=5)
    q.add(a)
    q.add(b)
    a2 = replace_pod(a, priority=10, resource_version="2")
    q.update(a, a2)
    assert q.active_len() == 2
    first = q.pop(timeout=0)
    assert first is not None and first.pod is a2


def test_update_in_backoffq_updates_in_place() -> None:
    q = make_queue(FakeClock(), EVENTS)
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    pinfo.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    new = replace_pod(pod, labels={"x": "y"}, resource_version="2")
    q.update(pod, new)
    info = q.get_pod_info(pod.uid)
    assert q.where(pod.uid) == "backoff" and info is not None and info.pod is new


def test_update_of_unschedulable_pod_moves_it_when_hint_queues() -> None:
    clock = FakeClock()
    q = make_queue(clock, EVENTS)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "PodTopologySpread")
    clock.step(30)
    q.update(pod, replace_pod(pod, labels={"app": "x"}, resource_version="2"))
    assert q.where(pod.uid) == "active"


def test_update_of_unschedulable_pod_stays_when_no_hint_matches() -> None:
    q = make_queue(FakeClock(), EVENTS)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    new = replace_pod(pod, labels={"app": "x"}, resource_version="2")
    q.update(pod, new)
    info = q.get_pod_info(pod.uid)
    assert q.where(pod.uid) == "unschedulable" and info is not None and info.pod is new


def test_update_of_in_flight_pod_is_replayed_when_attempt_fails() -> None:
    q = make_queue(FakeClock(), EVENTS)
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.update(pod, replace_pod(pod, labels={"app": "x"}, resource_version="2"))
    assert q.active_len() == 0  # not re-added while in flight
    pinfo.unschedulable_plugins = {"PodTopologySpread"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(pod.uid) == "backoff"


def test_update_of_unknown_pod_adds_it() -> None:
    q = make_queue(FakeClock(), EVENTS)
    pod = make_pod("p")
    q.update(pod, replace_pod(pod, resource_version="2"))
    assert q.where(pod.uid) == "active"


def test_delete_removes_pod_everywhere_including_nominator() -> None:
    q = make_queue(FakeClock(), EVENTS)
    pod = make_pod("p", nominated_node_name="n1")
    q.add(pod)
    pop_and_fail(q, "Fit")
    assert q.nominated_pods_for_node("n1") == [pod]
    q.delete(pod)
    assert q.where(pod.uid) is None
    assert q.nominated_pods_for_node("n1") == []
    assert q.pending_pods()[0] == []


def test_activate_moves_unschedulable_and_backoff_pods_to_activeq() -> None:
    q = make_queue(FakeClock(), EVENTS)
    stuck, backing_off = make_pod("stuck"), make_pod("boff")
    q.add(stuck)
    pop_and_fail(q, "Fit")
    q.add(backing_off)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    pinfo.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(backing_off.uid) == "backoff"
    before = incoming("active", "ForceActivate")
    q.activate([stuck, backing_off, make_pod("unknown")])
    assert q.where(stuck.uid) == "active" and q.where(backing_off.uid) == "active"
    assert incoming("active", "ForceActivate") == before + 2


def test_activate_of_in_flight_pod_is_replayed_as_force_activate() -> None:
    q = make_queue(FakeClock(), EVENTS)
    pod = make_pod("p")
    q.add(pod)
    pinfo = q.pop(timeout=0)
    assert pinfo is not None
    q.activate([pod])
    pinfo.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    assert q.where(pod.uid) == "backoff"


def test_assigned_pod_added_moves_pods_whose_plugins_registered_it() -> None:
    q = make_queue(FakeClock(), EVENTS)
    affinity, fit = make_pod("aff"), make_pod("fit")
    q.add(affinity)
    pop_and_fail(q, "InterPodAffinity")
    q.add(fit)
    pop_and_fail(q, "Fit")
    before = incoming("backoff", "AssignedPodAdd")
    q.assigned_pod_added(make_pod("bound", node_name="n1"))
    assert q.where(affinity.uid) == "backoff"
    assert q.where(fit.uid) == "unschedulable"
    assert incoming("backoff", "AssignedPodAdd") == before + 1


def test_assigned_pod_updated_uses_the_given_event() -> None:
    scale_down = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    events = {"Fit": [ClusterEventWithHint(scale_down, QUEUE)]}
    q = make_queue(FakeClock(), events)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    old = make_pod("bound", node_name="n1", cpu="2")
    q.assigned_pod_updated(old, replace_pod(old, resource_version="2"), scale_down)
    assert q.where(pod.uid) == "backoff"


def test_unschedulable_pods_metric_follows_rejector_plugins() -> None:
    q = make_queue(FakeClock(), EVENTS)
    labels = {"plugin": "Fit", "profile": "kube-pysched"}
    base = sample("scheduler_unschedulable_pods", **labels)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    assert sample("scheduler_unschedulable_pods", **labels) == base + 1
    q.activate([pod])
    assert q.pop(timeout=0) is not None  # popping ends that rejection
    assert sample("scheduler_unschedulable_pods", **labels) == base
    pinfo = q.in_flight_pods()
    assert pinfo == [pod]
    other = make_pod("o")
    q.add(other)
    pop_and_fail(q, "Fit")
    q.delete(other)
    assert sample("scheduler_unschedulable_pods", **labels) == base
