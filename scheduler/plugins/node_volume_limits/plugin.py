"""NodeVolumeLimits: the unique CSI volumes attached to a node, per driver, must stay within the
`allocatable.count` its CSINode publishes for that driver (kube-scheduler v1.37
plugins/nodevolumelimits, the CSILimits plugin).

A node's volumes are those of its pods (claims bound to CSI PVs, unbound claims counted under
their class's provisioner, generic ephemeral claims, inline CSI-migrated in-tree volumes) plus
the CSI volumes its VolumeAttachments name. A node without a CSINode has no limit.
"""

from __future__ import annotations

import random
import string
from collections import Counter
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    EVENT_ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CSINode,
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
    VolumeAttachment,
    ephemeral_claim_error,
    signers,
    volume_claim_name,
)
from scheduler.plugins.helper.storage import (
    MIGRATION_ON,
    TranslationError,
    claim_not_found,
    plugin_by_name,
    plugin_for_source,
    translate_inline,
    translate_volume,
)

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_STATE_KEY = "PreFilter" + NAME
_SKIP = Status(Code.SKIP)
_CLAIM_SOURCES = ("persistentVolumeClaim", "ephemeral")


class _Attachments:
    """The VolumeAttachments by node, built on the first Filter that needs them and kept for
    the cycle (upstream keeps an informer index by spec.nodeName)."""

    __slots__ = ("by_node", "new_volumes")

    def __init__(self) -> None:
        self.by_node: dict[str, list[VolumeAttachment]] | None = None
        # The pod's own attachable volumes, by whether the node has a CSINode.
        self.new_volumes: dict[bool, dict[str, str] | Status] = {}

    def clone(self) -> _Attachments:
        return self  # read-only once built; a dry run may share it


@dataclass(frozen=True, slots=True)
class _NodeVolumes:
    """What the pods on one node attach: `driver/handle` -> driver, and the count per driver."""

    generation: int
    revision: int
    csi_node: CSINode | None
    attached: dict[str, str]
    counts: Counter[str]


class _NotFound(Exception):
    """A claim of the pod being scheduled is missing: unschedulable until it is created."""


class _Failed(Exception):
    """Anything else that stops the count: an Error status, as upstream's AsStatus."""


def _migration_on(csi_node: CSINode | None, plugin_name: str) -> bool:
    """isCSIMigrationOn: v1.37 only asks for a CSINode and a plugin that always migrates."""
    return csi_node is not None and plugin_name in MIGRATION_ON


def _inline_migratable(volume: PodVolume) -> bool:
    return plugin_for_source(volume.source) is not None


def _limits(csi_node: CSINode | None) -> dict[str, int]:
    if csi_node is None:
        return {}
    return {
        d.name: d.allocatable_count for d in csi_node.drivers if d.allocatable_count is not None
    }


def _may_attach(volume: PodVolume) -> bool:
    """A claim, or an inline in-tree volume that counts once migrated to CSI."""
    return volume.source in _CLAIM_SOURCES or _inline_migratable(volume)


