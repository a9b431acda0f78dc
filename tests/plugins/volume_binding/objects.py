"""Storage objects for the VolumeBinding tests, built as the API server returns them."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.api.storage import (
    ANN_BIND_COMPLETED,
    CSIDriver,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    parse_claim,
    parse_csi_driver,
    parse_storage_capacity,
    parse_storage_class,
    parse_volume,
)
from scheduler.testing.builders import pod_json

WAIT = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
HOSTNAME = "kubernetes.io/hostname"


def pod(name: str = "p", *claims: str, ephemeral: tuple[str, ...] = (), uid: str = "") -> Pod:
    raw = pod_json(name, uid=uid or f"uid-{name}")
    volumes: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    volumes += [{"name": e, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}} for e in ephemeral]
    raw["spec"]["volumes"] = volumes
    return parse_pod(raw)


def claim(
    name: str,
    *,
    sc: str | None = "wait",
    size: str = "1Gi",
    volume: str = "",
    bound: bool = False,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    annotations: dict[str, str] | None = None,
    selector: dict[str, Any] | None = None,
    phase: str = "Pending",
    deleting: bool = False,
    owner_uid: str = "",
    rv: str = "1",
    namespace: str = "default",
) -> PersistentVolumeClaim:
    ann = dict(annotations or {})
    if bound:
        ann[ANN_BIND_COMPLETED] = "yes"
        phase = "Bound"
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "resourceVersion": rv,
        "annotations": ann,
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": owner_uid, "controller": True}
        ]
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
    }
    if sc is not None:
        spec["storageClassName"] = sc
    if volume:
        spec["volumeName"] = volume
    if selector is not None:
        spec["selector"] = selector
    return parse_claim(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta,
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def volume(
    name: str,
    *,
    sc: str = "wait",
    size: str = "1Gi",
    node: str | None = None,
    claim_ref: PersistentVolumeClaim | None = None,
    phase: str = "Available",
    labels: dict[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    rv: str = "1",
) -> PersistentVolume:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": sc,
        "local": {"path": "/mnt"},
    }
    if node is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                ]
            }
        }
    if claim_ref is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim_ref.namespace,
            "name": claim_ref.name,
            "uid": claim_ref.uid,
        }
        phase = "Bound" if claim_ref.volume_name == name else phase
    return parse_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "resourceVersion": rv, "labels": labels or {}},
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def storage_class(
    name: str = "wait",
    *,
    mode: str = WAIT,
    provisioner: str = "kubernetes.io/no-provisioner",
    topologies: list[dict[str, list[str]]] | None = None,
) -> StorageClass:
    raw: dict[str, Any] = {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if topologies is not None:
        raw["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": v} for k, v in t.items()]}
            for t in topologies
        ]
    return parse_storage_class(raw)


def csi_driver(name: str, *, capacity: bool = True) -> CSIDriver:
    return parse_csi_driver({"metadata": {"name": name}, "spec": {"storageCapacity": capacity}})


def capacity(
    sc: str, *, node: str | None, size: str | None, max_size: str | None = None
) -> CSIStorageCapacity:
    raw: dict[str, Any] = {
        "metadata": {"name": f"cap-{sc}-{node}", "namespace": "kube-system"},
        "storageClassName": sc,
    }
    if node is not None:
        raw["nodeTopology"] = {"matchLabels": {HOSTNAME: node}}
    if size is not None:
        raw["capacity"] = size
    if max_size is not None:
        raw["maximumVolumeSize"] = max_size
    return parse_storage_capacity(raw)
