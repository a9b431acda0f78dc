"""kube-scheduler v1.37's DynamicResources (dynamicresources.go): a pod's ResourceClaims must
be allocated, or allocatable on the node, from the devices drivers publish in ResourceSlices.
PreEnqueue waits for the claims to exist, PreFilter gathers them and builds the structured
allocator, Filter allocates per node, Score ranks firstAvailable choices, Reserve puts the
chosen allocation in flight, PreBind (binding.py) writes it and waits for binding conditions,
Unreserve and PostFilter release what an attempt held. Extended resources backed by DRA
(extended.py) join as one more claim of the pod. PodGroup-level claims (gate
DRAWorkloadResourceClaims, off in v1.37) are not covered."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    ClusterEventWithHint,
    Code,
    CycleState,
    DRAManager,
    Handle,
    NodeInfo,
    NodeSelector,
    NodeTable,
    NodeToStatus,
    Pod,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterResult,
    ResourceClaim,
    ResourceSlice,
    ScoreColumn,
    ScoreExtensions,
    SelectorError,
    SignFragment,
    Status,
    metrics,
)
from scheduler.plugins.dynamic_resources import extended, hints
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Allocator,
    Chosen,
    NodeAllocationError,
    Pool,
    SliceIndex,
)
from scheduler.plugins.dynamic_resources.args import DynamicResourcesArgs
from scheduler.plugins.dynamic_resources.binding import ClaimBinder
from scheduler.plugins.dynamic_resources.cel import SelectorCache
from scheduler.plugins.dynamic_resources.claims import (
    ClaimError,
    allocation_node_selector,
    is_reserved_for_pod,
    pod_claims,
)
from scheduler.plugins.dynamic_resources.gates import plugin_gates
from scheduler.plugins.helper.scores import default_normalize_score

NAME = "DynamicResources"
_STATE_KEY = NAME
_SKIP = Status(Code.SKIP)
_MISSING: Mapping[str, Any] = {}
#: resourceapi.FirstAvailableDeviceRequestMaxSize: the score of a first choice.
FIRST_AVAILABLE_MAX = 8
#: Upstream's LRU of compiled CEL expressions holds 10.
CEL_CACHE_SIZE = 10


def _unschedulable(reason: str) -> Status:
    """statusUnschedulable: every rejection of this plugin is UnschedulableAndUnresolvable."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)


#: The rejection of most nodes in a full cluster: one instance (statuses are only read once
#: returned, and the runtime names the same plugin on it every time).
_CANNOT_ALLOCATE = _unschedulable("cannot allocate all claims")


@dataclass
class ClaimInfo:
    """informationForClaim: where an allocated claim is usable, and the allocation Reserve
    chose (published by PreBind)."""

    available_on: NodeSelector | None = None
    allocation: Mapping[str, Any] | None = None


