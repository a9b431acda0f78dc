"""Decoding helpers specific to the resource plugins' args (resource lists, int32 fields)."""

from __future__ import annotations

from typing import Any

from scheduler.api import field
from scheduler.framework.registry import ArgsError
from scheduler.plugins.helper.args import (
    check_int,
    check_list,
    check_object,
)
from scheduler.plugins.resource_scoring.spec import DEFAULT_RESOURCES, ResourceSpec


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
