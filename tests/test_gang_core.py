"""Coscheduling in the in-process scheduler (real queue, cache, framework and loop), before the
group cycle: a group that fits is bound whole; one that does not is given up by PostFilter or
the Permit timeout, so nothing stays assumed; PreEnqueue holds open on member and PodGroup
events."""

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
from tests.core_harness import PROFILE, Harness, poll, registry
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
    for _ in range(4):
        h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == 4)
    assert sorted(h.api.binds.values()) == ["a", "a", "b", "b"]


def test_a_group_where_only_three_of_four_fit_today(h: Harness) -> None:
    """Without the group cycle: m0..m2 are held at PreEnqueue (fewer than minMember pods
    when added), m3 completes the count, is assumed and waits at Permit, which activates
    its siblings; two more are assumed and wait, the last fits nowhere. PostFilter (gap 1/4
    > 10%) rejects the three waiting members, whose binding cycles unreserve and forget them.
    Nothing is bound and nothing stays assumed; all four are unschedulable, the group is
    marked failed (it sorts behind newer groups), and it is retried on the next cluster
    event."""
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="1"))
    pods = add_group(h, 4, 4)
    for _ in range(4):
        h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 4)
    poll(lambda: h.cache.pod_count() == 0, "the waiting members to be forgotten")
    assert h.api.binds == {}
    messages = sorted(e[2] for e in h.recorder.events)
    assert messages[:3] == ["0/1 nodes are available: 1 optimistic rejection in PostFilter."] * 3
    assert messages[3] == (
        "0/2 nodes are available: 2 Insufficient cpu. PodGroup default/g gets rejected due to "
        "Pod m2 is unschedulable even after PostFilter"
    )
    # The requeue follows the status patch on the binding threads.
    poll(lambda: {h.queue.where(p.uid) for p in pods} == {"unschedulable"}, "the requeues")


def test_waiting_members_are_released_when_the_permit_wait_times_out() -> None:
    """podGroupRejectPercentage 100 keeps PostFilter from giving up: the placed members hold
    their nodes until scheduleTimeout (60 s by default) passes on the scheduler's clock."""
    h = harness({"podGroupRejectPercentage": 100})
    try:
        h.add_node(make_node("a", cpu="3"))
        add_group(h, 4, 4)
        for _ in range(4):
            h.schedule_next()
        h.api.wait_for(lambda: len(h.api.status_patches) == 1)  # m3: Insufficient cpu
        assert h.cache.assumed_pod_count() == 3
        h.clock.step(59)
        assert h.cache.assumed_pod_count() == 3
        h.clock.step(1)
        h.api.wait_for(lambda: len(h.api.status_patches) == 4)
        poll(lambda: h.cache.pod_count() == 0, "the timed-out members to be forgotten")
        assert h.api.binds == {}
        texts = " ".join(e[2] for e in h.recorder.events)
        assert "rejected due to timeout after waiting 60.0s at plugin Coscheduling" in texts
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
