"""Storage objects as the volume plugins read them: PersistentVolumeClaims, PersistentVolumes,
StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities and VolumeAttachments, each reduced
to the fields kube-scheduler's VolumeBinding, VolumeZone, VolumeRestrictions and
NodeVolumeLimits plugins use, parsed once when the informer receives them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.labels import LabelSelector, NodeSelector, SelectorError
from scheduler.api.objects import Pod, PodVolume
from scheduler.api.quantity import QuantityError, value

#: PersistentVolumeClaim / PersistentVolume phases.
CLAIM_BOUND = "Bound"
CLAIM_PENDING = "Pending"
CLAIM_LOST = "Lost"
VOLUME_AVAILABLE = "Available"
VOLUME_BOUND = "Bound"
VOLUME_RELEASED = "Released"
VOLUME_FAILED = "Failed"

#: StorageClass volumeBindingMode.
BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

#: Access modes.
READ_WRITE_ONCE = "ReadWriteOnce"
READ_ONLY_MANY = "ReadOnlyMany"
READ_WRITE_MANY = "ReadWriteMany"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

VOLUME_MODE_FILESYSTEM = "Filesystem"

#: Annotations the scheduler and the PV controller exchange (k8s.io/component-helpers).
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"

#: StorageClass provisioner of statically provisioned volumes only.
NO_PROVISIONER = "kubernetes.io/no-provisioner"


class StorageParseError(ValueError):
    """An object the volume plugins cannot reason about (a bad quantity or selector)."""


def _bytes(raw: Any, what: str) -> int | None:
    if raw is None:
        return None
    try:
        return value(raw)
    except QuantityError as err:
        raise StorageParseError(f"{what}: {err}") from err


def _selector(raw: Any, what: str) -> LabelSelector | None:
    try:
        return LabelSelector.parse(raw)
    except SelectorError as err:
        raise StorageParseError(f"{what}: {err}") from err


def _storage_class(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    """storagehelpers.GetPersistentVolume(Claim)Class: the beta annotation wins over the field."""
    annotations = meta.get("annotations") or {}
    if ANN_BETA_STORAGE_CLASS in annotations:
        return str(annotations[ANN_BETA_STORAGE_CLASS])
    return str(spec.get("storageClassName") or "")


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A claimRef or owner: enough to tell which object it names."""

    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class PersistentVolumeClaim:
    namespace: str
    name: str
    uid: str
    resource_version: str
    annotations: Mapping[str, str]
    deleting: bool
    storage_class: str
    """The class name ("" when none), after the beta annotation."""
    class_set: bool
    """Whether spec.storageClassName (or the beta annotation) is set at all."""
    volume_name: str
    access_modes: tuple[str, ...]
    request: int
    """spec.resources.requests.storage in bytes (0 when unset)."""
    selector: LabelSelector | None
    volume_mode: str
    volume_attributes_class: str
    """spec.volumeAttributesClassName ("" when unset)."""
    phase: str
    controller_uid: str
    """The uid of the controlling owner (a generic ephemeral volume's pod)."""
    raw: Mapping[str, Any] = field(repr=False)
    """The API object, for the updates VolumeBinding sends."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_claim(obj: Mapping[str, Any]) -> PersistentVolumeClaim:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    controller = next(
        (ref for ref in meta.get("ownerReferences") or () if ref.get("controller")), None
    )
    requests = (spec.get("resources") or {}).get("requests") or {}
    return PersistentVolumeClaim(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        annotations=dict(annotations),
        deleting=meta.get("deletionTimestamp") is not None,
        storage_class=_storage_class(meta, spec),
        class_set=ANN_BETA_STORAGE_CLASS in annotations or spec.get("storageClassName") is not None,
        volume_name=spec.get("volumeName") or "",
        access_modes=tuple(spec.get("accessModes") or ()),
        request=_bytes(requests.get("storage"), "spec.resources.requests.storage") or 0,
        selector=_selector(spec.get("selector"), "spec.selector"),
        volume_mode=spec.get("volumeMode") or VOLUME_MODE_FILESYSTEM,
        volume_attributes_class=spec.get("volumeAttributesClassName") or "",
        phase=(obj.get("status") or {}).get("phase") or CLAIM_PENDING,
        controller_uid=(controller or {}).get("uid", ""),
        raw=obj,
    )


@dataclass(frozen=True, slots=True, eq=False)
class PersistentVolume:
    name: str
    uid: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    deleting: bool
    capacity: int
    """spec.capacity.storage in bytes."""
    access_modes: tuple[str, ...]
    storage_class: str
    claim_ref: ObjectRef | None
    node_affinity: NodeSelector | None
    """spec.nodeAffinity.required (None when unset)."""
    volume_mode: str
    volume_attributes_class: str
    phase: str
    source: str
    """The PersistentVolumeSource key: `csi`, `local`, `hostPath`, `gcePersistentDisk`, ..."""
    source_spec: Mapping[str, Any]
    """That source's fields (the CSI driver and volumeHandle, an in-tree disk's id)."""
    raw: Mapping[str, Any] = field(repr=False)


_PV_SPEC_FIELDS = frozenset(
    {
        "capacity",
        "accessModes",
        "claimRef",
        "persistentVolumeReclaimPolicy",
        "storageClassName",
        "mountOptions",
        "volumeMode",
        "nodeAffinity",
        "volumeAttributesClassName",
    }
)


def parse_volume(obj: Mapping[str, Any]) -> PersistentVolume:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    ref = spec.get("claimRef")
    required = (spec.get("nodeAffinity") or {}).get("required")
    try:
        node_affinity = NodeSelector.parse(required) if required is not None else None
    except SelectorError as err:
        raise StorageParseError(f"spec.nodeAffinity.required: {err}") from err
    source = next((key for key in spec if key not in _PV_SPEC_FIELDS), "")
    return PersistentVolume(
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        deleting=meta.get("deletionTimestamp") is not None,
        capacity=_bytes((spec.get("capacity") or {}).get("storage"), "spec.capacity.storage") or 0,
        access_modes=tuple(spec.get("accessModes") or ()),
        storage_class=_storage_class(meta, spec),
        claim_ref=(
            ObjectRef(ref.get("namespace", ""), ref.get("name", ""), ref.get("uid", ""))
            if ref
            else None
        ),
        node_affinity=node_affinity,
        volume_mode=spec.get("volumeMode") or VOLUME_MODE_FILESYSTEM,
        volume_attributes_class=spec.get("volumeAttributesClassName") or "",
        phase=(obj.get("status") or {}).get("phase") or "",
        source=source,
        source_spec=dict(spec.get(source) or {}) if source else {},
        raw=obj,
    )


@dataclass(frozen=True, slots=True)
class TopologyRequirement:
    """One matchLabelExpressions entry of a StorageClass's allowedTopologies term."""

    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str
    binding_mode: str
    allowed_topologies: tuple[tuple[TopologyRequirement, ...], ...] = ()
    """ORed terms of ANDed requirements; empty: every node."""


