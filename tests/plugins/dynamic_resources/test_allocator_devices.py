"""Allocator: partitionable devices (shared counters), device taints and tolerations, binding
conditions, consumable capacity with allowMultipleAllocations (translated from upstream's
allocator test cases of the same names; cases named otherwise are this project's own)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamic_resources.allocator_kit import Error, NodeFailure, check
from tests.plugins.dynamic_resources.builders import (
    NODE_SELECTION_PER_DEVICE,
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
    node_label_selector,
    pool,
    prioritized,
    request,
    result,
    selector,
    slice_,
    sub_request,
)

A, B = "driver-a", "driver-b"
CA, CB = "class-a", "class-b"
N1, N2, R1 = "node-1", "node-2", "region-1"
P1, P2 = "pool-1", "pool-2"
CS1, CS2 = "counter-set-1", "counter-set-2"
LOCAL = local_node_selector(N1)
PART = features(partitionableDevices=True)
PART_PL = features(partitionableDevices=True, prioritizedList=True)
TAINTS = features(deviceTaints=True)
BIND = features(bindingConditions=True)
CAP = features(consumableCapacity=True)

TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TAINT_NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
TOL_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOL_NO_EXECUTE = {
    "operator": "Equal",
    "key": "taint-key",
    "value": "taint-value-2",
    "effect": "NoExecute",
}


def mem(q: str) -> dict[str, Any]:
    return selector(f'device.capacity["{A}"].memory.compareTo(quantity("{q}")) >= 0')


def partitioned(name: str, *uses: tuple[str, dict[str, str]], **extra: Any) -> dict[str, Any]:
    """A device consuming counters, its capacity taken from them (upstream's fromCounters)."""
    capacity = {k: v for _, counters in uses for k, v in counters.items()}
    return device(
        name,
        capacity,
        None,
        consumesCounters=[counter_consumption(cs, counters) for cs, counters in uses],
        **extra,
    )


def counters_slice(name: str, where: Any, pool_: Any, driver: str, *sets: dict[str, Any]) -> dict:
    return slice_(name, where, pool_, driver, counter_sets=list(sets))


def multi_class(name: str, driver: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "selectors": [
                selector(f'device.driver == "{driver}" && device.allowMultipleAllocations == true')
            ]
        },
    }


