"""ResourceSlices (resource.k8s.io/v1) as the allocator reads them: the pool a slice belongs to,
which nodes it serves, its devices (attributes, capacities, counters, taints, binding
conditions) and shared counter sets. DeviceTaintRules are applied here, as upstream's slice
tracker does before the allocator sees a slice."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from scheduler.api.dra import DeviceTaintRule
from scheduler.api.dra_common import (
    DeviceTaint,
    DRAParseError,
    parse_quantity_field,
    parse_taint,
)
from scheduler.api.labels import NodeSelector, SelectorError

#: DeviceAttribute value kinds.
ATTR_INT = "int"
ATTR_BOOL = "bool"
ATTR_STRING = "string"
ATTR_VERSION = "version"

_ATTR_FIELDS = (
    ("int", ATTR_INT),
    ("bool", ATTR_BOOL),
    ("string", ATTR_STRING),
    ("version", ATTR_VERSION),
)


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    kind: str
    """One of ATTR_INT, ATTR_BOOL, ATTR_STRING, ATTR_VERSION; "" for a type not known here."""
    value: int | bool | str | None


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    default: Fraction | None
    valid_values: tuple[Fraction, ...]
    valid_range: tuple[Fraction | None, Fraction | None, Fraction | None] | None
    """(min, max, step) when validRange is set."""


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Fraction
    request_policy: CapacityRequestPolicy | None


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    counter_set: str
    counters: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, Fraction]


@dataclass(frozen=True, slots=True, eq=False)
class NodeTarget:
    """Which nodes a slice (or, with perDeviceNodeSelection, a device) serves."""

    node_name: str
    all_nodes: bool
    node_selector: NodeSelector | None
    node_selector_raw: Mapping[str, Any] | None = field(repr=False)

    def is_set(self) -> bool:
        return bool(self.node_name) or self.all_nodes or self.node_selector is not None

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """NodeMatches: by name, all nodes, or the selector; nothing set matches nothing."""
        if self.node_name:
            return node_name == self.node_name
        if self.all_nodes:
            return True
        if self.node_selector is not None:
            return self.node_selector.matches(node_name, labels)
        return False


@dataclass(frozen=True, slots=True, eq=False)
class Device:
    name: str
    attributes: Mapping[str, DeviceAttribute]
    capacity: Mapping[str, DeviceCapacity]
    consumes_counters: tuple[CounterConsumption, ...]
    target: NodeTarget
    taints: tuple[DeviceTaint, ...]
    binds_to_node: bool
    binding_conditions: tuple[str, ...]
    binding_failure_conditions: tuple[str, ...]
    allow_multiple_allocations: bool | None


@dataclass(frozen=True, slots=True, eq=False)
class ResourceSlice:
    name: str
    uid: str
    resource_version: str
    driver: str
    pool: str
    generation: int
    resource_slice_count: int
    target: NodeTarget
    per_device_node_selection: bool | None
    devices: tuple[Device, ...]
    shared_counters: tuple[CounterSet, ...]


def _node_target(raw: Mapping[str, Any], what: str) -> NodeTarget:
    selector_raw = raw.get("nodeSelector")
    selector = None
    if selector_raw is not None:
        try:
            selector = NodeSelector.parse(selector_raw)
        except SelectorError as err:
            raise DRAParseError(f"{what}.nodeSelector: {err}") from err
        if len(selector.terms) > 1:
            raise DRAParseError(
                f"{what}.nodeSelector: unsupported ResourceSlice.NodeSelector with "
                f"{len(selector.terms)} terms"
            )
    return NodeTarget(
        node_name=raw.get("nodeName") or "",
        all_nodes=bool(raw.get("allNodes")),
        node_selector=selector,
        node_selector_raw=selector_raw,
    )


def _attribute(raw: Mapping[str, Any]) -> DeviceAttribute:
    for key, kind in _ATTR_FIELDS:
        if key in raw and raw[key] is not None:
            return DeviceAttribute(kind, raw[key])
    return DeviceAttribute("", None)


def _policy(raw: Mapping[str, Any] | None, what: str) -> CapacityRequestPolicy | None:
    if not raw:
        return None
    default = raw.get("default")
    rng = raw.get("validRange")
    valid_range = None
    if rng is not None:
        valid_range = tuple(
            parse_quantity_field(rng[k], f"{what}.validRange.{k}") if rng.get(k) else None
            for k in ("min", "max", "step")
        )
    return CapacityRequestPolicy(
        default=parse_quantity_field(default, f"{what}.default") if default is not None else None,
        valid_values=tuple(
            parse_quantity_field(v, f"{what}.validValues[{i}]")
            for i, v in enumerate(raw.get("validValues") or ())
        ),
        valid_range=valid_range,  # type: ignore[arg-type]
    )


def _counters(raw: Any, what: str) -> dict[str, Fraction]:
    return {
        str(name): parse_quantity_field((c or {}).get("value"), f"{what}[{name}].value")
        for name, c in (raw or {}).items()
    }


def _device(raw: Mapping[str, Any], what: str) -> Device:
    name = raw.get("name") or ""
    where = f"{what}[{name}]"
    return Device(
        name=name,
        attributes={str(k): _attribute(v or {}) for k, v in (raw.get("attributes") or {}).items()},
        capacity={
            str(k): DeviceCapacity(
                value=parse_quantity_field((v or {}).get("value"), f"{where}.capacity[{k}].value"),
                request_policy=_policy(
                    (v or {}).get("requestPolicy"), f"{where}.capacity[{k}].requestPolicy"
                ),
            )
            for k, v in (raw.get("capacity") or {}).items()
        },
        consumes_counters=tuple(
            CounterConsumption(
                counter_set=c.get("counterSet") or "",
                counters=_counters(c.get("counters"), f"{where}.consumesCounters[{i}].counters"),
            )
            for i, c in enumerate(raw.get("consumesCounters") or ())
        ),
        target=_node_target(raw, where),
        taints=tuple(
            parse_taint(t, f"{where}.taints[{i}]") for i, t in enumerate(raw.get("taints") or ())
        ),
        binds_to_node=bool(raw.get("bindsToNode")),
        binding_conditions=tuple(raw.get("bindingConditions") or ()),
        binding_failure_conditions=tuple(raw.get("bindingFailureConditions") or ()),
        allow_multiple_allocations=raw.get("allowMultipleAllocations"),
    )


def parse_resource_slice(obj: Mapping[str, Any]) -> ResourceSlice:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    name = meta.get("name", "")
    what = f"ResourceSlice {name}: spec"
    pool = spec.get("pool") or {}
    for key in ("generation", "resourceSliceCount"):
        if not isinstance(pool.get(key, 0), int):
            raise DRAParseError(f"{what}.pool.{key}: must be an integer")
    return ResourceSlice(
        name=name,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        driver=spec.get("driver") or "",
        pool=pool.get("name") or "",
        generation=pool.get("generation") or 0,
        resource_slice_count=pool.get("resourceSliceCount") or 0,
        target=_node_target(spec, what),
        per_device_node_selection=spec.get("perDeviceNodeSelection"),
        devices=tuple(_device(d, f"{what}.devices") for d in spec.get("devices") or ()),
        shared_counters=tuple(
            CounterSet(
                name=cs.get("name") or "",
                counters=_counters(cs.get("counters"), f"{what}.sharedCounters[{i}].counters"),
            )
            for i, cs in enumerate(spec.get("sharedCounters") or ())
        ),
    )


def apply_taint_rules(slice_: ResourceSlice, rules: Iterable[DeviceTaintRule]) -> ResourceSlice:
    """The slice with each matching rule's taint appended to the devices it selects, in rule
    order (the slice tracker's applyPatches)."""
    devices = list(slice_.devices)
    changed = False
    for rule in rules:
        if rule.driver is not None and rule.driver != slice_.driver:
            continue
        if rule.pool is not None and rule.pool != slice_.pool:
            continue
        for i, device in enumerate(devices):
            if rule.device is not None and rule.device != device.name:
                continue
            devices[i] = replace(device, taints=(*device.taints, rule.taint))
            changed = True
    return replace(slice_, devices=tuple(devices)) if changed else slice_
