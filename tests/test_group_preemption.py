"""Group-aware preemption (docs/gang.md, "Preemption"): a group below its quorum preempts once
for all its members or not at all; victims of a group evicted whole go together."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import Histogram

from scheduler import metrics
from scheduler.api.gang import (
    GangRef,
    GangSource,
    gang_from_kube_pod_group,
    gang_from_pod_group,
    parse_kube_pod_group,
)
from scheduler.api.objects import Pod, replace_pod
from scheduler.backend.cache import Snapshot
from scheduler.features import FeatureGates
from scheduler.framework.gang import GangMembers, StaticGangs
from scheduler.framework.preemption.victims import (
    KIND_GROUP,
    KIND_POD,
    VictimUnit,
    unit_importance_key,
    victim_units,
)
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.types import NodeInfo
from scheduler.plugins import coscheduling, default_preemption
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import PROFILE, Harness, poll, registry
from tests.api.kube_pod_groups import kube_pod_group_json
from tests.plugins.coscheduling.objects import member, pod_group

ASYNC = "SchedulerAsyncPreemption"


def preempting_harness(*, asynchronous: bool = False) -> Harness:
    enabled = tuple(
        PluginRef(name) for name in ("Coscheduling", "CpuFit", "Binder", "DefaultPreemption")
    )
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    plugins = registry().merge(
        {coscheduling.NAME: coscheduling.SPEC, default_preemption.NAME: default_preemption.SPEC}
    )
    return Harness(spec, plugins=plugins, features=FeatureGates({ASYNC: asynchronous}))


@pytest.fixture
def h() -> Iterator[Harness]:
    harness_ = preempting_harness()
    yield harness_
    harness_.close()


def running(name: str, node: str, priority: int = 0, **kwargs: Any) -> Pod:
    return make_pod(name, uid=f"uid-{name}", node_name=node, cpu="1", priority=priority, **kwargs)


def add_group(h: Harness, name: str, size: int, priority: int = 10) -> list[Pod]:
    h.gangs.add(pod_group(name, size))
    pods = [member(f"{name}-{i}", name, cpu="1", priority=priority) for i in range(size)]
    for pod in pods:
        h.add_pod(pod)
    return pods


def nominations(h: Harness) -> dict[str, str]:
    found = {}
    for key, patch in h.api.status_patches:
        node = patch.get("status", {}).get("nominatedNodeName")
        if node:
            found[key] = node
    return found


def failed_messages(h: Harness) -> set[str]:
    return {e[2] for e in h.recorder.events if e[1] == "FailedScheduling"}


def test_a_group_preempts_once_for_all_its_members_and_evicts_no_more_than_it_needs(
    h: Harness,
) -> None:
    for node in ("a", "b"):
        h.add_node(make_node(node, cpu="2"))
        for i in range(2):
            h.add_assigned_pod(running(f"low-{node}{i}", node))
    members = add_group(h, "g", 2)
    h.schedule_next()
    assert len(h.api.deletes) == 2
    evicted_nodes = sorted(h.pods[key].node_name for key in h.api.deletes)
    h.api.wait_for(lambda: len(nominations(h)) == 2)
    nominated = nominations(h)
    assert set(nominated) == {m.key for m in members}
    # Each member is nominated where a victim made room for it.
    assert sorted(nominated.values()) == evicted_nodes
    assert {h.queue.where(m.uid) for m in members} == {"unschedulable"}
    assert h.cache.assumed_pod_count() == 0
    (message,) = failed_messages(h)
    assert message.endswith("preemption: found a placement for podgroup, preempting 2 victims")
    # The simulation left the snapshot as the cache has it.
    h.cache.update_snapshot(h.snapshot)
    assert {n.name: n.requested.milli_cpu for n in h.snapshot.list()} == {"a": 2000, "b": 2000}


def observed(histogram: Histogram) -> tuple[float, float]:
    """(count, sum) of an unlabelled histogram, whether or not its gate exports it."""
    samples = {s.name: s.value for family in histogram.collect() for s in family.samples}
    name = histogram._name
    return samples[f"{name}_count"], samples[f"{name}_sum"]


def test_a_groups_victims_are_workload_preemption_victims_not_a_single_pods(h: Harness) -> None:
    """kube-scheduler v1.37 observes scheduler_workload_preemption_victims once per pod group
    preemption (with its victim count) and leaves scheduler_preemption_victims, the single
    pod's, alone."""
    for node in ("a", "b"):
        h.add_node(make_node(node, cpu="2"))
        for i in range(2):
            h.add_assigned_pod(running(f"low-{node}{i}", node))
    group_before = observed(metrics.workload_preemption_victims)
    pod_before = observed(metrics.preemption_victims)
    add_group(h, "g", 2)
    h.schedule_next()
    assert len(h.api.deletes) == 2
    group_after = observed(metrics.workload_preemption_victims)
    assert (group_after[0] - group_before[0], group_after[1] - group_before[1]) == (1, 2)
    assert observed(metrics.preemption_victims) == pod_before


