"""The allocator's search (allocator_incubating.go of k8s.io/dynamic-resource-allocation's
structured allocator, the variant v1.37's default gates select): claims in order, requests in
order, each device of a request tried in pool, slice and device order, backtracking on failure;
firstAvailable subrequests tried in order; the first full solution wins. With consumable
capacity and binding conditions off it behaves as upstream's "stable" variant instead
(Features.stable): no capacity requests, no distinctAttribute, permutations of devices."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

from scheduler.framework import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    Device,
    DeviceClass,
    ExactRequest,
    ResourceClaim,
    ResourceSlice,
)

from ..cel import CELError, SelectorCache, enhance_runtime_error
from . import capacity as cap
from .constraints import Constraint
from .pools import Pool
from .requests import Candidate, Prepared, RequestData, RequestKey, claim_ref, prepare
from .types import AllocatedState, AllocationError, AllocationTimeout, Deadline, DeviceID, Features

_NONE: Mapping[str, Fraction] = MappingProxyType({})

#: A pool's identity (driver, pool name): upstream's PoolID.
PoolKey = tuple[str, str]


@dataclass(slots=True)
class DeviceResult:
    request: ExactRequest
    parent: str
    candidate: Candidate
    share_id: bool
    consumed: dict[str, Fraction] | None
    admin_access: bool

    @property
    def request_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


class Stop(Exception):
    """The result-size limit was reached (errAllocationResultMaxSizeExceeded)."""


#: RequestKey's construction without its Python-level __new__ (one per search step).
_request_key = tuple.__new__


class Search:
    """One Allocate call for one node: the per-call state upstream keeps in `allocator`."""

    __slots__ = (
        "allocating",
        "allocating_capacity",
        "available_counters",
        "claims",
        "classes",
        "constraints",
        "consumed_counters",
        "deadline",
        "features",
        "labels",
        "matches",
        "node_name",
        "pools",
        "request_data",
        "results",
        "selected",
        "selectors",
        "state",
        "steps",
    )

    def __init__(
        self,
        features: Features,
        state: AllocatedState,
        classes: Mapping[str, DeviceClass],
        selectors: SelectorCache,
        node_name: str,
        labels: Mapping[str, str],
        claims: list[ResourceClaim],
        pools: list[Pool],
        available_counters: dict[PoolKey, dict[str, dict[str, Fraction]]],
    ) -> None:
        self.features = features
        self.state = state
        self.classes = classes
        self.selectors = selectors
        self.node_name = node_name
        self.labels = labels
        self.claims = claims
        self.pools = pools
        # Keyed by (driver, pool) as upstream's PoolID; shared across Allocate calls.
        self.available_counters = available_counters
        self.consumed_counters: dict[PoolKey, dict[str, dict[str, Fraction]]] = {}
        self.request_data: dict[RequestKey, RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.matches: dict[tuple[DeviceID, RequestKey], bool] = {}
        #: The subrequest chosen per (claim, request) with firstAvailable.
        self.selected: dict[tuple[int, int], int] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.steps = 0
        self.deadline: Deadline | None = None

    def prepare(self, prepared: Prepared | None = None) -> Prepared:
        """Takes the claims' preparation (made here when not given), with fresh constraints."""
        if prepared is None:
            prepared = prepare(
                self.features, self.classes, self.claims, self.pools, self._selectable
            )
        self.request_data = prepared.request_data
        self.constraints = [
            [kind(requests, attribute) for kind, requests, attribute in specs] if specs else []
            for specs in prepared.constraints
        ]
        return prepared

    # --- device checks ----------------------------------------------------------------------

    def _selectable(
        self,
        key: RequestKey,
        data: RequestData,
        pool: Pool,
        s: ResourceSlice,
        device: Device,
        device_id: DeviceID,
    ) -> bool:
        """Class and request selectors, and per-device node selection (isSelectable)."""
        if not self.features.binding_conditions and device.binding_conditions:
            return False
        cached = self.matches.get((device_id, key))
        if cached is not None:
            return cached
        result = (
            self._selectors_match(
                key, pool, device, device_id, data.device_class, data.device_class.selectors
            )
            and self._selectors_match(key, pool, device, device_id, None, data.request.selectors)
            and (
                not s.per_device_node_selection
                or device.target.matches(self.node_name, self.labels)
            )
        )
        self.matches[(device_id, key)] = result
        return result

    def _selectors_match(
        self,
        key: RequestKey,
        pool: Pool,
        device: Device,
        device_id: DeviceID,
        device_class: DeviceClass | None,
        selectors: tuple[str | None, ...],
    ) -> bool:
        """Every selector accepts the device. A selector's verdict on a device is kept in its
        pool: a device's attributes only change with its slice, and a new slice means new
        pools."""
        cel = pool.cel
        for i, expression in enumerate(selectors):
            verdict = cel.get((expression, device.name)) if expression is not None else None
            if verdict is not None:
                if not verdict:
                    return False
                continue
            owner = (
                f"class {device_class.name}"
                if device_class is not None
                else f"claim {claim_ref(self.claims[key.claim])}"
            )
            if expression is None:
                raise AllocationError(
                    f"{owner}: selector #{i}: CEL expression empty (unsupported selector type?)"
                )
            try:
                compiled = self.selectors.get(expression)
            except CELError as err:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {err}") from err
            try:
                matched = compiled.matches(device_id.driver, device)
            except CELError as err:
                raise AllocationError(
                    f"{owner}: selector #{i} on device {device_id}: CEL runtime error: "
                    f"{enhance_runtime_error(str(err))}"
                ) from err
            cel[(expression, device.name)] = matched
            if not matched:
                return False
        return True

    def _fits(self, request: ExactRequest, c: Candidate) -> bool:
        consumed = self.state.aggregated_capacity.get(c.id, _NONE)
        ok = cap.fits(
            consumed,
            request.capacity_requests,
            c.device.capacity,
            self.allocating_capacity.get(c.id, _NONE),
        )
        return bool(ok)

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.state.allocated_devices or bool(self.allocating.get(device_id))

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        """deviceCapacityInUse: consumed by an allocated share (with or without capacity) or
        by one being allocated."""
        if device_id in self.state.aggregated_capacity or device_id in self.allocating_capacity:
            return True
        return any(shared == device_id for shared, _ in self.state.allocated_shared_device_ids)

    def _taint_blocks(self, device: Device, request: ExactRequest) -> bool:
        for taint in device.taints:
            if taint.effect not in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE):
                continue
            if not any(t.tolerates(taint) for t in request.tolerations):
                return True
        return False

    # --- shared counters --------------------------------------------------------------------

    def _available(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        available = self.available_counters.get((pool.driver, pool.pool))
        if available is not None:
            return available
        available = {name: dict(cs.counters) for name, cs in pool.counter_sets.items()}
        # The stable variant counts only fully allocated devices, not shared ones.
        allocated: Callable[[DeviceID], bool] = (
            self.state.allocated_devices.__contains__
            if self.features.stable
            else self.state.is_allocated
        )
        for s in (*pool.slices, *pool.slices_elsewhere):
            for device in s.devices:
                if not allocated(DeviceID(s.driver, s.pool, device.name)):
                    continue
                for use in device.consumes_counters:
                    counters = available.get(use.counter_set)
                    if counters is None:
                        continue
                    for name, value in use.counters.items():
                        if name in counters:
                            counters[name] -= value
        self.available_counters[(pool.driver, pool.pool)] = available
        return available

    def _consume_counters(self, c: Candidate) -> bool:
        """Takes the device's counters; False (and nothing taken) when some set runs short."""
        available = self._available(c.pool)
        consumed = self.consumed_counters.setdefault((c.pool.driver, c.pool.pool), {})
        for use in c.device.consumes_counters:
            counters = consumed.setdefault(use.counter_set, {})
            for name, value in use.counters.items():
                counters[name] = counters.get(name, Fraction(0)) + value
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if value < used.get(name, Fraction(0)):
                    self._release_counters(c)
                    return False
        return True

    def _release_counters(self, c: Candidate) -> None:
        consumed = self.consumed_counters.get((c.pool.driver, c.pool.pool), {})
        for use in c.device.consumes_counters:
            counters = consumed.setdefault(use.counter_set, {})
            for name, value in use.counters.items():
                counters[name] = counters.get(name, Fraction(0)) - value

    # --- the search -------------------------------------------------------------------------

    def allocate_one(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int, int]
    ) -> bool:
        """Whether the rest can be allocated from here (allocateOne); raises Stop when the
        result-size limit makes every choice of the current request fail."""
        self.steps += 1
        # Checked at every step, as upstream checks its context (filterTimeout).
        if self.deadline is not None and self.deadline[0]() >= self.deadline[1]:
            raise AllocationTimeout
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self.allocate_one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except Stop:
                return False
        key = _request_key(RequestKey, (ci, ri, si))
        data = self.request_data[key]
        if not in_sub and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self.request_data:
                try:
                    success = self.allocate_one(ci, ri, sub, di, True, (0, 0, 0))
                except Stop:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    self.selected[(ci, ri)] = sub
                    return True
                sub += 1
            if all_exceeded:
                raise Stop
            return False
        request = data.request
        if request.allocation_mode == ALLOCATION_MODE_ALL and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self.allocate_one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if len(self.results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise Stop
        if request.allocation_mode == ALLOCATION_MODE_ALL:
            undo = self.allocate_device(key, data.all_devices[di], must=True)
            if undo is None:
                return False
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        admin = bool(request.admin_access)
        p0, s0, d0 = start
        for pi in range(p0, len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            for sli in range(s0 if pi == p0 else 0, len(pool.slices)):
                s = pool.slices[sli]
                ids = pool.ids[sli]
                first = d0 if (pi == p0 and sli == s0) else 0
                for dvi in range(first, len(s.devices)):
                    device = s.devices[dvi]
                    device_id = ids[dvi]
                    if admin and ci in self.allocating.get(device_id, ()):
                        continue
                    if not admin and self._in_use(device_id):
                        continue
                    if not self._selectable(key, data, pool, s, device, device_id):
                        continue
                    candidate = Candidate(device_id, device, s, pool)
                    if self.features.consumable_capacity and not self._fits(request, candidate):
                        continue
                    undo = self.allocate_device(key, candidate, must=False, fitted=True)
                    if undo is None:
                        continue
                    try:
                        done = self.allocate_one(
                            ci, ri, si, di + 1, in_sub, self._next(pi, sli, dvi)
                        )
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _next(self, pi: int, sli: int, dvi: int) -> tuple[int, int, int]:
        """Where the next device of the same request is looked for: after this one (only
        combinations), or from the start in the stable variant (which tries permutations)."""
        return (0, 0, 0) if self.features.stable else (pi, sli, dvi + 1)

    def allocate_device(
        self, key: RequestKey, c: Candidate, must: bool, fitted: bool = False
    ) -> Callable[[], None] | None:
        """Takes the device for the request if it is free, untainted (or tolerated), within
        counters, capacity and constraints; returns how to give it back (allocateDevice).
        Every rejection after the counters were taken gives back what this call took, as
        upstream's rollbackDevice does, so a rejected candidate leaves no trace. `fitted`:
        the caller found the capacity fits just before, and nothing here changes what it
        compared, so upstream's second check would agree."""
        claim = self.claims[key.claim]
        data = self.request_data[key]
        request = data.request
        admin = bool(request.admin_access)
        multi = self.features.consumable_capacity and bool(c.device.allow_multiple_allocations)
        if not multi and admin and key.claim in self.allocating.get(c.id, ()):
            return None
        if not admin and self._in_use(c.id):
            return None
        if not self.features.partitionable_devices and c.device.consumes_counters:
            return None
        # A further share of an allow-multiple device in use is not charged counters again.
        skip_counters = multi and self._capacity_in_use(c.id)
        rollback = _Rollback(self, key, c)
        if not skip_counters and c.device.consumes_counters:
            if not self._consume_counters(c):
                return None
            rollback.counters = True
        if data.parent is None:
            rollback.base, rollback.sub = request.name, ""
        else:
            rollback.base, rollback.sub = data.parent.name, request.name
        if self.features.device_taints and self._taint_blocks(c.device, request):
            rollback()
            return None
        constraints = self.constraints[key.claim]
        for constraint in constraints:
            if not constraint.add(rollback.base, rollback.sub, c.device, c.id.driver):
                rollback()
                if must:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: cannot add device "
                        f"{c.id} because a claim constraint would not be satisfied"
                    )
                return None
            rollback.constraints += 1
        if not multi:
            self.allocating.setdefault(c.id, set()).add(key.claim)
            rollback.marked = True
        consumed: dict[str, Fraction] = {}
        if self.features.consumable_capacity:
            if not fitted and not self._fits(request, c):
                rollback()
                return None
            if multi:
                consumed = cap.consumed_from_request(request.capacity_requests, c.device.capacity)
                rollback.capacity_existed = c.id in self.allocating_capacity
                into = self.allocating_capacity.setdefault(c.id, {})
                for name, value in consumed.items():
                    into[name] = into.get(name, Fraction(0)) + value
                rollback.capacity = consumed
        results = self.results[key.claim]
        rollback.results_before = len(results)
        results.append(
            DeviceResult(
                request=request,
                parent=data.parent.name if data.parent is not None else "",
                candidate=c,
                share_id=multi,
                consumed=consumed or None,
                admin_access=admin,
            )
        )
        rollback.result = True
        return rollback


@dataclass(slots=True)
class _Rollback:
    """What one allocate_device call changed, undone in reverse order (rollbackDevice)."""

    search: Search
    key: RequestKey
    candidate: Candidate
    base: str = ""
    sub: str = ""
    counters: bool = False
    constraints: int = 0
    marked: bool = False
    capacity: dict[str, Fraction] | None = None
    capacity_existed: bool = False
    result: bool = False
    results_before: int = 0

    def __call__(self) -> None:
        search, c = self.search, self.candidate
        if self.result:
            del search.results[self.key.claim][self.results_before :]
        if self.capacity is not None:
            into = search.allocating_capacity.get(c.id)
            if into is not None:
                for name, value in self.capacity.items():
                    if name in into:
                        into[name] -= value
                if all(v == 0 for v in into.values()):
                    del search.allocating_capacity[c.id]
            if self.capacity_existed and c.id not in search.allocating_capacity:
                # The earlier share still marks the device as shared.
                search.allocating_capacity[c.id] = {}
        if self.marked:
            search.allocating[c.id].discard(self.key.claim)
        constraints = search.constraints[self.key.claim]
        for i in range(self.constraints - 1, -1, -1):
            constraints[i].remove(self.base, self.sub)
        if self.counters:
            search._release_counters(c)
