"""VolumeRestrictions: a pod must not mount an in-tree disk a pod on the node already mounts
(unless both mount it read-only, where the disk allows that), and must not use a
ReadWriteOncePod claim another scheduled pod uses (kube-scheduler v1.37
plugins/volumerestrictions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    READ_WRITE_ONCE_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    PersistentVolumeClaim,
    Pod,
    PodVolume,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)
from scheduler.plugins.helper.cycle_state import read_state
from scheduler.plugins.helper.storage import claim_not_found

NAME = "VolumeRestrictions"
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
    "in-use by another pod"
)
_STATE_KEY = "PreFilter" + NAME
_STATE_ERROR = f'cannot read "{_STATE_KEY}" from cycleState'
_SKIP = Status(Code.SKIP)

#: The in-tree disks whose sharing between pods on one node is restricted.
_DISKS = frozenset({"gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi"})
_CLAIM = "persistentVolumeClaim"


def _read_only(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("readOnly"))


def _conflicts(volume: PodVolume, existing: PodVolume) -> bool:
    """isVolumeConflict for one pair of volumes of the same in-tree kind."""
    a, b = volume.spec, existing.spec
    both_read_only = _read_only(a) and _read_only(b)
    if volume.source == "gcePersistentDisk":
        return a.get("pdName") == b.get("pdName") and not both_read_only
    if volume.source == "awsElasticBlockStore":
        return a.get("volumeID") == b.get("volumeID")
    if volume.source == "iscsi":
        return a.get("iqn") == b.get("iqn") and not both_read_only
    # rbd: an image is the same when it shares a monitor, the pool and the image name.
    return (
        bool(set(a.get("monitors") or ()) & set(b.get("monitors") or ()))
        and a.get("pool", "rbd") == b.get("pool", "rbd")
        and a.get("image") == b.get("image")
        and not both_read_only
    )


def _disk_volumes(pod: Pod) -> list[PodVolume]:
    return [v for v in pod.volumes if v.source in _DISKS]


def satisfies_volume_conflicts(pod: Pod, pods: Iterable[Pod]) -> bool:
    """Whether none of the pod's in-tree disks conflicts with a disk of `pods`."""
    disks = _disk_volumes(pod)
    if not disks:
        return True
    for existing in pods:
        for other in existing.volumes:
            if other.source not in _DISKS:
                continue
            for volume in disks:
                if volume.source == other.source and _conflicts(volume, other):
                    return False
    return True


@dataclass(slots=True)
class _State:
    """The pod's ReadWriteOncePod claim names and how many references scheduled pods hold to
    them; AddPod/RemovePod move the count so preemption can free a claim."""

    rwop_claims: frozenset[str]
    conflicting_refs: int

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicting_refs)

    def refs_of(self, pod: Pod) -> int:
        # As upstream (conflictingPVCRefCountForPod), by claim name in any namespace.
        return sum(
            1 for v in pod.volumes if v.source == _CLAIM and v.claim_name in self.rwop_claims
        )


class VolumeRestrictions:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        self._storage = handle.storage()

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility depends on the volume sources (configMap and secret ones aside)."""
        return [SignFragment(signers.VOLUMES, signers.volumes(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Volumes are immutable: only deleting the pod that holds a volume frees it.
            ClusterEventWithHint(EVENT_ASSIGNED_POD_DELETE, self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(EVENT_NODE_ADD),
            # The claim must exist for its access modes to be read.
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_claim_added,
            ),
        ]

    @staticmethod
    def is_schedulable_after_claim_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if any(v.source == _CLAIM and v.claim_name == new.name for v in pod.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The deleted pod held a disk or (without reading its access modes, as upstream) a
        claim the pod needs."""
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE
        if old.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfies_volume_conflicts(pod, (old,)):
            return QueueingHint.QUEUE
        claims = {v.claim_name for v in pod.volumes if v.source == _CLAIM}
        if any(v.source == _CLAIM and v.claim_name in claims for v in old.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _rwop_claims(self, pod: Pod) -> frozenset[str] | Status:
        names = set()
        for volume in pod.volumes:
            if volume.source != _CLAIM:
                continue
            claim = self._storage.claim(pod.namespace, volume.claim_name)
            if claim is None:
                return Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, claim_not_found(volume.claim_name)
                )
            if READ_WRITE_ONCE_POD in claim.access_modes:
                names.add(claim.name)
        return frozenset(names)

    def _used_refs(self, namespace: str, claims: frozenset[str]) -> int:
        """How many of `claims` scheduled pods use (the snapshot's IsPVCUsedByPods): a scan of
        the snapshot's pods, paid only by pods with ReadWriteOncePod claims."""
        used: set[str] = set()
        for info in self._handle.snapshot().list():
            for existing in info.pods:
                if existing.namespace != namespace:
                    continue
                for v in existing.volumes:
                    if v.source == _CLAIM and v.claim_name in claims:
                        used.add(v.claim_name)
            if len(used) == len(claims):
                break
        return len(used)

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, _SKIP
        needs_check = any(v.source in _DISKS for v in pod.volumes)
        claims = self._rwop_claims(pod)
        if isinstance(claims, Status):
            return None, claims
        refs = self._used_refs(pod.namespace, claims) if claims else 0
        if not needs_check and refs == 0:
            return None, _SKIP
        state.write(_STATE_KEY, _State(claims, refs))
        return None, None

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def _state(self, state: CycleState) -> _State | Status:
        return read_state(state, _STATE_KEY, _State, _STATE_ERROR)

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        data = self._state(state)
        if isinstance(data, Status):
            return data
        data.conflicting_refs += data.refs_of(pod_to_add)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        data = self._state(state)
        if isinstance(data, Status):
            return data
        data.conflicting_refs -= data.refs_of(pod_to_remove)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not satisfies_volume_conflicts(pod, node_info.pods):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        data = self._state(state)
        if isinstance(data, Status):
            return data
        if data.conflicting_refs > 0:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)
        return None
