"""The group cycle (docs/gang.md) in the in-process scheduler: a popped member brings every
pending sibling into one step of the loop, which places the group whole (bound + assumed reach
minMember) or reverts everything it placed before the loop takes another pod."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler import metrics
from scheduler.api.gang import GangRef, GangSource
from scheduler.api.objects import Pod, replace_pod
from scheduler.backend.cache import CacheError
from scheduler.framework.gang import GangMembers, PodGroupInfo
from scheduler.framework.status import Code, Status
from scheduler.schedule_group import GroupCycle, Unplaced, group_message
from scheduler.schedule_one import Failure
from scheduler.testing import make_node
from scheduler.testing.harness import Harness, poll
from tests.plugins.coscheduling.objects import member, pod_group
from tests.test_gang_core import harness


@pytest.fixture
def h() -> Iterator[Harness]:
    harness_ = harness()
    yield harness_
    harness_.close()


def ref(name: str) -> GangRef:
    return GangRef(GangSource.SCHEDULER_PLUGINS, "default", name)


def add_group(
    h: Harness, name: str, size: int, min_member: int, cpu: str = "1", **kwargs: Any
) -> list[Pod]:
    h.gangs.add(pod_group(name, min_member, **kwargs))
    pods = [member(f"{name}-{i}", name, cpu=cpu) for i in range(size)]
    for pod in pods:
        h.add_pod(pod)
    return pods


def drain(h: Harness) -> int:
    """Runs the loop while activeQ holds pods; how many loop steps that took."""
    steps = 0
    while h.queue.active_len():
        h.schedule_next()
        steps += 1
    return steps


def placed(h: Harness, name: str) -> int:
    return h.cache.gang_members(ref(name)).placed


def requested_cpu(h: Harness) -> dict[str, int]:
    return {name: info.requested.milli_cpu for name, info in h.cache.node_infos().items()}


def sample(family: str, **labels: str) -> float:
    value = metrics.REGISTRY.get_sample_value(family, labels)
    return value or 0.0


def test_a_group_that_fits_is_bound_whole_in_one_step(h: Harness) -> None:
    for i in range(5):
        h.add_node(make_node(f"n{i}", cpu="2"))
    pods = add_group(h, "g", 10, 10)
    assert h.queue.active_len() == 1  # the tenth member's arrival: the others are held
    scheduled = sample("kube_pysched_gang_attempts_total", result="scheduled")
    members = sample("kube_pysched_gang_members_per_attempt_sum")
    h.schedule_next()
    assert placed(h, "g") == 10
    h.api.wait_for(lambda: len(h.api.binds) == 10)
    poll(lambda: h.queue.in_flight_pods() == [], "the binding cycles to finish")
    assert sorted(h.api.binds) == sorted(p.key for p in pods)
    assert h.queue.active_len() == h.queue.backoff_len() == h.queue.unschedulable_len() == 0
    assert h.recorder.events and all(e[1] == "Scheduled" for e in h.recorder.events)
    assert sample("kube_pysched_gang_attempts_total", result="scheduled") == scheduled + 1
    assert sample("kube_pysched_gang_members_per_attempt_sum") == members + 10


def test_a_group_that_cannot_fit_places_none_and_leaves_nothing_assumed(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="1"))
    pods = add_group(h, "g", 4, 4)
    unschedulable = sample("kube_pysched_gang_attempts_total", result="unschedulable")
    h.schedule_next()
    # Reverted before the loop step returned: nothing to wait for.
    assert h.cache.assumed_pod_count() == 0
    assert h.cache.pod_count() == 0
    assert requested_cpu(h) == {"a": 0, "b": 0}
    assert placed(h, "g") == 0
    assert h.fwk.waiting_pods.all() == []
    assert {h.queue.where(p.uid) for p in pods} == {"unschedulable"}
    assert h.queue.in_flight_pods() == []
    message = (
        "PodGroup default/g: 3 of 4 members would fit, none is held; 1 could not be placed: "
        "0/2 nodes are available: 2 Insufficient cpu."
    )
    assert sorted(h.recorder.events) == sorted((p.key, "FailedScheduling", message) for p in pods)
    h.api.wait_for(lambda: len(h.api.status_patches) == 4)
    for _, patch in h.api.status_patches:
        (condition,) = patch["status"]["conditions"]
        assert (condition["type"], condition["status"]) == ("PodScheduled", "False")
        assert (condition["reason"], condition["message"]) == ("Unschedulable", message)
    assert h.api.binds == {}
    assert sample("kube_pysched_gang_attempts_total", result="unschedulable") == unschedulable + 1
    # The group sorts by its failure from now on.
    assert h.fwk.plugins["Coscheduling"].tracker.failed_at(ref("g")) is not None  # type: ignore[attr-defined]


def test_no_member_preempts_in_a_group_cycle(h: Harness) -> None:
    """The Coscheduling PostFilter (the only one here) would have added its own message."""
    h.add_node(make_node("a", cpu="1"))
    add_group(h, "g", 2, 2)
    h.schedule_next()
    assert all("PostFilter" not in e[2] for e in h.recorder.events)


@pytest.mark.parametrize("seed", range(20))
def test_two_groups_that_fit_only_one_at_a_time_never_both_hold_nodes(seed: int) -> None:
    """Each group fits alone, not both: whatever the creation order and interleaving of member
    arrivals and loop steps, after every loop step each group holds nothing or its quorum;
    in the end one is placed whole and the other holds nothing."""
    rng = random.Random(seed)
    h = harness()
    try:
        sizes = {"ga": rng.randint(3, 6), "gb": rng.randint(3, 6)}
        capacity = rng.randint(max(sizes.values()), sum(sizes.values()) - 1)
        for i in range(capacity):
            h.add_node(make_node(f"n{i}", cpu="1"))
        created = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"]
        rng.shuffle(created)
        for name, when in zip(sizes, created, strict=True):
            h.gangs.add(pod_group(name, sizes[name], created=when))
        pods = [member(f"{g}-{i}", g, cpu="1") for g, n in sizes.items() for i in range(n)]
        rng.shuffle(pods)

        def check() -> None:
            for name, size in sizes.items():
                assert placed(h, name) in (0, size), (seed, name, placed(h, name))

        for pod in pods:
            h.add_pod(pod)
            if rng.random() < 0.4:
                while h.queue.active_len():
                    h.schedule_next()
                    check()
        while h.queue.active_len():
            h.schedule_next()
            check()
        counts = sorted(placed(h, name) for name in sizes)
        assert counts[0] == 0
        (winner,) = [name for name in sizes if placed(h, name)]
        assert placed(h, winner) == sizes[winner]
        assert h.cache.assumed_pod_count() == sizes[winner]
        h.api.wait_for(lambda: len(h.api.binds) == sizes[winner])
        assert {key.split("/")[1].split("-")[0] for key in h.api.binds} == {winner}
        loser = next(name for name in sizes if name != winner)
        losers = [p for p in pods if p.labels["scheduling.x-k8s.io/pod-group"] == loser]
        assert {h.queue.where(p.uid) for p in losers} == {"unschedulable"}
        assert h.queue.in_flight_pods() == []
    finally:
        h.close()


def test_the_second_group_is_placed_whole_once_the_first_is_gone() -> None:
    """gb fails behind ga and backs off (podGroupBackoffSeconds 5); ga's pods are deleted; the
    end of the backoff activates gb's members and one loop step places all of them."""
    h = harness({"podGroupBackoffSeconds": 5})
    try:
        for i in range(4):
            h.add_node(make_node(f"n{i}", cpu="2"))
        ga = add_group(h, "ga", 6, 6, created="2026-01-01T00:00:00Z")
        gb = add_group(h, "gb", 6, 6, created="2026-01-01T00:00:01Z")
        assert drain(h) == 2
        assert (placed(h, "ga"), placed(h, "gb")) == (6, 0)
        h.api.wait_for(lambda: len(h.api.binds) == 6)
        assert {h.queue.where(p.uid) for p in gb} == {"unschedulable"}
        for pod in ga:
            bound = replace_pod(pod, node_name=h.api.binds[pod.key])
            h.cache.add_pod(bound)  # the informer confirms the binding...
            h.cache.remove_pod(bound)  # ...and then the pod is deleted
            h.gangs.remove(pod)
            del h.pods[pod.key]
        assert requested_cpu(h) == dict.fromkeys(requested_cpu(h), 0)
        h.clock.step(5)
        assert h.queue.active_len() == 6
        assert drain(h) == 1
        assert placed(h, "gb") == 6
        h.api.wait_for(lambda: len(h.api.binds) == 12)
    finally:
        h.close()


