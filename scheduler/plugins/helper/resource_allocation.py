"""The resource allocation scorer shared by NodeResourcesFit and BalancedAllocation.

Per node and resource: allocatable, what is already allocated, and what would be requested
with the pod. Go's integer arithmetic is reproduced exactly (truncating division), and the
common cases are vectorised over NodeTable rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod
from scheduler.api.resources import is_scalar_resource_name
from scheduler.framework.interface import MAX_NODE_SCORE, ScoreColumn
from scheduler.framework.node_table import NodeTable
from scheduler.framework.types import NodeInfo
from scheduler.plugins.helper import go_div

CPU, MEMORY, EPHEMERAL = "cpu", "memory", "ephemeral-storage"
MAX_UTILIZATION = 100
IntMatrix = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    weight: int = 1


def pod_requests(pod: Pod, resources: Sequence[ResourceSpec], use_requested: bool) -> list[int]:
    """The pod's request per resource; without use_requested, cpu/memory get non-zero defaults."""
    out = []
    for r in resources:
        if r.name == CPU:
            out.append(pod.requests.milli_cpu if use_requested else pod.non0_cpu)
        elif r.name == MEMORY:
            out.append(pod.requests.memory if use_requested else pod.non0_mem)
        elif r.name == EPHEMERAL:
            out.append(pod.requests.ephemeral_storage)
        else:
            out.append(pod.requests.scalar.get(r.name, 0))
    return out


def node_vectors(
    info: NodeInfo, resources: Sequence[ResourceSpec], requests: Sequence[int], use_requested: bool
) -> tuple[list[int], list[int], list[int]]:
    """(requested with the pod, allocated, allocatable) as calculateNodeAllocatableRequest."""
    n = len(resources)
    requested, allocated, allocatable = [0] * n, [0] * n, [0] * n
    used = info.requested if use_requested else info.non_zero_requested
    for i, r in enumerate(resources):
        if requests[i] == 0 and is_scalar_resource_name(r.name):
            continue
        if r.name == CPU:
            alloc, already = info.allocatable.milli_cpu, used.milli_cpu
        elif r.name == MEMORY:
            alloc, already = info.allocatable.memory, used.memory
        elif r.name == EPHEMERAL:
            alloc, already = info.allocatable.ephemeral_storage, info.requested.ephemeral_storage
        elif r.name in info.allocatable.scalar:
            alloc = info.allocatable.scalar[r.name]
            already = info.requested.scalar.get(r.name, 0)
        else:
            continue
        if alloc == 0:
            continue
        allocatable[i], allocated[i], requested[i] = alloc, already, already + requests[i]
    return requested, allocated, allocatable


def table_matrices(
    table: NodeTable,
    rows: npt.NDArray[np.intp],
    resources: Sequence[ResourceSpec],
    requests: Sequence[int],
    use_requested: bool,
) -> tuple[IntMatrix, IntMatrix, IntMatrix]:
    """node_vectors for many rows at once: arrays of shape (resources, rows)."""
    k, m = len(resources), len(rows)
    requested = np.zeros((k, m), np.int64)
    allocated = np.zeros((k, m), np.int64)
    allocatable = np.zeros((k, m), np.int64)
    for i, r in enumerate(resources):
        if requests[i] == 0 and is_scalar_resource_name(r.name):
            continue
        if r.name == CPU:
            alloc, used = table.alloc_cpu, table.req_cpu if use_requested else table.nz_cpu
        elif r.name == MEMORY:
            alloc, used = table.alloc_mem, table.req_mem if use_requested else table.nz_mem
        elif r.name == EPHEMERAL:
            alloc, used = table.alloc_eph, table.req_eph
        else:
            alloc, used = table.scalar(r.name)
        a, u = alloc[rows], used[rows]
        present = a != 0
        allocatable[i] = np.where(present, a, 0)
        allocated[i] = np.where(present, u, 0)
        requested[i] = np.where(present, u + requests[i], 0)
    return requested, allocated, allocatable


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _weighted(
    per_resource: Callable[[int, int], int], weights: Sequence[int]
) -> Callable[[list[int], list[int], list[int]], int]:
    def score(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for i, w in enumerate(weights):
            if allocatable[i] == 0:
                continue
            total += per_resource(requested[i], allocatable[i]) * w
            weight_sum += w
        return total // weight_sum if weight_sum else 0

    return score


def least_allocated(weights: Sequence[int]) -> Callable[[list[int], list[int], list[int]], int]:
    return _weighted(least_requested_score, weights)


def most_allocated(weights: Sequence[int]) -> Callable[[list[int], list[int], list[int]], int]:
    return _weighted(most_requested_score, weights)


def least_allocated_matrix(req: IntMatrix, alloc: IntMatrix, weights: Sequence[int]) -> ScoreColumn:
    present = alloc != 0
    safe = np.where(present, alloc, 1)
    per = np.where(present & (req <= alloc), (alloc - req) * MAX_NODE_SCORE // safe, 0)
    return _combine(per, present, weights)


def most_allocated_matrix(req: IntMatrix, alloc: IntMatrix, weights: Sequence[int]) -> ScoreColumn:
    present = alloc != 0
    safe = np.where(present, alloc, 1)
    per = np.where(present, np.minimum(req, alloc) * MAX_NODE_SCORE // safe, 0)
    return _combine(per, present, weights)


def _combine(per: IntMatrix, present: npt.NDArray[np.bool_], weights: Sequence[int]) -> ScoreColumn:
    w = np.asarray(weights, np.int64)[:, None]
    total = (per * w).sum(axis=0)
    weight_sum = (present * w).sum(axis=0)
    out: ScoreColumn = np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)
    return out.astype(np.int64)


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction over (utilization, score) points."""

    def fn(p: int) -> int:
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return score
                u0, s0 = shape[i - 1]
                return s0 + go_div((score - s0) * (p - u0), utilization - u0)
        return shape[-1][1]

    return fn


def requested_to_capacity_ratio(
    weights: Sequence[int], shape: Sequence[tuple[int, int]]
) -> Callable[[list[int], list[int], list[int]], int]:
    """Shape scores are 0..10 in the config and scaled to 0..100 here, as kube-scheduler."""
    raw = broken_linear([(u, s * (MAX_NODE_SCORE // 10)) for u, s in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for i, w in enumerate(weights):
            if allocatable[i] == 0:
                continue
            s = resource_score(requested[i], allocatable[i])
            if s > 0:
                total += s * w
                weight_sum += w
        if weight_sum == 0:
            return 0
        return _round_half_away(total / weight_sum)

    return score


def _round_half_away(x: float) -> int:
    """Go's math.Round for non-negative x (x - floor(x) is exact for these magnitudes)."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    fractions = []
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fractions.append(min(req / alloc, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        total = 0.0
        for f in fractions:
            total = total + (f - mean) * (f - mean)
        std = math.sqrt(total / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_allocation(requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)
