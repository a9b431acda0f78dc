"""API-shaped storage objects for the volume plugins' tests, parsed by the real parsers."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.api.storage import (
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    parse_claim,
    parse_csi_driver,
    parse_csi_node,
    parse_storage_class,
    parse_volume,
    parse_volume_attachment,
)
from scheduler.testing.builders import pod_json


def pod(
    name: str = "pod",
    *volumes: dict[str, Any],
    namespace: str = "default",
    node: str = "",
    uid: str | None = None,
) -> Pod:
    raw = pod_json(name, namespace, node_name=node, uid=uid)
    raw["spec"]["volumes"] = list(volumes)
    return parse_pod(raw)


def pvc_volume(claim: str, name: str = "") -> dict[str, Any]:
    return {"name": name or f"vol-{claim}", "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str) -> dict[str, Any]:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


def inline(name: str, source: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, source: fields}


def claim(
    name: str,
    *,
    namespace: str = "default",
    volume: str = "",
    storage_class: str | None = None,
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    owner_uid: str = "",
) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {"accessModes": list(access_modes)}
    if volume:
        spec["volumeName"] = volume
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}
        ]
    return parse_claim({"metadata": meta, "spec": spec})


def pv(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    source: str = "csi",
    **fields: Any,
) -> PersistentVolume:
    spec = {"capacity": {"storage": "1Gi"}, source: fields}
    return parse_volume({"metadata": {"name": name, "labels": labels or {}}, "spec": spec})


def csi_pv(name: str, driver: str, handle: str = "") -> PersistentVolume:
    return pv(name, driver=driver, volumeHandle=handle or name)


def storage_class(
    name: str, provisioner: str = "csi.example.com", mode: str = "Immediate"
) -> StorageClass:
    return parse_storage_class(
        {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}
    )


def csi_node(name: str, limits: dict[str, int | None], migrated: str = "") -> CSINode:
    drivers = []
    for driver, count in limits.items():
        raw: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            raw["allocatable"] = {"count": count}
        drivers.append(raw)
    meta: dict[str, Any] = {"name": name}
    if migrated:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return parse_csi_node({"metadata": meta, "spec": {"drivers": drivers}})


def csi_driver(name: str, prevent_if_missing: bool = False) -> CSIDriver:
    spec = {"preventPodSchedulingIfMissing": prevent_if_missing}
    return parse_csi_driver({"metadata": {"name": name}, "spec": spec})


def attachment(name: str, attacher: str, node: str, volume: str) -> VolumeAttachment:
    spec = {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": volume}}
    return parse_volume_attachment({"metadata": {"name": name}, "spec": spec})
