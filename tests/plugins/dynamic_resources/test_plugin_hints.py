"""DynamicResources' registered events and QueueingHints (isSchedulableAfterClaimChange,
isSchedulableAfterTargetPodUpdate)."""

from __future__ import annotations

from scheduler.framework import ActionType, EventResource, QueueingHint
from scheduler.plugins.dynamic_resources.hints import claim_changed, target_pod_updated
from tests.plugins.dynamic_resources.plugin_kit import allocation, claim, handle, plugin, pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_events_are_upstreams() -> None:
    events = {
        (e.event.resource, e.event.action_type) for e in plugin(handle()).events_to_register()
    }
    assert events == {
        (
            EventResource.NODE,
            ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
        ),
        (EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE | ActionType.DELETE),
        (EventResource.TARGET_POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        (EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
        (EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE),
    }


def test_claim_hints() -> None:
    mine, other = claim("mine"), claim("other")
    h = handle(claims=(mine, other))
    dra = h.dra()
    p = pod("p", claims={"gpu": "mine"})
    allocated = claim("other", allocation=allocation("n1", "gpu-0"))
    assert claim_changed(dra, p, None, mine) == Q, "the pod's claim was created"
    assert claim_changed(dra, p, None, other) == SKIP, "an unrelated claim"
    assert claim_changed(dra, p, allocated, other) == Q, "devices were freed"
    assert claim_changed(dra, p, mine, claim("mine", rv="2")) == SKIP, "status unchanged"
    assert claim_changed(dra, p, mine, claim("mine", reserved_for=[{"uid": "x"}])) == Q
    assert claim_changed(dra, p, allocated, None) == Q, "an allocated claim was deleted"
    assert claim_changed(dra, p, other, None) == SKIP
    waiting = pod("w", claims={"gpu": "missing"})
    assert claim_changed(dra, waiting, None, mine) == SKIP, "the pod still misses a claim"


def test_target_pod_hint_waits_for_every_generated_claim() -> None:
    h = handle(claims=(claim("gen", owner="p"),))
    dra = h.dra()
    before = pod("p", templates={"gpu": "t"})
    after = pod("p", templates={"gpu": "t"}, generated={"gpu": "gen"})
    assert target_pod_updated(dra, before, before, after) == Q
    missing = pod("p", templates={"gpu": "t"}, generated={"gpu": "not-yet"})
    assert target_pod_updated(dra, before, before, missing) == SKIP


def test_plugin_is_each_protocol_it_claims() -> None:
    """The conformance test builds the registry's DynamicResources with the switch off (the
    guard); the real plugin is checked here."""
    from scheduler.plugins.dynamic_resources import SPEC

    built = plugin(handle())
    for protocol in SPEC.implements:
        assert isinstance(built, protocol), protocol
