"""The structured allocator of DynamicResources (k8s.io/dynamic-resource-allocation
structured/, the "incubating" variant v1.37's default gates select, or the "stable" one with
consumable capacity and binding conditions off): which devices of which
ResourceSlices satisfy a pod's ResourceClaims on one node."""

from .allocator import Allocator, Outcome, SliceIndex
from .cases import allocate_case, run_case
from .pools import Pool, gather_pools
from .result import Chosen
from .types import (
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Deadline,
    DeviceID,
    Features,
    NodeAllocationError,
)

__all__ = [
    "AllocatedState",
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "Chosen",
    "Deadline",
    "DeviceID",
    "Features",
    "NodeAllocationError",
    "Outcome",
    "Pool",
    "SliceIndex",
    "allocate_case",
    "gather_pools",
    "run_case",
]
