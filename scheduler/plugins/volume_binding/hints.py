"""EventsToRegister and the QueueingHints of kube-scheduler v1.37's VolumeBinding."""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    EventResource,
    PersistentVolumeClaim,
    Pod,
    QueueingHint,
    StorageClass,
    pod_claims,
)
from scheduler.plugins.volume_binding.matching import volume_limit

_ADD_UPDATE = ActionType.ADD | ActionType.UPDATE


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        # A missing or misconfigured class (allowedTopologies, binding mode).
        ClusterEventWithHint(
            ClusterEvent(EventResource.STORAGE_CLASS, _ADD_UPDATE), after_storage_class_change
        ),
        # Claims are bound to volumes: any change of either may help.
        ClusterEventWithHint(
            ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, _ADD_UPDATE), after_claim_change
        ),
        ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, _ADD_UPDATE)),
        # Node labels against allowed topologies and volume node affinity.
        ClusterEventWithHint(
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.CSI_NODE, _ADD_UPDATE), after_csi_node_change
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE), after_csi_driver_change
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, _ADD_UPDATE),
            after_storage_capacity_change,
        ),
    ]


def after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterCSINodeChange: a new CSINode, or a change of its migrated plugins."""
    if not isinstance(old, CSINode) or not isinstance(new, CSINode):
        return QueueingHint.QUEUE
    if old.migrated_plugins != new.migrated_plugins:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_claim_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterPersistentVolumeClaimChange: a claim the pod uses."""
    if not isinstance(new, PersistentVolumeClaim):
        return QueueingHint.QUEUE
    if new.namespace != pod.namespace:
        return QueueingHint.QUEUE_SKIP
    if any(pc.name == new.name for pc in pod_claims(pod)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterStorageClassChange: a new class, or new allowedTopologies (the
    binding mode cannot change)."""
    if not isinstance(old, StorageClass) or not isinstance(new, StorageClass):
        return QueueingHint.QUEUE
    if old.allowed_topologies != new.allowed_topologies:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_storage_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterCSIStorageCapacityChange: a new capacity, or a larger volume limit."""
    if not isinstance(old, CSIStorageCapacity) or not isinstance(new, CSIStorageCapacity):
        return QueueingHint.QUEUE
    old_limit, new_limit = volume_limit(old), volume_limit(new)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_csi_driver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterCSIDriverChange: storage capacity tracking turned off for a driver an
    inline CSI volume of the pod uses (as upstream checks)."""
    if not isinstance(old, CSIDriver) or not isinstance(new, CSIDriver):
        return QueueingHint.QUEUE
    for volume in pod.volumes:
        if volume.source != "csi" or volume.spec.get("driver") != new.name:
            continue
        if old.storage_capacity and not new.storage_capacity:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
