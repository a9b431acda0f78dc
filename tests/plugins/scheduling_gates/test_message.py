"""SchedulingGates: gated pods and their message."""

from __future__ import annotations

from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code
from scheduler.plugins import (
    scheduling_gates,
)
from scheduler.testing import build_plugin, make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_scheduling_gates_message_lists_the_gates() -> None:
    status = build_plugin(scheduling_gates.SPEC).pre_enqueue(
        make_pod("p", scheduling_gates=["a", "b"])
    )
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for scheduling gates: [a b]"
