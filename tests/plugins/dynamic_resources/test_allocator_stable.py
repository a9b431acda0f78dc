"""Allocator: the "stable" variant upstream's NewAllocator picks when DRAConsumableCapacity and
DRADeviceBindingConditions are both off (first-appearance pool order, capacity requests
ignored, no distinctAttribute, permutations; the step counts are in test_allocator_pools.py)."""

from __future__ import annotations

from typing import Any

from tests.plugins.dynamic_resources.allocator_kit import Error, check
from tests.plugins.dynamic_resources.builders import (
    allocation,
    case,
    claim,
    device,
    device_class,
    features,
    local_node_selector,
    node,
    request,
    result,
    slice_,
)

A, CA, N1, R1 = "driver-a", "class-a", "node-1", "region-1"
LOCAL = local_node_selector(N1)
STABLE = features()
DEFAULT = features(consumableCapacity=True, bindingConditions=True)


def _two_pools(feats: dict[str, bool], *requests: dict[str, Any]) -> dict[str, Any]:
    return case(
        [claim("claim-0", *(requests or (request("req-0", CA, 1),)))],
        [device_class(CA, A)],
        [
            slice_("slice-b", N1, "pool-b", A, device("device-b", {"memory": "8Gi"})),
            slice_("slice-a", N1, "pool-a", A, device("device-a", {"memory": "8Gi"})),
        ],
        node(N1, R1),
        feats,
    )


def test_pools_are_searched_in_the_order_they_first_appear() -> None:
    check(_two_pools(STABLE), [allocation(LOCAL, result("req-0", A, "pool-b", "device-b"))])


def test_the_default_variant_sorts_pools_by_name() -> None:
    check(_two_pools(DEFAULT), [allocation(LOCAL, result("req-0", A, "pool-a", "device-a"))])


def test_capacity_requests_are_ignored() -> None:
    asks = request("req-0", CA, 1, capacity={"requests": {"memory": "16Gi"}})
    check(_two_pools(STABLE, asks), [allocation(LOCAL, result("req-0", A, "pool-b", "device-b"))])


def test_capacity_requests_with_only_binding_conditions_on_are_refused() -> None:
    asks = request("req-0", CA, 1, capacity={"requests": {"memory": "16Gi"}})
    check(
        _two_pools(features(bindingConditions=True), asks),
        Error(
            "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity "
            "feature is disabled"
        ),
    )
