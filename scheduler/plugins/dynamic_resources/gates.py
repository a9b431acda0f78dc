"""DynamicResources' feature switches, read once from kube-pysched's feature gates as upstream's
plugin reads its framework feature struct (plugins/feature.Features) and hands the allocator
its Features (AllocatorFeatures)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from scheduler.framework import ArgsError

from .allocator import Features
from .args import BINDING_TIMEOUT, FILTER_TIMEOUT, DynamicResourcesArgs


class Gates(Protocol):
    def enabled(self, name: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class PluginGates:
    allocator: Features
    """What the allocator does (DRAAdminAccess, DRAPrioritizedList, DRAPartitionableDevices,
    DRADeviceTaints, DRAConsumableCapacity, DRADeviceBindingConditions)."""
    binding_conditions: bool
    """DRADeviceBindingConditions and DRAResourceClaimDeviceStatus: PreBind stamps the
    allocation time and waits for binding conditions; Filter rejects claims whose binding
    failed or timed out."""
    consumable_capacity: bool
    """DRAConsumableCapacity: shared allocations and consumed capacity count as in use."""
    taint_rules: bool
    """DRADeviceTaintRules: DeviceTaintRules are applied to the slices."""
    filter_timeout: float | None
    """DRASchedulerFilterTimeout: seconds one node's allocation may take (None: unbounded)."""


def plugin_gates(gates: Gates, args: DynamicResourcesArgs) -> PluginGates:
    """The plugin's switches; raises ArgsError for a timeout set while its gate is off (as
    ValidateDynamicResourcesArgs forbids it)."""
    binding = gates.enabled("DRADeviceBindingConditions") and gates.enabled(
        "DRAResourceClaimDeviceStatus"
    )
    timeout_gate = gates.enabled("DRASchedulerFilterTimeout")
    if not timeout_gate and args.filter_timeout_set:
        raise ArgsError(
            FILTER_TIMEOUT, "Forbidden: DRASchedulingFilterTimeout feature gate is disabled"
        )
    if not binding and args.binding_timeout_set:
        raise ArgsError(
            BINDING_TIMEOUT,
            "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature "
            "gate is disabled",
        )
    consumable = gates.enabled("DRAConsumableCapacity")
    return PluginGates(
        allocator=Features(
            admin_access=gates.enabled("DRAAdminAccess"),
            prioritized_list=gates.enabled("DRAPrioritizedList"),
            partitionable_devices=gates.enabled("DRAPartitionableDevices"),
            device_taints=gates.enabled("DRADeviceTaints"),
            consumable_capacity=consumable,
            binding_conditions=binding,
        ),
        binding_conditions=binding,
        consumable_capacity=consumable,
        taint_rules=gates.enabled("DRADeviceTaintRules"),
        filter_timeout=(args.filter_timeout if timeout_gate and args.filter_timeout > 0 else None),
    )
