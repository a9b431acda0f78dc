"""The group cycle for Kubernetes' v1beta1 PodGroups (GangScheduling): kube-scheduler's member
messages, the PodGroup's PodGroupInitiallyScheduled condition (written through the API
dispatcher only when it changes), and the scheduler_podgroup_* metrics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler import metrics
from scheduler.api.gang import (
    Gang,
    PodGroupCondition,
    gang_from_kube_pod_group,
    parse_kube_pod_group,
    pod_group_condition_patch,
)
from scheduler.api.objects import Pod
from scheduler.features import FeatureGates
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.plugins import default_preemption, gang_scheduling
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import PROFILE, Harness, poll, registry
from tests.api.kube_pod_groups import kube_pod_group_json

GATES = FeatureGates({"GenericWorkload": True})


def kube_group(name: str, min_count: int | None = 2, **status: Any) -> Gang:
    raw = kube_pod_group_json(name, min_count=min_count)
    if status:
        raw["status"] = status
    return gang_from_kube_pod_group(parse_kube_pod_group(raw))


@pytest.fixture
def h() -> Iterator[Harness]:
    enabled = (
        PluginRef("Sort"),
        PluginRef("GangScheduling"),
        PluginRef("CpuFit"),
        PluginRef("Binder"),
    )
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    plugins = registry().merge({gang_scheduling.NAME: gang_scheduling.SPEC})
    harness = Harness(spec, plugins=plugins, features=GATES)
    metrics.apply_feature_gates(GATES)
    yield harness
    harness.close()
    metrics.apply_feature_gates(FeatureGates())


def add_gang(h: Harness, name: str, size: int, min_count: int | None, cpu: str) -> list[Pod]:
    h.gangs.add(kube_group(name, min_count))
    pods = [
        make_pod(f"{name}-{i}", uid=f"uid-{name}-{i}", pod_group_name=name, cpu=cpu)
        for i in range(size)
    ]
    for pod in pods:
        h.add_pod(pod)
    return pods


def member_messages(h: Harness) -> dict[str, str]:
    return {key: message for key, reason, message in h.recorder.events if reason != "Scheduled"}


def sample(family: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(family, labels) or 0.0


def test_a_gang_that_fits_is_bound_and_its_condition_set_true(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    attempts = sample(
        "scheduler_podgroup_schedule_attempts_total", result="scheduled", profile=PROFILE
    )
    pods = add_gang(h, "g", 2, 2, cpu="1")
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == 2 and len(h.api.pod_group_patches) == 1)
    assert sorted(h.api.binds) == sorted(p.key for p in pods)
    ((key, patch),) = h.api.pod_group_patches
    (condition,) = patch["status"]["conditions"]
    assert key == "default/g"
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodGroupInitiallyScheduled",
        "True",
        "Scheduled",
    )
    assert (condition["message"], condition["observedGeneration"]) == ("", 1)
    after = sample(
        "scheduler_podgroup_schedule_attempts_total", result="scheduled", profile=PROFILE
    )
    assert after == attempts + 1
    assert sample("scheduler_podgroup_scheduling_algorithm_duration_seconds_count") >= 1
    poll(lambda: h.queue.in_flight_pods() == [], "the binding cycles to finish")


def test_a_gang_of_which_one_fits_gets_kube_schedulers_messages(h: Harness) -> None:
    """kube-scheduler v1.37.2 on this scenario (docs/gang.md, "Messages"): the member it placed
    gets `pod group is unschedulable, <group>`, the one that found no node its own message;
    the condition says False/Unschedulable with the group's message."""
    h.add_node(make_node("a", cpu="2"))
    pods = add_gang(h, "g", 2, 2, cpu="1500m")
    h.schedule_next()
    group = "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    # g-1 completed the count, so it is popped and tried first, and placed.
    assert member_messages(h) == {
        pods[1].key: f"pod group is unschedulable, {group}",
        pods[0].key: "0/1 nodes are available: 1 Insufficient cpu.",
    }
    h.api.wait_for(lambda: len(h.api.pod_group_patches) == 1)
    (condition,) = h.api.pod_group_patches[0][1]["status"]["conditions"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        group,
    )
    assert h.cache.assumed_pod_count() == 0
    assert {h.queue.where(p.uid) for p in pods} == {"unschedulable"}


def test_a_gang_of_which_none_fits_stops_where_kube_scheduler_stops(h: Harness) -> None:
    """After the first member fails, minCount 2 can no longer be reached with one member left:
    kube-scheduler stops there, so the second member gets the group's message, not its own."""
    h.add_node(make_node("a", cpu="2"))
    pods = add_gang(h, "g", 2, 2, cpu="3")
    h.schedule_next()
    group = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    assert member_messages(h) == {
        pods[1].key: "0/1 nodes are available: 1 Insufficient cpu.",
        pods[0].key: group,
    }


def test_a_basic_group_schedules_each_member_alone(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    pods = add_gang(h, "b", 2, None, cpu="1")
    before = sample("kube_pysched_gang_attempts_total", result="scheduled")
    h.schedule_next()
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == 2)
    assert sorted(h.api.binds) == sorted(p.key for p in pods)
    assert sample("kube_pysched_gang_attempts_total", result="scheduled") == before
    poll(lambda: h.queue.in_flight_pods() == [], "the binding cycles to finish")