def test_a_groups_victims_name_the_pod_group_as_kube_scheduler_does(h: Harness) -> None:
    """kube-scheduler v1.37's executor names a group preemptor by its PodGroup: the victim's
    Preempted event says `Preempted by podgroup <PodGroup uid> on node cluster` with the
    PodGroup as related object, its DisruptionTarget condition `a higher priority podgroup`."""
    h.add_node(make_node("a", cpu="2"))
    h.add_assigned_pod(running("low-a0", "a"))
    h.add_assigned_pod(running("low-a1", "a"))
    add_group(h, "g", 2)
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.deletes) == 2)
    events = [e for e in h.recorder.recorded if e.reason == "Preempted"]
    assert sorted(e.regarding for e in events) == ["default/low-a0", "default/low-a1"]
    for e in events:
        assert (e.related, e.event_type, e.action) == ("PodGroup default/g", "Normal", "Preempting")
        assert e.message == "Preempted by podgroup pg-g on node cluster"
    messages = {
        c["message"]
        for _, patch in h.api.status_patches
        for c in patch.get("status", {}).get("conditions", [])
        if c["type"] == "DisruptionTarget"
    }
    assert messages == {"kube-pysched: preempting to accommodate a higher priority podgroup"}


def test_a_lone_pods_victims_still_name_the_pod(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    h.add_assigned_pod(running("low", "a"))
    h.add_pod(make_pod("high", uid="uid-high", cpu="1", priority=10))
    h.schedule_next()
    h.api.wait_for(lambda: h.api.deletes == ["default/low"])
    (event,) = [e for e in h.recorder.recorded if e.reason == "Preempted"]
    assert (event.related, event.message) == ("default/high", "Preempted by pod uid-high on node a")


def test_a_group_that_would_not_fit_even_after_preemption_evicts_nothing(h: Harness) -> None:
    for node in ("a", "b"):
        h.add_node(make_node(node, cpu="1"))
        h.add_assigned_pod(running(f"low-{node}", node))
    before = {n.name: n.requested.milli_cpu for n in h.snapshot.list()}
    add_group(h, "g", 3)
    h.schedule_next()
    assert h.api.deletes == []
    assert nominations(h) == {}
    (message,) = failed_messages(h)
    assert "2 of 3 members would fit even with every lower-priority pod evicted" in message
    h.cache.update_snapshot(h.snapshot)
    after = {n.name: n.requested.milli_cpu for n in h.snapshot.list()}
    assert after == {"a": 1000, "b": 1000} and before in ({}, after)


def test_pods_of_equal_priority_are_no_victims(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    h.add_assigned_pod(running("peer", "a", priority=10))
    add_group(h, "g", 1)
    h.schedule_next()
    assert h.api.deletes == []
    (message,) = failed_messages(h)
    assert "No preemption victims found for incoming preemptor" in message


def test_a_running_gang_is_evicted_whole_or_not_at_all(h: Harness) -> None:
    """kube-pysched's rule for scheduler-plugins gangs: a gang left below minMember holds
    nodes and does nothing, so both of its pods go although one would make room."""
    for node in ("a", "b"):
        h.add_node(make_node(node, cpu="1"))
    h.gangs.add(pod_group("v", 2))
    for i, node in enumerate(("a", "b")):
        h.add_assigned_pod(running(f"v-{i}", node, labels={"scheduling.x-k8s.io/pod-group": "v"}))
    add_group(h, "g", 1)
    h.schedule_next()
    assert sorted(h.api.deletes) == ["default/v-0", "default/v-1"]


def test_asynchronous_group_preemption_holds_members_until_victims_are_asked_to_go() -> None:
    h = preempting_harness(asynchronous=True)
    try:
        h.add_node(make_node("a", cpu="1"))
        h.add_assigned_pod(running("low", "a"))
        (m,) = add_group(h, "g", 1)
        h.schedule_next()
        h.api.wait_for(lambda: h.api.deletes == ["default/low"])
        poll(
            lambda: (
                not h.fwk.plugins["DefaultPreemption"].executor.is_pod_running_preemption(  # type: ignore[attr-defined]
                    m.uid
                )
            ),
            "the preemption thread to finish",
        )
        h.api.wait_for(lambda: nominations(h) == {m.key: "a"})
    finally:
        h.close()


# --- pure rules ---------------------------------------------------------------------------


def test_victim_units_follow_each_groups_disruption_mode() -> None:
    single = parse_kube_pod_group(kube_pod_group_json("s", priority=5))
    whole = parse_kube_pod_group(kube_pod_group_json("w", priority=7, disruptionMode={"all": {}}))
    gangs = StaticGangs().add(single, whole, pod_group("c", 2))
    alone = running("alone", "a", priority=3)
    s0 = replace_pod(running("s0", "a", priority=1), pod_group_name="s")
    w0, w1 = (
        replace_pod(running(f"w{i}", n, priority=1), pod_group_name="w") for i, n in enumerate("ab")
    )
    c0, c1 = (
        running(f"c{i}", n, labels={"scheduling.x-k8s.io/pod-group": "c"})
        for i, n in enumerate("ab")
    )
    placed = {
        GangRef(GangSource.KUBERNETES, "default", "w"): GangMembers(bound=(w0, w1)),
        GangRef(GangSource.SCHEDULER_PLUGINS, "default", "c"): GangMembers(bound=(c0, c1)),
    }
    units = victim_units([alone, s0, w0, c0], gangs, lambda ref: placed.get(ref, GangMembers()))
    by_first = {u.pods[0].name: u for u in units}
    assert by_first["alone"] == VictimUnit((alone,), 3, KIND_POD)
    # A Single-mode v1beta1 group's pod goes alone, at the group's priority.
    assert by_first["s0"] == VictimUnit((s0,), 5, KIND_GROUP)
    # All: every placed pod of the group, wherever it runs, once.
    assert by_first["w0"] == VictimUnit((w0, w1), 7, KIND_GROUP)
    assert by_first["c0"] == VictimUnit((c0, c1), 0, KIND_GROUP)
    assert len(units) == 4
    # Without a lister every pod is alone at its own priority.
    assert [u.priority for u in victim_units([s0, w0], None, lambda ref: GangMembers())] == [1, 1]


def test_more_important_units_sort_first() -> None:
    pod = running("p", "a")
    lone = VictimUnit((pod,), 5)
    group = VictimUnit((pod,), 5, KIND_GROUP)
    bigger = VictimUnit((pod, pod), 5, KIND_GROUP)
    higher = VictimUnit((pod,), 6)
    ordered = sorted([lone, group, bigger, higher], key=unit_importance_key(0.0))
    assert ordered == [higher, bigger, group, lone]


def test_gang_priority_sources() -> None:
    gang = gang_from_kube_pod_group(parse_kube_pod_group(kube_pod_group_json("k")))
    assert gang.priority is None  # unset: preempts and is preempted at 0, as kube-scheduler
    assert gang_from_pod_group(pod_group("c", 2)).source == GangSource.SCHEDULER_PLUGINS


def test_a_snapshot_simulation_is_undone_when_it_ends() -> None:
    snapshot = Snapshot()
    infos = []
    for name in ("a", "b"):
        info = NodeInfo(make_node(name, cpu="2"))
        info.add_pod(running(f"p-{name}", name))
        infos.append(info)
    snapshot.node_info_map = {i.name: i for i in infos}
    snapshot.rebuild(infos)
    original_a = snapshot.get("a")
    extra = running("extra", "b")
    with snapshot.simulation():
        snapshot.remove_pod(running("p-a", "a"), "a")
        snapshot.add_pod(extra, "b")
        assert [int(c) for c in snapshot.table.req_cpu] == [0, 2000]
        assert original_a is not None and len(original_a.pods) == 1  # copied, never changed
    assert snapshot.get("a") is original_a
    assert [int(c) for c in snapshot.table.req_cpu] == [1000, 1000]
    with pytest.raises(RuntimeError):
        snapshot.add_pod(extra, "b")


@pytest.mark.parametrize(("mode", "evicted"), [("all", 2), ("single", 1)])
def test_a_lone_pod_preempting_a_group_member_follows_the_groups_disruption_mode(
    h: Harness, mode: str, evicted: int
) -> None:
    for node in ("a", "b"):
        h.add_node(make_node(node, cpu="1"))
    h.gangs.add(
        parse_kube_pod_group(kube_pod_group_json("v", priority=0, disruptionMode={mode: {}}))
    )
    for i, node in enumerate(("a", "b")):
        h.add_assigned_pod(replace_pod(running(f"v-{i}", node), pod_group_name="v"))
    h.add_pod(make_pod("hp", uid="uid-hp", cpu="1", priority=10))
    h.schedule_next()
    assert len(h.api.deletes) == evicted
    h.api.wait_for(lambda: "default/hp" in nominations(h))


def test_a_lone_pod_does_not_take_a_group_member_of_higher_group_priority(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    h.gangs.add(parse_kube_pod_group(kube_pod_group_json("v", priority=100)))
    h.add_assigned_pod(replace_pod(running("v-0", "a", priority=0), pod_group_name="v"))
    h.add_pod(make_pod("hp", uid="uid-hp", cpu="1", priority=10))
    h.schedule_next()
    assert h.api.deletes == []


# --- one eviction per victim --------------------------------------------------------------


def preempted(h: Harness) -> list[str]:
    return sorted(e[0] for e in h.recorder.events if e[1] == "Preempted")


def test_victims_being_evicted_for_one_group_are_not_evicted_again_for_another() -> None:
    """A medium-priority group preempts two low-priority pods; before its evictions reach the
    API server (the status patches are held) a high-priority group needs the same nodes. It
    chooses the same victims, as kube-scheduler does, but asks nothing of the API server for
    them: each victim gets one DisruptionTarget patch, one delete and one Preempted event."""
    h = preempting_harness(asynchronous=True)
    hold = threading.Event()
    try:
        for node in ("a", "b"):
            h.add_node(make_node(node, cpu="1"))
            h.add_assigned_pod(running(f"low-{node}", node))
        h.api.hold_patches = hold
        medium = add_group(h, "medium", 2, priority=5)
        h.schedule_next()
        # The first victim's DisruptionTarget patch started (the last waits for it).
        h.api.wait_for(lambda: "default/low-a" in h.api.patches_started)
        high = add_group(h, "high", 2, priority=10)
        h.schedule_next()
        messages = {e[0]: e[2] for e in h.recorder.events if e[1] == "FailedScheduling"}
        for m in high:
            assert messages[m.key].endswith("found a placement for podgroup, preempting 2 victims")
        executor = h.fwk.plugins["DefaultPreemption"].executor  # type: ignore[attr-defined]
        # Only the medium group's evictions are under way: nothing holds the high group.
        assert not any(executor.is_pod_running_preemption(m.uid) for m in high)
        hold.set()
        poll(
            lambda: not any(executor.is_pod_running_preemption(m.uid) for m in medium),
            "the medium group's preemption to finish",
        )
        assert sorted(h.api.deletes) == ["default/low-a", "default/low-b"]
        disruption = [
            key
            for key, patch in h.api.status_patches
            for c in patch.get("status", {}).get("conditions", [])
            if c["type"] == "DisruptionTarget"
        ]
        assert sorted(disruption) == ["default/low-a", "default/low-b"]
        assert preempted(h) == ["default/low-a", "default/low-b"]
    finally:
        hold.set()
        h.close()


def test_a_lone_pod_does_not_evict_a_victim_a_group_is_evicting() -> None:
    h = preempting_harness(asynchronous=True)
    hold = threading.Event()
    try:
        h.add_node(make_node("a", cpu="1"))
        h.add_assigned_pod(running("low-a", "a"))
        h.api.hold_patches = hold
        (m,) = add_group(h, "medium", 1, priority=5)
        h.schedule_next()
        h.api.wait_for(lambda: "default/low-a" in h.api.patches_started)
        h.add_pod(make_pod("hp", uid="uid-hp", cpu="1", priority=10))
        h.schedule_next()
        executor = h.fwk.plugins["DefaultPreemption"].executor  # type: ignore[attr-defined]
        # The victim is already going: no preemption of its own for the lone pod.
        assert not executor.is_pod_running_preemption("uid-hp")
        hold.set()
        h.api.wait_for(lambda: "default/hp" in nominations(h))
        poll(lambda: not executor.is_pod_running_preemption(m.uid), "the group's preemption")
        assert h.api.deletes == ["default/low-a"]
        assert preempted(h) == ["default/low-a"]
    finally:
        hold.set()
        h.close()


def test_a_failed_eviction_leaves_the_victim_free_for_the_next_preemption(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    h.add_assigned_pod(running("low-a", "a"))
    h.api.fail_deletes = RuntimeError("apiserver said no")
    add_group(h, "g", 1)
    h.schedule_next()
    assert h.api.deletes == []
    assert not h.fwk.evictions.requested("uid-low-a")
    h.api.fail_deletes = None
    h.add_pod(make_pod("hp", uid="uid-hp", cpu="1", priority=10))
    h.schedule_next()
    assert h.api.deletes == ["default/low-a"]
    assert h.fwk.evictions.requested("uid-low-a")


def test_a_member_that_found_no_node_keeps_its_nomination(h: Harness) -> None:
    """As kube-scheduler's pod group cycle: after a failed attempt with nothing to preempt, a
    member placed and reverted loses its nomination, a member that found no node keeps it (its
    victims may still be leaving; clearing it let a lower-priority group take their room)."""
    h.add_node(make_node("a", cpu="1"))
    h.add_node(make_node("b", cpu="1"))
    h.add_assigned_pod(running("peer", "b", priority=10))
    h.gangs.add(pod_group("g", 2))
    for i in range(2):
        pod = member(f"g-{i}", "g", cpu="1", priority=10)
        h.add_pod(replace_pod(pod, nominated_node_name="b"))
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 2)
    (message,) = failed_messages(h)
    assert message.endswith("No preemption victims found for incoming preemptor")
    nominated = sorted(
        str(patch["status"].get("nominatedNodeName", "kept")) for _, patch in h.api.status_patches
    )
    assert nominated == ["None", "kept"]
