"""The structured allocator's entry point: built once per scheduling attempt from the classes,
slices and allocated state, then asked per node (Allocate). The per-node view of the slices is
prepared once, so a caller can keep it between attempts."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.framework import DeviceClass, ResourceClaim, ResourceSlice

from ..cel import SelectorCache
from .pools import Pool, gather_pools
from .pools_stable import gather_pools_stable
from .requests import Prepared
from .result import Chosen, allocation_results, deferrable
from .search import PoolKey, Search, Stop
from .types import (
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Deadline,
    Features,
    NodeAllocationError,
)

# Each device of a request adds two frames to the search; 32 devices per claim are allowed.
_RECURSION_HEADROOM = 4000


@dataclass(frozen=True, slots=True)
class Outcome:
    """Allocate's answer: one AllocationResult (v1 JSON) per claim, or None when the claims
    do not fit on the node. `steps` counts search steps (allocateOne invocations)."""

    allocations: list[dict[str, Any]] | None
    steps: int
    #: With `defer`, the choices whose results are built when asked (`allocations` is None).
    chosen: Chosen | None = None

    @property
    def found(self) -> bool:
        return self.allocations is not None or self.chosen is not None


@dataclass(frozen=True, slots=True)
class SliceIndex:
    """The slices by the node they name, and those naming none: what a node's pools are
    gathered from. It depends on the slices only, so a caller may keep it as long as they
    do instead of indexing them for every scheduling attempt."""

    all_slices: list[ResourceSlice]
    on_node: dict[str, list[ResourceSlice]]
    shared: list[ResourceSlice]

    @classmethod
    def of(cls, slices: Iterable[ResourceSlice]) -> SliceIndex:
        index = cls(list(slices), {}, [])
        for s in index.all_slices:
            if s.target.node_name:
                index.on_node.setdefault(s.target.node_name, []).append(s)
            else:
                index.shared.append(s)
        return index


#: What a node without a free device answers (one instance: Outcome is immutable).
_FIRST_STEP_FAILED = Outcome(None, 1)


class Allocator:
    def __init__(
        self,
        features: Features,
        state: AllocatedState,
        classes: Iterable[DeviceClass],
        slices: Sequence[ResourceSlice],
        selectors: SelectorCache | None = None,
        index: SliceIndex | None = None,
    ) -> None:
        """`index`: the slices' index when the caller keeps one (it must be of `slices`)."""
        self.features = features
        self.state = state
        self.classes: Mapping[str, DeviceClass] = {c.name: c for c in classes}
        self.selectors = selectors or SelectorCache()
        self.index = index if index is not None else SliceIndex.of(slices)
        self.available_counters: dict[PoolKey, dict[str, dict[str, Fraction]]] = {}
        #: The claims' preparation by the claims' identities, when it holds for every node.
        self._prepared: dict[tuple[int, ...], tuple[list[ResourceClaim], Prepared]] = {}

    def pools_for(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
        """The node's pools in search order (the view a caller may cache per node)."""
        if self.features.stable:
            return gather_pools_stable(self.index.all_slices, node_name, labels, self.features)
        slices = [*self.index.on_node.get(node_name, ()), *self.index.shared]
        return gather_pools(slices, node_name, labels, self.features, self.index.all_slices)

    def _none_free(self, pools: list[Pool]) -> bool:
        """Whether every device of the pools the search looks at is allocated already."""
        allocated = self.state.allocated_devices
        return all(pool.incomplete or pool.invalid or pool.id_set <= allocated for pool in pools)

    def allocate(
        self,
        node_name: str,
        labels: Mapping[str, str],
        claims: Sequence[ResourceClaim],
        pools: list[Pool] | None = None,
        deadline: Deadline | None = None,
        defer: bool = False,
    ) -> Outcome:
        """Allocates the claims, in order, on the node; raises AllocationError on bad input
        (NodeAllocationError when only this node is affected), AllocationTimeout when the
        deadline passes during the search. With `defer` the results of a success may come
        as `chosen`, to build when needed."""
        if pools is None:
            pools = self.pools_for(node_name, labels)
        cached = self._prepared.get(tuple(map(id, claims)))
        if cached is not None and cached[1].first_needs_free and self._none_free(pools):
            # The search's first step, taken without building the search: every device is
            # taken, so the first request finds none.
            if deadline is not None and deadline[0]() >= deadline[1]:
                raise AllocationTimeout
            if any(p.invalid for p in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return _FIRST_STEP_FAILED
        search = Search(
            self.features,
            self.state,
            self.classes,
            self.selectors,
            node_name,
            labels,
            claims if isinstance(claims, list) else list(claims),
            pools,
            self.available_counters,
        )
        search.deadline = deadline
        if cached is not None:
            search.prepare(cached[1])
        else:
            prepared = search.prepare()
            if prepared.node_independent:
                # The claims are kept with it, so their ids stay theirs.
                self._prepared[tuple(map(id, claims))] = (list(claims), prepared)
        limit = sys.getrecursionlimit()
        if limit < _RECURSION_HEADROOM:
            sys.setrecursionlimit(_RECURSION_HEADROOM)
        try:
            done = search.allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except Stop as err:
            raise AllocationError("allocation max size exceeded") from err
        if not done:
            if any(p.invalid for p in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return Outcome(None, search.steps)
        if defer and deferrable(search):
            return Outcome(None, search.steps, Chosen.of(search))
        return Outcome(allocation_results(search), search.steps)