def parse_storage_class(obj: Mapping[str, Any]) -> StorageClass:
    meta = obj.get("metadata") or {}
    terms = tuple(
        tuple(
            TopologyRequirement(expr.get("key", ""), frozenset(expr.get("values") or ()))
            for expr in term.get("matchLabelExpressions") or ()
        )
        for term in obj.get("allowedTopologies") or ()
    )
    return StorageClass(
        name=meta.get("name", ""),
        provisioner=obj.get("provisioner", ""),
        binding_mode=obj.get("volumeBindingMode") or BINDING_IMMEDIATE,
        allowed_topologies=terms,
    )


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str
    topology_keys: tuple[str, ...]
    allocatable_count: int | None
    """spec.drivers[].allocatable.count: the attach limit, None when unset."""


@dataclass(frozen=True, slots=True)
class CSINode:
    name: str
    drivers: tuple[CSINodeDriver, ...]
    migrated_plugins: frozenset[str]
    """In-tree plugin names (annotation) whose volumes this node attaches through CSI."""

    def driver(self, name: str) -> CSINodeDriver | None:
        return next((d for d in self.drivers if d.name == name), None)


def parse_csi_node(obj: Mapping[str, Any]) -> CSINode:
    meta = obj.get("metadata") or {}
    drivers = []
    for raw in (obj.get("spec") or {}).get("drivers") or ():
        count = (raw.get("allocatable") or {}).get("count")
        drivers.append(
            CSINodeDriver(
                name=raw.get("name", ""),
                node_id=raw.get("nodeID", ""),
                topology_keys=tuple(raw.get("topologyKeys") or ()),
                allocatable_count=int(count) if count is not None else None,
            )
        )
    migrated = (meta.get("annotations") or {}).get(ANN_MIGRATED_PLUGINS, "")
    return CSINode(
        name=meta.get("name", ""),
        drivers=tuple(drivers),
        migrated_plugins=frozenset(p.strip() for p in migrated.split(",") if p.strip()),
    )


