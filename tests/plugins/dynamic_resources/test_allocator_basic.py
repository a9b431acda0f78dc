"""Allocator: ExactCount and All, class and request selectors, pools and generations, admin
access, errors (translated from upstream's allocator test cases of the same names; cases
named otherwise are this project's own)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamic_resources.allocator_kit import Error, NodeFailure, check
from tests.plugins.dynamic_resources.builders import (
    NODE_SELECTION_ALL,
    all_request,
    allocation,
    case,
    claim,
    claim_with_request,
    device,
    device_class,
    features,
    local_node_selector,
    node,
    node_label_selector,
    pool,
    request,
    result,
    selector,
    slice_,
    slice_with_one_device,
)

A, B = "driver-a", "driver-b"
CA, CB = "class-a", "class-b"
N1, N2 = "node-1", "node-2"
R1, R2 = "region-1", "region-2"
P1, P2 = "pool-1", "pool-2"
MEM1 = f'device.capacity["{A}"].memory.compareTo(quantity("1Gi")) >= 0'
MEM2 = f'device.capacity["{A}"].memory.compareTo(quantity("2Gi")) >= 0'
ADMIN = features(adminAccess=True)

CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "empty": (case([], [], [], node(N1, R1)), []),
    "simple": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P1, "device-1"))],
    ),
    "other-node": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [
                slice_with_one_device("slice-1", N1, P1, B),
                slice_with_one_device("slice-2", N2, P2, A),
            ],
            node(N2, R2),
        ),
        [allocation(local_node_selector(N2), result("req-0", A, P2, "device-1"))],
    ),
    "small-and-large": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA, 1, selector(MEM1)),
                    request("req-1", CA, 1, selector(MEM2)),
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", {"memory": "1Gi"}),
                    device("device-2", {"memory": "2Gi"}),
                )
            ],
            node(N1, R1),
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-1"),
                result("req-1", A, P1, "device-2"),
            )
        ],
    ),
    "small-and-large-backtrack-requests": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA, 1, selector(MEM1)),
                    request("req-1", CA, 1, selector(MEM2)),
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-2", {"memory": "2Gi"}),
                    device("device-1", {"memory": "1Gi"}),
                )
            ],
            node(N1, R1),
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-1"),
                result("req-1", A, P1, "device-2"),
            )
        ],
    ),
    "small-and-large-backtrack-claims": (
        case(
            [
                claim("claim-0", request("req-0", CA, 1, selector(MEM1))),
                claim("claim-1", request("req-1", CA, 1, selector(MEM2))),
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-2", {"memory": "2Gi"}),
                    device("device-1", {"memory": "1Gi"}),
                )
            ],
            node(N1, R1),
        ),
        [
            allocation(local_node_selector(N1), result("req-0", A, P1, "device-1")),
            allocation(local_node_selector(N1), result("req-1", A, P1, "device-2")),
        ],
    ),
    "devices-split-across-different-slices": (
        case(
            [claim("claim-0", request("req-0", CA, 2))],
            [device_class(CA, A)],
            [
                slice_with_one_device("slice-1", N1, P1, A),
                slice_with_one_device("slice-2", N1, P2, A),
            ],
            node(N1, R1),
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-1"),
                result("req-0", A, P2, "device-1"),
            )
        ],
    ),
    "obsolete-slice": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [
                slice_("slice-1-obsolete", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-1-obsolete", N1, pool(P1, 2, generation=2), A, device("device-2")),
            ],
            node(N1, R1),
        ),
        None,
    ),
    "duplicate-slice": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [
                slice_("slice-1", N1, pool(P1, 2), A, device("device-1")),
                slice_("slice-1-2", N1, pool(P1, 2), A, device("device-1")),
            ],
            node(N1, R1),
        ),
        NodeFailure("invalid resource pools were encountered"),
    ),
    "no-slices": (
        case([claim_with_request("claim-0", "req-0", CA)], [device_class(CA, A)], [], node(N1, R1)),
        None,
    ),
    "not-enough-suitable-devices": (
        case(
            [
                claim_with_request("claim-0", "req-0", CA),
                claim_with_request("claim-0", "req-1", CA),
            ],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        None,
    ),
    "no-classes": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error("could not retrieve device class class-a"),
    ),
    "empty-class": (
        case(
            [claim_with_request("claim-0", "req-0", "")],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error(
            "claim claim-0, request req-0: missing device class name (unsupported request type?)"
        ),
    ),
    "all-devices-single": (
        case(
            [claim("claim-0", all_request("req-0", CA))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        [allocation(local_node_selector(N1), result("req-0", A, P1, "device-1"))],
    ),
    "all-devices-many": (
        case(
            [claim("claim-0", all_request("req-0", CA))],
            [device_class(CA, A)],
            [
                slice_with_one_device("slice-1", N1, P1, A),
                slice_with_one_device("slice-1", N1, P2, A),
            ],
            node(N1, R1),
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-1"),
                result("req-0", A, P2, "device-1"),
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": (
        case(
            [claim("claim-0", all_request("req-0", CA, count=1))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, pool(P1, 2), A, device("device-1"))],
            node(N1, R1),
        ),
        Error(
            "claim claim-0, request req-0: asks for all devices, but resource pool "
            "driver-a/pool-1 is currently being updated"
        ),
    ),
    "all-devices-many-plus-another-reversed": (
        case(
            [
                claim("claim-1", request("req-0", CB, 1)),
                claim("claim-0", all_request("req-0", CA)),
            ],
            [device_class(CA, A), device_class(CB, B)],
            [
                slice_("slice-1", N1, P1, A, device("device-1"), device("device-2")),
                slice_with_one_device("slice-1", N1, P1, B),
            ],
            node(N1, R1),
        ),
        [
            allocation(local_node_selector(N1), result("req-0", B, P1, "device-1")),
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-1"),
                result("req-0", A, P1, "device-2"),
            ),
        ],
    ),
    "all-devices-no-solution": (
        case(
            [claim("claim-1", request("req-0", CA, 1)), claim("claim-0", all_request("req-0", CA))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        None,
    ),
    "all-devices-no-solution-reversed": (
        case(
            [claim("claim-0", all_request("req-0", CA)), claim("claim-1", request("req-0", CA, 1))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        None,
    ),
    "all-devices-slice-without-devices": (
        case(
            [claim("claim-0", all_request("req-0", CA))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        None,
    ),
    "all-devices-some-allocated": (
        case(
            [claim("claim-0", all_request("req-0", CA))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            allocated=[f"{A}/{P1}/device-1"],
        ),
        None,
    ),
    "all-devices-some-allocated-admin-access": (
        case(
            [claim("claim-0", all_request("req-0", CA, adminAccess=True))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            ADMIN,
            allocated=[f"{A}/{P1}/device-1"],
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-1", True),
                result("req-0", A, P1, "device-2", True),
            )
        ],
    ),
    "all-devices-some-allocating-admin-access": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA, 1, adminAccess=True),
                    all_request("req-1", CA, adminAccess=True),
                )
            ],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            ADMIN,
        ),
        None,
    ),
    "count-devices-some-allocated-admin-access": (
        case(
            [claim("claim-0", request("req-0", CA, 2, adminAccess=True))],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            ADMIN,
            allocated=[f"{A}/{P1}/device-1"],
        ),
        [
            allocation(
                local_node_selector(N1),
                result("req-0", A, P1, "device-1", True),
                result("req-0", A, P1, "device-2", True),
            )
        ],
    ),
    "separate-claims-share-device-admin-access": (
        case(
            [
                claim("claim-0", request("req-0", CA, 1, adminAccess=True)),
                claim("claim-1", request("req-0", CA, 1, adminAccess=True)),
            ],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            ADMIN,
        ),
        [
            allocation(local_node_selector(N1), result("req-0", A, P1, "device-1", True)),
            allocation(local_node_selector(N1), result("req-0", A, P1, "device-1", True)),
        ],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": (
        case(
            [
                claim_with_request("claim-0", "req-0", CA),
                claim("claim-1", request("req-0", CA, 1, adminAccess=True)),
            ],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            ADMIN,
        ),
        [
            allocation(local_node_selector(N1), result("req-0", A, P1, "device-1")),
            allocation(local_node_selector(N1), result("req-0", A, P1, "device-1", True)),
        ],
    ),
    "admin-access-disabled": (
        case(
            [claim("claim-0", request("req-0", CA, 1, adminAccess=True))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error(
            "claim claim-0, request req-0: admin access is requested, but the feature is disabled"
        ),
    ),
    "network-attached-device": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", node_label_selector("region", R1), P1, A)],
            node(N1, R1),
        ),
        [allocation(node_label_selector("region", R1), result("req-0", A, P1, "device-1"))],
    ),
    "unsuccessful-allocation-network-attached-device": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", node_label_selector("region", R1), P1, A)],
            node(N2, R2),
        ),
        None,
    ),
    "all-nodes-device": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", NODE_SELECTION_ALL, P1, A)],
            node(N2, R2),
        ),
        [allocation(None, result("req-0", A, P1, "device-1"))],
    ),
    "already-allocated-devices": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
            allocated=[f"{A}/{P1}/device-1"],
        ),
        None,
    ),
    "unknown-selector": (
        case(
            [claim("claim-0", request("req-0", CA, 1, {"future": {}}))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error("CEL expression empty (unsupported selector type?)"),
    ),
    "unknown-allocation-mode": (
        case(
            [claim("claim-0", request("req-0", CA, 1, allocationMode="future-mode"))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error("unsupported count mode future-mode"),
    ),
    "unknown-constraint": (
        case(
            [claim("claim-0", request("req-0", CA, 1), constraints=[{}])],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error("empty constraint (unsupported constraint type?)"),
    ),
    "invalid-CEL-one-device": (
        case(
            [claim("claim-0", request("req-0", CA, 1, selector("noSuchVar")))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error("claim claim-0: selector #0: CEL compile error"),
    ),
    "invalid-CEL-one-device-class": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [{"metadata": {"name": CA}, "spec": {"selectors": [selector("noSuchVar")]}}],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error("class class-a: selector #0: CEL compile error"),
    ),
    "cel-runtime-error": (
        case(
            [claim("claim-0", request("req-0", CA, 1, selector('device.attributes["x"].y')))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error(
            "claim claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: "
            "no such key: y. consider using CEL optional chaining (.? followed by orValue()) or "
            "guarding the check with has() for optional fields"
        ),
    ),
    "too-many-devices-single-request": (
        case(
            [claim("claim-0", request("req-0", CA, 500))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error("exceeds the claim limit"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name: str) -> None:
    check(*CASES[name])