@dataclass
class PodState:
    """stateData, shared by clones as upstream's pointer: Filter runs record each node's
    allocation and the claims a node could not use; Reserve, PreBind and Unreserve read them."""

    claims: list[ResourceClaim] = field(default_factory=list)
    infos: list[ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    slices_revision: int = 0
    #: Per node, one entry per claim to allocate (None: the extended-resource claim, which
    #: that node does not need), or the allocator's choices to build them from when asked
    #: (`allocations`) with the claims to allocate there.
    node_allocations: dict[
        str, list[Mapping[str, Any] | None] | tuple[Chosen, Sequence[ResourceClaim | None]]
    ] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    #: The claims to allocate when they are the same on every node (no extended-resource
    #: claim): one list for all of Filter's nodes.
    pending: list[ResourceClaim] | None = None
    #: The pod's extended-resource claim (the last of `claims`), if any.
    extended: extended.ExtendedState | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clone(self) -> PodState:
        return self

    def allocations(self, node_name: str) -> list[Mapping[str, Any] | None] | None:
        """The node's allocations from Filter, built from the allocator's choices on first
        use (the node Reserve picks, or every node Score ranks by firstAvailable)."""
        entry = self.node_allocations.get(node_name)
        if not isinstance(entry, tuple):
            return entry
        chosen, claims = entry
        found = iter(chosen.build())
        allocations: list[Mapping[str, Any] | None] = [
            None if c is None else next(found) for c in claims
        ]
        with self.lock:
            self.node_allocations[node_name] = allocations
        return allocations

    def to_allocate(self) -> list[int]:
        """Indices of the claims without an allocation in their status."""
        return [i for i, claim in enumerate(self.claims) if claim.allocation is None]

    @property
    def extended_index(self) -> int:
        return len(self.claims) - 1 if self.extended is not None else -1


class DynamicResources:
    name = NAME

    def __init__(self, args: DynamicResourcesArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.dra: DRAManager = handle.dra()
        self.gates = plugin_gates(handle.features, args)
        self.features = self.gates.allocator
        #: The clock filterTimeout is measured on (replaceable, so tests need no real time).
        self.clock: Callable[[], float] = time.monotonic
        self.selectors = SelectorCache(CEL_CACHE_SIZE)
        self.dra.device_class_matcher = extended.class_matcher(self.selectors)
        self.binder = ClaimBinder(
            handle, self.dra, args.binding_timeout, self.gates.binding_conditions
        )
        #: Each node's pools (what the allocator searches), by node name: (slices revision,
        #: node labels, pools). Pools depend on the slices and the node only, so they are
        #: gathered once per node until a slice, a DeviceTaintRule or the node's labels change,
        #: not for every pod.
        self._pools: dict[str, tuple[int, Mapping[str, str], list[Pool]]] = {}
        #: The slices indexed by node, under the slices revision they are of.
        self._index: tuple[int, SliceIndex] | None = None

    # --- SignPod / PreEnqueue / events ----------------------------------------------------

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Pods with claims are never batched (upstream: whether their claims are
        single-host is not simple to tell)."""
        if pod.pod_claims:
            return None, Status(
                Code.UNSCHEDULABLE, "pods with dra resource claims are not signable"
            )
        return None, None

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.pod_claims:
            return None
        try:
            pod_claims(pod, self.dra.claims)
        except ClaimError as err:
            return _unschedulable(str(err))
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return hints.events(self.dra)

    # --- PreFilter --------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = PodState()
        state.write(_STATE_KEY, s)
        if not pod.pod_claims and not pod.extended_containers:
            return None, _SKIP
        try:
            claims = pod_claims(pod, self.dra.claims)
        except ClaimError as err:
            return None, _unschedulable(str(err))
        s.extended = extended.pre_filter(pod, self.dra)
        if s.extended is not None:
            claims.append(s.extended.claim)
        if not claims:
            return None, _SKIP
        s.infos = [ClaimInfo() for _ in claims]
        to_allocate = 0
        for index, claim in enumerate(claims):
            if claim.allocation is not None:
                try:
                    s.infos[index].available_on = allocation_node_selector(claim.allocation)
                except SelectorError as err:
                    return None, Status.as_error(err)
                continue
            to_allocate += 1
            if self.dra.claims.pending_allocation(claim.uid) is not None:
                return None, _unschedulable(
                    f"resource claim {claim.namespace}/{claim.name} is in the process of "
                    "being allocated"
                )
            if s.extended is not None and index == len(claims) - 1:
                continue  # its requests are the node's (Filter)
            status = self._check_requests(claim)
            if status is not None:
                return None, status
        if to_allocate:
            allocated = self.dra.claims.gather_allocated_state()
            s.slices_revision, slices = self.dra.slices_and_revision(self.gates.taint_rules)
            # Without consumable capacity upstream lists the allocated devices only.
            consumable = self.gates.consumable_capacity
            s.allocator = Allocator(
                self.features,
                AllocatedState(
                    frozenset(allocated.devices),  # type: ignore[arg-type]
                    frozenset(allocated.shared if consumable else ()),  # type: ignore[arg-type]
                    allocated.capacity if consumable else {},  # type: ignore[arg-type]
                ),
                self.dra.device_classes(),
                slices,
                self.selectors,
                self._slice_index(s.slices_revision, slices),
            )
        s.claims = claims
        if s.extended is None:
            s.pending = [claims[i] for i in s.to_allocate()]
        return None, None

    def _slice_index(self, revision: int, slices: list[ResourceSlice]) -> SliceIndex:
        if self._index is None or self._index[0] != revision:
            self._index = (revision, SliceIndex.of(slices))
        return self._index[1]

    def _check_requests(self, claim: ResourceClaim) -> Status | None:
        """Every request's device class must exist (validateDeviceClass)."""
        for request in claim.requests:
            if request.exactly is not None:
                pairs = [(request.name, request.exactly.device_class_name)]
            elif request.first_available:
                pairs = [
                    (f"{request.name}/{sub.name}", sub.device_class_name)
                    for sub in request.first_available
                ]
            else:
                return _unschedulable(
                    f"resource claim {claim.namespace}/{claim.name}, request "
                    f"{request.name}: unknown request type"
                )
            for name, class_name in pairs:
                if not class_name:
                    return Status(Code.ERROR, f"request {name}: unsupported request type")
                if self.dra.device_class(class_name) is None:
                    return _unschedulable(
                        f"request {name}: device class {class_name} does not exist"
                    )
        return None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # --- Filter -----------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState):
            return Status(Code.ERROR, "not found")
        if not s.claims:
            return None
        node = node_info.node
        if node is None:
            return Status(Code.ERROR, "node not found")
        node_claim = None
        if s.extended is not None:
            node_claim, reason = extended.for_node(s.extended, pod, node_info)
            if reason is not None:
                return _unschedulable(reason)
            with s.lock:
                s.extended.nodes[node.name] = node_claim
            if node_claim is None and len(s.claims) == 1:
                return None  # the node offers the resources itself
        unavailable: list[int] = []
        if s.pending is None or len(s.pending) != len(s.claims):  # some claim is allocated
            unavailable = [
                index
                for index, info in enumerate(s.infos)
                if info.available_on is not None
                and not info.available_on.matches(node.name, node.labels)
            ]
            unavailable.extend(
                index
                for index, claim in enumerate(s.claims)
                if claim.allocation is not None
                and index not in unavailable
                and self.binder.blocked(claim)
            )
        allocations: (
            list[Mapping[str, Any] | None] | tuple[Chosen, Sequence[ResourceClaim | None]] | None
        ) = None
        if s.allocator is not None:
            claims: Sequence[ResourceClaim | None]
            if s.pending is not None:
                claims = wanted = s.pending
            else:
                claims = [
                    (node_claim.claim if node_claim is not None else None)
                    if i == s.extended_index
                    else s.claims[i]
                    for i in s.to_allocate()
                ]
                wanted = [c for c in claims if c is not None]
            timeout = self.gates.filter_timeout
            deadline = None if timeout is None else (self.clock, self.clock() + timeout)
            try:
                pools = self._node_pools(s, node.name, node.labels)
                outcome = s.allocator.allocate(
                    node.name, node.labels, wanted, pools, deadline, defer=True
                )
            except AllocationTimeout:
                # Potentially transient: an error, so the pod retries through backoff.
                return Status(Code.ERROR, f"node {node.name}: timed out trying to allocate devices")
            except NodeAllocationError as err:
                return _unschedulable(str(err))
            except AllocationError as err:
                return Status.as_error(err)
            if outcome.chosen is not None:
                allocations = (outcome.chosen, claims)
            elif outcome.allocations is None or len(outcome.allocations) != len(wanted):
                return _CANNOT_ALLOCATE
            else:
                found = iter(outcome.allocations)
                allocations = [None if c is None else next(found) for c in claims]
        if unavailable:
            with s.lock:
                s.unavailable.update(unavailable)
            return _unschedulable("resourceclaim not available on the node")
        if allocations is not None:
            with s.lock:
                s.node_allocations[node.name] = allocations
        return None

    def _node_pools(self, s: PodState, name: str, labels: Mapping[str, str]) -> list[Pool]:
        assert s.allocator is not None
        cached = self._pools.get(name)
        if (
            cached is not None
            and cached[0] == s.slices_revision
            and (cached[1] is labels or cached[1] == labels)
        ):
            return cached[2]
        pools = s.allocator.pools_for(name, labels)
        # The node's own labels: a node's update brings new ones, so mostly `is` decides.
        self._pools[name] = (s.slices_revision, labels, pools)
        return pools

    # --- PostFilter -------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Deallocates one claim that was unavailable on some node and is reserved for no
        other pod, picked at random as upstream, so the next attempt may allocate anew."""
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState):
            return None, Status(Code.ERROR, "not found")
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE)
        candidates = [i for i in s.unavailable if i != s.extended_index]
        random.shuffle(candidates)
        for index in candidates:
            claim = s.claims[index]
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                try:
                    self.handle.api.deallocate_resource_claim(claim)
                except Exception as err:
                    return None, Status.as_error(err)
                return None, Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
        if s.extended is not None and not s.extended.in_memory:
            # Made in an earlier cycle (allocated or with requests): deleted, to start anew.
            try:
                self.handle.api.delete_resource_claim(s.extended.claim)
            except Exception as err:
                return None, Status.as_error(err)
            return None, Status(Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
        return None, Status(Code.UNSCHEDULABLE)

    # --- Score ------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        """computeScore: for each firstAvailable request, 8 minus the index of the subrequest
        the node's allocation used."""
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState) or not s.claims or node_info.node is None:
            return 0
        if not any(r.first_available for c in s.claims for r in c.requests):
            return 0  # nothing to rank: no need to build the node's allocations
        allocations = s.allocations(node_info.node.name)
        if allocations is None:
            return 0
        score = 0
        pending = iter(allocations)
        for claim in s.claims:
            if claim.allocation is not None:
                allocation: Mapping[str, Any] | None = claim.allocation
            else:
                allocation = next(pending, _MISSING)
                if allocation is _MISSING:
                    return Status(
                        Code.ERROR,
                        f"number of allocations {len(allocations)} is smaller than number of "
                        "claims needing allocation",
                    )
            if allocation is None:
                continue  # the extended-resource claim this node does not need
            used = {
                r.get("request", "")
                for r in (allocation.get("devices") or {}).get("results") or ()
                if r.get("request", "").count("/") == 1
            }
            for request in claim.requests:
                for i, sub in enumerate(request.first_available):
                    if f"{request.name}/{sub.name}" in used:
                        score += FIRST_AVAILABLE_MAX - i
        return score

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        """Zero on every row at once when no claim has a firstAvailable list (most pods have
        no claim at all), so such pods cost no per-node call; else None, node by node."""
        s = state.get(_STATE_KEY)
        if isinstance(s, PodState) and any(r.first_available for c in s.claims for r in c.requests):
            return None
        return np.zeros(len(rows), np.int64)

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: ScoreColumn) -> Status | None:
        default_normalize_score(scores, reverse=False)
        return None

    # --- Reserve / Unreserve ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState):
            return Status(Code.ERROR, "not found")
        indices = s.to_allocate()
        if not indices or s.allocator is None:
            return None
        allocations = s.allocations(node_name)
        if not allocations:
            if indices == [s.extended_index]:
                return None  # the node offers the extended resources itself
            return Status(Code.ERROR, "claim allocation not found for node")
        if len(allocations) != len(indices):
            return Status(
                Code.ERROR,
                f"internal error, have {len(allocations)} allocations, {len(indices)} claims "
                f"to allocate, want {len(indices)} claims",
            )
        for index, allocation in zip(indices, allocations, strict=True):
            if allocation is None:
                continue
            s.infos[index].allocation = allocation
            claim = s.claims[index]
            if index == s.extended_index and s.extended is not None:
                chosen = s.extended.nodes.get(node_name)
                if chosen is None:
                    return Status(
                        Code.ERROR, f"extended resource claim not found for node {node_name}"
                    )
                claim = chosen.claim
            try:
                self.dra.claims.signal_pending_allocation(
                    claim.uid, dataclasses.replace(claim, allocation=allocation)
                )
            except LookupError as err:
                return Status(
                    Code.ERROR,
                    f"internal error, couldn't signal allocation for claim {claim.name}: {err}",
                )
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Ends this pod's share of in-flight allocations (restoring the assumed claim when it
        was the last), and removes the pod from reservedFor where PreBind already wrote it."""
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState) or not s.claims:
            return
        for claim in s.claims:
            if self.dra.claims.maybe_remove_pending_allocation(claim.uid, force=False):
                self.dra.claims.restore(claim.namespace, claim.name)
            if claim.allocation is not None and is_reserved_for_pod(pod, claim):
                self.binder.unreserve(pod, claim)
        if s.extended is not None:
            self.dra.claims.maybe_remove_pending_allocation(s.extended.uid, force=True)
            created, s.extended.created = s.extended.created, None
            if created is not None:
                # Written by PreBind: deleted so that no claim outlives the attempt.
                with contextlib.suppress(Exception):
                    self.handle.api.delete_resource_claim(created)

    # --- PreBindPreFlight / PreBind ---------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState):
            return Status(Code.ERROR, "not found")
        return None if s.claims else _SKIP

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState):
            return Status(Code.ERROR, "not found")
        if not s.claims:
            return None
        ext = s.extended
        chosen = ext.nodes.get(node_name) if ext is not None else None
        allocation = s.infos[s.extended_index].allocation if ext is not None else None
        if ext is not None and (chosen is None or allocation is None):
            # The node offers the extended resources itself: no claim for them.
            claims, allocations = s.claims[:-1], [i.allocation for i in s.infos[:-1]]
            return self.binder.pre_bind(pod, node_name, claims, allocations) if claims else None
        if ext is not None and chosen is not None and ext.in_memory:
            try:
                ext.created = self.handle.api.create_resource_claim(
                    pod.namespace, extended.create_body(pod, chosen)
                )
            except Exception as err:
                metrics.resourceclaim_creates.labels("failure", "false", "", "Pod").inc()
                return Status(
                    Code.ERROR, f"create claim for extended resources {pod.namespace}/: {err}"
                )
            metrics.resourceclaim_creates.labels("success", "false", "", "Pod").inc()
            s.claims[s.extended_index] = ext.created
        status = self.binder.pre_bind(pod, node_name, s.claims, [i.allocation for i in s.infos])
        if status is not None or ext is None or chosen is None:
            return status
        self.dra.claims.maybe_remove_pending_allocation(ext.uid, force=True)
        claim = s.claims[s.extended_index]
        patch = {
            "status": {
                "extendedResourceClaimStatus": {
                    "requestMappings": chosen.mappings,
                    "resourceClaimName": claim.name,
                }
            }
        }
        try:
            self.handle.api.patch_pod_status(pod, patch)
        except Exception as err:
            return Status(
                Code.ERROR,
                f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {err}",
            )
        return None