@dataclass(frozen=True, slots=True)
class CSIDriver:
    name: str
    attach_required: bool
    storage_capacity: bool
    """spec.storageCapacity: the scheduler must check CSIStorageCapacity objects."""
    prevent_pod_scheduling_if_missing: bool = False
    """spec.preventPodSchedulingIfMissing: pods need a node whose CSINode lists the driver."""


def parse_csi_driver(obj: Mapping[str, Any]) -> CSIDriver:
    spec = obj.get("spec") or {}
    attach = spec.get("attachRequired")
    return CSIDriver(
        name=(obj.get("metadata") or {}).get("name", ""),
        attach_required=True if attach is None else bool(attach),
        storage_capacity=bool(spec.get("storageCapacity")),
        prevent_pod_scheduling_if_missing=bool(spec.get("preventPodSchedulingIfMissing")),
    )


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    namespace: str
    name: str
    storage_class: str
    node_topology: LabelSelector | None
    """None: the capacity is available on no node."""
    capacity: int | None
    maximum_volume_size: int | None


def parse_storage_capacity(obj: Mapping[str, Any]) -> CSIStorageCapacity:
    meta = obj.get("metadata") or {}
    return CSIStorageCapacity(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        storage_class=obj.get("storageClassName", ""),
        node_topology=_selector(obj.get("nodeTopology"), "nodeTopology"),
        capacity=_bytes(obj.get("capacity"), "capacity"),
        maximum_volume_size=_bytes(obj.get("maximumVolumeSize"), "maximumVolumeSize"),
    )


@dataclass(frozen=True, slots=True)
class VolumeAttachment:
    name: str
    attacher: str
    node_name: str
    volume_name: str
    """spec.source.persistentVolumeName ("" for an inline volume)."""


def parse_volume_attachment(obj: Mapping[str, Any]) -> VolumeAttachment:
    spec = obj.get("spec") or {}
    return VolumeAttachment(
        name=(obj.get("metadata") or {}).get("name", ""),
        attacher=spec.get("attacher", ""),
        node_name=spec.get("nodeName", ""),
        volume_name=(spec.get("source") or {}).get("persistentVolumeName") or "",
    )


# --- the claims a pod uses ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A claim a pod's volume names: a persistentVolumeClaim source, or the claim of a generic
    ephemeral volume (named `<pod>-<volume>`, owned by the pod)."""

    volume: PodVolume
    name: str
    ephemeral: bool


def volume_claim_name(pod: Pod, volume: PodVolume) -> str | None:
    """The claim `volume` uses (ephemeral.VolumeClaimName for a generic ephemeral volume), or
    None when it is not a claim."""
    if volume.source == "persistentVolumeClaim":
        return volume.claim_name
    if volume.source == "ephemeral":
        return f"{pod.name}-{volume.name}"
    return None


def pod_claims(pod: Pod) -> Iterator[PodClaim]:
    """The claims of `pod`'s volumes, in volume order."""
    for volume in pod.volumes:
        name = volume_claim_name(pod, volume)
        if name is not None:
            yield PodClaim(volume, name, volume.source == "ephemeral")


def has_claims(pod: Pod) -> bool:
    return any(v.source in ("persistentVolumeClaim", "ephemeral") for v in pod.volumes)


def ephemeral_claim_error(pod: Pod, claim: PersistentVolumeClaim) -> str:
    """ephemeral.VolumeIsForPod: "" when the claim was created for the pod, else the error."""
    if claim.controller_uid == pod.uid:
        return ""
    return (
        f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.key} (pod is not owner)"
    )
