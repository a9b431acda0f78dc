"""Allocator: multi-host pools and pool generations, invalid and incomplete pools, counter-set
validation, and the search order (its step counts are upstream's allocateOne invocation counts
for the incubating variant), translated from upstream's allocator test cases of the same names."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamic_resources.allocator_kit import NodeFailure, check, steps
from tests.plugins.dynamic_resources.builders import (
    all_request,
    allocation,
    case,
    claim,
    claim_with_request,
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

A, CA = "driver-a", "class-a"
N1, N2, R1 = "node-1", "node-2", "region-1"
P1, P2, P3, P4 = "pool-1", "pool-2", "pool-3", "pool-4"
CS1, CS2 = "counter-set-1", "counter-set-2"
PART = features(partitionableDevices=True)
CLASSES = [device_class(CA, A)]
ONE = [claim("claim-0", request("req-0", CA))]


def cap(name: str, cs: str, memory: str) -> dict[str, Any]:
    return device(
        name, {"memory": memory}, consumesCounters=[counter_consumption(cs, {"memory": memory})]
    )


def counters(name: str, where: str, pool_: Any, *sets: dict[str, Any]) -> dict[str, Any]:
    return slice_(name, where, pool_, A, counter_sets=list(sets))


def mem(q: str) -> dict[str, Any]:
    return selector(f'device.capacity["{A}"].memory.compareTo(quantity("{q}")) >= 0')


def typed(name: str, kind: str, **extra: Any) -> dict[str, Any]:
    return device(name, None, {"type": {"string": kind}}, **extra)


def is_type(kind: str) -> dict[str, Any]:
    return selector(f'device.attributes["{A}"].type == "{kind}"')


def generation_slices(first: str, second: str, second_devices: int) -> list[dict[str, Any]]:
    """A pool moving from one node to another: generation 1 on `first`, 2 on `second`."""
    out = [
        slice_("slice-1", first, pool(P1, 2, 1), A, device("device-1")),
        slice_("slice-1", first, pool(P1, 2, 1), A, device("device-2")),
        slice_("slice-2", second, pool(P1, 2, 2), A, device("device-1")),
    ]
    if second_devices == 2:
        out.append(slice_("slice-2", second, pool(P1, 2, 2), A, device("device-2")))
    return out


FIVE_OF_FOUR = [claim("claim-0", request("req-0", CA, 5))]

CASES: dict[str, tuple[dict[str, Any], Any, int | tuple[int, int] | None]] = {
    "allocation-mode-all-with-multi-host-resource-pool": (
        case(
            [claim("claim-0", all_request("req-0", CA))],
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-2", N2, pool(P1, 2), A, device("device-2")),
            ],
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P1, "device-1"))],
        None,
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2, 1), A, device("device-1")),
                slice_("slice-2", N2, pool(P1, 2, 2), A, device("device-2")),
            ],
            node(N1, R1),
        ),
        None,
        None,
    ),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            CLASSES,
            generation_slices(N1, N2, 2),
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P1, "device-1"))],
        None,
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            CLASSES,
            generation_slices(N2, N1, 2),
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P1, "device-1"))],
        None,
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            CLASSES,
            generation_slices(N1, N2, 1),
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P1, "device-1"))],
        None,
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            CLASSES,
            generation_slices(N2, N1, 1),
            node(N1, R1),
        ),
        None,
        None,
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": (
        case(
            ONE,
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 4), A, device("device-1")),
                counters("slice-2", N1, pool(P1, 4), counter_set(CS1, {})),
                slice_("slice-3", N1, pool(P1, 4), A, device("device-2")),
                counters("slice-4", N1, pool(P1, 4), counter_set(CS1, {})),
            ],
            node(N1, R1),
            PART,
        ),
        NodeFailure("invalid resource pools were encountered"),
        None,
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": (
        case(
            ONE,
            CLASSES,
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    device("device-1", consumesCounters=[counter_consumption(CS2, {})]),
                ),
                counters("slice-2", N1, pool(P1, 2), counter_set(CS1, {})),
            ],
            node(N1, R1),
            PART,
        ),
        NodeFailure("invalid resource pools were encountered"),
        None,
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": (
        case(
            ONE,
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2), A, cap("device-1", CS1, "8Gi")),
                counters("slice-2", N1, pool(P1, 2), counter_set(CS1, {"other-memory": "8Gi"})),
            ],
            node(N1, R1),
            PART,
        ),
        NodeFailure("invalid resource pools were encountered"),
        None,
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": (
        case(
            ONE,
            CLASSES,
            [
                slice_("slice-1", N1, P1, A, cap("device-1", CS1, "8Gi")),
                counters("slice-2", N1, P2, counter_set(CS1, {"memory": "8Gi"})),
            ],
            node(N1, R1),
            PART,
        ),
        NodeFailure("invalid resource pools were encountered"),
        None,
    ),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0",
                        sub_request("subReq-0", CA, 1, mem("6Gi")),
                        sub_request("subReq-1", CA, 1, mem("2Gi")),
                    ),
                )
            ],
            CLASSES,
            [
                counters("slice-1", N1, pool(P1, 3), counter_set(CS1, {"memory": "8Gi"})),
                slice_(
                    "slice-2",
                    N1,
                    pool(P1, 3),
                    A,
                    cap("device-1", CS1, "6Gi"),
                    cap("device-2", CS1, "2Gi"),
                ),
                slice_(
                    "slice-3",
                    N2,
                    pool(P1, 3),
                    A,
                    device(
                        "device-3", consumesCounters=[counter_consumption(CS1, {"memory": "6Gi"})]
                    ),
                ),
            ],
            node(N1, R1),
            features(partitionableDevices=True, prioritizedList=True),
            allocated=[f"{A}/{P1}/device-3"],
        ),
        [allocation(local_node_selector(N1), result("req-0/subReq-1", A, P1, "device-2"))],
        None,
    ),
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": (
        case(
            ONE,
            CLASSES,
            [
                counters("slice-1", N1, pool(P1, 3), counter_set(CS1, {"memory": "8Gi"})),
                slice_("slice-2", N1, pool(P1, 3), A, cap("device-1", CS1, "6Gi")),
                slice_(
                    "slice-3",
                    N2,
                    pool(P1, 3),
                    A,
                    cap("device-2", CS1, "6Gi"),
                    cap("device-3", CS1, "2Gi"),
                ),
            ],
            node(N2, R1),
            PART,
            allocated=[f"{A}/{P1}/device-1"],
        ),
        [allocation(local_node_selector(N2), result("req-0", A, P1, "device-3"))],
        None,
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": (
        case(
            ONE,
            CLASSES,
            [
                counters("slice-1", N1, pool(P1, 3), counter_set(CS1, {"memory": "8Gi"})),
                slice_("slice-2", N1, pool(P1, 3), A, cap("device-1", CS1, "6Gi")),
                slice_(
                    "slice-3",
                    N2,
                    pool(P1, 3),
                    A,
                    device(
                        "device-3", consumesCounters=[counter_consumption(CS2, {"memory": "6Gi"})]
                    ),
                ),
            ],
            node(N1, R1),
            PART,
        ),
        NodeFailure("invalid resource pools were encountered"),
        None,
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": (
        case(
            ONE,
            CLASSES,
            [
                slice_("slice-1", N2, pool(P1, 2), A, device("device-1")),
                slice_("slice-2", N1, pool(P1, 2), A, device("device-2")),
            ],
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P1, "device-2"))],
        None,
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": (
        case(
            ONE,
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-2", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-3", N1, pool(P2, 1), A, device("device-2")),
            ],
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P2, "device-2"))],
        None,
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": (
        case(
            ONE,
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-2", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-3", N1, pool(P2, 1), A, device("device-2")),
            ],
            node(N1, R1),
            allocated=[f"{A}/{P2}/device-2"],
        ),
        NodeFailure("invalid resource pools were encountered"),
        None,
    ),
    "no-allocation-from-incomplete-pools": (
        case(
            ONE,
            CLASSES,
            [slice_("slice-1", N1, pool(P1, 2), A, device("device-1"))],
            node(N1, R1),
        ),
        None,
        None,
    ),
    "check-combinations-within-single-request-single-pool-single-slice": (
        case(
            FIVE_OF_FOUR,
            CLASSES,
            [slice_("slice-1", N1, P1, A, *(device(f"device-{i}") for i in range(1, 5)))],
            node(N1, R1),
        ),
        None,
        (16, 65),
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": (
        case(
            FIVE_OF_FOUR,
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2), A, device("device-1"), device("device-2")),
                slice_("slice-2", N1, pool(P1, 2), A, device("device-3"), device("device-4")),
            ],
            node(N1, R1),
        ),
        None,
        (16, 65),
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": (
        case(
            FIVE_OF_FOUR,
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-2", N1, pool(P1, 2), A, device("device-2")),
                slice_("slice-3", N1, P2, A, device("device-3"), device("device-4")),
            ],
            node(N1, R1),
        ),
        None,
        (16, 65),
    ),
    "check-combinations-within-single-request-many-pools": (
        case(
            FIVE_OF_FOUR,
            CLASSES,
            [
                slice_(f"slice-{i}", N1, p, A, device(f"device-{i}"))
                for i, p in enumerate((P1, P2, P3, P4), start=1)
            ],
            node(N1, R1),
        ),
        None,
        (16, 65),
    ),
    "check-combinations-with-backtracking": (
        case(
            [claim("claim-0", request("req-1", CA, 2), request("req-2", CA, 1, is_type("X")))],
            CLASSES,
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    typed("device-1", "X"),
                    typed("device-2", "Y"),
                    typed("device-3", "Y"),
                )
            ],
            node(N1, R1),
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-1", A, P1, "device-2"),
                result("req-1", A, P1, "device-3"),
                result("req-2", A, P1, "device-1"),
            )
        ],
        (12, 14),
    ),
    "check-combinations-with-backtracking-across-slices-and-pools": (
        case(
            [claim("claim-0", request("req-1", CA, 2), request("req-2", CA, 1, is_type("X")))],
            CLASSES,
            [
                slice_("slice-1", N1, pool(P1, 2), A, typed("device-1", "X")),
                slice_("slice-2", N1, pool(P1, 2), A, typed("device-2", "Y")),
                slice_(
                    "slice-3",
                    N1,
                    P2,
                    A,
                    typed("device-3", "Y", bindingConditions=["IsPrepare"]),
                ),
            ],
            node(N1, R1),
            features(bindingConditions=True),
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-1", A, P1, "device-2"),
                result("req-1", A, P2, "device-3", bindingConditions=["IsPrepare"]),
                result("req-2", A, P1, "device-1"),
            )
        ],
        12,
    ),
    "check-combinations-with-prioritized-list": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-1",
                        sub_request("subReq-0", CA, 3, is_type("Y")),
                        sub_request("subReq-1", CA, 2),
                    ),
                    prioritized(
                        "req-2",
                        sub_request("subReq-0", CA, 2),
                        sub_request("subReq-1", CA, 1, is_type("X")),
                    ),
                )
            ],
            CLASSES,
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    typed("device-1", "X"),
                    typed("device-2", "Y"),
                    typed("device-3", "Y"),
                )
            ],
            node(N1, R1),
            features(prioritizedList=True),
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-1/subReq-1", A, P1, "device-2"),
                result("req-1/subReq-1", A, P1, "device-3"),
                result("req-2/subReq-1", A, P1, "device-1"),
            )
        ],
        (26, 32),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name: str) -> None:
    case_, expected, expected_steps = CASES[name]
    check(case_, expected)
    if isinstance(expected_steps, tuple):
        # Upstream's counts for its default ("incubating") and "stable" variants; the case's
        # features (consumable capacity and binding conditions off) select the stable one.
        incubating, stable = expected_steps
        assert steps(case_) == stable
        with_capacity = {**case_, "features": {**case_["features"], "consumableCapacity": True}}
        check(with_capacity, expected)
        assert steps(with_capacity) == incubating
    elif expected_steps is not None:
        assert steps(case_) == expected_steps
