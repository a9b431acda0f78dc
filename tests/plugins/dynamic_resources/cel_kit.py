"""Devices and selector runs for the CEL tests: one parsed device of a one-device slice."""

from __future__ import annotations

from typing import Any

from scheduler.framework import Device, parse_resource_slice
from scheduler.plugins.dynamic_resources.cel import SelectorCache

DRIVER = "dra.example.com"


def device(
    attributes: dict[str, Any] | None = None,
    capacity: dict[str, Any] | None = None,
    multi: bool | None = None,
) -> Device:
    raw: dict[str, Any] = {"name": "d", "attributes": attributes or {}, "capacity": capacity or {}}
    if multi is not None:
        raw["allowMultipleAllocations"] = multi
    s = parse_resource_slice(
        {
            "metadata": {"name": "s"},
            "spec": {"driver": DRIVER, "pool": {"name": "p"}, "devices": [raw]},
        }
    )
    return s.devices[0]


def run(expression: str, dev: Device | None = None, driver: str = DRIVER) -> bool:
    return SelectorCache().get(expression).matches(driver, dev or device())
