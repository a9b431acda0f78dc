"""What NodeResourcesFit and NodeResourcesBalancedAllocation score for an extended resource
backed by DRA on a node that does not advertise it (upstream's resource_allocation.go,
getDRAPreScoredParams and calculateDRAResourceTotals): its allocatable is the number of devices
on the node that match the resource's DeviceClass, its use the number of those already
allocated (dedicated, shared or with consumed capacity, in-flight allocations included).

Matching a device against the class's CEL selectors needs DynamicResources' CEL evaluator, which
that plugin lends through `DRAManager.device_class_matcher`; a selector that fails leaves the
resource out of the node's score, as upstream logs the error and returns zeros."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import structlog

from scheduler.api.dra import DeviceClass
from scheduler.api.dra_slices import Device, NodeTarget, ResourceSlice
from scheduler.api.resources import is_dra_extended_resource_name
from scheduler.framework.dra import AllocatedDevices, DRAManager

log = structlog.get_logger(__name__)

#: Whether a device of a driver matches every selector of a class; raises on a failing one.
DeviceClassMatcher = Callable[[DeviceClass, str, Device], bool]


def _slice_serves(target: NodeTarget, node_name: str, labels: Mapping[str, str]) -> bool:
    """Upstream's slice-level test: a slice naming another node is skipped, one with a
    selector is matched against it, anything else (all nodes, this node) counts."""
    if not target.all_nodes and target.node_name != node_name and target.node_selector is not None:
        return target.matches(node_name, labels)
    return target.all_nodes or not target.node_name or target.node_name == node_name


def _device_serves(target: NodeTarget, node_name: str, labels: Mapping[str, str]) -> bool:
    if target.all_nodes or (target.node_name and target.node_name == node_name):
        return True
    return target.node_selector is not None and target.node_selector.matches(node_name, labels)


class DRAScoreState:
    """One pod's PreScore view: the classes serving the scored resources, the allocated
    devices and the slices, read once; the totals are kept per (node, resource)."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        allocated: AllocatedDevices,
        slices: Sequence[ResourceSlice],
        matcher: DeviceClassMatcher | None,
    ) -> None:
        self.classes = classes
        self.allocated = allocated
        self.slices = slices
        self.matcher = matcher
        self._shared = {key for key, _share in allocated.shared}
        self._lock = threading.Lock()
        self._totals: dict[tuple[str, str], tuple[int, int]] = {}

    def totals(self, node_name: str, labels: Mapping[str, str], resource: str) -> tuple[int, int]:
        """(devices of the resource's class on the node, how many of them are allocated);
        (0, 0) when no class serves the resource."""
        key = (node_name, resource)
        with self._lock:
            found = self._totals.get(key)
        if found is not None:
            return found
        cls = self.classes.get(resource)
        result = (0, 0) if cls is None else self._count(cls, node_name, labels, resource)
        with self._lock:
            self._totals[key] = result
        return result

    def _allocated(self, key: tuple[str, str, str]) -> bool:
        """IsDeviceAllocated: dedicated, shared, or with consumed capacity."""
        a = self.allocated
        return key in a.devices or key in self._shared or key in a.capacity

    def _count(
        self, cls: DeviceClass, node_name: str, labels: Mapping[str, str], resource: str
    ) -> tuple[int, int]:
        capacity = allocated = 0
        selective = any(s is not None for s in cls.selectors)
        try:
            for s in self.slices:
                if s.per_device_node_selection:
                    devices = [d for d in s.devices if _device_serves(d.target, node_name, labels)]
                elif _slice_serves(s.target, node_name, labels):
                    devices = list(s.devices)
                else:
                    continue
                for device in devices:
                    if selective and not self._matches(cls, s.driver, device):
                        continue
                    capacity += 1
                    if self._allocated((s.driver, s.pool, device.name)):
                        allocated += 1
        except Exception as err:
            log.error(
                "Failed to calculate DRA resource capacity and allocated",
                node=node_name,
                resource=resource,
                deviceClass=cls.name,
                err=str(err),
            )
            return 0, 0
        return capacity, allocated

    def _matches(self, cls: DeviceClass, driver: str, device: Device) -> bool:
        if self.matcher is None:
            raise RuntimeError(
                "no CEL evaluator for device class selectors: DynamicResources is in no profile"
            )
        return self.matcher(cls, driver, device)


def dra_score_state(dra: DRAManager | None, resources: Sequence[str]) -> DRAScoreState | None:
    """getDRAPreScoredParams: the state when some scored resource is an extended resource a
    DeviceClass serves, else None (nothing of DRA is read)."""
    if dra is None:
        return None
    names = [r for r in resources if is_dra_extended_resource_name(r)]
    if not names:
        return None
    classes = dra.extended_resource_classes()
    serving = {name: classes[name] for name in names if name in classes}
    if not serving:
        return None
    return DRAScoreState(
        serving,
        dra.claims.gather_allocated_state(),
        dra.slices_with_taint_rules(),
        dra.device_class_matcher,
    )