# --- the condition's patch ------------------------------------------------------------------


def condition(status: str, reason: str, message: str = "", generation: int = 1) -> dict[str, Any]:
    return {
        "type": "PodGroupInitiallyScheduled",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


NOW = 1_800_000_000.0


def test_a_condition_that_would_not_change_is_not_written() -> None:
    gang = kube_group("g", conditions=[condition("False", "Unschedulable", "m")])
    assert pod_group_condition_patch(gang, "False", "Unschedulable", "m", NOW) is None


def test_a_true_condition_is_never_turned_false() -> None:
    gang = kube_group("g", conditions=[condition("True", "Scheduled")])
    assert pod_group_condition_patch(gang, "False", "Unschedulable", "m", NOW) is None
    assert pod_group_condition_patch(gang, "False", "SchedulerError", "e", NOW) is None


def test_the_transition_time_moves_only_with_the_status() -> None:
    gang = kube_group("g", conditions=[condition("False", "Unschedulable", "old")])
    patch = pod_group_condition_patch(gang, "False", "Unschedulable", "new", NOW)
    assert patch is not None
    (new,) = patch["status"]["conditions"]
    assert (new["message"], new["lastTransitionTime"]) == ("new", "2026-01-01T00:00:00Z")
    patch = pod_group_condition_patch(gang, "True", "Scheduled", "", NOW)
    assert patch is not None
    assert patch["status"]["conditions"][0]["lastTransitionTime"] == "2027-01-15T08:00:00Z"


def test_a_new_generation_is_written_even_with_the_same_text() -> None:
    gang = kube_group("g", conditions=[condition("False", "Unschedulable", "m", generation=0)])
    patch = pod_group_condition_patch(gang, "False", "Unschedulable", "m", NOW)
    assert patch is not None and patch["status"]["conditions"][0]["observedGeneration"] == 1


def test_the_informers_gang_keeps_generation_and_conditions() -> None:
    gang = kube_group("g", conditions=[condition("True", "Scheduled")])
    assert gang.generation == 1
    assert gang.conditions == (
        PodGroupCondition("PodGroupInitiallyScheduled", "True", "Scheduled", "", 1767225600.0, 1),
    )


def preempting_harness() -> Harness:
    names = ("Sort", "GangScheduling", "CpuFit", "Binder", "DefaultPreemption")
    spec = ProfileSpec(
        PROFILE,
        plugins={"multiPoint": PluginSetSpec(enabled=tuple(PluginRef(n) for n in names))},
    )
    plugins = registry().merge(
        {
            gang_scheduling.NAME: gang_scheduling.SPEC,
            default_preemption.NAME: default_preemption.SPEC,
        }
    )
    return Harness(spec, plugins=plugins, features=GATES)


def test_a_gangs_victim_is_told_the_pod_group_preempted_it() -> None:
    """kube-scheduler v1.37.2: `Preempted by podgroup <PodGroup uid> on node cluster`, the
    PodGroup (scheduling.k8s.io/v1beta1) as related object."""
    h = preempting_harness()
    try:
        h.add_node(make_node("a", cpu="2"))
        h.add_assigned_pod(make_pod("low", uid="uid-low", node_name="a", cpu="2"))
        h.gangs.add(
            gang_from_kube_pod_group(parse_kube_pod_group(kube_pod_group_json("g", priority=5)))
        )
        for i in range(2):
            h.add_pod(make_pod(f"g-{i}", uid=f"uid-g-{i}", pod_group_name="g", cpu="1"))
        h.schedule_next()
        h.api.wait_for(lambda: h.api.deletes == ["default/low"])
        (event,) = [e for e in h.recorder.recorded if e.reason == "Preempted"]
        assert event.related == "PodGroup default/g"
        assert event.message == "Preempted by podgroup uid-g on node cluster"
    finally:
        h.close()


def test_group_preemptions_outcome_is_appended_where_kube_scheduler_appends_it() -> None:
    """kube-scheduler v1.37.2 (docs/gang.md, "Messages"): ', pod group preemption: <outcome>'
    on the group's message - the condition and the placed member's message - but not on a
    member's own failure nor on the message of a member it did not try."""
    h = preempting_harness()
    try:
        h.add_node(make_node("a", cpu="2"))
        pods = add_gang(h, "g", 2, 2, cpu="1500m")
        h.schedule_next()
        suffix = ", pod group preemption: No preemption victims found for incoming preemptor"
        group = f"minCount (2) cannot be satisfied: 1 scheduled, 0 remaining{suffix}"
        assert member_messages(h) == {
            pods[1].key: f"pod group is unschedulable, {group}",
            pods[0].key: "0/1 nodes are available: 1 Insufficient cpu.",
        }
        h.api.wait_for(lambda: len(h.api.pod_group_patches) == 1)
        (condition,) = h.api.pod_group_patches[0][1]["status"]["conditions"]
        assert condition["message"] == group
    finally:
        h.close()
