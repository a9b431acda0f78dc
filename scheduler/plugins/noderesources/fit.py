"""NodeResourcesFit: the pod's requests must fit in the node's free allocatable; resource scoring.

Filter compares the pod's requests with allocatable minus what the node's pods already request;
Score applies the configured strategy (LeastAllocated, MostAllocated or
RequestedToCapacityRatio). Both have numpy forms over the NodeTable that give the same answers
as the per-node methods.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    DEVICE_CLASS_RESOURCE_PREFIX,
    ActionType,
    BoolColumn,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    DeviceClass,
    DRAManager,
    DRAScoreState,
    EventResource,
    Handle,
    Node,
    NodeInfo,
    NodeTable,
    Pod,
    PreFilterResult,
    QueueingHint,
    Resource,
    ScoreColumn,
    SignFragment,
    Status,
    StatusColumn,
    dra_score_state,
    is_dra_extended_resource_name,
    is_extended_resource_name,
    is_scalar_resource_name,
    signers,
)
from scheduler.plugins.noderesources.deletion_hint import WaitingPreemptors
from scheduler.plugins.noderesources.fit_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    FitArgs,
)
from scheduler.plugins.noderesources.requests import (
    node_vectors,
    pod_request_list,
    table_matrices,
)
from scheduler.plugins.noderesources.resource_allocation import (
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio,
    Scorer,
)

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
#: The DRA view PreScore reads when a scored resource is an extended resource backed by DRA.
DRA_SCORE_STATE_KEY = PRE_SCORE_STATE_KEY + "DRA"
DELEGATED_STATE_KEY = "Delegated" + NAME
#: kube-pysched's switch for DynamicResources (docs/dra.md): with it off no DeviceClass is
#: watched, so no extended resource is left to DRA.
DRA_SWITCH = "PyschedDynamicResources"
NOT_SIGNABLE = "signature disabled when dra extended resources are used in the cluster"
TOO_MANY_PODS = "Too many pods"
MAX_BATCH_CHECKS = 31  # two bits per reason in an int64 key


def is_ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    """An extended resource the args tell Filter not to check (by name or by domain group)."""
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(groups) and name.split("/", 1)[0] in groups)


def insufficient_resources(
    request: Resource,
    info: NodeInfo,
    ignored: frozenset[str] = frozenset(),
    groups: frozenset[str] = frozenset(),
    delegated: frozenset[str] = frozenset(),
) -> tuple[list[str], bool]:
    """fitsRequest: failure reasons, and whether one of them holds even on an empty node."""
    return insufficient_counts(
        request, info.allocatable, info.requested, len(info.pods), ignored, groups, delegated
    )


def insufficient_counts(
    request: Resource,
    alloc: Resource,
    used: Resource,
    pod_count: int,
    ignored: frozenset[str] = frozenset(),
    groups: frozenset[str] = frozenset(),
    delegated: frozenset[str] = frozenset(),
) -> tuple[list[str], bool]:
    """`insufficient_resources` from what it reads of a node: its allocatable, the requests of
    its pods and how many there are (preemption's dry run counts victims out without copying
    the node). `delegated`: extended resources a DeviceClass serves, left to DynamicResources
    on a node that does not offer them (shouldDelegateResourceToDRA)."""
    reasons: list[str] = []
    unresolvable = False
    if pod_count + 1 > alloc.allowed_pod_number:
        reasons.append(TOO_MANY_PODS)
    cpu, memory, storage, scalar = (
        request.milli_cpu,
        request.memory,
        request.ephemeral_storage,
        request.scalar,
    )
    if cpu == 0 and memory == 0 and storage == 0 and not scalar:
        return reasons, unresolvable
    if cpu > 0 and cpu > alloc.milli_cpu - used.milli_cpu:
        reasons.append("Insufficient cpu")
        unresolvable = unresolvable or cpu > alloc.milli_cpu
    if memory > 0 and memory > alloc.memory - used.memory:
        reasons.append("Insufficient memory")
        unresolvable = unresolvable or memory > alloc.memory
    if storage > 0 and storage > alloc.ephemeral_storage - used.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
        unresolvable = unresolvable or storage > alloc.ephemeral_storage
    # Go walks a map here (random order); sorting keeps our messages stable.
    for name in sorted(scalar):
        quantity = scalar[name]
        if quantity <= 0 or is_ignored(name, ignored, groups):
            continue
        capacity = alloc.scalar.get(name, 0)
        if capacity <= 0 and name in delegated:
            continue
        if quantity > capacity - used.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable = unresolvable or quantity > capacity
    return reasons, unresolvable


def _any_requested_resource_increased(request: Resource, old: Node, new: Node) -> bool:
    """haveAnyRequestedResourcesIncreased: the node now offers more of something the pod needs."""
    before, after = old.allocatable, new.allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if (
        request.milli_cpu == 0
        and request.memory == 0
        and request.ephemeral_storage == 0
        and not request.scalar
    ):
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        quantity != 0 and after.scalar.get(name, 0) > before.scalar.get(name, 0)
        for name, quantity in request.scalar.items()
    )


def _enough_relevant_resources_decreased(target: Pod, old: Pod, new: Pod) -> bool:
    """haveEnoughRelevantResourcesDecreased: a bound pod gave back something the target needs."""
    if not new.node_name:
        return False
    want, before, after = target.requests, old.requests, new.requests
    if want.milli_cpu and before.milli_cpu > after.milli_cpu:
        return True
    if want.memory and before.memory > after.memory:
        return True
    if want.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
        return True
    return any(
        quantity
        and is_scalar_resource_name(name)
        and before.scalar.get(name, 0) > after.scalar.get(name, 0)
        for name, quantity in want.scalar.items()
    )


def _build_scorer(args: FitArgs) -> Scorer:
    weights = [spec.weight for spec in args.resources]
    if args.strategy == LEAST_ALLOCATED:
        return LeastAllocated(weights)
    if args.strategy == MOST_ALLOCATED:
        return MostAllocated(weights)
    return RequestedToCapacityRatio(weights, args.shape)


class NodeResourcesFit:
    """Filter on free allocatable and Score by the configured resource strategy."""

    name = NAME

    def __init__(self, args: FitArgs, handle: Handle) -> None:
        self.args = args
        self.resources = args.resources
        self.scorer = _build_scorer(args)
        self._ignored = args.ignored_resources
        self._groups = args.ignored_resource_groups
        self._queueing_hints = handle.features.enabled("SchedulerQueueingHints")
        self._in_place_resize = handle.features.enabled("InPlacePodVerticalScaling")
        self._waiting = WaitingPreemptors(handle, self._fits)
        #: Extended resources backed by DRA (DRAExtendedResource, GA in v1.37).
        self._dra: DRAManager | None = handle.dra() if handle.features.enabled(DRA_SWITCH) else None
        #: The scored resources that could be extended resources backed by DRA, found once:
        #: PreScore reads DRA only when there is one.
        self._dra_scored = [r.name for r in self.resources if is_dra_extended_resource_name(r.name)]

    def delegated(self, pod: Pod) -> frozenset[str]:
        """The pod's extended resources some DeviceClass serves: on a node without them,
        DynamicResources allocates devices instead."""
        if self._dra is None or not pod.requests.scalar:
            return frozenset()
        names = [
            name
            for name, quantity in pod.requests.scalar.items()
            if quantity > 0 and is_dra_extended_resource_name(name)
        ]
        if not names:
            return frozenset()
        classes = self._dra.extended_resource_classes()
        return frozenset(name for name in names if name in classes)

    # --- events -----------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility and score depend on the pod's requests (containers and overhead); a pod
        whose extended resources DRA may serve is not signable (upstream)."""
        if self.delegated(pod):
            return None, Status(Code.UNSCHEDULABLE, NOT_SIGNABLE)
        return [SignFragment(signers.RESOURCES, signers.resources(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
        if not self._queueing_hints:
            # Without hints, node adds may have been filtered out earlier, so taint and label
            # updates must also requeue (kubernetes#109437).
            node_actions |= ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL
        events = [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
                self.is_schedulable_after_assigned_pod_delete,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, node_actions),
                self.is_schedulable_after_node_change,
            ),
        ]
        if self._dra is not None:
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                    self.is_schedulable_after_device_class_event,
                )
            )
        if self._in_place_resize:
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
                    self.is_schedulable_after_assigned_pod_scale_down,
                )
            )
            # The pod itself shrinking can only help: always requeue.
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_SCALE_DOWN)
                )
            )
        return events

    @staticmethod
    def is_schedulable_after_device_class_event(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """isSchedulableAfterDeviceClassEvent: a class added, or one whose extended resource
        name changed, that serves a resource the pod asks for."""
        if not isinstance(new, DeviceClass):
            return QueueingHint.QUEUE
        if isinstance(old, DeviceClass):
            if old.extended_resource_name == new.extended_resource_name:
                return QueueingHint.QUEUE_SKIP
        elif DEVICE_CLASS_RESOURCE_PREFIX + new.name in pod.requests.scalar:
            return QueueingHint.QUEUE
        name = new.extended_resource_name
        if name and name in pod.requests.scalar:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_assigned_pod_delete(
        self, pod: Pod, old: Any, new: Any
    ) -> QueueingHint:
        deleted = old if isinstance(old, Pod) else new
        if not isinstance(deleted, Pod):
            return QueueingHint.QUEUE
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        # kube-pysched's one departure from kube-scheduler's hint (deletion_hint.py).
        if self._waiting.deletion_cannot_help(pod, deleted):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _fits(self, request: Resource, allocatable: Resource, used: Resource, pods: int) -> bool:
        reasons, _ = insufficient_counts(
            request, allocatable, used, pods, self._ignored, self._groups
        )
        return not reasons

    # The name the rest of the code base has used for this hint.
    is_schedulable_after_pod_deleted = is_schedulable_after_assigned_pod_delete

    @staticmethod
    def is_schedulable_after_assigned_pod_scale_down(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, Pod) or not isinstance(new, Pod):
            return QueueingHint.QUEUE
        if _enough_relevant_resources_decreased(pod, old, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        # isFit: the pod alone on the new node, with no resources ignored.
        reasons, _ = insufficient_resources(pod.requests, NodeInfo(new))
        if reasons:
            return QueueingHint.QUEUE_SKIP
        if not isinstance(old, Node):
            return QueueingHint.QUEUE
        if _any_requested_resource_increased(pod.requests, old, new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- filter -----------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, pod.requests)
        delegated = self.delegated(pod)
        if delegated:
            state.write(DELEGATED_STATE_KEY, delegated)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    @staticmethod
    def _pod_request(state: CycleState, pod: Pod) -> Resource:
        request = state.get(PRE_FILTER_STATE_KEY)
        return request if isinstance(request, Resource) else pod.requests

    @staticmethod
    def _delegated(state: CycleState) -> frozenset[str]:
        delegated = state.get(DELEGATED_STATE_KEY)
        return delegated if isinstance(delegated, frozenset) else frozenset()

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self.filter_counts(
            state, pod, node_info.allocatable, node_info.requested, len(node_info.pods)
        )

    def filter_counts(
        self, state: CycleState, pod: Pod, allocatable: Resource, requested: Resource, pods: int
    ) -> Status | None:
        """Filter on a node known only by what this plugin reads of it (a PodCountingFilter)."""
        reasons, unresolvable = insufficient_counts(
            self._pod_request(state, pod),
            allocatable,
            requested,
            pods,
            self._ignored,
            self._groups,
            self._delegated(state),
        )
        if not reasons:
            return None
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return Status(code, *reasons)

    def fit_request(self, state: CycleState, pod: Pod) -> Resource:
        """The amounts `filter_counts` checks (a RequestFitFilter): the positive requests, less
        the extended resources the args ignore."""
        request = self._pod_request(state, pod)
        delegated = self._delegated(state)
        # A delegated resource is no room check (a node without it passes): left out here;
        # DynamicResources, whose Filter reads devices, keeps such a cycle off the columns.
        checked = {
            name: quantity
            for name, quantity in request.scalar.items()
            if quantity > 0
            and not is_ignored(name, self._ignored, self._groups)
            and name not in delegated
        }
        return Resource(
            max(request.milli_cpu, 0),
            max(request.memory, 0),
            max(request.ephemeral_storage, 0),
            scalar=checked,
        )

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        # The same checks as `_shortages`, kept apart: this runs every cycle over all rows and
        # needs neither the reasons nor the "short even when empty" columns (deriving it from
        # `_shortages` made it 1.7x slower at 5000 nodes).
        request = self._pod_request(state, pod)
        fits: BoolColumn = table.pod_count + 1 <= table.alloc_pods
        cpu, memory, storage = request.milli_cpu, request.memory, request.ephemeral_storage
        if cpu > 0:
            fits &= cpu <= table.alloc_cpu - table.req_cpu
        if memory > 0:
            fits &= memory <= table.alloc_mem - table.req_mem
        if storage > 0:
            fits &= storage <= table.alloc_eph - table.req_eph
        delegated = self._delegated(state)
        for name, quantity in request.scalar.items():
            if quantity <= 0 or is_ignored(name, self._ignored, self._groups):
                continue
            capacity, used = table.scalar(name)
            if name in delegated:
                fits &= (capacity <= 0) | (quantity <= capacity - used)
            else:
                fits &= quantity <= capacity - used
        return fits

    def filter_batch_statuses(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> StatusColumn | None:
        """`filter`'s statuses for many rows: rows short of the same resources (and equally
        resolvable) share one Status, so a pod that fits nowhere is explained without a
        Python call per node."""
        checks = self._shortages(self._pod_request(state, pod), table, rows, self._delegated(state))
        if len(checks) > MAX_BATCH_CHECKS:
            return None
        key = np.zeros(len(rows), np.int64)
        for bit, (_, short, short_when_empty) in enumerate(checks):
            key |= short.astype(np.int64) << (2 * bit)
            key |= (short & short_when_empty).astype(np.int64) << (2 * bit + 1)
        distinct, inverse = np.unique(key, return_inverse=True)
        statuses: list[Status | None] = []
        for k in distinct.tolist():
            reasons = [reason for b, (reason, _, _) in enumerate(checks) if k >> (2 * b) & 1]
            if not reasons:
                statuses.append(None)
                continue
            unresolvable = any(k >> (2 * b + 1) & 1 for b in range(len(checks)))
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            statuses.append(Status(code, *reasons))
        return StatusColumn(statuses, inverse.ravel().astype(np.intp, copy=False))

    def _shortages(
        self,
        request: Resource,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
        delegated: frozenset[str] = frozenset(),
    ) -> list[tuple[str, BoolColumn, BoolColumn]]:
        """insufficient_resources over rows: (reason, short of it, short even when empty),
        in the reasons' order."""
        pods_short = table.pod_count[rows] + 1 > table.alloc_pods[rows]
        checks = [(TOO_MANY_PODS, pods_short, np.zeros(len(rows), np.bool_))]
        cpu, memory, storage = request.milli_cpu, request.memory, request.ephemeral_storage
        if cpu == 0 and memory == 0 and storage == 0 and not request.scalar:
            return checks
        plain = (
            ("cpu", cpu, table.alloc_cpu, table.req_cpu),
            ("memory", memory, table.alloc_mem, table.req_mem),
            ("ephemeral-storage", storage, table.alloc_eph, table.req_eph),
        )
        for name, quantity, alloc, used in plain:
            if quantity > 0:
                capacity = alloc[rows]
                short = quantity > capacity - used[rows]
                checks.append((f"Insufficient {name}", short, quantity > capacity))
        for name in sorted(request.scalar):
            quantity = request.scalar[name]
            if quantity <= 0 or is_ignored(name, self._ignored, self._groups):
                continue
            alloc, used = table.scalar(name)
            capacity = alloc[rows]
            short = quantity > capacity - used[rows]
            short_when_empty = quantity > capacity
            if name in delegated:
                offered = capacity > 0
                short, short_when_empty = short & offered, short_when_empty & offered
            checks.append((f"Insufficient {name}", short, short_when_empty))
        return checks

    # --- score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, pod_request_list(pod, self.resources, False))
        if self._dra_scored:
            dra = dra_score_state(self._dra, self._dra_scored)
            if dra is not None:
                state.write(DRA_SCORE_STATE_KEY, dra)
        return None

    def _dra_score_state(self, state: CycleState) -> DRAScoreState | None:
        found = state.get(DRA_SCORE_STATE_KEY)
        return found if isinstance(found, DRAScoreState) else None

    def _score_requests(self, state: CycleState, pod: Pod) -> list[int]:
        requests = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(requests, list):
            return requests
        return pod_request_list(pod, self.resources, False)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        if not self.resources:
            return Status(Code.ERROR, "resources not found")
        requested, allocated, allocatable = node_vectors(
            node_info,
            self.resources,
            self._score_requests(state, pod),
            False,
            self._dra_score_state(state),
        )
        return self.scorer.score(requested, allocated, allocatable)

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        if not self.resources or self._dra_score_state(state) is not None:
            return None  # per node: the error, or devices counted from the node's slices
        requested, allocated, allocatable = table_matrices(
            table, rows, self.resources, self._score_requests(state, pod), False
        )
        return self.scorer.score_matrix(requested, allocated, allocatable)

    def score_extensions(self) -> None:
        return None
