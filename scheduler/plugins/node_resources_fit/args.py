"""NodeResourcesFitArgs: kube-scheduler's v1 defaults and validation, with its field paths."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.registry import ArgsError
from scheduler.plugins.helper.resource_allocation import ResourceSpec

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
_LABEL_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


@dataclass(frozen=True)
class FitArgs:
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = field(default=())


def _check_keys(raw: Mapping[str, Any], known: set[str], path: str) -> None:
    for key in raw:
        if key not in known:
            raise ArgsError(f"{path}{key}", "unknown field")


def _strings(raw: Any, path: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ArgsError(path, "Invalid value: must be a list of strings")
    return raw


def _int(raw: Mapping[str, Any], key: str, path: str) -> int:
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgsError(f"{path}{key}", f"Invalid value: {value!r}: must be an integer")
    return value


def decode_resources(raw: Any, path: str, *, fit: bool) -> tuple[ResourceSpec, ...]:
    """Resources with weights defaulted to 1 (an empty list means cpu and memory)."""
    if raw is None or raw == []:
        return DEFAULT_RESOURCES
    if not isinstance(raw, list):
        raise ArgsError(path, "Invalid value: must be a list")
    specs = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        item_path = f"{path}[{i}]."
        if not isinstance(item, Mapping):
            raise ArgsError(f"{path}[{i}]", "Invalid value: must be an object")
        _check_keys(item, {"name", "weight"}, item_path)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ArgsError(f"{item_path}name", "Required value")
        weight = _int(item, "weight", item_path) or 1
        if fit and not 0 < weight <= 100:
            raise ArgsError(
                f"{item_path}weight",
                f"Invalid value: {weight}: resource weight of {name} not in valid range (0, 100]",
            )
        if not fit:
            if name in seen:
                raise ArgsError(f"{item_path}name", f'Duplicate value: "{name}"')
            if weight != 1:
                raise ArgsError(f"{item_path}weight", f"Invalid value: {weight}: must be 1")
        seen.add(name)
        specs.append(ResourceSpec(name, weight))
    return tuple(specs)


def _shape(raw: Any, path: str) -> tuple[tuple[int, int], ...]:
    if not raw:
        raise ArgsError(path, "Required value: at least one point must be specified")
    points = []
    for i, point in enumerate(raw):
        if not isinstance(point, Mapping):
            raise ArgsError(f"{path}[{i}]", "Invalid value: must be an object")
        _check_keys(point, {"utilization", "score"}, f"{path}[{i}].")
        points.append(
            (_int(point, "utilization", f"{path}[{i}]."), _int(point, "score", f"{path}[{i}]."))
        )
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            raise ArgsError(
                f"{path}[{i}].utilization",
                f"Invalid value: {points[i][0]}: values must be sorted in increasing order",
            )
    for i, (utilization, score) in enumerate(points):
        if not 0 <= utilization <= 100:
            raise ArgsError(
                f"{path}[{i}].utilization",
                f"Invalid value: {utilization}: not in valid range [0, 100]",
            )
        if not 0 <= score <= 10:
            raise ArgsError(
                f"{path}[{i}].score", f"Invalid value: {score}: not in valid range [0, 10]"
            )
    return tuple(points)


def decode_args(raw: Mapping[str, Any] | None) -> FitArgs:
    if not raw:
        return FitArgs()
    _check_keys(
        raw,
        {"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups", "scoringStrategy"},
        "",
    )
    ignored = _strings(raw.get("ignoredResources"), "ignoredResources")
    for i, name in enumerate(ignored):
        if not _LABEL_NAME.match(name):
            raise ArgsError(
                f"ignoredResources[{i}]", f'Invalid value: "{name}": not a valid resource name'
            )
    groups = _strings(raw.get("ignoredResourceGroups"), "ignoredResourceGroups")
    for i, group in enumerate(groups):
        if "/" in group:
            raise ArgsError(
                f"ignoredResourceGroups[{i}]",
                f"Invalid value: \"{group}\": resource group name can't contain '/'",
            )
    strategy_raw = raw.get("scoringStrategy")
    if strategy_raw is None:
        return FitArgs(frozenset(ignored), frozenset(groups))
    if not isinstance(strategy_raw, Mapping):
        raise ArgsError("scoringStrategy", "Invalid value: must be an object")
    _check_keys(strategy_raw, {"type", "resources", "requestedToCapacityRatio"}, "scoringStrategy.")
    strategy = strategy_raw.get("type") or LEAST_ALLOCATED
    if strategy not in STRATEGIES:
        supported = ", ".join(f'"{s}"' for s in STRATEGIES)
        raise ArgsError(
            "scoringStrategy.type",
            f'Unsupported value: "{strategy}": supported values: {supported}',
        )
    resources = decode_resources(
        strategy_raw.get("resources"), "scoringStrategy.resources", fit=True
    )
    rtc = strategy_raw.get("requestedToCapacityRatio")
    shape: tuple[tuple[int, int], ...] = ()
    if strategy == REQUESTED_TO_CAPACITY_RATIO:
        if rtc is None:
            raise ArgsError(
                "scoringStrategy.requestedToCapacityRatio",
                "Required value: must be specified when type is RequestedToCapacityRatio",
            )
        if not isinstance(rtc, Mapping):
            raise ArgsError(
                "scoringStrategy.requestedToCapacityRatio", "Invalid value: must be an object"
            )
        _check_keys(rtc, {"shape"}, "scoringStrategy.requestedToCapacityRatio.")
        shape = _shape(rtc.get("shape"), "scoringStrategy.requestedToCapacityRatio.shape")
    elif rtc is not None:
        raise ArgsError(
            "scoringStrategy.requestedToCapacityRatio",
            "Forbidden: must be nil when type is not RequestedToCapacityRatio",
        )
    return FitArgs(frozenset(ignored), frozenset(groups), strategy, resources, shape)
