"""Coscheduling: queue order, PreEnqueue holds, minResources, Permit quorum and timeouts, the
rejection of waiting members on Unreserve and PostFilter, args."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.api.gang import POD_GROUP_LABEL, GangRef, GangSource, gang_ref
from scheduler.api.objects import Pod, replace_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeToStatus
from scheduler.framework.waiting_pods import WaitingPod
from scheduler.plugins import coscheduling
from scheduler.plugins.coscheduling.args import CoschedulingArgs
from scheduler.testing import FakeHandle, build_plugin, make_node, make_pod, make_snapshot
from tests.plugins.coscheduling.objects import member, pod_group, queued

NAME = coscheduling.NAME


def ref(name: str) -> GangRef:
    return GangRef(GangSource.SCHEDULER_PLUGINS, "default", name)


def plugin_with(handle: FakeHandle, args: dict[str, Any] | None = None) -> Any:
    return build_plugin(coscheduling.SPEC, args, handle)


def place(handle: FakeHandle, pod: Pod, node: str = "n1") -> Pod:
    """The pod assumed on `node`, as the scheduling cycle assumes it before Reserve/Permit."""
    assumed = replace_pod(pod, node_name=node)
    handle.cache.assume_pod(assumed)
    return assumed


def wait_at_permit(handle: FakeHandle, plugin: Any, pod: Pod) -> WaitingPod | None:
    """Runs Permit; a Wait registers the pod as the framework would."""
    status, timeout = plugin.permit(CycleState(), pod, pod.node_name)
    if status is None:
        return None
    assert status.code == Code.WAIT, status
    waiting = WaitingPod(pod, {NAME: timeout}, handle.clock)
    assert handle.waiting is not None
    handle.waiting.add(waiting)
    return waiting


def result(waiting: WaitingPod) -> Status:
    """The status WaitOnPermit would return (the pod already finished waiting)."""
    assert waiting._done.is_set(), "still waiting"
    return waiting.wait()


# --- QueueSort --------------------------------------------------------------------------------


def test_queue_order_priority_then_group_creation_then_group_then_pod() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(
        pod_group("old", 2, created="2026-01-01T00:00:00Z"),
        pod_group("new", 2, created="2026-01-02T00:00:00Z"),
        pod_group("twin-b", 2, created="2026-01-03T00:00:00Z"),
        pod_group("twin-a", 2, created="2026-01-03T00:00:00Z"),
    )
    plugin = plugin_with(handle)
    pods = [
        queued(member("new-0", "new")),
        queued(member("old-1", "old")),
        queued(member("old-0", "old")),
        queued(member("vip-0", "new", priority=100)),
        queued(member("twin-b-0", "twin-b")),
        queued(member("twin-a-1", "twin-a")),
        queued(member("twin-a-0", "twin-a")),
    ]
    rng = random.Random(3)
    rng.shuffle(pods)
    order = [p.pod.name for p in sorted(pods, key=plugin.sort_key)]
    assert order == [
        "vip-0",  # priority first
        "old-0",  # then the older group, its members together, by pod
        "old-1",
        "new-0",
        "twin-a-0",  # equal creation times: by group key, members together
        "twin-a-1",
        "twin-b-0",
    ]
    for a in pods:
        for b in pods:
            assert plugin.less(a, b) == (plugin.sort_key(a) < plugin.sort_key(b))


def test_pods_outside_groups_sort_by_priority_then_first_attempt() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 1, created="2026-01-01T00:00:00Z"))
    plugin = plugin_with(handle)
    group_created = pod_group("g", 1).created
    early = queued(make_pod("early"), timestamp=group_created - 10)
    late = queued(make_pod("late"), timestamp=group_created + 10)
    grouped = queued(member("m", "g"), timestamp=group_created + 100)
    order = [p.pod.name for p in sorted([late, grouped, early], key=plugin.sort_key)]
    assert order == ["early", "m", "late"]


def test_a_failed_group_goes_behind_the_others_until_it_succeeds() -> None:
    """The rotation: a group that failed sorts by its failure time, so a group created later
    goes first; once it reaches its quorum it sorts by creation time again."""
    handle = FakeHandle()
    handle.clock.set(pod_group("b", 1, created="2026-01-05T00:00:00Z").created + 60)
    handle.static_gangs.add(
        pod_group("a", 2, created="2026-01-01T00:00:00Z"),
        pod_group("b", 1, created="2026-01-05T00:00:00Z"),
    )
    plugin = plugin_with(handle)
    a0, a1, b0 = member("a-0", "a"), member("a-1", "a"), member("b-0", "b")
    handle.static_gangs.add(a0, a1, b0)
    infos = [queued(a0), queued(b0)]
    assert [p.pod.name for p in sorted(infos, key=plugin.sort_key)] == ["a-0", "b-0"]

    placed = place(handle, a0)
    plugin.unreserve(CycleState(), placed, "n1")  # a's attempt failed now
    handle.cache.forget_pod(placed)
    assert [p.pod.name for p in sorted(infos, key=plugin.sort_key)] == ["b-0", "a-0"]

    handle.clock.step(30)
    place(handle, a0)
    assert wait_at_permit(handle, plugin, a0) is not None
    assert wait_at_permit(handle, plugin, place(handle, a1)) is None  # quorum: a succeeded
    assert [p.pod.name for p in sorted(infos, key=plugin.sort_key)] == ["a-0", "b-0"]


# --- PreEnqueue -------------------------------------------------------------------------------


def test_pre_enqueue_lets_pods_outside_groups_pass() -> None:
    assert plugin_with(FakeHandle()).pre_enqueue(make_pod("alone")) is None


def test_pods_of_a_kubernetes_podgroup_are_not_coschedulings_members() -> None:
    """A pod naming a scheduling.k8s.io/v1beta1 PodGroup (spec.schedulingGroup) belongs to
    that API's plugin (GangScheduling), even with the scheduler-plugins label as well."""
    plugin = plugin_with(FakeHandle())
    pod = make_pod("k", pod_group_name="kube-group", labels={POD_GROUP_LABEL: "ghost"})
    assert gang_ref(pod) == GangRef(GangSource.KUBERNETES, "default", "kube-group")
    assert plugin.pre_enqueue(pod) is None
    assert plugin.pod_group(pod) is None


