"""Taints and tolerations as NodeUnschedulable, TaintToleration and PodTopologySpread read
them: the first untolerated hard taint (v1helper.FindMatchingUntoleratedTaint) and the base of
the two Filters that read only a node's taints and a pod's tolerations."""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    NO_EXECUTE,
    NO_SCHEDULE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    Pod,
    QueueingHint,
    SignFragment,
    Status,
    Taint,
    Toleration,
    signers,
)


def find_untolerated_taint(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> Taint | None:
    """The first NoSchedule/NoExecute taint that no toleration tolerates."""
    for taint in taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


class TolerationsFilter:
    """What NodeUnschedulable and TaintToleration share: their Filter reads only the Node (its
    taints, or the cordon as a taint) and the pod's tolerations. So a pod's signature is its
    tolerations, preemption counts pods without copying the node (CountingFilter), and a
    rejected pod is looked at again when a node is added or its taints change, or when the
    pod's tolerations change; each plugin's two hints say which of those can admit it."""

    #: Filter reads only the Node (preemption counts pods without copying it: CountingFilter).
    filter_reads_node_only = True

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility (and TaintToleration's score) depends on the pod's tolerations only."""
        return [SignFragment(signers.TOLERATIONS, signers.tolerations(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_toleration_change,
            ),
        ]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Whether an added node or a node's new taints may admit the pod (each plugin's own)."""
        return QueueingHint.QUEUE

    @staticmethod
    def is_schedulable_after_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Tolerations can only be added to a pod, so any change may admit it somewhere."""
        return QueueingHint.QUEUE
