"""kube-scheduler v1.37's DRA feature gates (pkg/features/kube_features.go): defaults, locks,
dependencies, and the values kube-pysched cannot honour (refused at start instead of being
silently ignored)."""

from __future__ import annotations

from collections.abc import Mapping

#: name -> v1.37 default.
DRA_DEFAULTS: Mapping[str, bool] = {
    "DynamicResourceAllocation": True,  # GA, locked
    "DRAAdminAccess": True,  # GA, locked
    "DRAConsumableCapacity": True,  # beta
    "DRADerivedAttributes": False,  # alpha
    "DRADeviceBindingConditions": True,  # beta
    "DRADeviceCompatibilityGroups": False,  # alpha
    "DRADeviceTaintRules": True,  # GA
    "DRADeviceTaints": True,  # GA
    "DRAExtendedResource": True,  # GA, locked
    "DRAFractionalCapacityRange": True,  # beta
    "DRAListTypeAttributes": False,  # alpha
    "DRANodeAllocatableResources": False,  # alpha
    "DRAOptionalNodeOperations": False,  # alpha
    "DRAPartitionableDevices": True,  # beta
    "DRAPartitionableDevicesType": False,  # alpha
    "DRAPrioritizedList": True,  # GA, locked
    "DRAResourceClaimDeviceStatus": True,  # GA, locked
    "DRAResourceClaimGranularStatusAuthorization": True,  # beta, API server only
    "DRAResourcePoolStatus": False,  # alpha
    "DRASchedulerFilterTimeout": True,  # beta
    "DRAWorkloadResourceClaims": False,  # beta
}

#: Gates locked to their default (LockToDefault): setting another value is refused.
DRA_LOCKED: frozenset[str] = frozenset(
    {
        "DynamicResourceAllocation",
        "DRAAdminAccess",
        "DRAExtendedResource",
        "DRAPrioritizedList",
        "DRAResourceClaimDeviceStatus",
    }
)

#: An enabled gate needs these enabled (kube_features.go's dependencies, DRA gates only;
#: DynamicResourceAllocation is locked on, so it is left out).
DRA_DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    "DRADeviceBindingConditions": ("DRAResourceClaimDeviceStatus",),
    "DRADeviceCompatibilityGroups": ("DRAPartitionableDevices",),
    "DRADeviceTaintRules": ("DRADeviceTaints",),
    "DRAFractionalCapacityRange": ("DRAConsumableCapacity",),
    "DRAPartitionableDevicesType": ("DRAPartitionableDevices", "DRAResourcePoolStatus"),
}

#: Values kube-pysched does not implement: gate -> (value, what is missing).
DRA_UNSUPPORTED: Mapping[str, tuple[bool, str]] = {
    "DRADerivedAttributes": (True, "derived device attributes"),
    "DRADeviceCompatibilityGroups": (True, "device compatibility groups"),
    # Only while DRAConsumableCapacity is on: without it no capacity is computed at all.
    "DRAFractionalCapacityRange": (False, "integer-only capacity ranges"),
    "DRAListTypeAttributes": (True, "list-type attributes and includes() in CEL"),
    "DRANodeAllocatableResources": (True, "node-allocatable DRA resources"),
    "DRAOptionalNodeOperations": (True, "optional node operations"),
    "DRAPartitionableDevicesType": (True, "partitionable device types"),
    "DRAResourcePoolStatus": (True, "resource pool status"),
    "DRAWorkloadResourceClaims": (True, "PodGroup resource claims"),
}


def dra_refusal(values: Mapping[str, bool]) -> str | None:
    """Why kube-pysched refuses to start with these gate values (kube-scheduler's dependency
    check first, with its words), or None."""
    for name, deps in DRA_DEPENDENCIES.items():
        disabled = [dep for dep in deps if not values[dep]]
        if values[name] and disabled:
            return (
                f"{name} is enabled, but depends on features that are disabled: "
                f"[{' '.join(disabled)}]"
            )
    for name, (value, missing) in DRA_UNSUPPORTED.items():
        if name == "DRAFractionalCapacityRange" and not values["DRAConsumableCapacity"]:
            continue
        if values[name] == value:
            return (
                f"feature gate {name}={str(value).lower()} is not supported by kube-pysched "
                f"({missing} are not implemented)"
            )
    return None
