"""Allocator: a candidate rejected after its shared counters were taken (by a constraint or a
taint) gives them back, as upstream's rollbackDevice does; expected allocations worked out from
k8s.io/dynamic-resource-allocation v0.37.2's incubating allocator."""

from __future__ import annotations

from tests.plugins.dynamic_resources.allocator_kit import check
from tests.plugins.dynamic_resources.builders import (
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
    request,
    result,
    slice_,
)

A, CA, N1, P1 = "driver-a", "class-a", "node-1", "pool-1"
ROOT = f"{A}/root"
FEATURES = features(partitionableDevices=True)


def _device(name: str, root: str) -> dict[str, object]:
    return device(
        name,
        attributes={"root": {"string": root}},
        consumesCounters=[counter_consumption("set-0", {"units": "1"})],
    )


def test_counters_come_back_when_a_constraint_rejects_the_device() -> None:
    # Two units in the set. device-1 (root x) is taken first; device-2 and device-3 (root y)
    # each take a unit and are rejected by matchAttribute: were their units kept, device-3
    # would run short after device-1 is dropped, and the claim would not fit.
    slices = [
        slice_(
            "slice-0",
            N1,
            {"name": P1, "resourceSliceCount": 2, "generation": 1},
            A,
            counter_sets=[counter_set("set-0", {"units": "2"})],
        ),
        slice_(
            "slice-1",
            N1,
            {"name": P1, "resourceSliceCount": 2, "generation": 1},
            A,
            _device("device-1", "x"),
            _device("device-2", "y"),
            _device("device-3", "y"),
        ),
    ]
    claims = [claim("claim-0", request("req-0", CA, 2), constraints=[{"matchAttribute": ROOT}])]
    check(
        case(claims, [device_class(CA, A)], slices, node(N1, "region-1"), FEATURES),
        [
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-2"),
                result("req-0", A, P1, "device-3"),
            )
        ],
    )
