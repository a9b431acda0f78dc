"""A pod's resource requests, computed as kube-scheduler does (component-helpers PodRequests).

Sums regular containers, takes the maximum with init containers (sidecars counted as running
alongside), lets pod-level requests override cpu/memory/hugepages, adds overhead, and for
resized pods takes the larger of spec, allocated and actuated requests. Arithmetic is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from scheduler.api.json_types import JsonView
from scheduler.api.quantity import QuantityError, parse_quantity
from scheduler.api.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resource,
    is_scalar_resource_name,
)

ResourceList = dict[str, Fraction]
ContainerRequestsFn = Callable[[JsonView, JsonView | None, bool], Mapping[str, Any] | None]

_NON_MISSING_DEFAULTS: ResourceList = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}


def _as_list(raw: Mapping[str, Any] | None) -> ResourceList:
    return {name: parse_quantity(q) for name, q in (raw or {}).items()}


def _add(into: ResourceList, other: ResourceList) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _max(into: ResourceList, other: ResourceList) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def _is_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def _spec_requests(
    container: JsonView, _status: JsonView | None, _infeasible: bool
) -> Mapping[str, Any]:
    return (container.get("resources") or {}).get("requests") or {}


def _allocated_requests(
    container: JsonView, status: JsonView | None, infeasible: bool
) -> Mapping[str, Any] | None:
    if status is not None and status.get("allocatedResources") is not None:
        return status["allocatedResources"]  # type: ignore[no-any-return]
    return None if infeasible else _spec_requests(container, status, infeasible)


def _actuated_requests(
    container: JsonView, status: JsonView | None, infeasible: bool
) -> Mapping[str, Any] | None:
    if status is not None:
        actual = (status.get("resources") or {}).get("requests")
        if actual is not None:
            return actual  # type: ignore[no-any-return]
        if status.get("allocatedResources") is not None:
            return status["allocatedResources"]  # type: ignore[no-any-return]
    return None if infeasible else _spec_requests(container, status, infeasible)


def _aggregate(
    spec: JsonView,
    statuses: Mapping[str, JsonView],
    fn: ContainerRequestsFn,
    infeasible: bool,
    non_missing: ResourceList | None,
) -> ResourceList:
    def requests_of(container: JsonView) -> ResourceList:
        reqs = _as_list(fn(container, statuses.get(container.get("name", "")), infeasible))
        if non_missing:
            for name, amount in non_missing.items():
                reqs.setdefault(name, amount)
        return reqs

    result: ResourceList = {}
    for container in spec.get("containers") or []:
        _add(result, requests_of(container))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for container in spec.get("initContainers") or []:
        reqs = requests_of(container)
        if container.get("restartPolicy") == "Always":
            _add(result, reqs)
            _add(sidecars, reqs)
            reqs = dict(sidecars)
        else:
            _add(reqs, sidecars)
        _max(init_max, reqs)
    _max(result, init_max)
    return result


def _resize_infeasible(status: JsonView) -> bool:
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodResizePending":
            return bool(cond.get("reason") == "Infeasible")
    return False


def _pod_requests(pod: JsonView, non_missing: ResourceList | None) -> ResourceList:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = {
        cs.get("name", ""): cs
        for cs in (status.get("containerStatuses") or [])
        + (status.get("initContainerStatuses") or [])
    }
    reqs = _aggregate(spec, statuses, _spec_requests, False, non_missing)
    if any(
        cs.get("allocatedResources") is not None or (cs.get("resources") or {}).get("requests")
        for cs in statuses.values()
    ):
        infeasible = _resize_infeasible(status)
        allocated = _aggregate(spec, statuses, _allocated_requests, infeasible, non_missing)
        actuated = _aggregate(spec, statuses, _actuated_requests, infeasible, non_missing)
        merged: ResourceList = {} if infeasible else dict(reqs)
        _max(merged, actuated)
        _max(merged, allocated)
        reqs = merged
    pod_level = ((spec.get("resources") or {}).get("requests")) or {}
    for name, amount in _as_list(pod_level).items():
        if _is_pod_level_resource(name):
            reqs[name] = amount
    _add(reqs, _as_list(spec.get("overhead")))
    return reqs


def _to_resource(reqs: ResourceList) -> Resource:
    res = Resource()
    for name, amount in reqs.items():
        if name == CPU:
            res.milli_cpu = _ceil(amount * 1000)
        elif name == MEMORY:
            res.memory = _ceil(amount)
        elif name == EPHEMERAL_STORAGE:
            res.ephemeral_storage = _ceil(amount)
        elif name == PODS:
            res.allowed_pod_number = _ceil(amount)
        elif is_scalar_resource_name(name):
            res.scalar[name] = _ceil(amount)
    return res


@lru_cache(maxsize=4096)
def _exact_scaled(text: str | int | float, scale: int) -> int | None:
    """The quantity times `scale` when that is an integer, else None (needs exact sums)."""
    try:
        amount = parse_quantity(text) * scale
    except QuantityError:
        return None
    return amount.numerator if amount.denominator == 1 else None


def _simple_pod_resources(pod: JsonView) -> tuple[Resource, int, int] | None:
    """The common shape (plain containers with whole-milli/whole-byte requests) without
    fractions; None sends anything else to the exact general path. Summing exact integers
    gives the same result as summing quantities and rounding once."""
    spec = pod.get("spec") or {}
    if spec.get("initContainers") or spec.get("overhead") or spec.get("resources"):
        return None
    status = pod.get("status")
    if status and (status.get("containerStatuses") or status.get("initContainerStatuses")):
        for cs in (status.get("containerStatuses") or []) + (
            status.get("initContainerStatuses") or []
        ):
            if cs.get("allocatedResources") is not None or (cs.get("resources") or {}).get(
                "requests"
            ):
                return None
    res = Resource()
    non0_cpu = non0_mem = 0
    for container in spec.get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        has_cpu = has_mem = False
        for name, quantity in requests.items():
            if name == CPU:
                milli = _exact_scaled(quantity, 1000)
                if milli is None:
                    return None
                res.milli_cpu += milli
                non0_cpu += milli
                has_cpu = True
                continue
            amount = _exact_scaled(quantity, 1)
            if amount is None:
                return None
            if name == MEMORY:
                res.memory += amount
                non0_mem += amount
                has_mem = True
            elif name == EPHEMERAL_STORAGE:
                res.ephemeral_storage += amount
            elif name == PODS:
                res.allowed_pod_number += amount
            elif is_scalar_resource_name(name):
                res.scalar[name] = res.scalar.get(name, 0) + amount
        if not has_cpu:
            non0_cpu += DEFAULT_MILLI_CPU_REQUEST
        if not has_mem:
            non0_mem += DEFAULT_MEMORY_REQUEST
    return res, non0_cpu, non0_mem


def compute_pod_resources(pod: JsonView) -> tuple[Resource, int, int]:
    """Returns (requests, non-zero milli-CPU, non-zero memory) for a pod's API JSON."""
    simple = _simple_pod_resources(pod)
    if simple is not None:
        return simple
    reqs = _pod_requests(pod, None)
    spec = pod.get("spec") or {}
    pod_level_set = any(
        _is_pod_level_resource(n) for n in ((spec.get("resources") or {}).get("requests") or {})
    )
    if pod_level_set:
        non_missing = {n: a for n, a in _NON_MISSING_DEFAULTS.items() if n not in reqs}
    else:
        non_missing = _NON_MISSING_DEFAULTS
    non0 = _pod_requests(pod, non_missing) if non_missing else reqs
    non0_cpu = _ceil(non0.get(CPU, Fraction(0)) * 1000)
    non0_mem = _ceil(non0.get(MEMORY, Fraction(0)))
    return _to_resource(reqs), non0_cpu, non0_mem


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)
