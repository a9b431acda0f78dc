"""Objects for the DynamicResources plugin tests: a GPU driver publishing one slice per node,
a class selecting its devices, claims and pods referencing them."""

from __future__ import annotations

from typing import Any

from scheduler.api.dra import (
    DeviceClass,
    ResourceClaim,
    parse_device_class,
    parse_resource_claim,
)
from scheduler.api.dra_slices import ResourceSlice, parse_resource_slice
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.framework.dra import StaticDRA
from scheduler.plugins.dynamic_resources import SPEC
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot
from tests.plugins.dynamic_resources.builders import (
    device,
    device_class,
    request,
    slice_,
)

DRIVER = "gpu.example.com"
NS = "ns"


def gpu_class() -> DeviceClass:
    return parse_device_class(device_class("gpu", DRIVER))


def gpu_slice(node: str, *names: str) -> ResourceSlice:
    return parse_resource_slice(slice_(f"{node}-gpus", node, node, DRIVER, *map(device, names)))


def claim(
    name: str,
    *,
    count: int = 1,
    owner: str | None = None,
    allocation: dict[str, Any] | None = None,
    reserved_for: list[dict[str, Any]] | None = None,
    requests: list[dict[str, Any]] | None = None,
    rv: str = "1",
) -> ResourceClaim:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "resourceVersion": rv,
    }
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": owner, "uid": owner, "controller": True}]
    status: dict[str, Any] = {}
    if allocation is not None:
        status["allocation"] = allocation
    if reserved_for is not None:
        status["reservedFor"] = reserved_for
    return parse_resource_claim(
        {
            "metadata": meta,
            "spec": {"devices": {"requests": requests or [request("gpu", "gpu", count)]}},
            "status": status,
        }
    )


def allocation(node: str, *devices: str, request_name: str = "gpu") -> dict[str, Any]:
    return {
        "devices": {
            "results": [
                {"request": request_name, "driver": DRIVER, "pool": node, "device": d}
                for d in devices
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        },
    }


def pod(
    name: str,
    *,
    claims: dict[str, str] | None = None,
    templates: dict[str, str] | None = None,
    generated: dict[str, str] | None = None,
    scheduler_name: str = "default-scheduler",
) -> Pod:
    """`claims`: pod claim name -> claim; `templates`: pod claim name -> template;
    `generated`: pod claim name -> generated claim (status.resourceClaimStatuses)."""
    entries = [{"name": k, "resourceClaimName": v} for k, v in (claims or {}).items()]
    entries += [{"name": k, "resourceClaimTemplateName": v} for k, v in (templates or {}).items()]
    status = {
        "resourceClaimStatuses": [
            {"name": k, "resourceClaimName": v} for k, v in (generated or {}).items()
        ]
    }
    return parse_pod(
        {
            "metadata": {"name": name, "namespace": NS, "uid": name},
            "spec": {
                "containers": [{"name": "c"}],
                "resourceClaims": entries,
                "schedulerName": scheduler_name,
            },
            "status": status,
        }
    )


def handle(
    nodes: tuple[str, ...] = ("n1", "n2"),
    *,
    claims: tuple[ResourceClaim, ...] = (),
    slices: tuple[ResourceSlice, ...] | None = None,
    classes: tuple[DeviceClass, ...] | None = None,
) -> FakeHandle:
    snapshot = make_snapshot([make_node(n) for n in nodes])
    if slices is None:
        slices = tuple(gpu_slice(n, "gpu-0") for n in nodes)
    source = StaticDRA(claims, slices, classes if classes is not None else (gpu_class(),))
    return FakeHandle(snap=snapshot, static_dra=source)


def plugin(h: FakeHandle, args: dict[str, Any] | None = None) -> Any:
    return build_plugin(SPEC, args, handle=h)
