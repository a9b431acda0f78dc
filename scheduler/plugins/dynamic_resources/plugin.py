"""kube-scheduler v1.37's DynamicResources (dynamicresources.go): a pod's ResourceClaims must
be allocated, or allocatable on the node, from the devices drivers publish in ResourceSlices.
PreEnqueue waits for the claims to exist, PreFilter gathers them and builds the structured
allocator, Filter allocates per node, Score ranks firstAvailable choices, Reserve puts the
chosen allocation in flight, PreBind (binding.py) writes it and waits for binding conditions,
Unreserve and PostFilter release what an attempt held. Extended resources backed by DRA and
PodGroup-level claims (gates DRAExtendedResource, DRAWorkloadResourceClaims) are not covered
here yet: a pod using only those is not seen by this plugin."""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework import (
    ClusterEventWithHint,
    Code,
    CycleState,
    DRAManager,
    Handle,
    NodeInfo,
    NodeSelector,
    NodeToStatus,
    Pod,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterResult,
    ResourceClaim,
    ScoreColumn,
    ScoreExtensions,
    SelectorError,
    SignFragment,
    Status,
)
from scheduler.plugins.dynamic_resources import hints
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    Features,
    NodeAllocationError,
    Pool,
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
from scheduler.plugins.helper.scores import default_normalize_score

NAME = "DynamicResources"
_STATE_KEY = NAME
_SKIP = Status(Code.SKIP)
#: resourceapi.FirstAvailableDeviceRequestMaxSize: the score of a first choice.
FIRST_AVAILABLE_MAX = 8
#: Upstream's LRU of compiled CEL expressions holds 10.
CEL_CACHE_SIZE = 10


def _unschedulable(reason: str) -> Status:
    """statusUnschedulable: every rejection of this plugin is UnschedulableAndUnresolvable."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)


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
    node_allocations: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clone(self) -> PodState:
        return self

    def to_allocate(self) -> list[int]:
        """Indices of the claims without an allocation in their status."""
        return [i for i, claim in enumerate(self.claims) if claim.allocation is None]


class DynamicResources:
    name = NAME

    def __init__(self, args: DynamicResourcesArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.dra: DRAManager = handle.dra()
        self.features = Features()
        self.selectors = SelectorCache(CEL_CACHE_SIZE)
        self.binder = ClaimBinder(handle, self.dra, args.binding_timeout)
        #: Each node's pools (what the allocator searches), by node name: (slices revision,
        #: node labels, pools). Pools depend on the slices and the node only, so they are
        #: gathered once per node until a slice, a DeviceTaintRule or the node's labels change,
        #: not for every pod.
        self._pools: dict[str, tuple[int, Mapping[str, str], list[Pool]]] = {}

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
        if not pod.pod_claims:
            return None, _SKIP
        try:
            claims = pod_claims(pod, self.dra.claims)
        except ClaimError as err:
            return None, _unschedulable(str(err))
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
            status = self._check_requests(claim)
            if status is not None:
                return None, status
        if to_allocate:
            allocated = self.dra.claims.gather_allocated_state()
            s.slices_revision, slices = self.dra.slices_and_revision()
            s.allocator = Allocator(
                self.features,
                AllocatedState(
                    frozenset(allocated.devices),  # type: ignore[arg-type]
                    frozenset(allocated.shared),  # type: ignore[arg-type]
                    allocated.capacity,  # type: ignore[arg-type]
                ),
                self.dra.device_classes(),
                slices,
                self.selectors,
            )
        s.claims = claims
        return None, None

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
        allocations: list[Mapping[str, Any]] | None = None
        if s.allocator is not None:
            claims = [s.claims[i] for i in s.to_allocate()]
            try:
                pools = self._node_pools(s, node.name, node.labels)
                outcome = s.allocator.allocate(node.name, node.labels, claims, pools)
            except NodeAllocationError as err:
                return _unschedulable(str(err))
            except AllocationError as err:
                return Status.as_error(err)
            if outcome.allocations is None or len(outcome.allocations) != len(claims):
                return _unschedulable("cannot allocate all claims")
            allocations = list(outcome.allocations)
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
        if cached is not None and cached[0] == s.slices_revision and cached[1] == labels:
            return cached[2]
        pools = s.allocator.pools_for(name, labels)
        self._pools[name] = (s.slices_revision, dict(labels), pools)
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
        candidates = list(s.unavailable)
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
        return None, Status(Code.UNSCHEDULABLE)

    # --- Score ------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        """computeScore: for each firstAvailable request, 8 minus the index of the subrequest
        the node's allocation used."""
        s = state.get(_STATE_KEY)
        if not isinstance(s, PodState) or not s.claims or node_info.node is None:
            return 0
        allocations = s.node_allocations.get(node_info.node.name)
        if allocations is None:
            return 0
        score = 0
        pending = iter(allocations)
        for claim in s.claims:
            allocation = claim.allocation if claim.allocation is not None else next(pending, None)
            if allocation is None:
                return Status(
                    Code.ERROR,
                    f"number of allocations {len(allocations)} is smaller than number of "
                    "claims needing allocation",
                )
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
        allocations = s.node_allocations.get(node_name)
        if not allocations:
            return Status(Code.ERROR, "claim allocation not found for node")
        if len(allocations) != len(indices):
            return Status(
                Code.ERROR,
                f"internal error, have {len(allocations)} allocations, {len(indices)} claims "
                f"to allocate, want {len(indices)} claims",
            )
        for index, allocation in zip(indices, allocations, strict=True):
            s.infos[index].allocation = allocation
            claim = s.claims[index]
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
        return self.binder.pre_bind(pod, node_name, s.claims, [i.allocation for i in s.infos])
