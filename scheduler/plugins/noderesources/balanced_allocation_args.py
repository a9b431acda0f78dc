"""NodeResourcesBalancedAllocationArgs: v1 defaults and validation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import FieldErrors, check_args_object
from scheduler.plugins.noderesources.resource_specs import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    decode_resource_specs,
)


@dataclass(frozen=True)
class BalancedAllocationArgs:
    """The resources whose usage fractions should stay balanced (weights are always 1)."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


def decode_args(raw: Mapping[str, Any] | None) -> BalancedAllocationArgs:
    """Strictly decodes v1 args; names must be unique and every weight 1 (0 defaults to 1)."""
    args = check_args_object(raw, ("resources",))
    resources = decode_resource_specs(args.get("resources"), "resources")
    errs = FieldErrors()
    seen: set[str] = set()
    for i, spec in enumerate(resources):
        if spec.name in seen:
            errs.duplicate(f"resources[{i}].name", spec.name)
        else:
            seen.add(spec.name)
        if spec.weight != 1:
            errs.invalid(f"resources[{i}].weight", spec.weight, "must be 1")
    errs.raise_if_any()
    return BalancedAllocationArgs(resources)