def shared(name: str, capacity: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return device(name, capacity, None, allowMultipleAllocations=True, **extra)


def with_range(name: str, value: str) -> dict[str, Any]:
    """upstream's withCapacityRequestPolicyRange: default 2, min 2, step 2, max 4."""
    out = shared(name)
    out["capacity"] = {
        "capacity-0": {
            "value": value,
            "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}},
        }
    }
    return out


def with_values(name: str, default: str, value: str, *more: str) -> dict[str, Any]:
    out = shared(name)
    out["capacity"] = {
        "capacity-0": {
            "value": value,
            "requestPolicy": {"default": default, "validValues": [default, *more]},
        }
    }
    return out


def cap_request(name: str, cls: str, q: str) -> dict[str, Any]:
    return request(name, cls, 1, capacity={"requests": {"capacity-0": q}})


def share(req: str, dev: str, consumed: dict[str, str] | None = None) -> dict[str, Any]:
    extra: dict[str, Any] = {"shareID": "<share>"}
    if consumed is not None:
        extra["consumedCapacity"] = consumed
    return result(req, A, P1, dev, **extra)


THREE_PARTS = slice_(
    "slice-1",
    N1,
    pool(P1, 2),
    A,
    partitioned("device-1", (CS1, {"memory": "4Gi"})),
    partitioned("device-2", (CS1, {"memory": "6Gi"})),
    partitioned("device-3", (CS1, {"memory": "4Gi"})),
)
EIGHT_GI = counters_slice("slice-2", N1, pool(P1, 2), A, counter_set(CS1, {"memory": "8Gi"}))

CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "partitionable-devices-single-device": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    device(
                        "device-1", consumesCounters=[counter_consumption(CS1, {"memory": "4Gi"})]
                    ),
                ),
                EIGHT_GI,
            ],
            node(N1, R1),
            PART,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"))],
    ),
    "all-devices-with-consumed-counters": (
        case(
            [claim("claim-0", all_request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    device(
                        "device-1", consumesCounters=[counter_consumption(CS1, {"memory": "4Gi"})]
                    ),
                ),
                EIGHT_GI,
            ],
            node(N1, R1),
            PART,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"))],
    ),
    "partitionable-devices-prioritized-list": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA),
                    prioritized(
                        "req-1",
                        sub_request("subReq-0", CA, 1, mem("6Gi")),
                        sub_request("subReq-1", CA, 1, mem("4Gi")),
                    ),
                )
            ],
            [device_class(CA, A)],
            [THREE_PARTS, EIGHT_GI],
            node(N1, R1),
            PART_PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-1"),
                result("req-1/subReq-1", A, P1, "device-3"),
            )
        ],
    ),
    "partitionable-devices-multiple-devices": (
        case(
            [claim("claim-0", request("req-0", CA), request("req-1", CA))],
            [device_class(CA, A)],
            [THREE_PARTS, EIGHT_GI],
            node(N1, R1),
            PART,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"), result("req-1", A, P1, "device-3"))],
    ),
    "partitionable-devices-multiple-counters": (
        case(
            [claim("claim-0", request("req-0", CA), request("req-1", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    partitioned(
                        "device-1",
                        (CS1, {"memory": "4Gi", "cpus": "6"}),
                        (CS2, {"cpus": "4", "memory": "2Gi"}),
                    ),
                    partitioned(
                        "device-2",
                        (CS1, {"memory": "6Gi", "cpus": "4"}),
                        (CS2, {"cpus": "6", "memory": "6Gi"}),
                    ),
                    partitioned(
                        "device-3",
                        (CS1, {"memory": "4Gi", "cpus": "4"}),
                        (CS2, {"cpus": "4", "memory": "4Gi"}),
                    ),
                ),
                counters_slice(
                    "slice-2",
                    N1,
                    pool(P1, 2),
                    A,
                    counter_set(CS1, {"cpus": "8", "memory": "18Gi"}),
                    counter_set(CS2, {"cpus": "12", "memory": "18Gi"}),
                ),
            ],
            node(N1, R1),
            PART,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-2"), result("req-1", A, P1, "device-3"))],
    ),
    "partitionable-devices-multiple-pools": (
        case(
            [claim("claim-0", request("req-0", CA), request("req-1", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    partitioned("device-1", (CS1, {"cpus": "6", "memory": "4Gi"})),
                    partitioned("device-2", (CS1, {"cpus": "4", "memory": "6Gi"})),
                    partitioned("device-3", (CS1, {"cpus": "4", "memory": "4Gi"})),
                ),
                counters_slice(
                    "slice-2", N1, pool(P1, 2), A, counter_set(CS1, {"cpus": "8", "memory": "18Gi"})
                ),
                slice_(
                    "slice-3",
                    N1,
                    pool(P2, 2),
                    A,
                    partitioned("device-1", (CS1, {"cpus": "6", "memory": "4Gi"})),
                    partitioned("device-2", (CS1, {"cpus": "1", "memory": "7Gi"})),
                    partitioned("device-3", (CS1, {"cpus": "1", "memory": "7Gi"})),
                ),
                counters_slice(
                    "slice-4", N1, pool(P2, 2), A, counter_set(CS1, {"cpus": "8", "memory": "18Gi"})
                ),
            ],
            node(N1, R1),
            PART,
            allocated=[f"{A}/{P1}/device-2", f"{A}/{P1}/device-3", f"{A}/{P2}/device-1"],
        ),
        [allocation(LOCAL, result("req-0", A, P2, "device-2"), result("req-1", A, P2, "device-3"))],
    ),
    "partitionable-devices-no-capacity-available": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    partitioned("device-1", (CS1, {"memory": "4Gi"})),
                    partitioned("device-2", (CS1, {"memory": "16Gi"})),
                ),
                counters_slice("slice-2", N1, pool(P1, 2), A, counter_set(CS1, {"memory": "18Gi"})),
            ],
            node(N1, R1),
            PART,
            allocated=[f"{A}/{P1}/device-2"],
        ),
        None,
    ),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    pool(P1, 2),
                    A,
                    partitioned("device-1", (CS1, {"memory": "4Gi"})),
                    device("device-2"),
                ),
                counters_slice("slice-2", N1, pool(P1, 2), A, counter_set(CS1, {"memory": "8Gi"})),
            ],
            node(N1, R1),
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-2"))],
    ),
    "partitionable-devices-disabled-per-device-node-selection": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [slice_("slice-1", NODE_SELECTION_PER_DEVICE, P1, A, device("device-2", nodeName=N1))],
            node(N1, R1),
        ),
        None,
    ),
    "partitionable-devices-per-device-node-selection-nodename": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0",
                        sub_request("subReq-0", CA, 1, mem("6Gi")),
                        sub_request("subReq-1", CA, 1, mem("4Gi")),
                    ),
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    NODE_SELECTION_PER_DEVICE,
                    pool(P1, 2),
                    A,
                    partitioned("device-1", (CS1, {"memory": "4Gi"}), nodeName=N1),
                    partitioned("device-2", (CS1, {"memory": "6Gi"}), nodeName=N2),
                ),
                counters_slice(
                    "slice-2",
                    NODE_SELECTION_PER_DEVICE,
                    pool(P1, 2),
                    A,
                    counter_set(CS1, {"memory": "18Gi"}),
                ),
            ],
            node(N1, R1),
            PART_PL,
        ),
        [allocation(LOCAL, result("req-0/subReq-1", A, P1, "device-1"))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    NODE_SELECTION_PER_DEVICE,
                    pool(P1, 2),
                    A,
                    partitioned(
                        "device-1",
                        (CS1, {"memory": "4Gi"}),
                        nodeSelector=node_label_selector("region", R1),
                    ),
                ),
                counters_slice(
                    "slice-2",
                    NODE_SELECTION_PER_DEVICE,
                    pool(P1, 2),
                    A,
                    counter_set(CS1, {"memory": "18Gi"}),
                ),
            ],
            node(N1, R1),
            PART_PL,
        ),
        [allocation(node_label_selector("region", R1), result("req-0", A, P1, "device-1"))],
    ),
    "partitionable-devices-per-device-all-nodes": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    NODE_SELECTION_PER_DEVICE,
                    P1,
                    A,
                    device("device-1", allNodes=True),
                ),
            ],
            node(N2, R1),
            PART,
        ),
        [allocation(None, result("req-0", A, P1, "device-1"))],
    ),
    "partitionable-devices-counter-set-not-found-is-invalid": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, partitioned("device-1", ("missing", {"memory": "1"})))],
            node(N1, R1),
            PART,
        ),
        NodeFailure("invalid resource pools were encountered"),
    ),
    "tainted-two-devices": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", taints=[TAINT_NO_SCHEDULE]),
                    device("device-2", taints=[TAINT_NO_EXECUTE]),
                )
            ],
            node(N1, R1),
            TAINTS,
        ),
        None,
    ),
    "tainted-two-devices-tolerated": (
        case(
            [claim("claim-0", request("req-0", CA, 1, tolerations=[TOL_NO_EXECUTE]))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", taints=[TAINT_NO_SCHEDULE]),
                    device("device-2", taints=[TAINT_NO_EXECUTE]),
                )
            ],
            node(N1, R1),
            TAINTS,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-2", tolerations=[TOL_NO_EXECUTE]))],
    ),
    "tainted-two-devices-prioritized-list-tolerated": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0",
                        sub_request("subReq-0", CA),
                        sub_request("subReq-1", CA, 1, tolerations=[TOL_NO_EXECUTE]),
                    ),
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", taints=[TAINT_NO_SCHEDULE]),
                    device("device-2", taints=[TAINT_NO_EXECUTE]),
                )
            ],
            node(N1, R1),
            features(deviceTaints=True, prioritizedList=True),
        ),
        [
            allocation(
                LOCAL,
                result("req-0/subReq-1", A, P1, "device-2", tolerations=[TOL_NO_EXECUTE]),
            )
        ],
    ),
    "tainted-no-effect": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1", taints=[TAINT_NONE]))],
            node(N1, R1),
            TAINTS,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"))],
    ),
    "tainted-one-device-two-taints-both-tolerated": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA, 1, tolerations=[TOL_NO_SCHEDULE, TOL_NO_EXECUTE]),
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
                )
            ],
            node(N1, R1),
            TAINTS,
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-1", tolerations=[TOL_NO_SCHEDULE, TOL_NO_EXECUTE]),
            )
        ],
    ),
    "tainted-disabled": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
                )
            ],
            node(N1, R1),
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"))],
    ),
    "tainted-admin-access": (
        case(
            [claim("claim-0", request("req-0", CA, 1, adminAccess=True))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1", taints=[TAINT_NO_SCHEDULE]))],
            node(N1, R1),
            features(deviceTaints=True, adminAccess=True),
            allocated=[f"{A}/{P1}/device-1", f"{A}/{P1}/device-2"],
        ),
        None,
    ),
    "tainted-all-devices-single": (
        case(
            [claim("claim-0", all_request("req-0", CA))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1", taints=[TAINT_NO_SCHEDULE]))],
            node(N1, R1),
            TAINTS,
        ),
        None,
    ),
    "device-binding-conditions": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device(
                        "device-1",
                        bindingConditions=["IsPrepare"],
                        bindingFailureConditions=["BindingFailed"],
                    ),
                )
            ],
            node(N1, R1),
            BIND,
        ),
        [
            allocation(
                LOCAL,
                result(
                    "req-0",
                    A,
                    P1,
                    "device-1",
                    bindingConditions=["IsPrepare"],
                    bindingFailureConditions=["BindingFailed"],
                ),
            )
        ],
    ),
    "binding-conditions-without-feature-gate": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device(
                        "device-1",
                        bindingConditions=["IsPrepare"],
                        bindingFailureConditions=["BindingFailed"],
                    ),
                )
            ],
            node(N1, R1),
        ),
        None,
    ),
    "node-restriction": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    node_label_selector("planet", "earth"),
                    P1,
                    A,
                    device("device-1", bindsToNode=True),
                )
            ],
            node(N1, R1),
            BIND,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"))],
    ),
    "pools-with-binding-conditions-are-tried-last": (
        case(
            [claim("claim-0", request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_("slice-1", N1, "pool-0", A, device("device-1", bindingConditions=["c"])),
                slice_("slice-2", N1, P1, A, device("device-1")),
            ],
            node(N1, R1),
            BIND,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"))],
    ),
    "consumable-capacity-disabled-feature": (
        case(
            [claim("claim-0", cap_request("req-0", CA, "1"))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"))],
            node(N1, R1),
            BIND,
        ),
        Error(
            "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity "
            "feature is disabled"
        ),
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": (
        case(
            [claim("claim-0", cap_request("req-0", CA, "1"))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, shared("device-1", {"capacity-1": "1"}))],
            node(N1, R1),
            CAP,
        ),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": (
        case(
            [claim("claim-0", request("req-0", CA)), claim("claim-1", request("req-0", CA))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, shared("device-1"))],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(LOCAL, share("req-0", "device-1")),
            allocation(LOCAL, share("req-0", "device-1")),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": (
        case(
            [claim("claim-0", request("req-0", CA)), claim("claim-1", request("req-0", CA))],
            [multi_class(CA, A)],
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
        [
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "1"})),
            allocation(LOCAL, share("req-0", "device-2", {"capacity-0": "1"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": (
        case(
            [claim("claim-0", request("req-0", CA)), claim("claim-1", request("req-0", CA))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, shared("device-1", {"capacity-0": "2"}))],
            node(N1, R1),
            CAP,
        ),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": (
        case(
            [
                claim("claim-0", cap_request("req-0", CA, "1")),
                claim("claim-1", cap_request("req-0", CA, "1")),
            ],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, shared("device-1", {"capacity-0": "2"}))],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "1"})),
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "1"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": (
        case(
            [claim("claim-0", request("req-0", CA)), claim("claim-1", request("req-0", CA))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "4"))],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "2"})),
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": (
        case(
            [claim("claim-0", request("req-0", CA)), claim("claim-1", request("req-0", CA))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_values("device-1", "0", "1"))],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "0"})),
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "0"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": (
        case(
            [claim("claim-0", cap_request("req-0", CA, "1"))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_values("device-1", "0", "1"))],
            node(N1, R1),
            CAP,
        ),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": (
        case(
            [
                claim("claim-0", cap_request("req-0", CA, "1")),
                claim("claim-1", cap_request("req-0", CA, "1")),
            ],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "4"))],
            node(N1, R1),
            CAP,
        ),
        [
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "2"})),
            allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": (
        case(
            [claim("claim-0", cap_request("req-0", CA, "3"))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "4"))],
            node(N1, R1),
            CAP,
        ),
        [allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "4"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": (
        case(
            [claim("claim-0", cap_request("req-0", CA, "2"))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_values("device-1", "1", "4", "2"))],
            node(N1, R1),
            CAP,
        ),
        [allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": (
        case(
            [claim("claim-0", cap_request("req-0", CA, "2"))],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_values("device-1", "1", "3", "3"))],
            node(N1, R1),
            CAP,
        ),
        [allocation(LOCAL, share("req-0", "device-1", {"capacity-0": "3"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": (
        case(
            [
                claim("claim-0", cap_request("req-0", CA, "1")),
                claim("claim-1", cap_request("req-0", CA, "2")),
            ],
            [multi_class(CA, A)],
            [slice_("slice-1", N1, P1, A, with_range("device-1", "2"))],
            node(N1, R1),
            CAP,
        ),
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name: str) -> None:
    check(*CASES[name])
