"""Coscheduling in the in-process scheduler (real queue, cache, framework and loop), with the
group cycle (tests/test_group_cycle.py has its own tests): a group that fits is bound whole in
one loop step; one that does not places nothing, so nothing stays assumed and nothing waits at
Permit; PreEnqueue holds open on member and PodGroup events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.api.gang import gang_from_pod_group
from scheduler.eventhandlers import EventHandlers
from scheduler.framework.events import EventResource
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.plugins import coscheduling
from scheduler.testing import make_node
from scheduler.testing.harness import PROFILE, Harness, registry
from tests.plugins.coscheduling.objects import member, pod_group


def gang_profile(args: dict[str, Any] | None = None) -> ProfileSpec:
    enabled = (PluginRef("Coscheduling"), PluginRef("CpuFit"), PluginRef("Binder"))
    return ProfileSpec(
        PROFILE,
        plugins={"multiPoint": PluginSetSpec(enabled=enabled)},
        plugin_args={"Coscheduling": args} if args else {},
    )


def harness(args: dict[str, Any] | None = None) -> Harness:
    plugins = registry().merge({coscheduling.NAME: coscheduling.SPEC})
    return Harness(gang_profile(args), plugins=plugins)


@pytest.fixture
def h() -> Iterator[Harness]:
    harness_ = harness()
    yield harness_
    harness_.close()


def add_group(h: Harness, size: int, min_member: int, cpu: str = "1") -> list[Any]:
    h.gangs.add(pod_group("g", min_member))
    pods = [member(f"m{i}", "g", cpu=cpu) for i in range(size)]
    for pod in pods:
        h.add_pod(pod)
    return pods


def test_the_queue_sorts_by_coscheduling(h: Harness) -> None:
    assert h.fwk.queue_sort().name == "Coscheduling"


def test_a_group_that_fits_is_bound_whole(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="2"))
    add_group(h, 4, 4)
    h.schedule_next()  # one loop step: the group cycle takes the three held siblings too
    assert h.queue.active_len() == 0
    h.api.wait_for(lambda: len(h.api.binds) == 4)
    assert sorted(h.api.binds.values()) == ["a", "a", "b", "b"]


def test_a_group_where_only_three_of_four_fit(h: Harness) -> None:
    """m0..m2 are held at PreEnqueue (fewer than minMember pods when added), m3 completes the
    count and is popped; the group cycle runs PreEnqueue again for the held siblings, takes
    them, places three and finds no node for the fourth: below minMember, the three are
    unreserved and forgotten before the loop step returns. Nothing is bound, assumed or
    waiting; all four are unschedulable with the group's message (no PostFilter runs), and
    the group is marked failed (it sorts behind newer groups)."""
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="1"))
    pods = add_group(h, 4, 4)
    h.schedule_next()
    assert h.cache.pod_count() == 0
    assert h.fwk.waiting_pods.all() == []
    assert {h.queue.where(p.uid) for p in pods} == {"unschedulable"}
    h.api.wait_for(lambda: len(h.api.status_patches) == 4)
    assert h.api.binds == {}
    messages = {e[2] for e in h.recorder.events}
    assert messages == {
        "PodGroup default/g: 3 of 4 members would fit, none is held; 1 could not be placed: "
        "0/2 nodes are available: 2 Insufficient cpu."
    }


def test_nothing_waits_at_permit_for_a_group_below_quorum() -> None:
    """podGroupRejectPercentage 100 used to let placed members hold their nodes until the
    Permit timeout; the group cycle sends members to Permit only once the quorum is there."""
    h = harness({"podGroupRejectPercentage": 100})
    try:
        h.add_node(make_node("a", cpu="3"))
        add_group(h, 4, 4)
        h.schedule_next()
        assert h.cache.assumed_pod_count() == 0
        assert h.fwk.waiting_pods.all() == []
        h.api.wait_for(lambda: len(h.api.status_patches) == 4)
        assert h.api.binds == {}
    finally:
        h.close()


def test_a_held_member_is_requeued_when_a_sibling_arrives(h: Harness) -> None:
    handlers = EventHandlers(h.cache, h.queue, {PROFILE: h.fwk})
    h.gangs.add(pod_group("g", 2))
    m0, m1 = member("m0", "g", cpu="1"), member("m1", "g", cpu="1")
    for pod in (m0, m1):
        h.gangs.add(pod)  # the pod informer's member index runs before the handlers
        h.pods[pod.key] = pod
        handlers.on_pod_add(pod)
        if pod is m0:
            assert h.queue.where(m0.uid) == "gated"
    assert h.queue.where(m0.uid) == "active"
    assert h.queue.where(m1.uid) == "active"


def test_held_members_are_requeued_when_their_podgroup_appears(h: Harness) -> None:
    handlers = EventHandlers(h.cache, h.queue, {PROFILE: h.fwk})
    pods = [member(f"m{i}", "g", cpu="1") for i in range(2)]
    for pod in pods:
        h.add_pod(pod)
    assert {h.queue.where(p.uid) for p in pods} == {"gated"}
    group = pod_group("g", 2)
    h.gangs.add(group)
    on_add, _, _ = handlers.resource_handlers(EventResource.POD_GROUP)
    on_add(gang_from_pod_group(group))
    assert {h.queue.where(p.uid) for p in pods} == {"active"}