def test_pre_enqueue_holds_a_member_of_a_missing_group() -> None:
    status = plugin_with(FakeHandle()).pre_enqueue(member("m", "ghost"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "PodGroup default/ghost not found"


def test_pre_enqueue_says_why_a_group_that_exists_cannot_be_used() -> None:
    handle = FakeHandle()
    ref = GangRef(GangSource.SCHEDULER_PLUGINS, "default", "broken")
    handle.gangs().rejected[ref] = "spec.minResources: quantity 'lots' is not valid"
    status = plugin_with(handle).pre_enqueue(member("m", "broken"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "PodGroup default/broken is invalid: spec.minResources: quantity 'lots' is not valid"
    )


def test_pre_enqueue_holds_members_while_the_podgroup_api_is_not_installed() -> None:
    handle = FakeHandle()
    handle.static_gangs.missing.add(GangSource.SCHEDULER_PLUGINS)
    status = plugin_with(handle).pre_enqueue(member("m", "g"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "pod default/m names PodGroup default/g (label scheduling.x-k8s.io/pod-group), but "
        "the PodGroup API scheduling.x-k8s.io/v1alpha1 is not installed "
        "(no scheduling.x-k8s.io/v1alpha1 PodGroup CRD served)"
    )


def test_pre_enqueue_holds_members_until_the_group_has_min_member_pods() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 3))
    plugin = plugin_with(handle)
    pods = [member(f"m{i}", "g") for i in range(3)]
    handle.static_gangs.add(pods[0])
    status = plugin.pre_enqueue(pods[0])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "PodGroup default/g has 1 schedulable pods of minMember 3; waiting for more"
    )
    # A gated sibling does not count until its gates are gone.
    handle.static_gangs.add(pods[1], member("m2", "g", scheduling_gates=["wait"]))
    assert "has 2 schedulable pods" in plugin.pre_enqueue(pods[0]).message()
    handle.static_gangs.add(pods[2])
    assert plugin.pre_enqueue(pods[0]) is None
    # Bound members count.
    bound = member("m0", "g", node_name="n1")
    handle.static_gangs.add(bound)
    assert plugin.pre_enqueue(pods[1]) is None


def test_pre_enqueue_holds_a_group_that_backs_off_until_the_backoff_ends() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 2))
    plugin = plugin_with(handle, {"podGroupBackoffSeconds": 30})
    m0, m1 = member("m0", "g"), member("m1", "g")
    handle.static_gangs.add(m0, m1)
    placed = place(handle, m0)
    plugin.unreserve(CycleState(), placed, "n1")
    handle.cache.forget_pod(placed)
    status = plugin.pre_enqueue(m1)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "PodGroup default/g failed recently; backing off for 30s more"
    _, pre_filter_status = plugin.pre_filter(CycleState(), m1, [])
    assert pre_filter_status.message() == status.message()
    handle.clock.step(29)
    assert "for 1s more" in plugin.pre_enqueue(m1).message()
    assert handle.activated == []
    handle.clock.step(1)
    assert plugin.pre_enqueue(m1) is None
    # Nothing marks the end of a backoff in the cluster: the members are activated.
    assert sorted(p.name for p in handle.activated) == ["m0", "m1"]


