"""The claim tracker: the assume cache (a claim PreBind wrote is served until the informer
catches up, then the informer's wins), in-flight allocations with shares, and allocated devices
kept incrementally from claim events."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from scheduler.api.dra import ResourceClaim, parse_resource_claim
from scheduler.framework.dra import ClaimNotFoundError, ClaimTracker, DRAManager, StaticDRA


def _alloc(*devices: str, admin: bool = False) -> dict[str, Any]:
    return {
        "devices": {
            "results": [
                {"request": "r", "driver": "d", "pool": "p", "device": d, "adminAccess": admin}
                for d in devices
            ]
        }
    }


def _claim(name: str, rv: str = "1", allocation: dict[str, Any] | None = None) -> ResourceClaim:
    return parse_resource_claim(
        {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"u-{name}",
                "resourceVersion": rv,
            },
            "spec": {"devices": {"requests": []}},
            "status": {"allocation": allocation} if allocation else {},
        }
    )


def _devices(tracker: ClaimTracker) -> set[tuple[str, str, str]]:
    return tracker.gather_allocated_state().devices


def test_allocated_devices_follow_claim_events() -> None:
    source = StaticDRA([_claim("a", allocation=_alloc("g0"))])
    tracker = ClaimTracker(source)
    assert _devices(tracker) == {("d", "p", "g0")}
    source.add_claim(_claim("b", allocation=_alloc("g1", "g2")))
    assert _devices(tracker) == {("d", "p", "g0"), ("d", "p", "g1"), ("d", "p", "g2")}
    source.add_claim(_claim("b", rv="2"))  # deallocated
    assert _devices(tracker) == {("d", "p", "g0")}
    source.delete_claim(_claim("a", allocation=_alloc("g0")))
    assert _devices(tracker) == set()
    source.add_claim(_claim("c", allocation=_alloc("g3", admin=True)))
    assert _devices(tracker) == set(), "admin access takes no device"


def test_assumed_claim_is_served_until_the_informer_has_its_version() -> None:
    source = StaticDRA([_claim("a", rv="5")])
    tracker = ClaimTracker(source)
    written = _claim("a", rv="6", allocation=_alloc("g0"))
    tracker.assume_after_api_call(written)
    assert tracker.get("ns", "a") is written
    assert _devices(tracker) == {("d", "p", "g0")}
    source.add_claim(_claim("a", rv="5"))  # an older event arriving late changes nothing
    assert tracker.get("ns", "a") is written
    newer = _claim("a", rv="6", allocation=_alloc("g0"))
    source.add_claim(newer)
    assert tracker.get("ns", "a") is newer
    assert tracker.assumed_count() == 0
    assert _devices(tracker) == {("d", "p", "g0")}


def test_restore_serves_the_informer_claim_again() -> None:
    source = StaticDRA([_claim("a", rv="5")])
    tracker = ClaimTracker(source)
    tracker.assume_after_api_call(_claim("a", rv="6", allocation=_alloc("g0")))
    tracker.restore("ns", "a")
    assert tracker.get("ns", "a").resource_version == "5"
    assert _devices(tracker) == set()


def test_missing_claim_has_upstreams_message() -> None:
    with pytest.raises(ClaimNotFoundError, match='could not find ResourceClaim "ns/x"'):
        ClaimTracker(StaticDRA()).get("ns", "x")


def test_in_flight_allocations_count_shares_and_take_devices() -> None:
    claim = _claim("a")
    tracker = ClaimTracker(StaticDRA([claim]))
    allocated = dataclasses.replace(claim, allocation=_alloc("g0"))
    tracker.signal_pending_allocation(claim.uid, allocated)
    tracker.signal_pending_allocation(claim.uid, allocated)
    assert tracker.pending_allocation(claim.uid) == _alloc("g0")
    assert _devices(tracker) == {("d", "p", "g0")}
    assert not tracker.maybe_remove_pending_allocation(claim.uid, force=False)
    assert tracker.maybe_remove_pending_allocation(claim.uid, force=False)
    assert tracker.pending_allocation(claim.uid) is None
    assert _devices(tracker) == set()


def test_no_in_flight_entry_for_a_claim_already_allocated() -> None:
    claim = _claim("a", allocation=_alloc("g0"))
    tracker = ClaimTracker(StaticDRA([claim]))
    tracker.signal_pending_allocation(claim.uid, claim)
    assert tracker.in_flight_count() == 0


def test_manager_reuses_patched_slices_until_a_slice_changes() -> None:
    manager = DRAManager(StaticDRA())
    first = manager.slices_with_taint_rules()
    assert manager.slices_with_taint_rules() is first
