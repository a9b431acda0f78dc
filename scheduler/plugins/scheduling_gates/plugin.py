"""SchedulingGates: pods with spec.schedulingGates wait (gated) until every gate is removed."""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    EventResource,
    Pod,
    QueueingHint,
    Status,
)

NAME = "SchedulingGates"


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        gates = " ".join(pod.scheduling_gates)
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"waiting for scheduling gates: [{gates}]"
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        event = ClusterEvent(
            EventResource.TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        )
        return [ClusterEventWithHint(event, self.is_schedulable_after_gates_eliminated)]

    @staticmethod
    def is_schedulable_after_gates_eliminated(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The event only fires for the pod itself once its last gate is gone: always retry."""
        return QueueingHint.QUEUE