# --- PreFilter: minResources ------------------------------------------------------------------


def test_pre_filter_rejects_when_the_cluster_cannot_hold_min_resources() -> None:
    other = make_pod("other", cpu="3", node_name="n1")
    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    handle = FakeHandle(snap=make_snapshot(nodes, [other]))
    handle.static_gangs.add(pod_group("g", 2, min_resources={"cpu": "6", "memory": "1Gi"}))
    plugin = plugin_with(handle)
    m0 = member("m0", "g", cpu="2")
    handle.static_gangs.add(m0, member("m1", "g", cpu="2"))
    _, status = plugin.pre_filter(CycleState(), m0, [])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "PodGroup default/g: the cluster's free resources cannot hold its minResources "
        "(resource gap: cpu: need 6, free 5)"
    )


def test_pre_filter_counts_the_groups_own_pods_as_free() -> None:
    bound = member("m0", "g", cpu="2", node_name="n1")
    other = make_pod("other", cpu="2", node_name="n2")
    handle = FakeHandle(
        snap=make_snapshot([make_node("n1", cpu="4"), make_node("n2", cpu="4")], [bound, other])
    )
    handle.cache.add_node(make_node("n1", cpu="4"))
    handle.cache.add_pod(bound)
    handle.static_gangs.add(pod_group("g", 2, min_resources={"cpu": "6"}), bound)
    plugin = plugin_with(handle)
    # Free: n1 2 + n2 2 = 4; the bound member's 2 count as free: 6.
    assert plugin.pre_filter(CycleState(), member("m1", "g", cpu="2"), []) == (None, None)
    handle.static_gangs.add(pod_group("g", 2, min_resources={"cpu": "6500m"}))
    _, status = plugin.pre_filter(CycleState(), member("m1", "g", cpu="2"), [])
    assert status.message().endswith("(resource gap: cpu: need 6500m, free 6)")


def test_pre_filter_counts_pod_slots_for_min_member() -> None:
    handle = FakeHandle(snap=make_snapshot([make_node("n1", pods=2)]))
    handle.static_gangs.add(pod_group("g", 3, min_resources={"cpu": "1"}))
    handle.static_gangs.add(*(member(f"m{i}", "g") for i in range(3)))
    _, status = plugin_with(handle).pre_filter(CycleState(), member("m0", "g"), [])
    assert status.message().endswith("(resource gap: pods: need 3, free 2)")


# --- Permit -----------------------------------------------------------------------------------


def test_permit_waits_until_min_member_are_placed_then_allows_them_all() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 4))
    plugin = plugin_with(handle)
    pods = [member(f"m{i}", "g") for i in range(5)]
    handle.static_gangs.add(*pods)
    waiting = []
    for i, pod in enumerate(pods[:3]):
        status, timeout = plugin.permit(CycleState(), place(handle, pod), "n1")
        assert status.code == Code.WAIT
        assert status.message().startswith(f"PodGroup default/g: {i + 1} of minMember 4 placed")
        assert timeout == 60.0  # permitWaitingTimeSeconds' default
        waiting.append(WaitingPod(pod, {NAME: timeout}, handle.clock))
        assert handle.waiting is not None
        handle.waiting.add(waiting[-1])
    # The first member to wait activated its pending siblings.
    assert sorted(p.name for p in handle.activated) == ["m1", "m2", "m3", "m4"]
    assert not any(w._done.is_set() for w in waiting)
    assert plugin.permit(CycleState(), place(handle, pods[3]), "n1") == (None, 0.0)
    assert [result(w).code for w in waiting] == [Code.SUCCESS] * 3
    # A member beyond minMember joins a group that holds its quorum: allowed at once.
    assert plugin.permit(CycleState(), place(handle, pods[4]), "n1") == (None, 0.0)


