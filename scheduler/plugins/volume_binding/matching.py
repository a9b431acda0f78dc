"""The matching rules of k8s.io/component-helpers/storage/volume (pv_helpers.go, helpers.go)
and of the binder's provisioning checks: which static PersistentVolume a claim may bind, the
claimRef the scheduler writes, StorageClass topologies and CSIStorageCapacity limits."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.framework import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    VOLUME_AVAILABLE,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    parse_claim,
    parse_volume,
)


def check_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """volume.CheckNodeAffinity: the node is matched by its labels only (an unnamed node, so a
    metadata.name field term never matches), as upstream builds it."""
    return pv.node_affinity is None or pv.node_affinity.matches("", node_labels)


def is_volume_bound_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """volume.IsVolumeBoundToClaim: the claimRef names the claim (and its uid, when set)."""
    ref = pv.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.uid


def access_modes_fit(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """volume.CheckAccessModes: every mode the claim asks for is one the volume offers."""
    return set(claim.access_modes) <= set(pv.access_modes)


def find_matching_volume(
    claim: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    node_labels: Mapping[str, str],
    excluded: Mapping[str, PersistentVolume],
) -> PersistentVolume | None:
    """volume.FindMatchingVolume for delayed binding on a node (VolumeAttributesClass on, as
    in v1.37): a volume pre-bound to the claim wins (None when it does not fit the node),
    else the smallest available volume of the claim's class that fits it."""
    smallest: PersistentVolume | None = None
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not is_volume_bound_to_claim(pv, claim):
            continue
        if pv.capacity < claim.request:
            continue
        if pv.volume_mode != claim.volume_mode:
            continue
        if pv.volume_attributes_class != claim.volume_attributes_class:
            continue
        if pv.deleting:
            continue
        affinity_ok = check_node_affinity(pv, node_labels)
        if is_volume_bound_to_claim(pv, claim):
            return pv if affinity_ok else None
        if pv.phase != VOLUME_AVAILABLE:
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class != claim.storage_class:
            continue
        if not affinity_ok or not access_modes_fit(claim, pv):
            continue
        if smallest is None or pv.capacity < smallest.capacity:
            smallest = pv
    return smallest


def claim_reference(claim: PersistentVolumeClaim) -> dict[str, Any]:
    """reference.GetReference of a claim: the claimRef a bound PersistentVolume carries."""
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": claim.namespace,
        "name": claim.name,
        "uid": claim.uid,
        "apiVersion": "v1",
        "resourceVersion": claim.resource_version,
    }


def bind_volume_to_claim(
    pv: PersistentVolume, claim: PersistentVolumeClaim
) -> tuple[PersistentVolume, bool]:
    """volume.GetBindVolumeToClaim: the volume with its claimRef set to the claim (and the
    bound-by-controller annotation when the scheduler, not the user, chose the pairing), and
    whether anything changed."""
    raw = dict(pv.raw)
    meta = dict(raw.get("metadata") or {})
    spec = dict(raw.get("spec") or {})
    dirty = False
    ref = pv.claim_ref
    if ref is None or (ref.name, ref.namespace, ref.uid) != (
        claim.name,
        claim.namespace,
        claim.uid,
    ):
        spec["claimRef"] = claim_reference(claim)
        dirty = True
    annotations = dict(meta.get("annotations") or {})
    if not is_volume_bound_to_claim(pv, claim) and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        meta["annotations"] = annotations
        dirty = True
    if not dirty:
        return pv, False
    raw["metadata"] = meta
    raw["spec"] = spec
    return parse_volume(raw), True


def with_selected_node(claim: PersistentVolumeClaim, node_name: str) -> PersistentVolumeClaim:
    """The claim with the selected-node annotation that asks its provisioner for a volume."""
    raw = dict(claim.raw)
    meta = dict(raw.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node_name}
    raw["metadata"] = meta
    return parse_claim(raw)


def matches_allowed_topologies(sc: StorageClass, node_labels: Mapping[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms match every node; an empty term, or a
    requirement without values, matches none."""
    if not sc.allowed_topologies:
        return True
    for term in sc.allowed_topologies:
        if not term or any(not req.values for req in term):
            continue
        if all(req.key in node_labels and node_labels[req.key] in req.values for req in term):
            return True
    return False


def volume_limit(capacity: CSIStorageCapacity) -> int | None:
    """The largest volume a CSIStorageCapacity allows: maximumVolumeSize, else capacity."""
    if capacity.maximum_volume_size is not None:
        return capacity.maximum_volume_size
    return capacity.capacity


def node_has_access(capacity: CSIStorageCapacity, node_labels: Mapping[str, str]) -> bool:
    """A capacity without nodeTopology is available on no node."""
    return capacity.node_topology is not None and capacity.node_topology.matches(node_labels)
