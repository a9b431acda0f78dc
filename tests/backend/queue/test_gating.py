"""PreEnqueue gating: gated pods wait in the unschedulable pool, counted as gated."""

from __future__ import annotations

from typing import Any

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
from tests.backend.queue.helpers import (
    GatePlugin,
    SwitchPlugin,
    always,
    incoming,
    make_queue,
    pending,
    pop_and_fail,
)

QUEUE = always(QueueingHint.QUEUE)
GATES_REMOVED = ClusterEvent(
    EventResource.TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
)
GATE_EVENTS = {"SchedulingGates": [ClusterEventWithHint(GATES_REMOVED, QUEUE)]}


def test_gated_pod_counted_as_gated_and_never_popped() -> None:
    q = make_queue(FakeClock(), GATE_EVENTS, pre_enqueue=[GatePlugin()])
    pod = make_pod("p", scheduling_gates=["example.com/wait"])
    q.add(pod)
    assert q.where(pod.uid) == "gated"
    assert (pending("gated"), pending("unschedulable"), pending("active")) == (1, 0, 0)
    info = q.get_pod_info(pod.uid)
    assert info is not None and info.gating_plugin == "SchedulingGates"
    assert info.gating_plugin_events == (GATES_REMOVED,)
    assert q.pop(timeout=0) is None


def test_gated_pod_runs_pre_enqueue_again_when_gates_removed() -> None:
    gate = GatePlugin()
    q = make_queue(FakeClock(), GATE_EVENTS, pre_enqueue=[gate])
    gated = make_pod("p", scheduling_gates=["example.com/wait"])
    q.add(gated)
    calls = gate.calls
    ungated = replace_pod(gated, scheduling_gates=(), resource_version="2")
    q.update(gated, ungated)
    assert gate.calls == calls + 1
    assert q.where(gated.uid) == "active"
    assert pending("gated") == 0 and pending("active") == 1
    pinfo = q.pop(timeout=0)
    assert pinfo is not None and pinfo.pod is ungated and not pinfo.gated


def test_gated_pod_ignores_events_its_gating_plugin_did_not_register() -> None:
    events = {**GATE_EVENTS, "Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]}
    gate = GatePlugin()
    q = make_queue(FakeClock(), events, pre_enqueue=[gate])
    pod = make_pod("p", scheduling_gates=["example.com/wait"])
    q.add(pod)
    calls = gate.calls
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert gate.calls == calls  # not even re-evaluated
    assert q.where(pod.uid) == "gated"


def test_gated_pod_moves_on_gating_plugin_event() -> None:
    switch = SwitchPlugin("Switch")
    events = {"Switch": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]}
    q = make_queue(FakeClock(), events, pre_enqueue=[switch])
    pod = make_pod("p")
    q.add(pod)
    assert q.where(pod.uid) == "gated"
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "gated"  # re-ran PreEnqueue, still rejected
    switch.reject = False
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "active"


def test_a_closed_gate_is_asked_before_the_hints_and_leaves_the_pod_alone() -> None:
    """A preemptor gated while its preemption's calls run: each deletion asks the gate, not
    the hints, and the pod is not moved (nor counted as coming into the pool again)."""
    asked: list[str] = []

    def hint(pod: Any, old: Any, new: Any) -> QueueingHint:
        asked.append(pod.name)
        return QueueingHint.QUEUE

    switch = SwitchPlugin("Switch")
    events = {"Switch": [ClusterEventWithHint(EVENT_NODE_ADD, always(QueueingHint.QUEUE_SKIP))]}
    events["Fit"] = [ClusterEventWithHint(EVENT_NODE_ADD, hint)]
    q = make_queue(FakeClock(), events, pre_enqueue=[switch])
    pod = make_pod("p")
    q.add(pod)
    info = q.get_pod_info(pod.uid)
    assert info is not None
    info.unschedulable_plugins.add("Fit")  # as after a failed attempt
    parked = incoming("unschedulable", EVENT_NODE_ADD.label)
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert asked == [] and q.where(pod.uid) == "gated"
    assert incoming("unschedulable", EVENT_NODE_ADD.label) == parked
    switch.reject = False
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert asked == ["p"] and q.where(pod.uid) == "active"


def test_an_open_gate_leaves_the_pod_gated_when_no_hint_queues_it() -> None:
    switch = SwitchPlugin("Switch", reject=True)
    skip = always(QueueingHint.QUEUE_SKIP)
    q = make_queue(
        FakeClock(), {"Switch": [ClusterEventWithHint(EVENT_NODE_ADD, skip)]}, pre_enqueue=[switch]
    )
    pod = make_pod("p")
    q.add(pod)
    switch.reject = False
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    info = q.get_pod_info(pod.uid)
    assert info is not None and info.gating_plugin == "Switch"  # as kube-scheduler leaves it
    assert q.where(pod.uid) == "gated" and pending("gated") == 1


def test_unschedulable_timeout_reevaluates_gated_pods() -> None:
    clock = FakeClock()
    switch = SwitchPlugin("Switch")
    q = make_queue(clock, {}, pre_enqueue=[switch])
    pod = make_pod("p")
    q.add(pod)
    switch.reject = False
    clock.step(301)
    q.flush_unschedulable_pods_leftover()
    assert q.where(pod.uid) == "active"


def test_flushed_gated_pod_waits_full_duration_before_next_flush() -> None:
    clock = FakeClock()
    gate = GatePlugin()
    q = make_queue(clock, GATE_EVENTS, pre_enqueue=[gate])
    pod = make_pod("p", scheduling_gates=["g"])
    q.add(pod)
    clock.step(301)
    q.flush_unschedulable_pods_leftover()
    calls = gate.calls
    clock.step(100)
    q.flush_unschedulable_pods_leftover()
    assert gate.calls == calls
    clock.step(201)
    q.flush_unschedulable_pods_leftover()
    assert gate.calls == calls + 1


def test_pre_enqueue_runs_before_backoffq_with_pop_from_backoffq() -> None:
    switch = SwitchPlugin("Switch", reject=False)
    events = {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]}
    q = make_queue(FakeClock(), events, pre_enqueue=[switch])
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    switch.reject = True
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "gated"


def test_pre_enqueue_not_run_before_backoffq_without_pop_from_backoffq() -> None:
    clock = FakeClock()
    switch = SwitchPlugin("Switch", reject=False)
    events = {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]}
    q = make_queue(clock, events, pre_enqueue=[switch], gates={"SchedulerPopFromBackoffQ": False})
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q, "Fit")
    switch.reject = True
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    assert q.where(pod.uid) == "backoff"
    clock.step(5)
    q.flush_backoff_q_completed()  # PreEnqueue runs on the way to activeQ
    assert q.where(pod.uid) == "gated"


def test_pre_enqueue_uses_the_pods_profile() -> None:
    q = make_queue(FakeClock(), GATE_EVENTS, pre_enqueue=[GatePlugin()])
    other_profile = make_pod("p", scheduling_gates=["g"], scheduler_name="other")
    q.add(other_profile)
    assert q.where(other_profile.uid) == "active"
