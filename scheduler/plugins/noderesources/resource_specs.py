"""Which resources a scorer looks at and how much each counts (config.ResourceSpec), and how
the resource plugins' args name them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.framework import CPU, MEMORY, ArgsError, check_int, check_list, check_object, field


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource name and its weight in the weighted average of per-resource scores."""

    name: str
    weight: int = 1


# kube-scheduler's defaultResourceSpec: used when args name no resources.
DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def check_strings(raw: Any, path: str) -> list[str]:
    values = check_list(raw, path)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ArgsError(f"{path}[{i}]", field.invalid(value, "must be a string"))
    return values


def decode_resource_specs(raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    """v1 defaulting: no resources means cpu and memory; an unset or 0 weight becomes 1."""
    items = check_list(raw, path)
    if not items:
        return DEFAULT_RESOURCES
    specs: list[ResourceSpec] = []
    for i, item in enumerate(items):
        item_path = f"{path}[{i}]"
        obj = check_object(item, item_path, ("name", "weight"))
        name = obj.get("name", "")
        if not isinstance(name, str):
            raise ArgsError(f"{item_path}.name", field.invalid(name, "must be a string"))
        weight = check_int(obj, "weight", item_path)
        specs.append(ResourceSpec(name, weight or 1))
    return tuple(specs)