class NodeVolumeLimits:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._storage = handle.storage()
        self._limit_scaling = handle.features.enabled("VolumeLimitScaling")
        # Handles of unbound claims: random so they never collide with a real volume handle.
        self._random_prefix = "".join(random.choices(string.ascii_lowercase + string.digits, k=32))
        self._node_cache: dict[str, _NodeVolumes] = {}
        self._limits_cache: dict[str, tuple[CSINode | None, dict[str, int]]] = {}

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility depends on the volume sources (configMap and secret ones aside)."""
        return [SignFragment(signers.VOLUMES, signers.volumes(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Any new CSINode may lift a limit: no hint.
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE),
                self.is_schedulable_after_csi_node_updated,
            ),
            ClusterEventWithHint(EVENT_ASSIGNED_POD_DELETE, self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_claim_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_attachment_deleted,
            ),
        ]

    @staticmethod
    def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE
        if not old.volumes or (not old.node_name and not old.nominated_node_name):
            return QueueingHint.QUEUE_SKIP
        for volume in old.volumes:
            if _may_attach(volume):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_claim_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if any(volume_claim_name(pod, v) == new.name for v in pod.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_attachment_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pod has a claim (its driver is not looked up), or an inline migratable volume
        whose CSI driver is the attachment's attacher."""
        if not isinstance(old, VolumeAttachment):
            return QueueingHint.QUEUE
        for volume in pod.volumes:
            if volume.source == "persistentVolumeClaim":
                return QueueingHint.QUEUE
            if not _inline_migratable(volume):
                continue
            try:
                driver, _ = translate_inline(volume)
            except TranslationError:
                return QueueingHint.QUEUE
            if driver == old.attacher:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_csi_node_updated(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Some driver's limit went up (an unset limit counts as 0, as upstream)."""
        if not isinstance(old, CSINode) or not isinstance(new, CSINode):
            return QueueingHint.QUEUE
        old_limits = {d.name: d.allocatable_count or 0 for d in old.drivers}
        for driver in new.drivers:
            if (driver.allocatable_count or 0) > old_limits.get(driver.name, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        for volume in pod.volumes:
            if _may_attach(volume):
                state.write(_STATE_KEY, _Attachments())
                if len(self._node_cache) > 2 * len(nodes) + 16:
                    # Entries of deleted nodes (autoscalers name nodes anew): start over.
                    self._node_cache.clear()
                    self._limits_cache.clear()
                return None, None
        return None, _SKIP

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if not pod.volumes or node is None:
            return None
        csi_node = self._storage.csi_node(node.name)
        index = self._index(state)
        new_volumes = self._pod_volumes(index, pod, csi_node)
        if isinstance(new_volumes, Status):
            return new_volumes
        if not new_volumes:
            return None
        if self._limit_scaling:
            for driver in new_volumes.values():
                if not self._driver_installed(driver, csi_node):
                    return Status(
                        Code.UNSCHEDULABLE, f"{driver} CSI driver is not installed on the node"
                    )
        limits = self._limits(node.name, csi_node)
        if not limits:
            return None
        on_node = self._node_volumes(node_info, csi_node)
        if isinstance(on_node, Status):
            return on_node
        attached = on_node.attached
        wanted: dict[str, int] = {}
        for unique_name, driver in new_volumes.items():
            if unique_name not in attached:  # a volume the node has is not counted twice
                wanted[driver] = wanted.get(driver, 0) + 1
        from_attachments = self._attachment_volumes(index, node.name)
        for driver, count in wanted.items():
            limit = limits.get(driver)
            if limit is None:
                continue
            used = on_node.counts.get(driver, 0)
            if from_attachments:
                used += sum(
                    1
                    for unique_name, d in from_attachments.items()
                    if d == driver and unique_name not in attached
                )
            if used + count > limit:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _pod_volumes(
        self, index: _Attachments, pod: Pod, csi_node: CSINode | None
    ) -> dict[str, str] | Status:
        """The new pod's attachable volumes, once per cycle: they depend on the node only
        through whether it has a CSINode (in-tree migration, v1.37)."""
        key = csi_node is not None
        found = index.new_volumes.get(key)
        if found is not None:
            return found
        volumes: dict[str, str] = {}
        result: dict[str, str] | Status = volumes
        try:
            self._attachable_volumes(pod, csi_node, True, volumes)
        except _NotFound as err:
            result = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        except _Failed as err:
            result = Status(Code.ERROR, str(err))
        index.new_volumes[key] = result
        return result

    def _limits(self, node_name: str, csi_node: CSINode | None) -> dict[str, int]:
        """The CSINode's attach limits by driver, rebuilt only when the CSINode changes."""
        cached = self._limits_cache.get(node_name)
        if cached is not None and cached[0] is csi_node:
            return cached[1]
        limits = _limits(csi_node)
        self._limits_cache[node_name] = (csi_node, limits)
        return limits

    def _node_volumes(self, node_info: NodeInfo, csi_node: CSINode | None) -> _NodeVolumes | Status:
        """The attachable volumes of the pods on the node, cached per node until its pods
        (generation), its CSINode or the storage objects (revision) change: every pod with a
        volume asks about every node, and the pods on a node rarely change between two of
        them. Read only."""
        name = node_info.node.name if node_info.node is not None else ""
        revision = self._storage.revision()
        cached = self._node_cache.get(name)
        if (
            cached is not None
            and cached.generation == node_info.generation
            and cached.revision == revision
            and cached.csi_node is csi_node
        ):
            return cached
        attached: dict[str, str] = {}
        try:
            for existing in node_info.pods:
                self._attachable_volumes(existing, csi_node, False, attached)
        except (_NotFound, _Failed) as err:
            return Status(Code.ERROR, str(err))
        entry = _NodeVolumes(
            node_info.generation, revision, csi_node, attached, Counter(attached.values())
        )
        self._node_cache[name] = entry
        return entry

    def _driver_installed(self, driver: str, csi_node: CSINode | None) -> bool:
        """checkCSIDriverOnNode: only a CSIDriver that opts in needs its node plugin."""
        csi_driver = self._storage.csi_driver(driver)
        if csi_driver is None or not csi_driver.prevent_pod_scheduling_if_missing:
            return True
        return csi_node is not None and csi_node.driver(driver) is not None

    def _attachable_volumes(
        self, pod: Pod, csi_node: CSINode | None, new_pod: bool, out: dict[str, str]
    ) -> None:
        """filterAttachableVolumes: adds `driver/handle` -> driver for each CSI volume of the pod.

        A missing claim of the new pod raises _NotFound; of a pod already on the node, it is
        not counted (it may not be that pod's any more)."""
        for volume in pod.volumes:
            claim_name = volume_claim_name(pod, volume)
            if claim_name is None:
                self._inline_volume(volume, csi_node, out)
                continue
            if not claim_name:
                raise _Failed("PersistentVolumeClaim had no name")
            claim = self._storage.claim(pod.namespace, claim_name)
            if claim is None:
                if new_pod:
                    missing = claim_not_found(claim_name)
                    raise _NotFound(f"looking up PVC {pod.namespace}/{claim_name}: {missing}")
                continue
            if volume.source == "ephemeral":
                error = ephemeral_claim_error(pod, claim)
                if error:
                    raise _Failed(error)
            driver, handle = self._claim_driver(csi_node, claim)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver

    def _inline_volume(
        self, volume: PodVolume, csi_node: CSINode | None, out: dict[str, str]
    ) -> None:
        """checkAttachableInlineVolume: an inline in-tree volume counts once migrated."""
        plugin = plugin_for_source(volume.source)
        if plugin is None or not _migration_on(csi_node, plugin.name):
            return
        try:
            driver, handle = translate_inline(volume)
        except TranslationError as err:
            raise _Failed(f"converting volume({volume.name}) from inline to csi: {err}") from err
        out[f"{driver}/{handle}"] = driver

    def _claim_driver(
        self, csi_node: CSINode | None, claim: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """getCSIDriverInfo: the CSI driver and volume handle of the claim's PV (translated when
        in-tree and migrated); from its class when unbound or the PV is gone."""
        pv = self._storage.volume(claim.volume_name) if claim.volume_name else None
        if pv is None:
            return self._class_driver(csi_node, claim)
        if pv.source == "csi":
            return str(pv.source_spec.get("driver", "")), str(
                pv.source_spec.get("volumeHandle", "")
            )
        plugin = plugin_for_source(pv.source)
        if plugin is None or not _migration_on(csi_node, plugin.name):
            return "", ""
        try:
            return translate_volume(pv)
        except TranslationError:
            return "", ""

    def _class_driver(
        self, csi_node: CSINode | None, claim: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: an unbound claim counts under its provisioner, with a handle
        of its own (a claim without a class, or with a missing one, must be bound: not
        counted)."""
        if not claim.storage_class:
            return "", ""
        sc = self._storage.storage_class(claim.storage_class)
        if sc is None:
            return "", ""
        handle = f"{self._random_prefix}-{claim.namespace}/{claim.name}"
        plugin = plugin_by_name(sc.provisioner)
        if plugin is not None:
            if not _migration_on(csi_node, plugin.name):
                return "", ""
            return plugin.driver, handle
        return sc.provisioner, handle

    @staticmethod
    def _index(state: CycleState) -> _Attachments:
        index = state.get(_STATE_KEY)
        if not isinstance(index, _Attachments):
            index = _Attachments()
            state.write(_STATE_KEY, index)
        return index

    def _attachments_of(self, index: _Attachments, node_name: str) -> list[VolumeAttachment]:
        if index.by_node is None:
            by_node: dict[str, list[VolumeAttachment]] = {}
            for va in self._storage.volume_attachments():
                by_node.setdefault(va.node_name, []).append(va)
            index.by_node = by_node
        return index.by_node.get(node_name, [])

    def _attachment_volumes(self, index: _Attachments, node_name: str) -> dict[str, str]:
        """getNodeVolumeAttachmentInfo: `attacher/handle` -> attacher of the CSI PVs the node's
        VolumeAttachments name."""
        out: dict[str, str] = {}
        for va in self._attachments_of(index, node_name):
            if not va.attacher or not va.volume_name:
                continue
            pv = self._storage.volume(va.volume_name)
            if pv is None or pv.source != "csi":
                continue
            out[f"{va.attacher}/{pv.source_spec.get('volumeHandle', '')}"] = va.attacher
        return out
