"""GangScheduling (kube-scheduler's plugin for scheduling.k8s.io/v1beta1 PodGroups): its
PreEnqueue messages, Permit quorum and timeout, queueing hints, which groups go to the group
cycle, and that it leaves scheduler-plugins' members to Coscheduling (and the reverse)."""

from __future__ import annotations

from typing import Any

from scheduler.api.gang import (
    POD_GROUP_LABEL,
    Gang,
    GangRef,
    GangSource,
    gang_from_kube_pod_group,
    parse_kube_pod_group,
)
from scheduler.api.objects import Pod, replace_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.gang import PodGroupInfo
from scheduler.framework.interface import PodGroupPlugin
from scheduler.framework.status import Code
from scheduler.framework.waiting_pods import WaitingPod
from scheduler.plugins import coscheduling, gang_scheduling
from scheduler.plugins.gang_scheduling.plugin import PERMIT_WAIT_SECONDS, GangScheduling
from scheduler.testing import FakeHandle, build_plugin, make_pod
from tests.api.kube_pod_groups import kube_pod_group_json
from tests.plugins.coscheduling.objects import pod_group

NAME = gang_scheduling.NAME
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def group(name: str, min_count: int | None = 2) -> Gang:
    """A v1beta1 PodGroup as the informer stores it; min_count None: a basic policy."""
    return gang_from_kube_pod_group(
        parse_kube_pod_group(kube_pod_group_json(name, min_count=min_count))
    )


def member(name: str, group_name: str, **kwargs: Any) -> Pod:
    return make_pod(name, uid=f"uid-{name}", pod_group_name=group_name, **kwargs)


def ref(name: str) -> GangRef:
    return GangRef(GangSource.KUBERNETES, "default", name)


def plugin_with(handle: FakeHandle) -> GangScheduling:
    plugin = build_plugin(gang_scheduling.SPEC, None, handle)
    assert isinstance(plugin, GangScheduling)
    return plugin


def place(handle: FakeHandle, pod: Pod, node: str = "n1") -> Pod:
    assumed = replace_pod(pod, node_name=node)
    handle.cache.assume_pod(assumed)
    return assumed


# --- PreEnqueue -------------------------------------------------------------------------------


def test_a_member_waits_for_its_group_with_kube_schedulers_message() -> None:
    handle = FakeHandle()
    plugin = plugin_with(handle)
    pod = member("m0", "g")
    status = plugin.pre_enqueue(pod)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'waiting for pods\'s pod group "g" to appear in scheduling queue'


def test_a_gang_member_waits_for_min_count_pods() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(group("g", 3))
    plugin = plugin_with(handle)
    m0, m1, m2 = (member(f"m{i}", "g") for i in range(3))
    handle.static_gangs.add(m0, m1)
    status = plugin.pre_enqueue(m1)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for minCount pods from a gang to appear in scheduling queue"
    # The pod asking counts even before the member index has it; bound members count too.
    assert plugin.pre_enqueue(m2) is None
    handle.static_gangs.add(replace_pod(m2, node_name="n1"))
    assert plugin.pre_enqueue(m0) is None


def test_a_basic_group_only_has_to_exist() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(group("b", None))
    plugin = plugin_with(handle)
    pod = member("b0", "b")
    assert plugin.pre_enqueue(pod) is None
    assert plugin.pod_group(pod) is None  # scheduled on its own, no group cycle
    assert plugin.permit(CycleState(), place(handle, pod), "n1") == (None, 0.0)


def test_an_unserved_api_holds_members_saying_why() -> None:
    handle = FakeHandle()
    handle.static_gangs.missing.add(GangSource.KUBERNETES)
    plugin = plugin_with(handle)
    status = plugin.pre_enqueue(member("m0", "g"))
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "pod default/m0 names PodGroup default/g (spec.schedulingGroup.podGroupName), but the "
        "PodGroup API scheduling.k8s.io/v1beta1 is not served (kube-apiserver needs "
        "--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true)"
    )


def test_pods_of_other_sources_are_not_its_business() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 3))
    plugin = plugin_with(handle)
    labelled = make_pod("l0", uid="uid-l0", labels={POD_GROUP_LABEL: "g"})
    assert plugin.pre_enqueue(labelled) is None
    assert plugin.pod_group(labelled) is None
    assert plugin.permit(CycleState(), labelled, "n1") == (None, 0.0)
    assert plugin.pre_enqueue(make_pod("solo")) is None


# --- the group cycle --------------------------------------------------------------------------


def test_only_an_existing_gang_goes_to_the_group_cycle() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(group("g", 3))
    plugin = plugin_with(handle)
    assert isinstance(plugin, PodGroupPlugin)
    info = plugin.pod_group(member("m0", "g"))
    assert info == PodGroupInfo(ref("g"), 3, "default/g", NAME)
    assert info.kubernetes_api
    assert plugin.pod_group(member("x0", "missing")) is None
    # No group backoff: the members' ordinary pod backoff applies, as in kube-scheduler.
    plugin.group_failed(ref("g"))
    assert plugin.pre_enqueue(member("m0", "g")) is not None  # still only too few pods
    handle.static_gangs.add(*(member(f"m{i}", "g") for i in range(3)))
    assert plugin.pre_enqueue(member("m0", "g")) is None


# --- Permit -----------------------------------------------------------------------------------


