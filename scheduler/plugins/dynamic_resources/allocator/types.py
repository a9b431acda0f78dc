"""What the allocator takes and gives besides the API objects: the feature switches, the state
of devices already allocated, device identities and the two kinds of failure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True, slots=True)
class Features:
    """The allocator's optional behaviour (structured.Features), v1.37's defaults: every gate
    the default allocator variant ("incubating") covers is on."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    consumable_capacity: bool = True
    binding_conditions: bool = True

    @property
    def stable(self) -> bool:
        """Whether upstream's NewAllocator picks its "stable" variant for these features: the
        first variant that supports every feature on, and "stable" supports neither consumable
        capacity nor binding conditions (structured/allocator.go)."""
        return not (self.consumable_capacity or self.binding_conditions)


@dataclass(frozen=True, slots=True)
class AllocatedState:
    """Devices in use by allocated (or in-flight) claims (structured.AllocatedState)."""

    allocated_devices: frozenset[DeviceID] = frozenset()
    allocated_shared_device_ids: frozenset[tuple[DeviceID, str]] = frozenset()
    """(device, shareID) of allocations of devices that allow multiple allocations."""
    aggregated_capacity: Mapping[DeviceID, Mapping[str, Fraction]] = field(default_factory=dict)
    """Capacity consumed per shared device, by qualified capacity name."""

    def is_allocated(self, device: DeviceID) -> bool:
        """IsDeviceAllocated: fully allocated, or partly consumed through shares."""
        if device in self.allocated_devices or device in self.aggregated_capacity:
            return True
        return any(shared == device for shared, _ in self.allocated_shared_device_ids)


class AllocationError(Exception):
    """Allocation cannot proceed because of bad input (a CEL error, a missing class, an
    impossible claim): the scheduling attempt reports it instead of trying other nodes."""


class NodeAllocationError(AllocationError):
    """A failure of this node only (ErrFailedAllocationOnNode): other nodes may still fit."""


class AllocationTimeout(Exception):
    """The deadline given to Allocate passed during the search (upstream's context deadline,
    filterTimeout): the node is neither fitting nor failing."""


#: A deadline for one Allocate call: the clock to read and the time it must not reach.
Deadline = tuple[Callable[[], float], float]
