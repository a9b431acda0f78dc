"""Fragmentation: how many more pods of one shape the cluster could still take, before and
after a run.

The count is NodeResourcesFit's (`insufficient_counts`, the Filter's own check): on each node,
allocatable minus requested for every resource the shape requests, and the node's pod count
against its allowed pods. Only resources are considered, plus cordoned nodes left out (a drained
node is no room); taints, node selectors, affinity, spreading and volumes are not, so the figure
is an upper bound of what a real pod of that shape would get. Free room split over many nodes
in pieces smaller than the shape counts for nothing: that is the fragmentation it shows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from scheduler.api.objects import Node, Pod
from scheduler.api.resources import CPU, MEMORY, Resource
from scheduler.backend.cache import Cache
from scheduler.plugins.noderesources.fit import insufficient_counts


class ShapeError(ValueError):
    """A --shape the simulator cannot read."""


def parse_shape(text: str) -> dict[str, str]:
    """`cpu=1,memory=2Gi` as a resource list."""
    shape: dict[str, str] = {}
    for part in text.split(","):
        name, sep, quantity = part.strip().partition("=")
        if not sep or not name or not quantity:
            raise ShapeError(f"--shape {text!r}: expected NAME=QUANTITY[,NAME=QUANTITY...]")
        shape[name.strip()] = quantity.strip()
    try:
        request = Resource.from_list(shape)
    except (ValueError, ArithmeticError) as err:
        raise ShapeError(f"--shape {text!r}: {err}") from err
    if not _requests_something(request):
        raise ShapeError(f"--shape {text!r}: requests nothing")
    return shape


def _requests_something(request: Resource) -> bool:
    return bool(request.milli_cpu or request.memory or request.ephemeral_storage) or any(
        v > 0 for v in request.scalar.values()
    )


def common_shape(pods: Iterable[Pod]) -> dict[str, str] | None:
    """The most common request among `pods` (the first of equals, in their order), as a
    resource list; None when no pod requests anything."""
    counts: Counter[tuple[int, int, int, tuple[tuple[str, int], ...]]] = Counter()
    for pod in pods:
        r = pod.requests
        if _requests_something(r):
            counts[r.milli_cpu, r.memory, r.ephemeral_storage, tuple(sorted(r.scalar.items()))] += 1
    if not counts:
        return None
    cpu, memory, storage, scalar = counts.most_common(1)[0][0]
    shape = {CPU: _cpu(cpu)} if cpu else {}
    if memory:
        shape[MEMORY] = _bytes(memory)
    if storage:
        shape["ephemeral-storage"] = _bytes(storage)
    shape.update((name, str(v)) for name, v in scalar)
    return shape


def _cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _bytes(n: int) -> str:
    """The quantity in the largest binary suffix that divides it (2Gi, not 2147483648)."""
    for suffix, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def _fits(request: Resource, alloc: Resource, used: Resource, pods: int, nth: int) -> bool:
    """Whether the `nth` pod of the shape passes Filter's fit check with the n-1 before it
    already on the node."""
    before = nth - 1
    scaled = Resource(
        milli_cpu=used.milli_cpu + before * request.milli_cpu,
        memory=used.memory + before * request.memory,
        ephemeral_storage=used.ephemeral_storage + before * request.ephemeral_storage,
        scalar={
            name: used.scalar.get(name, 0) + before * request.scalar.get(name, 0)
            for name in {*used.scalar, *request.scalar}
        },
    )
    reasons, _ = insufficient_counts(request, alloc, scaled, pods + before)
    return not reasons


def _node_room(request: Resource, alloc: Resource, used: Resource, pods: int) -> int:
    """The largest n such that the n-th pod of the shape still passes the fit check, found
    by bisection on the check itself (it is monotone in n)."""
    if not _fits(request, alloc, used, pods, 1):
        return 0
    low, high = 1, max(1, alloc.allowed_pod_number - pods)
    while low < high:
        mid = (low + high + 1) // 2
        if _fits(request, alloc, used, pods, mid):
            low = mid
        else:
            high = mid - 1
    return low


def room(cache: Cache, nodes: Iterable[Node], shape: Mapping[str, str]) -> tuple[int, int]:
    """How many more pods of `shape` the nodes could take, as the cache holds them now, and
    on how many nodes at least one would."""
    request = Resource.from_list(shape)
    total = with_room = 0
    for node in nodes:
        info = cache.node_now(node.name)
        if info is None or info.node is None or info.node.unschedulable:
            continue
        n = _node_room(request, info.allocatable, info.requested, len(info.pods))
        total += n
        with_room += n > 0
    return total, with_room