def test_permit_waits_five_minutes_below_quorum_then_allows_every_waiting_member() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(group("g", 2))
    plugin = plugin_with(handle)
    m0, m1, m2 = (member(f"m{i}", "g") for i in range(3))
    handle.static_gangs.add(m0, m1, m2)
    a0 = place(handle, m0)
    status, timeout = plugin.permit(CycleState(), a0, "n1")
    assert status is not None and status.code == Code.WAIT
    assert status.message() == "waiting for minCount pods from a gang to be scheduled"
    assert timeout == PERMIT_WAIT_SECONDS == 300.0
    assert {p.name for p in handle.activated} == {"m1", "m2"}  # siblings pulled forward
    waiting = WaitingPod(a0, {NAME: timeout}, handle.clock)
    assert handle.waiting is not None
    handle.waiting.add(waiting)

    a1 = place(handle, m1)
    assert plugin.permit(CycleState(), a1, "n1") == (None, 0.0)
    assert waiting.wait().is_success()


def test_a_member_waiting_below_quorum_is_rejected_after_five_minutes() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(group("g", 2))
    plugin = plugin_with(handle)
    a0 = place(handle, member("m0", "g"))
    status, timeout = plugin.permit(CycleState(), a0, "n1")
    assert status is not None and status.code == Code.WAIT
    waiting = WaitingPod(a0, {NAME: timeout}, handle.clock)
    assert handle.waiting is not None
    handle.waiting.add(waiting)
    handle.clock.step(PERMIT_WAIT_SECONDS - 1)
    assert not waiting._done.is_set()
    handle.clock.step(1)
    result = waiting.wait()
    assert result.code == Code.UNSCHEDULABLE
    assert NAME in result.message()


def test_permit_without_the_group_is_an_error() -> None:
    handle = FakeHandle()
    plugin = plugin_with(handle)
    status, _ = plugin.permit(CycleState(), member("m0", "gone"), "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (
        'failed to get podGroup default/gone: podgroups.scheduling.k8s.io "gone" not found'
    )


# --- queueing hints ---------------------------------------------------------------------------


def test_events_to_register_are_upstreams() -> None:
    plugin = plugin_with(FakeHandle())
    events = [(e.event.resource, e.event.action_type) for e in plugin.events_to_register()]
    assert events == [
        (EventResource.UNSCHEDULED_POD, ActionType.ADD),
        (EventResource.ASSIGNED_POD, ActionType.ADD),
        (EventResource.KUBE_POD_GROUP, ActionType.ADD),
        (EventResource.KUBE_POD_GROUP, ActionType.UPDATE),
    ]


def test_a_pod_of_the_same_group_requeues() -> None:
    plugin = plugin_with(FakeHandle())
    pod = member("m0", "g")
    assert plugin.is_schedulable_after_pod_added(pod, None, member("m1", "g")) == QUEUE
    bound = replace_pod(member("m2", "g"), node_name="n1")
    assert plugin.is_schedulable_after_pod_added(pod, None, bound) == QUEUE
    assert plugin.is_schedulable_after_pod_added(pod, None, member("o0", "other")) == SKIP
    labelled = make_pod("l0", uid="uid-l0", labels={POD_GROUP_LABEL: "g"})
    assert plugin.is_schedulable_after_pod_added(pod, None, labelled) == SKIP
    assert plugin.is_schedulable_after_pod_added(make_pod("solo"), None, member("m1", "g")) == SKIP


def test_the_pods_own_group_added_requeues() -> None:
    plugin = plugin_with(FakeHandle())
    pod = member("m0", "g")
    assert plugin.is_schedulable_after_group_added(pod, None, group("g")) == QUEUE
    assert plugin.is_schedulable_after_group_added(pod, None, group("other")) == SKIP
    from scheduler.api.gang import gang_from_pod_group

    same_name_other_api = gang_from_pod_group(pod_group("g", 2))
    assert plugin.is_schedulable_after_group_added(pod, None, same_name_other_api) == SKIP


def test_a_group_update_requeues_only_when_min_count_decreased() -> None:
    plugin = plugin_with(FakeHandle())
    pod = member("m0", "g")
    hint = plugin.is_schedulable_after_group_updated
    assert hint(pod, group("g", 3), group("g", 2)) == QUEUE
    assert hint(pod, group("g", 2), group("g", 2)) == SKIP  # e.g. our own condition written
    assert hint(pod, group("g", 2), group("g", 3)) == SKIP
    assert hint(pod, group("g", 3), group("g", None)) == SKIP  # to basic: not a gang update
    assert hint(pod, group("g", None), group("g", 2)) == SKIP
    assert hint(pod, group("other", 3), group("other", 2)) == SKIP


# --- Coscheduling leaves v1beta1 members alone ------------------------------------------------


def test_coschedulings_hints_ignore_v1beta1_members() -> None:
    handle = FakeHandle()
    plugin: Any = build_plugin(coscheduling.SPEC, None, handle)
    pod = member("m0", "g")
    assert plugin.is_schedulable_after_member_change(pod, None, member("m1", "g")) == SKIP
    assert plugin.is_schedulable_after_group_change(pod, None, group("g")) == SKIP
    labelled = make_pod("l0", uid="uid-l0", labels={POD_GROUP_LABEL: "g"})
    sibling = make_pod("l1", uid="uid-l1", labels={POD_GROUP_LABEL: "g"})
    assert plugin.is_schedulable_after_member_change(labelled, None, sibling) == QUEUE
