"""Coscheduling: scheduler-plugins' gang plugin for `scheduling.x-k8s.io/v1alpha1` PodGroups
(pods join with the label `scheduling.x-k8s.io/pod-group`), with its name and args.

QueueSort keeps a group's members together; PreEnqueue holds members until the group can be
tried; PreFilter rejects early when the cluster cannot hold minResources; Permit lets placed
members wait until the group's bound + assumed members reach minMember, then lets them all go;
Unreserve and PostFilter give up on the whole group. As a PodGroupPlugin it tells the loop
which pods are members, so the loop schedules a group's pending members in one group cycle
(docs/gang.md), which sends them to Permit only once the quorum is there and never runs
PostFilter for them. The group logic is in helper.gang.
Not in the default profile: users enable it (queueSort included), as with scheduler-plugins.
"""

from __future__ import annotations

from typing import Any

import structlog

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Gang,
    GangRef,
    GangSource,
    Handle,
    NodeInfo,
    NodeToStatus,
    Pod,
    PodGroupInfo,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    QueueingHint,
    Status,
)
from scheduler.plugins.coscheduling.args import CoschedulingArgs
from scheduler.plugins.helper.gang import DEFAULT_WAIT_SECONDS, GangTracker

NAME = "Coscheduling"

log = structlog.get_logger(__name__)

_SKIP = Status(Code.SKIP)


class Coscheduling:
    name = NAME

    def __init__(self, args: CoschedulingArgs | None, handle: Handle) -> None:
        self.args = args or CoschedulingArgs()
        self.handle = handle
        self.gangs = handle.gangs()  # here: the process watches PodGroups from now on
        self.tracker = GangTracker(
            handle, NAME, float(self.args.pod_group_backoff_seconds), GangSource.SCHEDULER_PLUGINS
        )
        self.reject_threshold = self.args.pod_group_reject_percentage / 100.0

    def close(self) -> None:
        self.tracker.close()

    # --- the group cycle (PodGroupPlugin) ---------------------------------------------------

    def pod_group(self, pod: Pod) -> PodGroupInfo | None:
        ref, gang = self.tracker.lookup(pod)
        if ref is None or gang is None:
            return None
        return PodGroupInfo(ref, gang.min_member, ref.key, NAME)

    def group_failed(self, key: GangRef) -> None:
        """The group's attempt placed fewer than minMember members: it sorts behind groups
        that have not failed, and backs off (podGroupBackoffSeconds)."""
        self.tracker.mark_failed(key)
        self.tracker.back_off(key)

    def group_placed(self, key: GangRef) -> None:
        self.tracker.clear_failure(key)

    # --- QueueSort --------------------------------------------------------------------------

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.tracker.sort_key(a) < self.tracker.sort_key(b)

    def sort_key(self, info: QueuedPodInfo) -> Any:
        return self.tracker.sort_key(info)

    # --- PreEnqueue -------------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        ref, gang = self.tracker.lookup(pod)
        if ref is None:
            return None
        why = self.tracker.hold_reason(pod, ref, gang)
        if why:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, why)
        return None

    # --- PreFilter --------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Checks again what PreEnqueue checked (the pod may have waited in activeQ while its
        group failed or lost pods), then minResources. Unresolvable: preemption for one
        member cannot make a group fit."""
        ref, gang = self.tracker.lookup(pod)
        if ref is None:
            return None, _SKIP
        why = self.tracker.hold_reason(pod, ref, gang)
        if why:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, why)
        assert gang is not None
        short = self.tracker.resource_shortfall(gang)
        if short:
            gap = "; ".join(str(s) for s in short)
            return None, Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"PodGroup {ref.key}: the cluster's free resources cannot hold its minResources "
                f"(resource gap: {gap})",
            )
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # --- PostFilter -------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """A member fits nowhere: unless the group already holds its quorum, or the gap to it
        is within podGroupRejectPercentage, give up on the group now (reject its waiting
        members, back it off) instead of letting them hold nodes until the Permit timeout."""
        ref, gang = self.tracker.lookup(pod)
        if ref is None:
            return None, Status(Code.UNSCHEDULABLE)
        if gang is None:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, "can not find pod group")
        placed = self.handle.gang_members(ref).placed
        if placed >= gang.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        if (gang.min_member - placed) / gang.min_member <= self.reject_threshold:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        self.tracker.reject_waiting(ref, "optimistic rejection in PostFilter", but=pod)
        if len(self.gangs.members(ref)) >= gang.min_member:
            self.tracker.back_off(ref)
        self.tracker.mark_failed(ref)
        return PostFilterResult(), Status(
            Code.UNSCHEDULABLE,
            f"PodGroup {ref.key} gets rejected due to Pod {pod.name} is unschedulable even "
            "after PostFilter",
        )

    # --- Reserve / Unreserve ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """A member lost its place (Reserve/Permit rejection, Permit timeout, failed binding):
        unless the rest of the group holds the quorum without it, the whole attempt is over:
        the waiting members are rejected (their own Unreserve follows) and the group backs
        off."""
        ref, gang = self.tracker.lookup(pod)
        if ref is None or gang is None:
            return
        rejected = self.tracker.reject_waiting(ref, "rejection in Unreserve", but=pod)
        # The cache still counts this pod and the members just rejected.
        others = self.handle.gang_members(ref).placed - 1 - rejected
        if others >= gang.min_member:
            return
        self.tracker.mark_failed(ref)
        self.tracker.back_off(ref)

    # --- Permit -----------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        ref, gang = self.tracker.lookup(pod)
        if ref is None:
            return None, 0.0
        if gang is None:
            return Status(Code.UNSCHEDULABLE, "PodGroup not found"), 0.0
        members = self.handle.gang_members(ref)  # this pod is assumed: it counts
        if members.placed >= gang.min_member:
            self.tracker.clear_failure(ref)
            self.tracker.allow_waiting(ref)
            return None, 0.0
        if len(members.assumed) == 1:
            # The first member to wait pulls its siblings out of backoff / the unschedulable
            # pool (scheduler-plugins' ActivateSiblings), once per attempt.
            self.handle.activate(self.tracker.pending_members(ref, but=pod))
        return (
            Status(
                Code.WAIT,
                f"PodGroup {ref.key}: {members.placed} of minMember {gang.min_member} placed",
            ),
            self.wait_seconds(gang),
        )

    def wait_seconds(self, gang: Gang) -> float:
        """scheduleTimeoutSeconds, else permitWaitingTimeSeconds, else 60 s
        (util.GetWaitTimeDuration; a 0 from either counts as unset)."""
        if gang.schedule_timeout:
            return gang.schedule_timeout
        if self.args.permit_waiting_time_seconds:
            return float(self.args.permit_waiting_time_seconds)
        return DEFAULT_WAIT_SECONDS

    # --- EnqueueExtensions ------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        members = ClusterEvent(
            EventResource.POD,
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        )
        groups = ClusterEvent(EventResource.POD_GROUP, ActionType.ADD | ActionType.UPDATE)
        return [
            ClusterEventWithHint(members, self.is_schedulable_after_member_change),
            ClusterEventWithHint(groups, self.is_schedulable_after_group_change),
        ]

    def is_schedulable_after_member_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Another pod of the same group appeared (or became schedulable): the group may now
        have its minMember pods. Only scheduler-plugins' groups: a member of a v1beta1 group is
        GangScheduling's."""
        if isinstance(new, Pod) and new.uid != pod.uid and self.tracker.is_sibling(pod, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_group_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pod's own group was created or changed (minMember, minResources, timeout)."""
        if self.tracker.is_own_group(pod, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
