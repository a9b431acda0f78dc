"""NodeResourcesFitArgs: v1 defaults (SetDefaults_NodeResourcesFitArgs) and validation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import FieldErrors, check_args_object, check_object, label_key_errors
from scheduler.plugins.helper.shape import decode_shape, validate_shape
from scheduler.plugins.noderesources.resource_specs import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    check_strings,
    decode_resource_specs,
)

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
# Sorted, as field.NotSupported lists them.
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_RESOURCE_WEIGHT = 100


@dataclass(frozen=True)
class FitArgs:
    """Decoded and defaulted args; `shape` holds (utilization, score) points for RTCR."""

    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()


def _validate_label_names(values: list[str], path: str, errs: FieldErrors) -> None:
    for i, value in enumerate(values):
        for msg in label_key_errors(value):
            errs.invalid(f"{path}[{i}]", value, msg)


def decode_args(raw: Mapping[str, Any] | None) -> FitArgs:
    """Strictly decodes v1 NodeResourcesFitArgs, applies defaults, then validates."""
    args = check_args_object(raw, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"))
    ignored = check_strings(args.get("ignoredResources"), "ignoredResources")
    groups = check_strings(args.get("ignoredResourceGroups"), "ignoredResourceGroups")
    strategy_path = "scoringStrategy"
    raw_strategy = args.get("scoringStrategy")
    strategy_obj = check_object(
        raw_strategy, strategy_path, ("type", "resources", "requestedToCapacityRatio")
    )
    if raw_strategy is None:
        strategy: Any = LEAST_ALLOCATED
    else:
        strategy = strategy_obj.get("type", "")
    resources = decode_resource_specs(strategy_obj.get("resources"), f"{strategy_path}.resources")
    rtc_path = f"{strategy_path}.requestedToCapacityRatio"
    raw_rtc = strategy_obj.get("requestedToCapacityRatio")
    shape: list[tuple[int, int]] = []
    if raw_rtc is not None:
        rtc = check_object(raw_rtc, rtc_path, ("shape",))
        shape = decode_shape(rtc.get("shape"), f"{rtc_path}.shape")

    errs = FieldErrors()
    _validate_label_names(ignored, "ignoredResources", errs)
    for i, group in enumerate(groups):
        if "/" in group:
            errs.invalid(
                f"ignoredResourceGroups[{i}]", group, "resource group name can't contain '/'"
            )
    _validate_label_names(groups, "ignoredResourceGroups", errs)
    if strategy not in STRATEGIES:
        errs.not_supported(f"{strategy_path}.type", strategy, STRATEGIES)
    for i, spec in enumerate(resources):
        if not 0 < spec.weight <= MAX_RESOURCE_WEIGHT:
            errs.invalid(
                f"{strategy_path}.resources[{i}].weight",
                spec.weight,
                f"resource weight of {spec.name} not in valid range (0, {MAX_RESOURCE_WEIGHT}]",
            )
    if strategy == REQUESTED_TO_CAPACITY_RATIO:
        if raw_rtc is None:
            errs.required(rtc_path, "must be specified when type is RequestedToCapacityRatio")
        else:
            validate_shape(shape, f"{rtc_path}.shape", errs)
    elif raw_rtc is not None:
        errs.forbidden(rtc_path, "must be nil when type is not RequestedToCapacityRatio")
    errs.raise_if_any()
    return FitArgs(
        frozenset(ignored),
        frozenset(groups),
        str(strategy),
        resources,
        tuple(shape) if strategy == REQUESTED_TO_CAPACITY_RATIO else (),
    )
