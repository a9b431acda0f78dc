"""SchedulingGates: gated pods and their message."""

from __future__ import annotations

from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
)
from scheduler.framework.status import Code
from scheduler.plugins import (
    scheduling_gates,
)
from scheduler.testing import build_plugin, make_pod


def test_scheduling_gates_message_lists_gates_in_order() -> None:
    plugin = build_plugin(scheduling_gates.SPEC)
    status = plugin.pre_enqueue(make_pod(scheduling_gates=["example.com/b", "example.com/a"]))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for scheduling gates: [example.com/b example.com/a]"
    assert plugin.pre_enqueue(make_pod()) is None


def test_scheduling_gates_registers_gate_removal_and_always_queues() -> None:
    plugin = build_plugin(scheduling_gates.SPEC)
    (registration,) = plugin.events_to_register()
    assert registration.event == ClusterEvent(
        EventResource.TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    )
    pod = make_pod()
    assert registration.hint_fn(pod, pod, pod) == QueueingHint.QUEUE
