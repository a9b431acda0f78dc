"""DeviceTaintRules reach the allocator through apply_taint_rules, as upstream's slice tracker
patches slices before the allocator reads them."""

from __future__ import annotations

from scheduler.framework import (
    apply_taint_rules,
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_claim,
    parse_resource_slice,
)
from scheduler.plugins.dynamic_resources.allocator import AllocatedState, Allocator, Features
from tests.plugins.dynamic_resources.builders import (
    claim,
    device,
    device_class,
    request,
    slice_,
)

A = "driver-a"
RULE = parse_device_taint_rule(
    {
        "metadata": {"name": "maintenance"},
        "spec": {
            "deviceSelector": {"driver": A, "pool": "pool-1", "device": "device-1"},
            "taint": {"key": "maintenance", "effect": "NoSchedule"},
        },
    }
)
SLICE = slice_("slice-1", "node-1", "pool-1", A, device("device-1"), device("device-2"))


def chosen(tolerations: list[dict[str, str]] | None = None) -> list[str] | None:
    slices = [apply_taint_rules(parse_resource_slice(SLICE), [RULE])]
    extra = {"tolerations": tolerations} if tolerations else {}
    claims = [parse_resource_claim(claim("c", request("req-0", "class-a", 1, **extra)))]
    allocator = Allocator(
        Features(), AllocatedState(), [parse_device_class(device_class("class-a", A))], slices
    )
    outcome = allocator.allocate("node-1", {}, claims)
    if outcome.allocations is None:
        return None
    return [r["device"] for r in outcome.allocations[0]["devices"]["results"]]


def test_rule_taint_skips_the_device() -> None:
    assert chosen() == ["device-2"]


def test_tolerated_rule_taint_keeps_the_first_device() -> None:
    assert chosen([{"key": "maintenance", "operator": "Exists"}]) == ["device-1"]


def test_tainting_every_device_leaves_nothing() -> None:
    every = parse_device_taint_rule(
        {
            "metadata": {"name": "all"},
            "spec": {"deviceSelector": {"driver": A}, "taint": {"key": "k", "effect": "NoExecute"}},
        }
    )
    slices = [apply_taint_rules(parse_resource_slice(SLICE), [every])]
    claims = [parse_resource_claim(claim("c", request("req-0", "class-a")))]
    allocator = Allocator(
        Features(), AllocatedState(), [parse_device_class(device_class("class-a", A))], slices
    )
    assert allocator.allocate("node-1", {}, claims).allocations is None
