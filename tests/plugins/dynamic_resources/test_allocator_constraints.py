"""Allocator: matchAttribute / distinctAttribute constraints, class and claim configuration,
firstAvailable prioritized lists (translated from upstream's allocator test cases of the same
names; cases named otherwise are this project's own)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamic_resources.allocator_kit import Error, check
from tests.plugins.dynamic_resources.builders import (
    all_request,
    allocation,
    case,
    claim,
    claim_with_request,
    device,
    device_class,
    device_configuration,
    features,
    local_node_selector,
    node,
    prioritized,
    request,
    result,
    selector,
    slice_,
    slice_with_multiple_devices,
    slice_with_one_device,
    sub_request,
)

A, B = "driver-a", "driver-b"
CA, CB = "class-a", "class-b"
N1, R1 = "node-1", "region-1"
P1, P2 = "pool-1", "pool-2"
INT, VERSION = f"{A}/numa", f"{A}/driverVersion"
STRING, BOOL = f"{A}/stringAttribute", f"{A}/boolAttribute"
LOCAL = local_node_selector(N1)
PL = features(prioritizedList=True)
#: distinctAttribute needs the default allocator variant, selected here as in upstream's tests.
CC = features(consumableCapacity=True)


def mem(q: str) -> dict[str, Any]:
    return selector(f'device.capacity["{A}"].memory.compareTo(quantity("{q}")) >= 0')


def attrs(**values: Any) -> dict[str, Any]:
    out = {}
    for name, value in values.items():
        kind = {bool: "bool", int: "int"}.get(type(value), "string")
        if isinstance(value, str) and value[:1].isdigit():
            kind = "version"
        out[name] = {kind: value}
    return out


def two_devices(name: str, first: Any, second: Any) -> dict[str, Any]:
    return slice_(
        "slice-1",
        N1,
        P1,
        A,
        device("device-1", None, attrs(**{name: first})),
        device("device-2", None, attrs(**{name: second})),
    )


def match(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def distinct(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"distinctAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


SAME = {
    "driverVersion": "1.0.0",
    "numa": 1,
    "stringAttribute": "stringAttributeValue",
    "boolAttribute": True,
}

CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "with-constraint": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA),
                    request("req-1", CA),
                    constraints=[match(INT), match(VERSION), match(STRING), match(BOOL)],
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", None, attrs(**SAME)),
                    device("device-2", None, attrs(**SAME)),
                )
            ],
            node(N1, R1),
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"), result("req-1", A, P1, "device-2"))],
    ),
    "with-constraint-non-existent-attribute": (
        case(
            [claim("claim-0", request("req-0", CA), constraints=[match(f"{A}/NonExistent")])],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        None,
    ),
    "with-constraint-not-matching-int-attribute": (
        case(
            [claim("claim-0", request("req-0", CA, 2), constraints=[match(INT)])],
            [device_class(CA, A)],
            [two_devices("numa", 1, 2)],
            node(N1, R1),
        ),
        None,
    ),
    "with-constraint-not-matching-int-attribute-all-devices": (
        case(
            [claim("claim-0", all_request("req-0", CA), constraints=[match(INT)])],
            [device_class(CA, A)],
            [two_devices("numa", 1, 2)],
            node(N1, R1),
        ),
        Error(
            "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a "
            "claim constraint would not be satisfied"
        ),
    ),
    "with-constraint-not-matching-string-attribute": (
        case(
            [claim("claim-0", request("req-0", CA, 2), constraints=[match(STRING)])],
            [device_class(CA, A)],
            [two_devices("stringAttribute", "a", "b")],
            node(N1, R1),
        ),
        None,
    ),
    "with-constraint-not-matching-bool-attribute": (
        case(
            [claim("claim-0", request("req-0", CA, 2), constraints=[match(BOOL)])],
            [device_class(CA, A)],
            [two_devices("boolAttribute", True, False)],
            node(N1, R1),
        ),
        None,
    ),
    "with-constraint-not-matching-version-attribute": (
        case(
            [claim("claim-0", request("req-0", CA, 2), constraints=[match(VERSION)])],
            [device_class(CA, A)],
            [two_devices("driverVersion", "1.0.0", "2.0.0")],
            node(N1, R1),
        ),
        None,
    ),
    "with-constraint-for-request": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA),
                    request("req-1", CA),
                    constraints=[match(VERSION, "req-0")],
                )
            ],
            [device_class(CA, A)],
            [two_devices("driverVersion", "1.0.0", "2.0.0")],
            node(N1, R1),
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"), result("req-1", A, P1, "device-2"))],
    ),
    "with-constraint-for-request-retry": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA),
                    request("req-1", CA),
                    constraints=[match(VERSION, "req-0"), match(STRING)],
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", None, attrs(driverVersion="1.0.0", stringAttribute="a")),
                    device("device-2", None, attrs(driverVersion="2.0.0", stringAttribute="b")),
                    device("device-3", None, attrs(driverVersion="3.0.0", stringAttribute="b")),
                )
            ],
            node(N1, R1),
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-2"), result("req-1", A, P1, "device-3"))],
    ),
    "distinct-attribute-skips-a-duplicate-value": (
        case(
            [claim("claim-0", request("req-0", CA, 2), constraints=[distinct(INT)])],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", None, attrs(numa=1)),
                    device("device-2", None, attrs(numa=1)),
                    device("device-3", None, attrs(numa=2)),
                )
            ],
            node(N1, R1),
            CC,
        ),
        [allocation(LOCAL, result("req-0", A, P1, "device-1"), result("req-0", A, P1, "device-3"))],
    ),
    "distinct-attribute-unknown-to-the-stable-variant": (
        # With consumable capacity and binding conditions off upstream runs its "stable"
        # allocator, which has no distinctAttribute.
        case(
            [claim("claim-0", request("req-0", CA, 2), constraints=[distinct(INT)])],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
        ),
        Error("claim claim-0, constraint #0: empty constraint (unsupported constraint type?)"),
    ),
    "distinct-attribute-not-set": (
        case(
            [claim("claim-0", request("req-0", CA, 2), constraints=[distinct(INT)])],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            CC,
        ),
        None,
    ),
    "with-class-device-config": (
        case(
            [claim_with_request("claim-0", "req-0", CA)],
            [device_class(CA, A, "classAttribute")],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-1"),
                config=[
                    {"source": "FromClass", "opaque": device_configuration(A, "classAttribute")}
                ],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA),
                    request("req-1", CA),
                    request("req-2", CB),
                )
            ],
            [device_class(CA, A, "classAttribute-A"), device_class(CB, B, "classAttribute-B")],
            [
                slice_with_multiple_devices("slice-1", N1, P1, A, 2),
                slice_with_one_device("slice-2", N1, P1, B),
            ],
            node(N1, R1),
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-0"),
                result("req-1", A, P1, "device-1"),
                result("req-2", B, P1, "device-1"),
                config=[
                    {
                        "source": "FromClass",
                        "requests": ["req-0", "req-1"],
                        "opaque": device_configuration(A, "classAttribute-A"),
                    },
                    {
                        "source": "FromClass",
                        "requests": ["req-2"],
                        "opaque": device_configuration(B, "classAttribute-B"),
                    },
                ],
            )
        ],
    ),
    "with-claim-config-for-two-requests": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA),
                    request("req-1", CA),
                    request("req-2", CA),
                    config=[
                        {
                            "requests": ["req-0", "req-1"],
                            "opaque": device_configuration(A, "deviceAttribute"),
                        }
                    ],
                )
            ],
            [device_class(CA, A)],
            [slice_with_multiple_devices("slice-1", N1, P1, A, 3)],
            node(N1, R1),
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-0"),
                result("req-1", A, P1, "device-1"),
                result("req-2", A, P1, "device-2"),
                config=[
                    {
                        "source": "FromClaim",
                        "requests": ["req-0", "req-1"],
                        "opaque": device_configuration(A, "deviceAttribute"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-first-unavailable": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized("req-0", sub_request("subReq-0", CB), sub_request("subReq-1", CA)),
                )
            ],
            [device_class(CA, A), device_class(CB, B)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
            PL,
        ),
        [allocation(LOCAL, result("req-0/subReq-1", A, P1, "device-1"))],
    ),
    "prioritized-list-non-available": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0", sub_request("subReq-0", CB, 2), sub_request("subReq-1", CA, 2)
                    ),
                )
            ],
            [device_class(CA, A), device_class(CB, B)],
            [
                slice_with_one_device("slice-1", N1, P1, A),
                slice_with_one_device("slice-2", N1, P2, B),
            ],
            node(N1, R1),
            PL,
        ),
        None,
    ),
    "prioritized-list-device-config": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0", sub_request("subReq-0", CA, 1), sub_request("subReq-1", CB, 2)
                    ),
                    config=[
                        {"requests": ["req-0/subReq-0"], "opaque": device_configuration(A, "foo")},
                        {"requests": ["req-0/subReq-1"], "opaque": device_configuration(B, "bar")},
                    ],
                )
            ],
            [device_class(CA, A), device_class(CB, B)],
            [slice_("slice-1", N1, P1, B, device("device-1"), device("device-2"))],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0/subReq-1", B, P1, "device-1"),
                result("req-0/subReq-1", B, P1, "device-2"),
                config=[{"source": "FromClaim", "opaque": device_configuration(B, "bar")}],
            )
        ],
    ),
    "prioritized-list-class-config": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0", sub_request("subReq-0", CA, 2), sub_request("subReq-1", CB, 2)
                    ),
                )
            ],
            [device_class(CA, A, "foo"), device_class(CB, B, "bar")],
            [
                slice_("slice-1", N1, P1, B, device("device-1"), device("device-2")),
                slice_("slice-2", N1, P2, A, device("device-3")),
            ],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0/subReq-1", B, P1, "device-1"),
                result("req-0/subReq-1", B, P1, "device-2"),
                config=[{"source": "FromClass", "opaque": device_configuration(B, "bar")}],
            )
        ],
    ),
    "claim-config-scoped-to-subrequests-of-one-request": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized("req-0", sub_request("subReq-0", CA), sub_request("subReq-1", CB)),
                    request("req-1", CA),
                    config=[
                        {
                            "requests": ["req-0/subReq-0", "req-0/subReq-1"],
                            "opaque": device_configuration(A, "scoped"),
                        }
                    ],
                )
            ],
            [device_class(CA, A), device_class(CB, B)],
            [slice_with_multiple_devices("slice-1", N1, P1, A, 2)],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0/subReq-0", A, P1, "device-0"),
                result("req-1", A, P1, "device-1"),
                config=[
                    {
                        "source": "FromClaim",
                        "requests": ["req-0/subReq-0", "req-0/subReq-1"],
                        "opaque": device_configuration(A, "scoped"),
                    }
                ],
            )
        ],
    ),
    "claim-config-covering-all-requests-is-cleared": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized("req-0", sub_request("subReq-0", CA), sub_request("subReq-1", CB)),
                    request("req-1", CA),
                    config=[
                        {
                            "requests": ["req-0/subReq-0", "req-1"],
                            "opaque": device_configuration(A, "all"),
                        }
                    ],
                )
            ],
            [device_class(CA, A), device_class(CB, B)],
            [slice_with_multiple_devices("slice-1", N1, P1, A, 2)],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0/subReq-0", A, P1, "device-0"),
                result("req-1", A, P1, "device-1"),
                config=[{"source": "FromClaim", "opaque": device_configuration(A, "all")}],
            )
        ],
    ),
    "prioritized-list-subrequests-with-expressions": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA, 1, mem("1Gi")),
                    prioritized(
                        "req-1",
                        sub_request("subReq-0", CA, 1, mem("4Gi")),
                        sub_request("subReq-1", CA, 2, mem("2Gi")),
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
                    device("device-1", {"memory": "2Gi"}),
                    device("device-2", {"memory": "2Gi"}),
                    device("device-3", {"memory": "1Gi"}),
                )
            ],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-3"),
                result("req-1/subReq-1", A, P1, "device-1"),
                result("req-1/subReq-1", A, P1, "device-2"),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA, 1, mem("8Gi")),
                    prioritized(
                        "req-1",
                        sub_request("subReq-0", CA, 1, mem("2Gi")),
                        sub_request("subReq-1", CA, 1, mem("1Gi")),
                    ),
                    constraints=[match(VERSION, "req-0", "req-1")],
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", {"memory": "8Gi"}, attrs(driverVersion="1.0.0")),
                ),
                slice_(
                    "slice-2",
                    N1,
                    P2,
                    A,
                    device("device-2", {"memory": "2Gi"}, attrs(driverVersion="2.0.0")),
                    device("device-3", {"memory": "1Gi"}, attrs(driverVersion="1.0.0")),
                ),
            ],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-1"),
                result("req-1/subReq-1", A, P2, "device-3"),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA, 1, mem("8Gi")),
                    prioritized(
                        "req-1",
                        sub_request("subReq-0", CA, 1, mem("2Gi")),
                        sub_request("subReq-1", CA, 1, mem("1Gi")),
                    ),
                    constraints=[match(VERSION, "req-0", "req-1/subReq-0")],
                )
            ],
            [device_class(CA, A)],
            [
                slice_(
                    "slice-1",
                    N1,
                    P1,
                    A,
                    device("device-1", {"memory": "8Gi"}, attrs(driverVersion="1.0.0")),
                ),
                slice_(
                    "slice-2",
                    N1,
                    P2,
                    A,
                    device("device-2", {"memory": "2Gi"}, attrs(driverVersion="2.0.0")),
                ),
            ],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-1"),
                result("req-1/subReq-1", A, P2, "device-2"),
            )
        ],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0",
                        sub_request("subReq-0", CA, 0, allocationMode="All"),
                        sub_request("subReq-1", CA, 1),
                    ),
                )
            ],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            PL,
            allocated=[f"{A}/{P1}/device-1"],
        ),
        [allocation(LOCAL, result("req-0/subReq-1", A, P1, "device-2"))],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-0", CA),
                    prioritized(
                        "req-1",
                        sub_request("subReq-0", CA, 0, allocationMode="All"),
                        sub_request("subReq-1", CA, 1),
                    ),
                )
            ],
            [device_class(CA, A)],
            [slice_("slice-1", N1, P1, A, device("device-1"), device("device-2"))],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0", A, P1, "device-1"),
                result("req-1/subReq-1", A, P1, "device-2"),
            )
        ],
    ),
    "prioritized-list-disabled": (
        case(
            [claim("claim-0", prioritized("req-0", sub_request("subReq-0", CA)))],
            [device_class(CA, A)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
        ),
        Error(
            "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature "
            "is disabled"
        ),
    ),
    "prioritized-list-multi-request": (
        case(
            [
                claim(
                    "claim-0",
                    request("req-1", CA, 1, mem("8Gi")),
                    prioritized(
                        "req-0",
                        sub_request("subReq-0", CA, 1, mem("8Gi")),
                        sub_request("subReq-1", CA, 1, mem("4Gi")),
                    ),
                )
            ],
            [device_class(CA, A)],
            [
                slice_("slice-1", N1, P1, A, device("device-1", {"memory": "8Gi"})),
                slice_("slice-2", N1, P2, A, device("device-2", {"memory": "4Gi"})),
            ],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-1", A, P1, "device-1"),
                result("req-0/subReq-1", A, P2, "device-2"),
            )
        ],
    ),
    "prioritized-list-with-backtracking": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0",
                        sub_request("subReq-0", CA, 1, mem("8Gi")),
                        sub_request("subReq-1", CA, 1, mem("4Gi")),
                    ),
                    request("req-1", CA, 1, mem("8Gi")),
                )
            ],
            [device_class(CA, A)],
            [
                slice_("slice-1", N1, P1, A, device("device-1", {"memory": "8Gi"})),
                slice_("slice-2", N1, P2, A, device("device-2", {"memory": "4Gi"})),
            ],
            node(N1, R1),
            PL,
        ),
        [
            allocation(
                LOCAL,
                result("req-0/subReq-1", A, P2, "device-2"),
                result("req-1", A, P1, "device-1"),
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": (
        case(
            [
                claim(
                    "claim-0",
                    prioritized(
                        "req-0", sub_request("subReq-0", CB, 500), sub_request("subReq-1", CA, 1)
                    ),
                )
            ],
            [device_class(CA, A), device_class(CB, B)],
            [slice_with_one_device("slice-1", N1, P1, A)],
            node(N1, R1),
            PL,
        ),
        [allocation(LOCAL, result("req-0/subReq-1", A, P1, "device-1"))],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name: str) -> None:
    check(*CASES[name])
