"""VolumeZone: the zone and region labels of the PersistentVolumes bound to a pod's claims must
match the node's (kube-scheduler v1.37 plugins/volumezone).

Only `persistentVolumeClaim` volumes count (not generic ephemeral ones, as upstream), and only
bound claims: an unbound claim of a WaitForFirstConsumer class is left to VolumeBinding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    StorageClass,
    signers,
)
from scheduler.plugins.helper.storage import (
    claim_not_found,
    storage_class_not_found,
    volume_not_found,
)

NAME = "VolumeZone"
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
_STATE_KEY = "PreFilter" + NAME

_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
_ZONE = "topology.kubernetes.io/zone"
_REGION = "topology.kubernetes.io/region"
#: In upstream's order: a PV's topologies are compared in it, and listed in it.
TOPOLOGY_LABELS = (_BETA_ZONE, _BETA_REGION, _ZONE, _REGION)
_TO_GA = {_BETA_ZONE: _ZONE, _BETA_REGION: _REGION}
_SKIP = Status(Code.SKIP)


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def _zones(value: str) -> frozenset[str] | None:
    """volumehelpers.LabelZonesToSet: `__`-separated zones; None when one of them is blank."""
    zones = [z.strip() for z in value.split("__")]
    return None if any(not z for z in zones) else frozenset(zones)


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """The PV's zone/region labels (a label whose value does not parse is ignored)."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is None:
            continue
        zones = _zones(value)
        if zones is not None:
            out.append(PVTopology(pv.name, key, zones))
    return out


def _claim_names(pod: Pod) -> list[str]:
    return [v.claim_name for v in pod.volumes if v.source == "persistentVolumeClaim"]


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)


class VolumeZone:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._storage = handle.storage()

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility depends on the volume sources (configMap and secret ones aside)."""
        return [SignFragment(signers.VOLUMES, signers.volumes(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # volumeBindingMode is immutable: only a new WaitForFirstConsumer class can help.
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self.is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE
                ),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_volume_change,
            ),
        ]

    @staticmethod
    def is_schedulable_after_claim_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.namespace == pod.namespace and new.name in _claim_names(pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_storage_class_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, StorageClass):
            return QueueingHint.QUEUE
        if new.binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_volume_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A new PV, or one whose topology labels changed (nodeAffinity is immutable)."""
        if not isinstance(new, PersistentVolume) or not isinstance(old, PersistentVolume):
            return QueueingHint.QUEUE
        if pv_topologies(old) != pv_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _pod_topologies(self, pod: Pod) -> list[PVTopology] | Status:
        """getPVbyPod: the topologies of the PVs bound to the pod's claims, or the status that
        rejects the pod (a missing claim, class or PV; an unbound claim that will not wait)."""
        out: list[PVTopology] = []
        for claim_name in _claim_names(pod):
            if not claim_name:
                return _unresolvable("PersistentVolumeClaim had no name")
            claim = self._storage.claim(pod.namespace, claim_name)
            if claim is None:
                return _unresolvable(claim_not_found(claim_name))
            if not claim.volume_name:
                if not claim.storage_class:
                    return _unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                sc = self._storage.storage_class(claim.storage_class)
                if sc is None:
                    return _unresolvable(storage_class_not_found(claim.storage_class))
                if sc.binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER:
                    continue
                return _unresolvable("PersistentVolume had no name")
            pv = self._storage.volume(claim.volume_name)
            if pv is None:
                return _unresolvable(volume_not_found(claim.volume_name))
            out.extend(pv_topologies(pv))
        return out

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:
            return None, _SKIP
        topologies = self._pod_topologies(pod)
        if isinstance(topologies, Status):
            return None, topologies
        if not topologies:
            return None, _SKIP
        state.write(_STATE_KEY, topologies)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes or node_info.node is None:
            return None
        topologies = state.get(_STATE_KEY)
        if topologies is None:
            # PreFilter did not run (or skipped): compute them here, as upstream falls back to.
            topologies = self._pod_topologies(pod)
        if isinstance(topologies, Status):
            return topologies
        labels: Mapping[str, str] = node_info.node.labels
        # A node without any zone label (a single-zone cluster) accepts every volume.
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                # A PV's beta label may match the node's GA label.
                value = labels.get(_TO_GA.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return None