def test_a_group_at_quorum_places_a_new_member_without_waiting(h: Harness) -> None:
    h.add_node(make_node("a", cpu="4"))
    h.gangs.add(pod_group("g", 3))
    for i in range(3):
        h.add_assigned_pod(member(f"g-{i}", "g", cpu="1", node_name="a"))
    new = member("g-3", "g", cpu="1")
    h.add_pod(new)
    h.schedule_next()
    assert h.fwk.waiting_pods.all() == []
    h.api.wait_for(lambda: new.key in h.api.binds)
    assert h.api.binds == {new.key: "a"}


def test_a_member_that_fails_while_the_group_reaches_quorum_fails_alone(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="1"))
    pods = add_group(h, "g", 4, 3)
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == 3)
    (failed,) = [p for p in pods if p.key not in h.api.binds]
    assert [e for e in h.recorder.events if e[1] == "FailedScheduling"] == [
        (failed.key, "FailedScheduling", "0/2 nodes are available: 2 Insufficient cpu.")
    ]
    assert h.queue.where(failed.uid) == "unschedulable"
    assert h.cache.assumed_pod_count() == 3


def test_an_assume_error_counts_as_an_unplaced_member(h: Harness) -> None:
    """An assume that fails (the pod already in the cache) is the member's own failure; the
    group then misses its quorum and the other placements are reverted."""
    h.add_node(make_node("a", cpu="4"))
    pods = add_group(h, "g", 2, 2)
    original = h.cache.assume_pod

    def assume(pod: Pod) -> None:
        if pod.uid == pods[1].uid:
            raise CacheError("already assumed")
        original(pod)

    h.cache.assume_pod = assume  # type: ignore[method-assign]
    error = sample("kube_pysched_gang_attempts_total", result="error")
    h.schedule_next()
    assert h.cache.assumed_pod_count() == 0
    assert requested_cpu(h) == {"a": 0}
    assert {e[2] for e in h.recorder.events} == {
        "PodGroup default/g: 1 of 2 members would fit, none is held; 1 could not be placed: "
        "already assumed"
    }
    assert sample("kube_pysched_gang_attempts_total", result="error") == error + 1


