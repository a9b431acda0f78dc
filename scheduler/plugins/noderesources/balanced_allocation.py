"""NodeResourcesBalancedAllocation: prefer nodes where the pod keeps resource usage balanced.

Scores how much placing the pod changes the spread of the node's usage fractions, using real
requests (no non-zero defaults); pods that request none of the resources skip the plugin.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    Code,
    CycleState,
    DRAScoreState,
    Handle,
    NodeInfo,
    NodeTable,
    Pod,
    ScoreColumn,
    SignFragment,
    Status,
    dra_score_state,
    is_dra_extended_resource_name,
    signers,
)
from scheduler.plugins.noderesources.balanced_allocation_args import BalancedAllocationArgs
from scheduler.plugins.noderesources.fit import DRA_SWITCH
from scheduler.plugins.noderesources.requests import (
    node_vectors,
    pod_request_list,
    table_matrices,
)
from scheduler.plugins.noderesources.resource_allocation import BalancedAllocation as BalancedScorer

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
DRA_SCORE_STATE_KEY = PRE_SCORE_STATE_KEY + "DRA"


class BalancedAllocation:
    """Score plugin; the arithmetic lives in resource_allocation.BalancedAllocation."""

    name = NAME

    def __init__(self, args: BalancedAllocationArgs, handle: Handle) -> None:
        self.resources = args.resources
        self.scorer = BalancedScorer()
        #: Extended resources backed by DRA score by their devices (DRAExtendedResource); DRA
        #: is read only when a scored resource could be one.
        self._dra_scored = [r.name for r in self.resources if is_dra_extended_resource_name(r.name)]
        on = bool(self._dra_scored) and handle.features.enabled(DRA_SWITCH)
        self._dra = handle.dra() if on else None

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """The score depends on the pod's requests (containers and overhead)."""
        return [SignFragment(signers.RESOURCES, signers.resources(pod))], None

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        requests = pod_request_list(pod, self.resources, True)
        if not any(requests):
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, requests)
        dra = dra_score_state(self._dra, self._dra_scored)
        if dra is not None:
            state.write(DRA_SCORE_STATE_KEY, dra)
        return None

    def _dra_score_state(self, state: CycleState) -> DRAScoreState | None:
        found = state.get(DRA_SCORE_STATE_KEY)
        return found if isinstance(found, DRAScoreState) else None

    def _requests(self, state: CycleState, pod: Pod) -> list[int]:
        requests = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(requests, list):
            return requests
        return pod_request_list(pod, self.resources, True)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        requests = self._requests(state, pod)
        if not any(requests):
            return 0  # best-effort pod scored without PreScore, as Go does
        if not self.resources:
            return Status(Code.ERROR, "resources not found")
        requested, allocated, allocatable = node_vectors(
            node_info, self.resources, requests, True, self._dra_score_state(state)
        )
        return self.scorer.score(requested, allocated, allocatable)

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        requests = self._requests(state, pod)
        if not any(requests):
            return np.zeros(len(rows), np.int64)
        if self._dra_score_state(state) is not None:
            return None  # per node: devices counted from the node's slices
        requested, allocated, allocatable = table_matrices(
            table, rows, self.resources, requests, True
        )
        return self.scorer.score_matrix(requested, allocated, allocatable)

    def score_extensions(self) -> None:
        return None
