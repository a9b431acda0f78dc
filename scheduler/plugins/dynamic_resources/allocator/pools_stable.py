"""GatherPools as upstream's "stable" allocator variant does it (structured/internal/stable,
picked when DRAConsumableCapacity and DRADeviceBindingConditions are both off).

It differs from the default variant (pools.py) in which slices it looks at and in order:

* every slice of the cluster is considered, in the order given, and slices with shared counters
  are always taken, whichever node they name (so a pool whose counters live in another node's
  slice is complete, or incomplete, differently);
* pools come in the order in which their first slice appears and slices of a pool in the order
  given, neither sorted nor with binding-condition pools last. Upstream collects pools in a Go
  map, so its order is a random rotation of that first-appearance order per call; kube-pysched
  always takes the unrotated one, one of the orders upstream takes;
* counter consumption is checked over all the pool's slices for the node, and over its other
  slices only when some are elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler.framework import ResourceSlice

from .pools import (
    Pool,
    _check_consumption,
    _counter_sets,
    _duplicate_device,
    _relevant,
    _usable,
    newest_generations,
    whole_pool,
)
from .types import Features


def _build_pool_stable(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    features: Features,
    all_for_pool: Sequence[ResourceSlice] | None,
) -> Pool:
    if features.partitionable_devices:
        counter_slices = [s for s in slices if s.shared_counters]
        device_slices = [s for s in slices if not s.shared_counters]
    else:
        counter_slices, device_slices = [], list(slices)
    duplicate = _duplicate_device(device_slices)
    if duplicate:
        return Pool(driver, name, invalid=True, invalid_reason=duplicate)
    if not features.partitionable_devices:
        return Pool(driver, name, slices=device_slices)
    sets = _counter_sets(counter_slices)
    if isinstance(sets, str):
        return Pool(driver, name, invalid=True, invalid_reason=sets)
    reason = _check_consumption(sets, slices)
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    if all_for_pool is None or len(slices) == len(all_for_pool):
        return Pool(driver, name, slices=device_slices, counter_sets=sets)
    here = {s.name for s in slices}
    elsewhere = [s for s in all_for_pool if s.name not in here]
    reason = _check_consumption(sets, elsewhere)
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    return Pool(driver, name, slices=device_slices, slices_elsewhere=elsewhere, counter_sets=sets)


def gather_pools_stable(
    all_slices: Sequence[ResourceSlice],
    node_name: str,
    labels: Mapping[str, str],
    features: Features,
) -> list[Pool]:
    """The node's pools in the stable variant's order (first appearance)."""
    grouped = newest_generations(
        s
        for s in all_slices
        if _usable(s, features) and (s.shared_counters or _relevant(s, node_name, labels))
    )
    pools: list[Pool] = []
    for (driver, name), slices in grouped.items():
        first = slices[0]
        if len(slices) == first.resource_slice_count:
            pools.append(_build_pool_stable(driver, name, slices, features, None))
            continue
        all_for_pool = whole_pool(driver, name, first.generation, all_slices)
        if all_for_pool is None:
            continue
        if len(all_for_pool) != first.resource_slice_count:
            pools.append(Pool(driver, name, incomplete=True))
            continue
        pools.append(_build_pool_stable(driver, name, slices, features, all_for_pool))
    return pools
