"""The allocator on one self-contained case, in the JSON shape the differential test against
upstream's Go allocator shares with it:

    {"node": <v1 Node>, "classes": [<v1 DeviceClass>], "slices": [<v1 ResourceSlice>],
     "claims": [<v1 ResourceClaim>, allocated in this order],
     "allocatedDevices": ["driver/pool/device", ...],
     "features": {"adminAccess": bool, "prioritizedList": bool, "partitionableDevices": bool,
                  "deviceTaints": bool, "consumableCapacity": bool, "bindingConditions": bool}}

answers {"allocations": [<v1 AllocationResult> per claim]} when the claims fit on the node,
{"allocations": null} when they do not (with a "reason" when this node failed for one, as
invalid pools), {"error": "<message>"} when allocation fails. Missing
feature keys take v1.37's defaults (on). shareID values are random, as upstream's are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework import (
    DRAParseError,
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)

from .allocator import Allocator, Outcome
from .types import AllocatedState, AllocationError, DeviceID, Features, NodeAllocationError

_FEATURES = {
    "adminAccess": "admin_access",
    "prioritizedList": "prioritized_list",
    "partitionableDevices": "partitionable_devices",
    "deviceTaints": "device_taints",
    "consumableCapacity": "consumable_capacity",
    "bindingConditions": "binding_conditions",
}


def _features(raw: Mapping[str, Any] | None) -> Features:
    raw = raw or {}
    unknown = set(raw) - set(_FEATURES)
    if unknown:
        raise AllocationError(f"unknown features {sorted(unknown)}")
    return Features(**{attr: bool(raw.get(key, True)) for key, attr in _FEATURES.items()})


def _device_id(text: str) -> DeviceID:
    """driver/pool/device, where a pool name may itself hold slashes (driver and device cannot)."""
    driver, _, rest = text.partition("/")
    pool, _, device = rest.rpartition("/")
    if not driver or not pool or not device:
        raise AllocationError(f"allocatedDevices: {text!r} is not driver/pool/device")
    return DeviceID(driver, pool, device)


def run_case(case: Mapping[str, Any]) -> Outcome:
    """The allocator's outcome on a case (with its search-step count); raises AllocationError
    or DRAParseError."""
    node = case.get("node") or {}
    meta = node.get("metadata") or {}
    allocator = Allocator(
        _features(case.get("features")),
        AllocatedState(
            allocated_devices=frozenset(_device_id(d) for d in case.get("allocatedDevices") or ())
        ),
        [parse_device_class(c) for c in case.get("classes") or ()],
        [parse_resource_slice(s) for s in case.get("slices") or ()],
    )
    return allocator.allocate(
        meta.get("name", ""),
        meta.get("labels") or {},
        [parse_resource_claim(c) for c in case.get("claims") or ()],
    )


def allocate_case(case: Mapping[str, Any]) -> dict[str, Any]:
    try:
        outcome = run_case(case)
    except NodeAllocationError as err:
        # Upstream's ErrFailedAllocationOnNode: this node does not fit, others may.
        return {"allocations": None, "reason": str(err)}
    except (AllocationError, DRAParseError) as err:
        return {"error": str(err)}
    return {"allocations": outcome.allocations}
