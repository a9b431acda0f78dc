"""GangScheduling: kube-scheduler v1.37's plugin for Kubernetes' scheduling.k8s.io/v1beta1
PodGroups (gate GenericWorkload), whose members name their group in
`spec.schedulingGroup.podGroupName`.

As upstream: PreEnqueue holds a member until its PodGroup exists and, for a `gang` policy,
until the group has minCount pods; Permit lets placed members wait (5 minutes) until the
group's bound + assumed members reach minCount, then lets them all go; the queueing hints are
upstream's. A `basic` policy only needs the group to exist. As a PodGroupPlugin it hands a gang's
members to the group cycle (docs/gang.md), which reaches Permit only with the quorum there;
members of a `basic` group are scheduled one by one. No group backoff: as in kube-scheduler, a
failed group's members take their ordinary pod backoff. The group logic is in helper.gang.
"""

from __future__ import annotations

from typing import Any

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
    Pod,
    PodGroupInfo,
    QueueingHint,
    Status,
)
from scheduler.plugins.helper.gang import GangTracker

NAME = "GangScheduling"

#: How long placed members wait at Permit for the rest (upstream's permitTimeoutDuration).
PERMIT_WAIT_SECONDS = 300.0

#: kube-scheduler's PreEnqueue messages.
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
#: kube-scheduler's Permit message while the quorum is not there.
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"


def waiting_for_group(name: str) -> str:
    """PreEnqueue's message while the member's PodGroup does not exist (upstream's text,
    its typo included)."""
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


class GangScheduling:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.gangs = handle.gangs()  # here: the process watches PodGroups from now on
        self.tracker = GangTracker(handle, NAME, 0.0, GangSource.KUBERNETES)

    def close(self) -> None:
        self.tracker.close()

    # --- the group cycle (PodGroupPlugin) ---------------------------------------------------

    def pod_group(self, pod: Pod) -> PodGroupInfo | None:
        """Only a gang's members go to the group cycle; a basic group's are scheduled alone."""
        ref, gang = self.tracker.lookup(pod)
        if ref is None or gang is None or not gang.is_gang:
            return None
        return PodGroupInfo(ref, gang.min_member, ref.key, NAME)

    def group_failed(self, key: GangRef) -> None:
        """Nothing to keep: kube-scheduler backs a failed group's members off as pods (the
        group cycle has already requeued them), and the queue order is PrioritySort's."""

    def group_placed(self, key: GangRef) -> None:
        """Nothing to clear (see group_failed)."""

    # --- PreEnqueue -------------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        ref, gang = self.tracker.lookup(pod)
        if ref is None:
            return None
        if self.gangs.unavailable(ref.source):
            # Not one of upstream's cases (its informer always exists): say why plainly.
            why = self.tracker.hold_reason(pod, ref, gang)
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, why)
        if gang is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, waiting_for_group(ref.name))
        if not gang.is_gang:
            return None
        if self._all_pods(pod, ref) < gang.min_member:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_MIN_COUNT)
        return None

    def _all_pods(self, pod: Pod, ref: GangRef) -> int:
        """The group's non-terminal pods, pending (gated or not) and bound, this one included
        (upstream's AllPodsCount)."""
        members = self.gangs.members(ref)
        return len(members) + (0 if any(p.uid == pod.uid for p in members) else 1)

    # --- Permit -----------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        ref, gang = self.tracker.lookup(pod)
        if ref is None:
            return None, 0.0
        if gang is None:
            return Status(
                Code.ERROR,
                f"failed to get podGroup {ref.key}: podgroups.scheduling.k8s.io "
                f'"{ref.name}" not found',
            ), 0.0
        if not gang.is_gang:
            return None, 0.0
        if self.handle.gang_members(ref).placed < gang.min_member:  # this pod is assumed
            self.handle.activate(self.tracker.pending_members(ref, but=pod))
            return Status(Code.WAIT, WAITING_AT_PERMIT), PERMIT_WAIT_SECONDS
        self.tracker.allow_waiting(ref)
        return None, 0.0

    # --- EnqueueExtensions ------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's: a pod of the group added (pending or already bound: either may complete
        minCount; the group is immutable on a pod, so no pod Update), the group added, and the
        group updated with a lower gang minCount."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD),
                self.is_schedulable_after_pod_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD),
                self.is_schedulable_after_pod_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.KUBE_POD_GROUP, ActionType.ADD),
                self.is_schedulable_after_group_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.KUBE_POD_GROUP, ActionType.UPDATE),
                self.is_schedulable_after_group_updated,
            ),
        ]

    def is_schedulable_after_pod_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A pod of the same group appeared: the group may now have minCount pods."""
        if self.tracker.is_sibling(pod, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_group_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pod's own group was created."""
        if self.tracker.is_own_group(pod, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_group_updated(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only a lower gang minCount can let held members go; a policy change, a status
        write (this scheduler's own condition) or a higher minCount cannot."""
        ref = self.tracker.ref(pod)
        if ref is None or not isinstance(old, Gang) or not isinstance(new, Gang):
            return QueueingHint.QUEUE_SKIP
        if new.ref != ref or not (old.is_gang and new.is_gang):
            return QueueingHint.QUEUE_SKIP
        if new.min_member >= old.min_member:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
