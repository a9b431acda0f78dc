"""The allocator's preparation of a pod's claims (validateDeviceRequest and the constraint
checks of upstream's Allocate): every request checked against the features and device classes,
its device count known, and each claim's constraints listed. What it prepares depends on the
node only through requests for all devices; without such a request it holds for every node, so
the Allocator prepares the claims once per scheduling attempt instead of once per node."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from scheduler.framework import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    Device,
    DeviceClass,
    DeviceRequest,
    ExactRequest,
    ResourceClaim,
    ResourceSlice,
)

from . import capacity as cap
from .constraints import Constraint, DistinctAttribute, MatchAttribute
from .pools import Pool
from .types import AllocationError, DeviceID, Features


class RequestKey(NamedTuple):
    claim: int
    request: int
    sub: int


@dataclass(frozen=True, slots=True, eq=False)
class Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class RequestData:
    """One request (or subrequest) ready for the search; not changed by it, so one node's
    search can share it with the next."""

    request: ExactRequest
    parent: DeviceRequest | None
    device_class: DeviceClass
    num_devices: int = 0
    all_devices: list[Candidate] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name


#: A claim constraint to instantiate per search (constraints track the devices taken).
ConstraintSpec = tuple[type[Constraint], tuple[str, ...], str]

#: Whether a device of a slice of a pool is selectable for a request on the node.
Selectable = Callable[[RequestKey, RequestData, Pool, ResourceSlice, Device, DeviceID], bool]


@dataclass(slots=True)
class Prepared:
    request_data: dict[RequestKey, RequestData] = field(default_factory=dict)
    constraints: list[list[ConstraintSpec]] = field(default_factory=list)
    #: No request asks for all devices: the preparation holds for every node.
    node_independent: bool = True
    #: The first request of the first claim wants at least one device of its own (a count,
    #: no admin access, no subrequests): a node without a free device fails at the first step.
    first_needs_free: bool = False


def claim_ref(claim: ResourceClaim) -> str:
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


def prepare(
    features: Features,
    classes: Mapping[str, DeviceClass],
    claims: Sequence[ResourceClaim],
    pools: Sequence[Pool],
    selectable: Selectable,
) -> Prepared:
    """Checks every request and constraint, counts devices (validateDeviceRequest)."""
    out = Prepared()
    for ci, claim in enumerate(claims):
        minimum = 0
        for ri, request in enumerate(claim.requests):
            subs = request.first_available
            if subs and not features.prioritized_list:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, request {request.name}: has subrequests, "
                    "but the DRAPrioritizedList feature is disabled"
                )
            # The stable variant knows no capacity requests and ignores them.
            if not features.consumable_capacity and not features.stable:
                if request.exactly is not None and request.exactly.capacity_requests is not None:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: has capacity "
                        "requests, but the DRAConsumableCapacity feature is disabled"
                    )
                for sub in subs:
                    if sub.capacity_requests is not None:
                        raise AllocationError(
                            f"claim {claim_ref(claim)}, subrequest {sub.name}: has capacity "
                            "requests, but the DRAConsumableCapacity feature is disabled"
                        )
            if subs:
                least = None
                for si, sub in enumerate(subs):
                    key = RequestKey(ci, ri, si)
                    data = _validate(features, classes, claim, pools, selectable, sub, request, key)
                    out.request_data[key] = data
                    least = data.num_devices if least is None else min(least, data.num_devices)
                minimum += least or 0
            else:
                if request.exactly is None:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: missing device "
                        "class name (unsupported request type?)"
                    )
                key = RequestKey(ci, ri, 0)
                data = _validate(
                    features, classes, claim, pools, selectable, request.exactly, None, key
                )
                out.request_data[key] = data
                minimum += data.num_devices
            if request.exactly is not None and request.exactly.allocation_mode == (
                ALLOCATION_MODE_ALL
            ):
                out.node_independent = False
            if any(sub.allocation_mode == ALLOCATION_MODE_ALL for sub in subs):
                out.node_independent = False
        if minimum > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {claim_ref(claim)}: number of requested devices {minimum} exceeds "
                f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        constraints: list[ConstraintSpec] = []
        for i, c in enumerate(claim.constraints):
            if c.match_attribute is not None:
                constraints.append((MatchAttribute, tuple(c.requests), c.match_attribute))
            elif c.distinct_attribute is not None and not features.stable:
                constraints.append((DistinctAttribute, tuple(c.requests), c.distinct_attribute))
            else:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, constraint #{i}: empty constraint "
                    "(unsupported constraint type?)"
                )
        out.constraints.append(constraints)
    if claims and claims[0].requests:
        first = claims[0].requests[0].exactly
        out.first_needs_free = (
            not claims[0].requests[0].first_available
            and first is not None
            and first.allocation_mode == ALLOCATION_MODE_EXACT_COUNT
            and first.count >= 1
            and not first.admin_access
        )
    return out


def _validate(
    features: Features,
    classes: Mapping[str, DeviceClass],
    claim: ResourceClaim,
    pools: Sequence[Pool],
    selectable: Selectable,
    request: ExactRequest,
    parent: DeviceRequest | None,
    key: RequestKey,
) -> RequestData:
    where = f"claim {claim_ref(claim)}, request {request.name}"
    for i, sel in enumerate(request.selectors):
        if sel is None:
            raise AllocationError(
                f"{where}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
    if not features.admin_access and request.admin_access is not None:
        raise AllocationError(f"{where}: admin access is requested, but the feature is disabled")
    if not request.device_class_name:
        raise AllocationError(f"{where}: missing device class name (unsupported request type?)")
    device_class = classes.get(request.device_class_name)
    if device_class is None:
        raise AllocationError(
            f"{where}: could not retrieve device class {request.device_class_name}: "
            f'deviceclass.resource.k8s.io "{request.device_class_name}" not found'
        )
    data = RequestData(request, parent, device_class)
    if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
        data.num_devices = request.count
    elif request.allocation_mode == ALLOCATION_MODE_ALL:
        for pool in pools:
            if pool.incomplete:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.id} is "
                    "currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool.id} is "
                    "currently invalid"
                )
            for s in pool.slices:
                for device in s.devices:
                    device_id = DeviceID(s.driver, s.pool, device.name)
                    if not selectable(key, data, pool, s, device, device_id):
                        continue
                    candidate = Candidate(device_id, device, s, pool)
                    # Static capacity only: what is consumed already is checked when the
                    # device is taken, so a request for all devices then fails.
                    if features.consumable_capacity and not cap.fits(
                        {}, request.capacity_requests, device.capacity, {}
                    ):
                        continue
                    data.all_devices.append(candidate)
        data.num_devices = len(data.all_devices)
    else:
        raise AllocationError(f"{where}: unsupported count mode {request.allocation_mode}")
    return data