def test_the_group_message() -> None:
    """It says how many would fit and, apart, how many the group holds: this attempt's
    placements are reverted, so they are not held; bound members and members assumed by an
    earlier attempt (still binding) are."""
    group = PodGroupInfo(ref("g"), 4, "default/g", "Coscheduling")
    pod = member("m", "g")
    fails = [
        Unplaced(None, Failure(Status(Code.UNSCHEDULABLE, "first")), 0.0),  # type: ignore[arg-type]
        Unplaced(None, Failure(Status(Code.UNSCHEDULABLE, "second")), 0.0),  # type: ignore[arg-type]
    ]
    nothing_held = GangMembers(assumed=(pod, pod, pod))
    assert group_message(group, nothing_held, 3, fails) == (
        "PodGroup default/g: 3 of 4 members would fit, none is held; 2 could not be placed: first"
    )
    some_held = GangMembers(bound=(pod, pod), assumed=(pod,))
    assert group_message(group, some_held, 1, fails) == (
        "PodGroup default/g: 3 of 4 members would fit, 2 held (2 bound, 0 binding); "
        "2 could not be placed: first"
    )
    assert group_message(group, some_held, 0, []) == (
        "PodGroup default/g: 3 of 4 members would fit, 3 held (2 bound, 1 binding); "
        "no other member is pending"
    )


def test_attempt_duration_is_observed(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    before = sample("kube_pysched_gang_attempt_duration_seconds_count", result="unschedulable")
    add_group(h, "g", 2, 2)
    h.schedule_next()
    after = sample("kube_pysched_gang_attempt_duration_seconds_count", result="unschedulable")
    assert after == before + 1


def test_pods_outside_groups_do_not_enter_the_group_cycle(h: Harness) -> None:
    from scheduler.testing import make_pod

    h.add_node(make_node("a", cpu="1"))
    before = sum(
        sample("kube_pysched_gang_attempts_total", result=r)
        for r in ("scheduled", "unschedulable", "error")
    )
    pod = make_pod("solo", uid="uid-solo", cpu="1")
    h.add_pod(pod)
    h.schedule_next()
    h.api.wait_for(lambda: pod.key in h.api.binds)
    after = sum(
        sample("kube_pysched_gang_attempts_total", result=r)
        for r in ("scheduled", "unschedulable", "error")
    )
    assert after == before
    poll(lambda: h.queue.in_flight_pods() == [], "the binding cycle to finish")


def test_groups_waiting_and_the_wait_of_a_placed_group_are_measured() -> None:
    h = harness({"podGroupBackoffSeconds": 5})
    try:
        h.add_node(make_node("a", cpu="2"))
        add_group(h, "g", 3, 3)
        h.schedule_next()
        cycle = h.scheduler.schedule_one_pod.group_cycle
        assert isinstance(cycle, GroupCycle) and cycle.groups_waiting() == 1
        assert sample("kube_pysched_gang_groups_waiting") == 1
        waits = sample("kube_pysched_gang_wait_seconds_count")
        waited = sample("kube_pysched_gang_wait_seconds_sum")
        h.add_node(make_node("b", cpu="2"))
        h.clock.step(5)  # the backoff ends: the members are activated
        assert drain(h) == 1
        assert placed(h, "g") == 3
        assert cycle.groups_waiting() == 0
        assert sample("kube_pysched_gang_wait_seconds_count") == waits + 1
        assert sample("kube_pysched_gang_wait_seconds_sum") - waited == 5
    finally:
        h.close()