def test_bound_members_count_towards_the_quorum() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 2))
    handle.cache.add_pod(member("m0", "g", node_name="n1"))
    plugin = plugin_with(handle)
    assert plugin.permit(CycleState(), place(handle, member("m1", "g")), "n1") == (None, 0.0)


def test_permit_of_a_pod_outside_groups_and_of_a_vanished_group() -> None:
    plugin = plugin_with(FakeHandle())
    assert plugin.permit(CycleState(), make_pod("alone"), "n1") == (None, 0.0)
    status, _ = plugin.permit(CycleState(), member("m", "gone"), "n1")
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "PodGroup not found"


@pytest.mark.parametrize(
    ("group_timeout", "args", "expected"),
    [
        (None, {}, 60.0),
        (None, {"permitWaitingTimeSeconds": 10}, 10.0),
        (30, {"permitWaitingTimeSeconds": 10}, 30.0),
        (0, {"permitWaitingTimeSeconds": 10}, 10.0),
        (None, {"permitWaitingTimeSeconds": 0}, 60.0),
    ],
)
def test_permit_wait_time(group_timeout: int | None, args: dict[str, Any], expected: float) -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 2, timeout=group_timeout))
    plugin = plugin_with(handle, args)
    _, timeout = plugin.permit(CycleState(), place(handle, member("m0", "g")), "n1")
    assert timeout == expected


def test_waiting_members_are_rejected_when_the_wait_times_out() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 3, timeout=30))
    plugin = plugin_with(handle)
    first = wait_at_permit(handle, plugin, place(handle, member("m0", "g")))
    handle.clock.step(10)
    second = wait_at_permit(handle, plugin, place(handle, member("m1", "g")))
    assert first is not None and second is not None
    handle.clock.step(20)
    status = result(first)
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "rejected due to timeout after waiting 30.0s at plugin Coscheduling"
    assert not second._done.is_set()
    # The framework unreserves the timed-out member: its sibling is rejected with it.
    plugin.unreserve(CycleState(), first.pod, "n1")
    assert result(second).message() == "rejection in Unreserve"


# --- Unreserve / PostFilter -------------------------------------------------------------------


def test_unreserve_rejects_the_waiting_members_and_marks_the_group_failed() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 4))
    handle.static_gangs.add(pod_group("other", 2))
    plugin = plugin_with(handle, {"podGroupBackoffSeconds": 5})
    waiting = [wait_at_permit(handle, plugin, place(handle, member(f"m{i}", "g"))) for i in (0, 1)]
    outsider = wait_at_permit(handle, plugin, place(handle, member("o0", "other")))
    failing = place(handle, member("m2", "g"))
    handle.clock.step(1)
    plugin.unreserve(CycleState(), failing, "n1")
    assert [result(w).message() for w in waiting if w is not None] == ["rejection in Unreserve"] * 2
    assert outsider is not None and not outsider._done.is_set()
    assert plugin.tracker.failed_at(ref("g")) == handle.clock.now()
    assert plugin.tracker.backoff_remaining(ref("g")) == 5.0


def test_unreserve_of_a_member_of_a_group_that_holds_its_quorum_does_not_fail_it() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 2))
    plugin = plugin_with(handle, {"podGroupBackoffSeconds": 5})
    for i in range(3):
        place(handle, member(f"m{i}", "g"))
    plugin.unreserve(CycleState(), member("m2", "g", node_name="n1"), "n1")
    assert plugin.tracker.failed_at(ref("g")) is None
    assert plugin.tracker.backoff_remaining(ref("g")) == 0.0


def test_post_filter_rejects_the_group_when_the_gap_exceeds_the_reject_percentage() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 4))
    plugin = plugin_with(handle, {"podGroupBackoffSeconds": 7})
    pods = [member(f"m{i}", "g") for i in range(4)]
    handle.static_gangs.add(*pods)
    waiting = [wait_at_permit(handle, plugin, place(handle, p)) for p in pods[:2]]
    pf_result, status = plugin.post_filter(CycleState(), pods[2], NodeToStatus())
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        "PodGroup default/g gets rejected due to Pod m2 is unschedulable even after PostFilter"
    )
    assert pf_result is not None and pf_result.nominating_info is None
    msgs = [result(w).message() for w in waiting if w is not None]
    assert msgs == ["optimistic rejection in PostFilter"] * 2
    assert plugin.tracker.failed_at(ref("g")) is not None
    assert plugin.tracker.backoff_remaining(ref("g")) == 7.0


