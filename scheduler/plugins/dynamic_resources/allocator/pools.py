"""The resource pools a node can use (GatherPools of the structured allocator): slices grouped
by (driver, pool) at the newest generation, kept only when the pool is complete; pools being
updated are marked incomplete, inconsistent ones invalid. Pools are ordered by driver and pool
name, those with binding conditions last; slices within a pool by name. This order decides which
device the search takes first."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from scheduler.framework import CounterSet, ResourceSlice

from .types import DeviceID, Features


@dataclass(slots=True)
class Pool:
    driver: str
    pool: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[ResourceSlice] = field(default_factory=list)
    """Slices with devices serving the node (DeviceSlicesTargetingNode)."""
    slices_elsewhere: list[ResourceSlice] = field(default_factory=list)
    """The pool's other slices, for the counters their allocated devices consume."""
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)
    ids: list[list[DeviceID]] = field(init=False)
    """Per slice of `slices`, its devices' IDs (built once, not on every search step)."""
    id_set: frozenset[DeviceID] = field(init=False)
    """Every device ID of `slices`."""
    cel: dict[tuple[str, str], bool] = field(init=False, default_factory=dict)
    """CEL verdicts by (expression, device name): the pool's devices change only with new
    slices, which make new pools."""

    def __post_init__(self) -> None:
        self.ids = [[DeviceID(s.driver, s.pool, d.name) for d in s.devices] for s in self.slices]
        self.id_set = frozenset(i for ids in self.ids for i in ids)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.pool}"


def _relevant(slice_: ResourceSlice, node_name: str, labels: Mapping[str, str]) -> bool | None:
    """Whether the slice serves the node; None for a slice that names no nodes at all."""
    if slice_.target.is_set():
        return slice_.target.matches(node_name, labels)
    if slice_.per_device_node_selection:
        return any(d.target.matches(node_name, labels) for d in slice_.devices)
    return None


def _duplicate_device(device_slices: Sequence[ResourceSlice]) -> str | None:
    """Why a pool is invalid when two of its slices name one device, or None."""
    names: set[str] = set()
    for s in device_slices:
        for device in s.devices:
            if device.name in names:
                return f"duplicate device name {device.name}"
            names.add(device.name)
    return None


def _counter_sets(slices: Iterable[ResourceSlice]) -> dict[str, CounterSet] | str:
    sets: dict[str, CounterSet] = {}
    for s in slices:
        for cs in s.shared_counters:
            if cs.name in sets:
                return f"duplicate counter set name {cs.name}"
            sets[cs.name] = cs
    return sets


def _check_consumption(sets: Mapping[str, CounterSet], slices: Iterable[ResourceSlice]) -> str:
    for s in slices:
        for device in s.devices:
            for use in device.consumes_counters:
                cs = sets.get(use.counter_set)
                if cs is None:
                    return f"counter set {use.counter_set} not found"
                for name in use.counters:
                    if name not in cs.counters:
                        return f"counter {name} not found in counter set {cs.name}"
    return ""


def _build_pool(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    features: Features,
    all_for_pool: Sequence[ResourceSlice],
) -> Pool:
    slices.sort(key=lambda s: s.name)
    device_slices: list[ResourceSlice] = []
    counter_slices: list[ResourceSlice] = []
    elsewhere: list[ResourceSlice] = []
    for s in slices:
        if features.partitionable_devices and s.shared_counters:
            counter_slices.append(s)
        else:
            device_slices.append(s)
    if len(slices) < len(all_for_pool):
        here = {s.name for s in slices}
        for s in all_for_pool:
            if s.name in here:
                continue
            if features.partitionable_devices and s.shared_counters:
                counter_slices.append(s)
            else:
                elsewhere.append(s)
    duplicate = _duplicate_device(device_slices)
    if duplicate:
        return Pool(driver, name, invalid=True, invalid_reason=duplicate)
    if not features.partitionable_devices:
        return Pool(driver, name, slices=device_slices)
    sets = _counter_sets(counter_slices)
    if isinstance(sets, str):
        return Pool(driver, name, invalid=True, invalid_reason=sets)
    reason = _check_consumption(sets, device_slices) or _check_consumption(sets, elsewhere)
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    return Pool(driver, name, slices=device_slices, slices_elsewhere=elsewhere, counter_sets=sets)


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices for d in s.devices)


def _usable(s: ResourceSlice, features: Features) -> bool:
    """Slices with per-device node selection or shared counters need partitionable devices."""
    return features.partitionable_devices or (
        s.per_device_node_selection is None and not s.shared_counters
    )


def newest_generations(
    slices: Iterable[ResourceSlice],
) -> dict[tuple[str, str], list[ResourceSlice]]:
    """The slices by (driver, pool), each pool's at the newest generation among them, in the
    order given. A newer generation replaces a pool's slices but keeps its place, as an entry
    of upstream's map does."""
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        key = (s.driver, s.pool)
        current = grouped.get(key)
        if current is None or s.generation > current[0].generation:
            grouped[key] = [s]
        elif s.generation == current[0].generation:
            current.append(s)
    return grouped


def whole_pool(
    driver: str, name: str, generation: int, all_slices: Iterable[ResourceSlice]
) -> list[ResourceSlice] | None:
    """Every slice of the pool at `generation`, or None when the pool has a newer one (the
    node's slices are obsolete)."""
    found: list[ResourceSlice] = []
    for s in all_slices:
        if s.driver != driver or s.pool != name:
            continue
        if s.generation > generation:
            return None
        if s.generation == generation:
            found.append(s)
    return found


def gather_pools(
    slices_for_node: Iterable[ResourceSlice],
    node_name: str,
    labels: Mapping[str, str],
    features: Features,
    all_slices: Sequence[ResourceSlice],
) -> list[Pool]:
    """The node's pools in the allocator's order."""
    grouped = newest_generations(
        s for s in slices_for_node if _usable(s, features) and _relevant(s, node_name, labels)
    )
    plain: list[Pool] = []
    with_conditions: list[Pool] = []
    for (driver, name), slices in grouped.items():
        first = slices[0]
        all_for_pool: list[ResourceSlice] = []
        if len(slices) != first.resource_slice_count:
            whole = whole_pool(driver, name, first.generation, all_slices)
            if whole is None:
                continue
            if len(whole) != first.resource_slice_count:
                plain.append(Pool(driver, name, incomplete=True))
                continue
            all_for_pool = whole
        pool = _build_pool(driver, name, slices, features, all_for_pool)
        (with_conditions if _has_binding_conditions(pool) else plain).append(pool)
    plain.sort(key=lambda p: (p.driver, p.pool))
    with_conditions.sort(key=lambda p: (p.driver, p.pool))
    return plain + with_conditions


def pool_counters(pool: Pool) -> dict[str, dict[str, Fraction]]:
    """The pool's counter sets as mutable maps (name -> counter -> value)."""
    return {name: dict(cs.counters) for name, cs in pool.counter_sets.items()}
