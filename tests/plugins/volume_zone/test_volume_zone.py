"""VolumeZone: PreFilter's errors and skips, Filter's label matching, events and hints (cases
after upstream's volume_zone_test.go)."""

from __future__ import annotations

import pytest

from scheduler.api.objects import Node
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.status import Code
from scheduler.plugins import volume_zone
from scheduler.plugins.volume_zone.plugin import ERR_REASON_CONFLICT
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot, run_plugin
from tests.plugins.storage_fixtures import claim, pod, pv, pvc_volume, storage_class

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def world() -> FakeHandle:
    handle = FakeHandle()
    handle.static_storage.add(
        pv("pv-a", labels={ZONE: "us-a"}),
        pv("pv-ab", labels={ZONE: "us-a__us-b"}),
        pv("pv-beta", labels={BETA_ZONE: "us-a", BETA_REGION: "us"}),
        pv("pv-none"),
        pv("pv-bad", labels={ZONE: "us-a__"}),
        claim("c-a", volume="pv-a"),
        claim("c-ab", volume="pv-ab"),
        claim("c-beta", volume="pv-beta"),
        claim("c-none", volume="pv-none"),
        claim("c-bad", volume="pv-bad"),
        claim("c-missing-pv", volume="pv-gone"),
        claim("c-wait", storage_class="wait"),
        claim("c-now", storage_class="now"),
        claim("c-noclass"),
        claim("c-badclass", storage_class="gone"),
        storage_class("wait", mode="WaitForFirstConsumer"),
        storage_class("now"),
    )
    return handle


def nodes() -> list[Node]:
    return [
        make_node("n-a", labels={ZONE: "us-a", REGION: "us"}),
        make_node("n-b", labels={ZONE: "us-b", REGION: "us"}),
        make_node("n-beta-a", labels={BETA_ZONE: "us-a"}),
        make_node("n-plain"),
    ]


def run(*claims: str) -> tuple[Code | None, str, list[str]]:
    handle = world()
    handle.snap = make_snapshot(nodes())
    plugin = build_plugin(volume_zone.SPEC, handle=handle)
    result = run_plugin(plugin, pod("p", *(pvc_volume(c) for c in claims)), handle.snap)
    status = result.pre_filter_status
    if status is not None and not status.is_skip():
        return status.code, status.message(), []
    return (status.code if status else None), "", result.feasible


def test_pod_without_claims_is_skipped() -> None:
    assert run() == (Code.SKIP, "", ["n-a", "n-b", "n-beta-a", "n-plain"])


@pytest.mark.parametrize(
    ("claim_name", "feasible"),
    [
        # A GA PV label is not matched against a node's beta label (only beta -> GA is).
        ("c-a", ["n-a", "n-plain"]),
        ("c-ab", ["n-a", "n-b", "n-plain"]),
        # The PV's beta zone matches the node's GA zone; its beta region the GA region.
        ("c-beta", ["n-a", "n-plain"]),
    ],
)
def test_filter_matches_the_bound_volumes_zone(claim_name: str, feasible: list[str]) -> None:
    assert run(claim_name) == (None, "", feasible)


def test_every_volume_must_match() -> None:
    assert run("c-ab", "c-a") == (None, "", ["n-a", "n-plain"])


def test_rejection_is_unresolvable_with_upstreams_reason() -> None:
    handle = world()
    handle.snap = make_snapshot(nodes())
    plugin = build_plugin(volume_zone.SPEC, handle=handle)
    result = run_plugin(plugin, pod("p", pvc_volume("c-a")), handle.snap)
    status = result.filter_statuses["n-b"]
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == ERR_REASON_CONFLICT == "node(s) had no available volume zone"


@pytest.mark.parametrize(
    "claim_name", ["c-none", "c-bad", "c-wait"]
)  # no labels, an unparsable label, an unbound WaitForFirstConsumer claim
def test_volumes_without_topology_skip(claim_name: str) -> None:
    assert run(claim_name)[0] == Code.SKIP


@pytest.mark.parametrize(
    ("claim_name", "message"),
    [
        ("", "PersistentVolumeClaim had no name"),
        ("c-gone", 'persistentvolumeclaim "c-gone" not found'),
        ("c-missing-pv", 'persistentvolume "pv-gone" not found'),
        ("c-noclass", "PersistentVolumeClaim had no pv name and storageClass name"),
        ("c-badclass", 'storageclass.storage.k8s.io "gone" not found'),
        ("c-now", "PersistentVolume had no name"),
    ],
)
def test_prefilter_errors(claim_name: str, message: str) -> None:
    assert run(claim_name) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, [])


def test_filter_without_prefilter_state_computes_it() -> None:
    handle = world()
    plugin = build_plugin(volume_zone.SPEC, handle=handle)
    info = make_snapshot([make_node("n-b", labels={ZONE: "us-b"})]).list()[0]
    status = plugin.filter(CycleState(), pod("p", pvc_volume("c-a")), info)
    assert status is not None and status.message() == ERR_REASON_CONFLICT


def test_events() -> None:
    plugin = build_plugin(volume_zone.SPEC, handle=world())
    events = {(e.event.resource, e.event.action_type) for e in plugin.events_to_register()}
    assert events == {
        (EventResource.STORAGE_CLASS, ActionType.ADD),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
        (EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
    }


def test_hints() -> None:
    plugin = build_plugin(volume_zone.SPEC, handle=world())
    p = pod("p", pvc_volume("c-a"))
    # StorageClass Add: only WaitForFirstConsumer.
    wait, now = storage_class("w", mode="WaitForFirstConsumer"), storage_class("i")
    assert plugin.is_schedulable_after_storage_class_added(p, None, wait) == Q
    assert plugin.is_schedulable_after_storage_class_added(p, None, now) == SKIP
    # PVC Add/Update: the pod's own claims, in its namespace.
    assert plugin.is_schedulable_after_claim_change(p, None, claim("c-a")) == Q
    assert plugin.is_schedulable_after_claim_change(p, None, claim("other")) == SKIP
    assert plugin.is_schedulable_after_claim_change(p, None, claim("c-a", namespace="x")) == SKIP
    # PV Add always; PV Update when its topology labels changed.
    assert plugin.is_schedulable_after_volume_change(p, None, pv("new")) == Q
    old = pv("v", labels={ZONE: "us-a"})
    assert plugin.is_schedulable_after_volume_change(p, old, pv("v", labels={ZONE: "us-b"})) == Q
    same = pv("v", labels={ZONE: "us-a", "team": "x"})
    assert plugin.is_schedulable_after_volume_change(p, old, same) == SKIP
