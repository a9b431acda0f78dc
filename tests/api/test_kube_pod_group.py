"""The second source of gangs: Kubernetes' scheduling.k8s.io/v1beta1 PodGroup (gate
GenericWorkload), pods' spec.schedulingGroup, the Gang a PodGroup becomes, and which group a
pod names when it carries both the field and scheduler-plugins' label."""

from __future__ import annotations

import pytest

from scheduler.api.gang import (
    CONDITION_INITIALLY_SCHEDULED,
    DISRUPTION_ALL,
    DISRUPTION_SINGLE,
    POD_GROUP_LABEL,
    POLICY_BASIC,
    POLICY_GANG,
    REASON_UNSCHEDULABLE,
    GangParseError,
    GangRef,
    GangSource,
    api_not_installed,
    gang_from_kube_pod_group,
    gang_ref,
    parse_kube_pod_group,
)
from scheduler.api.parse import parse_pod
from scheduler.eventhandlers import PodTransform
from scheduler.framework.gang import StaticGangs
from scheduler.testing import make_pod
from scheduler.testing.builders import pod_json
from tests.api.kube_pod_groups import kube_pod_group_json

# --- the pod --------------------------------------------------------------------------------


def test_a_pod_names_its_pod_group_in_spec_scheduling_group() -> None:
    pod = parse_pod(pod_json("p", pod_group_name="trainers"))
    assert pod.pod_group_name == "trainers"
    assert parse_pod(pod_json("q")).pod_group_name == ""
    raw = pod_json("r")
    raw["spec"]["schedulingGroup"] = {}
    assert parse_pod(raw).pod_group_name == ""


def test_with_the_gate_off_the_field_is_ignored() -> None:
    raw = pod_json("p", scheduler_name="kube-pysched", pod_group_name="trainers")
    assert parse_pod(raw, scheduling_group=False).pod_group_name == ""
    off = PodTransform(["kube-pysched"])(raw)
    on = PodTransform(["kube-pysched"], scheduling_groups=True)(raw)
    assert off is not None and off.pod_group_name == ""
    assert on is not None and on.pod_group_name == "trainers"


# --- the PodGroup ---------------------------------------------------------------------------


def test_parse_a_gang_pod_group_and_its_gang() -> None:
    raw = kube_pod_group_json(
        "pg",
        min_count=4,
        disruptionMode={"all": {}},
        priorityClassName="high",
        priority=1000,
        workloadRef={"workloadName": "job-1", "templateName": "workers"},
    )
    raw["status"] = {
        "conditions": [
            {
                "type": CONDITION_INITIALLY_SCHEDULED,
                "status": "False",
                "reason": REASON_UNSCHEDULABLE,
                "message": "0/3 nodes are available",
                "lastTransitionTime": "2026-01-01T00:01:00Z",
                "observedGeneration": 1,
            }
        ]
    }
    group = parse_kube_pod_group(raw)
    assert (group.key, group.policy, group.min_count) == ("default/pg", POLICY_GANG, 4)
    assert group.disruption_mode == DISRUPTION_ALL
    assert (group.priority_class_name, group.priority) == ("high", 1000)
    assert (group.workload_name, group.template_name) == ("job-1", "workers")
    assert (group.uid, group.resource_version, group.generation) == ("uid-pg", "7", 1)
    assert not group.deleting
    cond = group.condition(CONDITION_INITIALLY_SCHEDULED)
    assert cond is not None
    assert (cond.status, cond.reason, cond.observed_generation) == ("False", "Unschedulable", 1)
    assert cond.last_transition_time == group.created + 60
    assert group.condition("DisruptionTarget") is None

    gang = gang_from_kube_pod_group(group)
    assert gang.source == GangSource.KUBERNETES
    assert gang.ref == GangRef(GangSource.KUBERNETES, "default", "pg")
    assert gang.is_gang and gang.policy == POLICY_GANG
    assert gang.min_member == 4
    assert gang.min_resources is None and gang.min_resource_names == ()
    assert gang.schedule_timeout is None  # the plugin's (kube-scheduler: 5 minutes)
    assert gang.disruption_mode == DISRUPTION_ALL
    assert (gang.priority_class_name, gang.priority) == ("high", 1000)
    assert gang.created == group.created