def test_post_filter_keeps_the_group_within_the_reject_percentage() -> None:
    handle = FakeHandle()
    handle.static_gangs.add(pod_group("g", 10))
    plugin = plugin_with(handle, {"podGroupRejectPercentage": 10})
    waiting = [
        wait_at_permit(handle, plugin, place(handle, member(f"m{i}", "g"))) for i in range(9)
    ]
    _, status = plugin.post_filter(CycleState(), member("m9", "g"), NodeToStatus())
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == ""
    assert not any(w is not None and w._done.is_set() for w in waiting)
    assert plugin.tracker.failed_at(ref("g")) is None


def test_post_filter_of_pods_outside_groups_and_of_missing_groups() -> None:
    plugin = plugin_with(FakeHandle())
    _, status = plugin.post_filter(CycleState(), make_pod("alone"), NodeToStatus())
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, "")
    _, status = plugin.post_filter(CycleState(), member("m", "gone"), NodeToStatus())
    assert status.message() == "can not find pod group"


# --- QueueingHints ----------------------------------------------------------------------------


def test_hints_requeue_for_a_sibling_or_the_own_group_only() -> None:
    plugin = plugin_with(FakeHandle())
    pod = member("m0", "g")
    sibling, stranger = member("m1", "g"), member("x", "other")
    hint = plugin.is_schedulable_after_member_change
    assert hint(pod, None, sibling) == 1
    assert hint(pod, None, stranger) == 0
    assert hint(pod, None, pod) == 0
    assert hint(make_pod("alone"), None, sibling) == 0
    group_hint = plugin.is_schedulable_after_group_change
    from scheduler.api.gang import gang_from_pod_group

    assert group_hint(pod, None, gang_from_pod_group(pod_group("g", 2))) == 1
    assert group_hint(pod, None, gang_from_pod_group(pod_group("other", 2))) == 0
    resources = {str(e.event.resource) for e in plugin.events_to_register()}
    assert resources == {"Pod", "podgroups.v1alpha1.scheduling.x-k8s.io"}


def test_gang_ref_reads_the_pod_group_label() -> None:
    assert gang_ref(make_pod("p", labels={POD_GROUP_LABEL: "g"})) == ref("g")
    assert gang_ref(make_pod("p")) is None


# --- args -------------------------------------------------------------------------------------


def test_args_defaults() -> None:
    assert coscheduling.SPEC.decode_args is not None
    assert coscheduling.SPEC.decode_args(None) == CoschedulingArgs(60, 0, 10)
    assert coscheduling.SPEC.decode_args(
        {
            "permitWaitingTimeSeconds": 5,
            "podGroupBackoffSeconds": 1,
            "podGroupRejectPercentage": 100,
        }
    ) == CoschedulingArgs(5, 1, 100)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"permitWaitingTimeSeconds": -10},
            "permitWaitingTimeSeconds: Invalid value: -10: must be greater than 0",
        ),
        (
            {"podGroupBackoffSeconds": -20},
            "podGroupBackoffSeconds: Invalid value: -20: must be greater than 0",
        ),
        (
            {"podGroupRejectPercentage": -1},
            "podGroupRejectPercentage: Invalid value: -1: must be between 0 and 100",
        ),
        (
            {"podGroupRejectPercentage": 101},
            "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100",
        ),
        (
            {"podGroupBackoffSeconds": -1, "podGroupRejectPercentage": 101},
            "[podGroupBackoffSeconds: Invalid value: -1: must be greater than 0, "
            "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100]",
        ),
        (
            {"permitWaitingTimeSeconds": "60s"},
            'permitWaitingTimeSeconds: Invalid value: "60s": must be an integer',
        ),
    ],
)
def test_args_validation(raw: dict[str, Any], message: str) -> None:
    assert coscheduling.SPEC.decode_args is not None
    with pytest.raises(ArgsError) as err:
        coscheduling.SPEC.decode_args(raw)
    assert str(err.value) == message


def test_args_reject_unknown_fields() -> None:
    assert coscheduling.SPEC.decode_args is not None
    with pytest.raises(ArgsError, match="kubeConfigPath"):
        coscheduling.SPEC.decode_args({"kubeConfigPath": "/etc/kubeconfig"})
