"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; scoring strategies.

Filter is vectorised over the NodeTable columns; scoring is vectorised for LeastAllocated and
MostAllocated and per node for RequestedToCapacityRatio.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Node, Pod
from scheduler.api.resources import Resource, is_extended_resource_name
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    EVENT_ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import Handle, ScoreColumn
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins.helper.resource_allocation import (
    least_allocated,
    least_allocated_matrix,
    most_allocated,
    most_allocated_matrix,
    node_vectors,
    pod_requests,
    requested_to_capacity_ratio,
    table_matrices,
)
from scheduler.plugins.node_resources_fit.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    FitArgs,
)

NAME = "NodeResourcesFit"
_PRE_SCORE_KEY = "PreScore" + NAME


def _insufficient(
    req: Resource, info: NodeInfo, ignored: frozenset[str], groups: frozenset[str]
) -> tuple[list[str], bool]:
    """fitsRequest: the failure reasons, and whether even an empty node could not fit."""
    reasons: list[str] = []
    unresolvable = False
    alloc, used = info.allocatable, info.requested
    if len(info.pods) + 1 > alloc.allowed_pod_number:
        reasons.append("Too many pods")
    if not (req.milli_cpu or req.memory or req.ephemeral_storage or req.scalar):
        return reasons, unresolvable
    if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        reasons.append("Insufficient cpu")
        unresolvable |= req.milli_cpu > alloc.milli_cpu
    if req.memory > 0 and req.memory > alloc.memory - used.memory:
        reasons.append("Insufficient memory")
        unresolvable |= req.memory > alloc.memory
    if req.ephemeral_storage > 0 and req.ephemeral_storage > (
        alloc.ephemeral_storage - used.ephemeral_storage
    ):
        reasons.append("Insufficient ephemeral-storage")
        unresolvable |= req.ephemeral_storage > alloc.ephemeral_storage
    for name in sorted(req.scalar):
        quantity = req.scalar[name]
        if quantity == 0 or _ignored(name, ignored, groups):
            continue
        available = alloc.scalar.get(name, 0)
        if quantity > available - used.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable |= quantity > available
    return reasons, unresolvable


def _ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(groups) and name.split("/", 1)[0] in groups)


class NodeResourcesFit:
    name = NAME

    def __init__(self, args: FitArgs, handle: Handle) -> None:
        self.args = args
        self.resources = args.resources
        weights = [r.weight for r in args.resources]
        if args.strategy == LEAST_ALLOCATED:
            self._scorer = least_allocated(weights)
        elif args.strategy == MOST_ALLOCATED:
            self._scorer = most_allocated(weights)
        else:
            self._scorer = requested_to_capacity_ratio(weights, args.shape)
        self._weights = weights
        self._resize_events = handle.features.enabled("InPlacePodVerticalScaling")

    # --- events -----------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        events = [
            ClusterEventWithHint(EVENT_ASSIGNED_POD_DELETE, self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                ),
                self.is_schedulable_after_node_change,
            ),
        ]
        if self._resize_events:
            events += [
                ClusterEventWithHint(
                    ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
                    self.is_schedulable_after_pod_scale_down,
                ),
                ClusterEventWithHint(
                    ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_SCALE_DOWN),
                ),
            ]
        return events

    @staticmethod
    def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if isinstance(old, Pod) and not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_scale_down(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, Pod) or not isinstance(new, Pod):
            return QueueingHint.QUEUE
        if not new.node_name:
            return QueueingHint.QUEUE_SKIP
        want, before, after = pod.requests, old.requests, new.requests
        decreased = (
            (want.milli_cpu and after.milli_cpu < before.milli_cpu)
            or (want.memory and after.memory < before.memory)
            or (want.ephemeral_storage and after.ephemeral_storage < before.ephemeral_storage)
            or any(
                after.scalar.get(k, 0) < before.scalar.get(k, 0)
                for k, v in want.scalar.items()
                if v
            )
        )
        return QueueingHint.QUEUE if decreased else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        reasons, _ = _insufficient(
            pod.requests,
            NodeInfo(new),
            self.args.ignored_resources,
            self.args.ignored_resource_groups,
        )
        if reasons:
            return QueueingHint.QUEUE_SKIP
        if not isinstance(old, Node):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if _increased(pod.requests, old, new) else QueueingHint.QUEUE_SKIP

    # --- filter -----------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        reasons, unresolvable = _insufficient(
            pod.requests, node_info, self.args.ignored_resources, self.args.ignored_resource_groups
        )
        if not reasons:
            return None
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return Status(code, *reasons)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        req = pod.requests
        mask: BoolColumn = table.pod_count + 1 <= table.alloc_pods
        if not (req.milli_cpu or req.memory or req.ephemeral_storage or req.scalar):
            return mask
        if req.milli_cpu > 0:
            mask &= req.milli_cpu <= table.alloc_cpu - table.req_cpu
        if req.memory > 0:
            mask &= req.memory <= table.alloc_mem - table.req_mem
        if req.ephemeral_storage > 0:
            mask &= req.ephemeral_storage <= table.alloc_eph - table.req_eph
        for name, quantity in req.scalar.items():
            if quantity == 0 or _ignored(
                name, self.args.ignored_resources, self.args.ignored_resource_groups
            ):
                continue
            alloc, used = table.scalar(name)
            mask &= quantity <= alloc - used
        return mask

    # --- score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, pod_requests(pod, self.resources, use_requested=False))
        return None

    def _requests(self, state: CycleState, pod: Pod) -> list[int]:
        requests = state.get(_PRE_SCORE_KEY)
        if requests is None:
            requests = pod_requests(pod, self.resources, use_requested=False)
        return requests  # type: ignore[no-any-return]

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        if not self.resources:
            return Status(Code.ERROR, "resources not found")
        requests = self._requests(state, pod)
        requested, allocated, allocatable = node_vectors(
            node_info, self.resources, requests, use_requested=False
        )
        return self._scorer(requested, allocated, allocatable)

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        if self.args.strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED) or not self.resources:
            return None
        requests = self._requests(state, pod)
        requested, _, allocatable = table_matrices(
            table, rows, self.resources, requests, use_requested=False
        )
        if self.args.strategy == LEAST_ALLOCATED:
            return least_allocated_matrix(requested, allocatable, self._weights)
        return most_allocated_matrix(requested, allocatable, self._weights)

    def score_extensions(self) -> None:
        return None


def _increased(req: Resource, old: Node, new: Node) -> bool:
    """haveAnyRequestedResourcesIncreased: more room for something the pod asks for."""
    a, b = old.allocatable, new.allocatable
    if b.allowed_pod_number > a.allowed_pod_number:
        return True
    if req.milli_cpu and b.milli_cpu > a.milli_cpu:
        return True
    if req.memory and b.memory > a.memory:
        return True
    if req.ephemeral_storage and b.ephemeral_storage > a.ephemeral_storage:
        return True
    return any(v and b.scalar.get(k, 0) > a.scalar.get(k, 0) for k, v in req.scalar.items())
