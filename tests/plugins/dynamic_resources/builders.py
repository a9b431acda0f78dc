"""v1 JSON builders for allocator cases, named after the helpers of upstream's allocator tests
(structured/internal/allocatortesting) so that translated cases read like the originals."""

from __future__ import annotations

from typing import Any

REGION_KEY = "region"
PLANET_KEY = "planet"
NODE_SELECTION_ALL = "nodeSelectionAll"
NODE_SELECTION_PER_DEVICE = "nodeSelectionPerDevice"
FROM_COUNTERS = "fromCounters"

NO_FEATURES = {
    "adminAccess": False,
    "prioritizedList": False,
    "partitionableDevices": False,
    "deviceTaints": False,
    "consumableCapacity": False,
    "bindingConditions": False,
}


def features(**on: bool) -> dict[str, bool]:
    return {**NO_FEATURES, **on}


def node(name: str, region: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {REGION_KEY: region, PLANET_KEY: "earth"}}}


def device_class(name: str, driver: str, config_attribute: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config_attribute is not None:
        spec["config"] = [{"opaque": device_configuration(driver, config_attribute)}]
    return {"metadata": {"name": name}, "spec": spec}


def device_configuration(driver: str, attribute: str) -> dict[str, Any]:
    return {"driver": driver, "parameters": {"attribute": attribute}}


def selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def request(
    name: str, cls: str, count: int = 1, *selectors: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    exactly: dict[str, Any] = {
        "deviceClassName": cls,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        exactly["selectors"] = list(selectors)
    exactly.update(extra)
    return {"name": name, "exactly": exactly}


def all_request(name: str, cls: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All", **extra}}


def sub_request(
    name: str, cls: str, count: int = 1, *selectors: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "deviceClassName": cls,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        out["selectors"] = list(selectors)
    out.update(extra)
    return out


def prioritized(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {"metadata": {"name": name, "uid": name}, "spec": {"devices": devices}}


def claim_with_request(name: str, req: str, cls: str, **extra: Any) -> dict[str, Any]:
    return claim(name, request(req, cls, **extra))


def device(
    name: str,
    capacity: dict[str, str] | None = None,
    attributes: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        out["attributes"] = attributes
    out.update(extra)
    return out


def counter_consumption(counter_set: str, counters: dict[str, str]) -> dict[str, Any]:
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_set(name: str, counters: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def pool(name: str, count: int = 1, generation: int = 1) -> dict[str, Any]:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def slice_(
    name: str,
    node_selection: Any,
    pool_: Any,
    driver: str,
    *devices: dict[str, Any],
    counter_sets: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": pool(pool_) if isinstance(pool_, str) else pool_,
    }
    if isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    elif node_selection == NODE_SELECTION_ALL:
        spec["allNodes"] = True
    elif node_selection == NODE_SELECTION_PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_selection
    if devices:
        spec["devices"] = list(devices)
    if counter_sets:
        spec["sharedCounters"] = counter_sets
    return {"metadata": {"name": name}, "spec": spec}


def slice_with_one_device(
    name: str, node_selection: Any, pool_: Any, driver: str
) -> dict[str, Any]:
    return slice_(name, node_selection, pool_, driver, device("device-1"))


def slice_with_multiple_devices(
    name: str, node_selection: Any, pool_: Any, driver: str, count: int
) -> dict[str, Any]:
    return slice_(
        name, node_selection, pool_, driver, *(device(f"device-{i}") for i in range(count))
    )


def node_label_selector(key: str, *values: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
        ]
    }


def local_node_selector(name: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        ]
    }


def result(
    req: str, driver: str, pool_: str, dev: str, admin: bool = False, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"request": req, "driver": driver, "pool": pool_, "device": dev}
    if admin:
        out["adminAccess"] = True
    out.update(extra)
    return out


def allocation(
    node_selector: dict[str, Any] | None,
    *results: dict[str, Any],
    config: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    devices: dict[str, Any] = {"results": list(results)}
    if config:
        devices["config"] = config
    out: dict[str, Any] = {"devices": devices}
    if node_selector is not None:
        out["nodeSelector"] = node_selector
    return out


def case(
    claims: list[dict[str, Any]],
    classes: list[dict[str, Any]],
    slices: list[dict[str, Any]],
    node_: dict[str, Any],
    feats: dict[str, bool] | None = None,
    allocated: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "node": node_,
        "classes": classes,
        "slices": slices,
        "claims": claims,
        "allocatedDevices": allocated or [],
        "features": feats if feats is not None else dict(NO_FEATURES),
    }
