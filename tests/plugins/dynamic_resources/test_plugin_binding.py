"""DynamicResources' Reserve, PreBind, Unreserve and PostFilter with the kit: the claim writes
(FakeApi), the assume cache between PreBind and the informer, binding conditions, and the
deallocation PostFilter makes."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from scheduler.framework.status import Code
from scheduler.testing import run_plugin
from tests.plugins.dynamic_resources.plugin_kit import (
    allocation,
    claim,
    handle,
    plugin,
    pod,
)


def test_pre_bind_writes_allocation_and_reservation_then_assumes_the_claim() -> None:
    h = handle(("n1",), claims=(claim("c1"),))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    assert p.reserve(r.state, a, "n1") is None
    assert p.pre_bind_pre_flight(r.state, a, "n1") is None
    assert p.pre_bind(r.state, a, "n1") is None
    ((kind, key, (written, consumer)),) = h.fake_api.resource_claim_writes
    assert (kind, key) == ("reserve", "ns/c1")
    assert written["devices"]["results"][0]["device"] == "gpu-0"
    assert consumer == {"resource": "pods", "name": "a", "uid": "a"}
    tracker = h.dra().claims
    assert tracker.in_flight_count() == 0
    assumed = tracker.get("ns", "c1")
    assert assumed.resource_version == "2" and assumed.allocation == written
    # The informer delivering the written version replaces the assumption.
    h.static_dra.add_claim(assumed)
    assert tracker.assumed_count() == 0


def test_claim_reserved_for_the_pod_is_not_written_again() -> None:
    allocated = allocation("n1", "gpu-0")
    h = handle(("n1",), claims=(claim("c1", allocation=allocated, reserved_for=[{"uid": "a"}]),))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    assert p.reserve(r.state, a, "n1") is None
    assert p.pre_bind(r.state, a, "n1") is None
    assert h.fake_api.resource_claim_writes == []


def test_pre_bind_pre_flight_skips_pods_without_claims() -> None:
    h = handle()
    p = plugin(h)
    q = pod("q")
    r = run_plugin(p, q, h.snap)
    status = p.pre_bind_pre_flight(r.state, q, "n1")
    assert status is not None and status.code == Code.SKIP


def test_failed_write_is_an_error_and_unreserve_releases_the_devices() -> None:
    h = handle(("n1",), claims=(claim("c1"),))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    p.reserve(r.state, a, "n1")
    h.fake_api.fail_with = RuntimeError("claim ns/c1 got allocated elsewhere in the meantime")
    status = p.pre_bind(r.state, a, "n1")
    assert status is not None and status.code == Code.ERROR
    assert "got allocated elsewhere" in status.message()
    p.unreserve(r.state, a, "n1")
    assert h.dra().claims.in_flight_count() == 0
    assert h.dra().claims.gather_allocated_state().devices == set()


def test_unreserve_removes_the_pod_from_an_allocated_claims_reservations() -> None:
    allocated = allocation("n1", "gpu-0")
    h = handle(("n1",), claims=(claim("c1", allocation=allocated, reserved_for=[{"uid": "a"}]),))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    p.unreserve(r.state, a, "n1")
    assert h.fake_api.resource_claim_writes == [("unreserve", "ns/c1", "a")]


def test_post_filter_deallocates_a_claim_unavailable_on_the_nodes() -> None:
    h = handle(("n1",), claims=(claim("c1", allocation=allocation("gone", "gpu-0")),))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    assert r.rejections() == {"n1": "resourceclaim not available on the node"}
    _, status = p.post_filter(r.state, a, {})
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "deallocation of ResourceClaim completed"
    assert h.fake_api.resource_claim_writes == [("deallocate", "ns/c1", "1")]


def test_post_filter_keeps_a_claim_reserved_for_another_pod() -> None:
    claimed = claim("c1", allocation=allocation("gone", "gpu-0"), reserved_for=[{"uid": "b"}])
    h = handle(("n1",), claims=(claimed,))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    _, status = p.post_filter(r.state, a, {})
    assert status.code == Code.UNSCHEDULABLE and status.message() == ""
    assert h.fake_api.resource_claim_writes == []


def _with_conditions(alloc: dict[str, Any], conditions: list[dict[str, str]]) -> dict[str, Any]:
    result = alloc["devices"]["results"][0]
    result["bindingConditions"] = ["Attached"]
    result["bindingFailureConditions"] = ["Failed"]
    return alloc


def test_binding_failure_condition_fails_pre_bind_with_upstreams_message() -> None:
    allocated = _with_conditions(allocation("n1", "gpu-0"), [])
    c1 = claim("c1", allocation=allocated, reserved_for=[{"uid": "a"}])
    failed = dataclasses.replace(
        c1,
        devices=(
            {
                "driver": "gpu.example.com",
                "pool": "n1",
                "device": "gpu-0",
                "conditions": [{"type": "Failed", "status": "True", "reason": "Broken"}],
            },
        ),
    )
    h = handle(("n1",), claims=(failed,))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    # Filter sees the failed binding: the claim is not usable anywhere.
    assert r.rejections() == {"n1": "resourceclaim not available on the node"}
    status = p.pre_bind(r.state, a, "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'device binding failed: claim=c1, reason=Broken, message=""'
    assert h.recorder.events == [
        ("ns/a", "BindingConditionsPending", "waiting for binding conditions for device on node n1")
    ]


def test_met_binding_conditions_let_pre_bind_succeed() -> None:
    allocated = _with_conditions(allocation("n1", "gpu-0"), [])
    c1 = claim("c1", allocation=allocated, reserved_for=[{"uid": "a"}])
    ready = dataclasses.replace(
        c1,
        devices=(
            {
                "driver": "gpu.example.com",
                "pool": "n1",
                "device": "gpu-0",
                "conditions": [{"type": "Attached", "status": "True"}],
            },
        ),
    )
    h = handle(("n1",), claims=(ready,))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    assert r.feasible == ["n1"]
    assert p.pre_bind(r.state, a, "n1") is None


def test_binding_timeout_makes_the_claim_unavailable_and_fails_pre_bind() -> None:
    """isClaimTimeout: a device with binding conditions allocated longer ago than
    bindingTimeout and not ready: Filter finds the claim unavailable (PostFilter may then
    deallocate it) and PreBind ends with upstream's timeout message."""
    allocated = _with_conditions(allocation("n1", "gpu-0"), [])
    allocated["allocationTimestamp"] = "2026-01-01T00:00:00+00:00"
    c1 = claim("c1", allocation=allocated, reserved_for=[{"uid": "a"}])
    h = handle(("n1",), claims=(c1,))
    p = plugin(h, {"bindingTimeout": "1s"})
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    assert r.rejections() == {"n1": "resourceclaim not available on the node"}
    status = p.pre_bind(r.state, a, "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "device binding timeout: claim=c1"
    # Allocated just now, the same claim is only pending: usable, PreBind would wait.
    fresh = dict(allocated, allocationTimestamp=datetime.now(UTC).isoformat())
    h = handle(("n1",), claims=(claim("c1", allocation=fresh, reserved_for=[{"uid": "a"}]),))
    r = run_plugin(plugin(h, {"bindingTimeout": "1s"}), a, h.snap)
    assert r.feasible == ["n1"]
