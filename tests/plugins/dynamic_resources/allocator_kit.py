"""Running a translated allocator case and comparing its answer."""

from __future__ import annotations

import re
from typing import Any

from scheduler.framework import (
    parse_device_class,
    parse_quantity,
    parse_resource_claim,
    parse_resource_slice,
)
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    Allocator,
    DeviceID,
    Features,
    allocate_case,
    run_case,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class Error:
    """An expected error, by a substring of its message."""

    def __init__(self, substring: str) -> None:
        self.substring = substring


class NodeFailure:
    """An expected failure of this node only (upstream's ErrFailedAllocationOnNode): the claims
    do not fit here, for a reason (a substring of it) other nodes may not share."""

    def __init__(self, substring: str) -> None:
        self.substring = substring


def _strip_share_ids(allocations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for a in allocations:
        for r in a["devices"]["results"]:
            if "shareID" in r:
                assert UUID.match(r["shareID"]), r["shareID"]
                r["shareID"] = "<share>"
    return allocations


def check(
    case: dict[str, Any], expected: list[dict[str, Any]] | Error | NodeFailure | None
) -> None:
    answer = allocate_case(case)
    if isinstance(expected, NodeFailure):
        assert answer.get("allocations", "") is None, answer
        assert expected.substring in answer.get("reason", ""), answer
        return
    if isinstance(expected, Error):
        assert "error" in answer, answer
        assert expected.substring in answer["error"], answer["error"]
        return
    assert "error" not in answer, answer["error"]
    got = answer["allocations"]
    if expected is None:
        assert got is None, got
        return
    assert got is not None, "unsatisfiable"
    assert _strip_share_ids(got) == expected


def steps(case: dict[str, Any]) -> int:
    """How many search steps (upstream's allocateOne invocations) the case takes."""
    return run_case(case).steps


def check_with_state(
    case: dict[str, Any],
    expected: list[dict[str, Any]] | None,
    aggregated: dict[str, dict[str, str]] | None = None,
    shared: list[tuple[str, str]] | None = None,
) -> None:
    """As check, with capacity already consumed on shared devices ("driver/pool/device" ->
    capacity -> quantity) and their share IDs, which the case format does not carry."""
    state = AllocatedState(
        allocated_devices=frozenset(
            DeviceID(*d.split("/")) for d in case.get("allocatedDevices") or ()
        ),
        allocated_shared_device_ids=frozenset(
            (DeviceID(*d.split("/")), share) for d, share in shared or ()
        ),
        aggregated_capacity={
            DeviceID(*d.split("/")): {k: parse_quantity(v) for k, v in caps.items()}
            for d, caps in (aggregated or {}).items()
        },
    )
    allocator = Allocator(
        Features(**_features(case)),
        state,
        [parse_device_class(c) for c in case["classes"]],
        [parse_resource_slice(s) for s in case["slices"]],
    )
    meta = case["node"]["metadata"]
    outcome = allocator.allocate(
        meta["name"], meta.get("labels") or {}, [parse_resource_claim(c) for c in case["claims"]]
    )
    if expected is None:
        assert outcome.allocations is None, outcome.allocations
        return
    assert outcome.allocations is not None, "unsatisfiable"
    assert _strip_share_ids(outcome.allocations) == expected


def _features(case: dict[str, Any]) -> dict[str, bool]:
    names = {
        "adminAccess": "admin_access",
        "prioritizedList": "prioritized_list",
        "partitionableDevices": "partitionable_devices",
        "deviceTaints": "device_taints",
        "consumableCapacity": "consumable_capacity",
        "bindingConditions": "binding_conditions",
    }
    return {names[k]: v for k, v in case["features"].items()}
