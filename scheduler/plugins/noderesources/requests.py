"""What a scorer compares per resource: the pod's request, the node's allocatable and use.

Follows resourceAllocationScorer.calculatePodResourceRequest and
calculateNodeAllocatableRequest: Fit scores with the non-zero cpu/memory defaults for containers
that request nothing, BalancedAllocation with the real requests; ephemeral storage and scalar
resources always use real requests; a resource the node does not offer is left out (zeros),
unless it is an extended resource backed by DRA with devices on the node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    DRAScoreState,
    NodeInfo,
    NodeTable,
    Pod,
    is_scalar_resource_name,
)
from scheduler.plugins.noderesources.resource_specs import ResourceSpec

IntMatrix = npt.NDArray[np.int64]


def pod_request_list(pod: Pod, resources: Sequence[ResourceSpec], use_requested: bool) -> list[int]:
    """The pod's request for each resource, in the order of `resources`."""
    reqs = pod.requests
    out: list[int] = []
    for spec in resources:
        name = spec.name
        if name == CPU:
            out.append(reqs.milli_cpu if use_requested else pod.non0_cpu)
        elif name == MEMORY:
            out.append(reqs.memory if use_requested else pod.non0_mem)
        else:
            out.append(reqs.get(name))
    return out


def node_vectors(
    info: NodeInfo,
    resources: Sequence[ResourceSpec],
    pod_requests: Sequence[int],
    use_requested: bool,
    dra: DRAScoreState | None = None,
) -> tuple[list[int], list[int], list[int]]:
    """(requested including the pod, allocated, allocatable) per resource for one node. With
    `dra`, an extended resource the node does not advertise counts the devices DRA offers for
    it there (allocatable) and those allocated, when there are any."""
    k = len(resources)
    requested, allocated, allocatable = [0] * k, [0] * k, [0] * k
    used = info.requested if use_requested else info.non_zero_requested
    node_alloc = info.allocatable
    for i, spec in enumerate(resources):
        name = spec.name
        if pod_requests[i] == 0 and is_scalar_resource_name(name):
            continue
        if name == CPU:
            cap, already = node_alloc.milli_cpu, used.milli_cpu
        elif name == MEMORY:
            cap, already = node_alloc.memory, used.memory
        elif name == EPHEMERAL_STORAGE:
            cap, already = node_alloc.ephemeral_storage, info.requested.ephemeral_storage
        else:
            cap = node_alloc.scalar.get(name, 0)
            already = info.requested.scalar.get(name, 0)
            if cap == 0 and dra is not None and info.node is not None:
                cap, already = dra.totals(info.node.name, info.node.labels, name)
        if cap == 0:
            continue
        allocatable[i] = cap
        allocated[i] = already
        requested[i] = already + pod_requests[i]
    return requested, allocated, allocatable


def table_matrices(
    table: NodeTable,
    rows: npt.NDArray[np.intp],
    resources: Sequence[ResourceSpec],
    pod_requests: Sequence[int],
    use_requested: bool,
) -> tuple[IntMatrix, IntMatrix, IntMatrix]:
    """node_vectors for many rows at once, as (resources, rows) matrices."""
    k, m = len(resources), len(rows)
    requested = np.zeros((k, m), np.int64)
    allocated = np.zeros((k, m), np.int64)
    allocatable = np.zeros((k, m), np.int64)
    for i, spec in enumerate(resources):
        name = spec.name
        if pod_requests[i] == 0 and is_scalar_resource_name(name):
            continue
        if name == CPU:
            cap_col, used_col = table.alloc_cpu, table.req_cpu if use_requested else table.nz_cpu
        elif name == MEMORY:
            cap_col, used_col = table.alloc_mem, table.req_mem if use_requested else table.nz_mem
        elif name == EPHEMERAL_STORAGE:
            cap_col, used_col = table.alloc_eph, table.req_eph
        else:
            cap_col, used_col = table.scalar(name)
        cap, already = cap_col[rows], used_col[rows]
        offered = cap != 0
        allocatable[i] = cap
        allocated[i] = np.where(offered, already, 0)
        requested[i] = np.where(offered, already + pod_requests[i], 0)
    return requested, allocated, allocatable
