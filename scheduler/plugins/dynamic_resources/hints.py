"""The cluster events DynamicResources registers and its QueueingHints
(isSchedulableAfterClaimChange, isSchedulableAfterTargetPodUpdate), as kube-scheduler v1.37."""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    DRAManager,
    EventResource,
    Pod,
    QueueingHint,
    ResourceClaim,
)
from scheduler.plugins.dynamic_resources.claims import ClaimError, pod_claims


def _status(claim: ResourceClaim) -> tuple[Any, ...]:
    return (claim.allocation, claim.reserved_for, claim.devices)


def claim_changed(dra: DRAManager, pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A claim add, update or delete: Queue when an allocation was removed (devices freed),
    when the pod's own claim appeared or its status changed; Skip otherwise, and while the
    pod still misses a claim."""
    if new is None:
        # Deleted: only an allocated claim frees devices.
        allocated = isinstance(old, ResourceClaim) and old.allocation is not None
        return QueueingHint.QUEUE if allocated else QueueingHint.QUEUE_SKIP
    if not isinstance(new, ResourceClaim):
        return QueueingHint.QUEUE
    try:
        uses_claim = any(c.uid == new.uid for c in pod_claims(pod, dra.claims))
    except ClaimError:
        return QueueingHint.QUEUE_SKIP
    if isinstance(old, ResourceClaim) and old.allocation is not None and new.allocation is None:
        return QueueingHint.QUEUE
    if not uses_claim:
        return QueueingHint.QUEUE_SKIP
    if not isinstance(old, ResourceClaim):
        return QueueingHint.QUEUE
    if _status(old) == _status(new):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def target_pod_updated(dra: DRAManager, pod: Pod, old: Any, new: Any) -> QueueingHint:
    """The pod itself was updated with a generated claim's name: Queue once every claim it
    names exists."""
    if not isinstance(new, Pod):
        return QueueingHint.QUEUE
    try:
        pod_claims(new, dra.claims)
    except ClaimError:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def events(dra: DRAManager) -> list[ClusterEventWithHint]:
    return [
        # A claim's allocation may depend on node labels (topology).
        ClusterEventWithHint(
            ClusterEvent(
                EventResource.NODE,
                ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
            )
        ),
        ClusterEventWithHint(
            ClusterEvent(
                EventResource.RESOURCE_CLAIM,
                ActionType.ADD | ActionType.UPDATE | ActionType.DELETE,
            ),
            lambda pod, old, new: claim_changed(dra, pod, old, new),
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
            lambda pod, old, new: target_pod_updated(dra, pod, old, new),
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)
        ),
    ]