def test_a_basic_policy_is_a_group_but_no_gang() -> None:
    group = parse_kube_pod_group(kube_pod_group_json("solo", min_count=None))
    assert (group.policy, group.min_count) == (POLICY_BASIC, 0)
    gang = gang_from_kube_pod_group(group)
    assert not gang.is_gang
    assert gang.policy == POLICY_BASIC
    assert gang.min_member == 1


def test_defaults_single_disruption_no_priority() -> None:
    raw = kube_pod_group_json("pg")
    del raw["spec"]["disruptionMode"]
    group = parse_kube_pod_group(raw)
    assert group.disruption_mode == DISRUPTION_SINGLE
    assert (group.priority_class_name, group.priority, group.preemption_policy) == ("", None, "")
    assert group.conditions == ()
    assert gang_from_kube_pod_group(group).disruption_mode == DISRUPTION_SINGLE


def test_a_gang_min_count_below_one_counts_as_one() -> None:
    gang = gang_from_kube_pod_group(parse_kube_pod_group(kube_pod_group_json("pg", min_count=0)))
    assert gang.min_member == 1 and gang.is_gang


def test_a_pod_group_without_a_policy_is_a_parse_error() -> None:
    raw = kube_pod_group_json("pg")
    raw["spec"]["schedulingPolicy"] = {}
    with pytest.raises(GangParseError, match=r"spec\.schedulingPolicy"):
        parse_kube_pod_group(raw)


def test_a_deleting_pod_group() -> None:
    raw = kube_pod_group_json("pg")
    raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    assert parse_kube_pod_group(raw).deleting


# --- which group a pod names ------------------------------------------------------------------


def test_gang_ref_reads_the_field() -> None:
    pod = make_pod("p", pod_group_name="trainers")
    assert gang_ref(pod) == GangRef(GangSource.KUBERNETES, "default", "trainers")


def test_the_field_wins_over_the_label() -> None:
    both = make_pod("p", labels={POD_GROUP_LABEL: "x-group"}, pod_group_name="k-group")
    assert gang_ref(both) == GangRef(GangSource.KUBERNETES, "default", "k-group")
    label_only = make_pod("q", labels={POD_GROUP_LABEL: "x-group"})
    assert gang_ref(label_only) == GangRef(GangSource.SCHEDULER_PLUGINS, "default", "x-group")
    # With the gate off the parser drops the field: the label applies.
    raw = pod_json("r", labels={POD_GROUP_LABEL: "x-group"}, pod_group_name="k-group")
    assert gang_ref(parse_pod(raw, scheduling_group=False)) == GangRef(
        GangSource.SCHEDULER_PLUGINS, "default", "x-group"
    )
    assert gang_ref(make_pod("s")) is None


def test_the_same_name_in_both_apis_is_two_groups() -> None:
    gangs = StaticGangs().add(
        parse_kube_pod_group(kube_pod_group_json("g", min_count=3)),
        make_pod("k", uid="k", pod_group_name="g"),
        make_pod("x", uid="x", labels={POD_GROUP_LABEL: "g"}),
    )
    kube = GangRef(GangSource.KUBERNETES, "default", "g")
    plugins = GangRef(GangSource.SCHEDULER_PLUGINS, "default", "g")
    assert kube.key == plugins.key and kube != plugins
    found = gangs.gang(kube)
    assert found is not None and found.min_member == 3
    assert gangs.gang(plugins) is None
    assert [p.name for p in gangs.members(kube)] == ["k"]
    assert [p.name for p in gangs.members(plugins)] == ["x"]


def test_messages_name_the_api_and_how_to_serve_it() -> None:
    assert api_not_installed(GangSource.KUBERNETES) == (
        "the PodGroup API scheduling.k8s.io/v1beta1 is not served (kube-apiserver needs "
        "--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true)"
    )
    assert GangSource.KUBERNETES.kind_path == "scheduling.k8s.io/v1beta1 PodGroup"
