"""Allocator: devices that allow multiple allocations, with capacity already consumed by other
claims (state the shared case format does not carry), translated from upstream's allocator test
cases of the same names."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamic_resources.allocator_kit import check_with_state
from tests.plugins.dynamic_resources.builders import (
    all_request,
    allocation,
    case,
    claim,
    counter_consumption,
    counter_set,
    device,
    device_class,
    features,
    local_node_selector,
    node,
    pool,
    prioritized,
    request,
    result,
    selector,
    slice_,
    sub_request,
)
from tests.plugins.dynamic_resources.test_allocator_devices import (
    cap_request,
    multi_class,
    share,
    shared,
    with_range,
)

A, CA = "driver-a", "class-a"
N1, R1, P1 = "node-1", "region-1", "pool-1"
CS1 = "counter-set-1"
LOCAL = local_node_selector(N1)
CAP = features(consumableCapacity=True)
D1 = f"{A}/{P1}/device-1"


def dedicated_class() -> dict[str, Any]:
    return {
        "metadata": {"name": CA},
        "spec": {
            "selectors": [
                selector(f'device.driver == "{A}" && device.allowMultipleAllocations == false')
            ]
        },
    }


def mem(q: str) -> dict[str, Any]:
    return selector(f'device.capacity["{A}"].memory.compareTo(quantity("{q}")) >= 0')


def part(name: str, memory: str) -> dict[str, Any]:
    return shared(
        name,
        {"memory": memory},
        consumesCounters=[counter_consumption(CS1, {"memory": memory})],
    )


def one_claim(*requests: dict[str, Any]) -> list[dict[str, Any]]:
    return [claim("claim-0", *requests)]


CASES: dict[str, tuple[dict[str, Any], Any, dict[str, Any]]] = {
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": (
        case(
            one_claim(cap_request("req-0", CA, "6")),
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "10"))],
            node(N1, R1),
            CAP,
        ),
        None,
        {},
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": (
        case(
            one_claim(cap_request("req-0", CA, "2")),
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "4"))],
            node(N1, R1),
            CAP,
        ),
        [allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "2"}))],
        {"aggregated": {D1: {"capacity-0": "2"}}},
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": (
        case(
            one_claim(cap_request("req-0", CA, "2")),
            [multi_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    with_range("device-1", "2"),
                    with_range("device-2", "2"),
                )
            ],
            node(N1, R1),
            CAP,
        ),
        [allocation(LOCAL, share("req-0", "device-2", {"capacity-0": "2"}))],
        {"aggregated": {D1: {"capacity-0": "2"}}},
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": (
        case(
            [
                claim(
                    "claim-0",
                    cap_request("req-0", CA, "2"),
                    cap_request("req-1", CA, "2"),
                    constraints=[{"matchAttribute": f"{A}/stringAttribute"}],
                ),
                claim("claim-1", cap_request("req-0", CA, "2")),
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    {
                        **with_range("device-2", "2"),
                        "attributes": {"stringAttribute": {"string": "stringAttributeValue1"}},
                    },
                    {
                        **with_range("device-1", "4"),
                        "attributes": {"stringAttribute": {"string": "stringAttributeValue2"}},
                    },
                )
            ],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(
                LOCAL,
                share("req-0", "device-1", {"capacity-0": "2"}),
                share("req-1", "device-1", {"capacity-0": "2"}),
            ),
            allocation(LOCAL, share("req-0", "device-2", {"capacity-0": "2"})),
        ],
        {},
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": (
        case(
            one_claim(
                prioritized(
                    "req-0",
                    sub_request("subReq-0", CA, 1, capacity={"requests": {"capacity-0": "4"}}),
                    sub_request("subReq-1", CA, 1, capacity={"requests": {"capacity-0": "2"}}),
                    sub_request("subReq-1", CA, 1),
                )
            ),
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "2"))],
            node(N1, R1),
            features(consumableCapacity=True, prioritizedList=True),
        ),
        [allocation(LOCAL, share("req-0/subReq-1", "device-1", {"capacity-0": "2"}))],
        {},
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": (
        case(
            one_claim(cap_request("req-0", CA, "2")),
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "2"))],
            node(N1, R1),
            CAP,
        ),
        None,
        {"aggregated": {D1: {"capacity-0": "2"}}},
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": (
        case(
            one_claim(all_request("req-0", CA, capacity={"requests": {"capacity-0": "2"}})),
            [multi_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    shared("device-1", {"capacity-0": "2"}),
                    shared("device-2"),
                )
            ],
            node(N1, R1),
            CAP,
        ),
        [allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "2"}))],
        {},
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": (
        case(
            one_claim(
                cap_request("req-0", CA, "1"),
                all_request("req-1", CA, capacity={"requests": {"capacity-0": "1"}}),
            ),
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    shared("device-1", {"capacity-0": "2"}),
                    shared("device-2", {"capacity-0": "1"}),
                )
            ],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(
                LOCAL,
                share("req-0", "device-1", {"capacity-0": "1"}),
                share("req-1", "device-1", {"capacity-0": "1"}),
                share("req-1", "device-2", {"capacity-0": "1"}),
            )
        ],
        {},
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": (
        case(
            one_claim(all_request("req-0", CA, capacity={"requests": {"capacity-0": "1"}})),
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    shared("device-1", {"capacity-0": "2"}),
                    shared("device-2", {"capacity-0": "1"}),
                )
            ],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(
                LOCAL,
                share("req-0", "device-1", {"capacity-0": "1"}),
                share("req-0", "device-2", {"capacity-0": "1"}),
            )
        ],
        {"aggregated": {D1: {"capacity-0": "1"}}},
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": (
        case(
            one_claim(
                cap_request("req-0", CA, "1"),
                all_request("req-1", CA, capacity={"requests": {"capacity-0": "1"}}),
            ),
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    shared("device-1", {"capacity-0": "1"}),
                    shared("device-2", {"capacity-0": "1"}),
                )
            ],
            node(N1, R1),
            CAP,
        ),
        None,
        {},
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": (
        case(
            one_claim(all_request("req-0", CA, capacity={"requests": {"capacity-0": "1"}})),
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    shared("device-1", {"capacity-0": "1"}),
                    shared("device-2", {"capacity-0": "1"}),
                )
            ],
            node(N1, R1),
            CAP,
        ),
        # device-1's capacity is used up but it still matches: All fails (not device-2 alone).
        None,
        {"aggregated": {D1: {"capacity-0": "1"}}},
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": (
        case(
            one_claim(cap_request("req-0", CA, "1")),
            [dedicated_class()],
            [slice_("slice-1", N1, P1, A, device("device-1", {"capacity-0": "1"}))],
            node(N1, R1),
            CAP,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"))],
        {},
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": (
        case(
            [
                claim("claim-0", cap_request("req-0", CA, "1")),
                claim("claim-1", cap_request("req-0", CA, "1")),
            ],
            [dedicated_class()],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    {**with_range("device-1", "2"), "allowMultipleAllocations": None},
                )
            ],
            node(N1, R1),
            CAP,
        ),
        None,
        {},
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": (
        case(
            one_claim(cap_request("req-0", CA, "1")),
            [dedicated_class()],
            [slice_("slice-1", N1, P1, A, shared("device-1", {"capacity-0": "1"}))],
            node(N1, R1),
            CAP,
        ),
        None,
        {},
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": (
        case(
            one_claim(cap_request("req-0", CA, "1")),
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "2"))],
            node(N1, R1),
            CAP,
            allocated=[D1],
        ),
        None,
        {},
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-"
    "multi-allocatable": (
        case(
            one_claim(cap_request("req-0", CA, "1")),
            [multi_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    {**with_range("device-1", "2"), "allowMultipleAllocations": None},
                )
            ],
            node(N1, R1),
            CAP,
        ),
        None,
        {"aggregated": {D1: {"capacity-0": "1"}}},
    ),
    "allow-multiple-allocations-with-partitionable-device": (
        case(
            one_claim(
                request("req-0", CA),
                prioritized(
                    "req-1",
                    sub_request("subReq-0", CA, 1, mem("6Gi")),
                    sub_request("subReq-1", CA, 1, mem("4Gi")),
                ),
            ),
            [multi_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    part("device-1", "4Gi"),
                    part("device-2", "6Gi"),
                    part("device-3", "4Gi"),
                ),
                slice_(
                    "slice-2",
                    N1,
                    pool(P1, 2),
                    A,
                    counter_sets=[counter_set(CS1, {"memory": "8Gi"})],
                ),
            ],
            node(N1, R1),
            features(consumableCapacity=True, prioritizedList=True, partitionableDevices=True),
        ),
        [
            allocation(
                LOCAL,
                share("req-0", "device-1", {"memory": "4Gi"}),
                share("req-1/subReq-1", "device-3", {"memory": "4Gi"}),
            )
        ],
        {},
    ),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": (
        case(
            one_claim(
                request(
                    "req-0",
                    CA,
                    1,
                    selector(f'device.attributes["{A}"].mode == "b"'),
                    capacity={"requests": {"capacity-0": "1"}},
                )
            ),
            [multi_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    {
                        **shared(
                            "device-1",
                            {"capacity-0": "1"},
                            consumesCounters=[counter_consumption(CS1, {"capacity-0": "1"})],
                        ),
                        "attributes": {"mode": {"string": "a"}},
                    },
                    {
                        **shared(
                            "device-2",
                            {"capacity-0": "1"},
                            consumesCounters=[counter_consumption(CS1, {"capacity-0": "1"})],
                        ),
                        "attributes": {"mode": {"string": "b"}},
                    },
                ),
                slice_(
                    "slice-2",
                    N1,
                    pool(P1, 2),
                    A,
                    counter_sets=[counter_set(CS1, {"capacity-0": "1"})],
                ),
            ],
            node(N1, R1),
            features(consumableCapacity=True, partitionableDevices=True),
        ),
        None,
        {"aggregated": {D1: {"capacity-0": "1"}}, "shared": [(D1, "fixed-share")]},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name: str) -> None:
    case_, expected, state = CASES[name]
    check_with_state(case_, expected, **state)
