"""NodeResourcesBalancedAllocation: prefer nodes whose resource fractions stay balanced.

kube-scheduler v1.37 scores the change the pod makes: 50 + (50 + with_pod - without_pod) / 2,
using real requests (no non-zero defaults); best-effort pods skip the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import MAX_NODE_SCORE, ScoreColumn
from scheduler.framework.node_table import NodeTable
from scheduler.framework.registry import ArgsError, PluginSpec
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.helper.resource_allocation import (
    ResourceSpec,
    balanced_allocation,
    node_vectors,
    pod_requests,
    table_matrices,
)
from scheduler.plugins.node_resources_fit.args import decode_resources

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE_KEY = "PreScore" + NAME


@dataclass(frozen=True)
class BalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = (ResourceSpec("cpu"), ResourceSpec("memory"))


def decode_args(raw: Mapping[str, Any] | None) -> BalancedAllocationArgs:
    if not raw:
        return BalancedAllocationArgs()
    for key in raw:
        if key not in ("apiVersion", "kind", "resources"):
            raise ArgsError(key, "unknown field")
    return BalancedAllocationArgs(decode_resources(raw.get("resources"), "resources", fit=False))


class BalancedAllocation:
    name = NAME

    def __init__(self, args: BalancedAllocationArgs) -> None:
        self.resources = args.resources

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        requests = pod_requests(pod, self.resources, use_requested=True)
        if not any(requests):
            return Status(Code.SKIP)
        state.write(_PRE_SCORE_KEY, requests)
        return None

    def _requests(self, state: CycleState, pod: Pod) -> list[int]:
        requests = state.get(_PRE_SCORE_KEY)
        if requests is None:
            requests = pod_requests(pod, self.resources, use_requested=True)
        return requests  # type: ignore[no-any-return]

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        requests = self._requests(state, pod)
        if not any(requests):
            return 0
        requested, allocated, allocatable = node_vectors(
            node_info, self.resources, requests, use_requested=True
        )
        return balanced_allocation(requested, allocated, allocatable)

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        """Vectorised for two resources present on every row (the default cpu+memory case)."""
        if len(self.resources) != 2:
            return None
        requests = self._requests(state, pod)
        requested, allocated, allocatable = table_matrices(
            table, rows, self.resources, requests, use_requested=True
        )
        if not (allocatable != 0).all():
            return None
        alloc = allocatable.astype(np.float64)
        with_pod = _two_resource_score(np.minimum(requested / alloc, 1.0))
        without_pod = _two_resource_score(np.minimum(allocated / alloc, 1.0))
        half = MAX_NODE_SCORE // 2
        diff = half + with_pod - without_pod
        # Go's truncating division by 2 (diff may be negative).
        result: ScoreColumn = half + np.sign(diff) * (np.abs(diff) // 2)
        return result.astype(np.int64)

    def score_extensions(self) -> None:
        return None


def _two_resource_score(fractions: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    std = np.abs((fractions[0] - fractions[1]) / 2)
    scores: npt.NDArray[np.int64] = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return scores


SPEC = PluginSpec(lambda args, _handle: BalancedAllocation(args), decode_args)
__all__ = ["NAME", "SPEC", "BalancedAllocation", "BalancedAllocationArgs", "decode_args"]
