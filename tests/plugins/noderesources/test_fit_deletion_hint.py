"""NodeResourcesFit's assigned-pod-delete hint for a preemptor waiting for its victims.

Nodes of 4 cpu. The preemptor p (priority 100, 4 cpu) is nominated to n1, where its victims
(priority 10) are terminating by preemption; n2 holds other pods. A deletion may be skipped for
p only if p still does not fit on the node the deleted pod left, counting the nominated pods of
equal or higher priority there, and p cannot preempt again (victims still terminating at home).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.events import QueueingHint
from scheduler.plugins import noderesources
from scheduler.testing import FakeHandle, build_plugin, make_node, make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

PREEMPTED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "kube-pysched: preempting to accommodate a higher priority pod",
}
TERMINATING = "2026-01-01T00:00:10Z"


def victim(name: str, node: str, cpu: str = "2", priority: int = 10, **kw: Any) -> Pod:
    return make_pod(
        name,
        uid=name,
        cpu=cpu,
        priority=priority,
        node_name=node,
        deletion_timestamp=TERMINATING,
        conditions=[PREEMPTED],
        **kw,
    )


def running(name: str, node: str, cpu: str = "2", priority: int = 10) -> Pod:
    return make_pod(name, uid=name, cpu=cpu, priority=priority, node_name=node)


def preemptor(name: str = "p", cpu: str = "4", priority: int = 100, **kw: Any) -> Pod:
    return make_pod(name, uid=name, cpu=cpu, priority=priority, nominated_node_name="n1", **kw)


class Cluster:
    """Two 4-cpu nodes in a fake handle's cache, the preemptor nominated to n1."""

    def __init__(self, *pods: Pod, pod: Pod | None = None) -> None:
        self.handle = FakeHandle()
        for name in ("n1", "n2"):
            self.handle.cache.add_node(make_node(name, cpu="4"))
        for p in pods:
            self.handle.cache.add_pod(p)
        self.pod = pod if pod is not None else preemptor()
        if self.pod.nominated_node_name:
            self.handle.nominator.add_nominated_pod(self.pod, self.pod.nominated_node_name)
        self.plugin = build_plugin(noderesources.FIT_SPEC, handle=self.handle)

    def delete(self, pod: Pod) -> QueueingHint:
        """The cache forgets the pod, then the hint is asked (the event handlers' order)."""
        self.handle.cache.remove_pod(pod)
        result: QueueingHint = self.plugin.is_schedulable_after_assigned_pod_delete(
            self.pod, pod, None
        )
        return result


def test_a_deletion_elsewhere_that_leaves_too_little_room_is_skipped() -> None:
    other = running("o1", "n2")
    c = Cluster(victim("v1", "n1"), victim("v2", "n1"), other, running("o2", "n2"))
    assert c.delete(other) == SKIP  # n2 has 2 cpu free, p needs 4


def test_a_deletion_elsewhere_that_makes_room_queues() -> None:
    o1, o2 = running("o1", "n2"), running("o2", "n2")
    c = Cluster(victim("v1", "n1"), victim("v2", "n1"), o1, o2)
    assert c.delete(o1) == SKIP
    assert c.delete(o2) == Q  # n2 is empty now: p fits there


@pytest.mark.parametrize(
    ("priority", "hint"),
    [(100, SKIP), (200, SKIP), (50, Q)],
    ids=["equal-priority-holds-room", "higher-priority-holds-room", "lower-priority-does-not"],
)
def test_room_counts_the_nominated_pods_of_equal_or_higher_priority(
    priority: int, hint: QueueingHint
) -> None:
    o1, o2 = running("o1", "n2"), running("o2", "n2")
    c = Cluster(victim("v1", "n1"), victim("v2", "n1"), o1, o2)
    q = make_pod("q", uid="q", cpu="1", priority=priority, nominated_node_name="n2")
    c.handle.nominator.add_nominated_pod(q, "n2")
    c.handle.cache.remove_pod(o1)
    assert c.delete(o2) == hint  # 4 cpu free on n2, 1 of them nominated to q


def test_the_pod_count_limit_counts() -> None:
    handle = FakeHandle()
    handle.cache.add_node(make_node("n1", cpu="4"))
    handle.cache.add_node(make_node("n2", cpu="8", pods=2))
    for p in (victim("v1", "n1"), victim("v2", "n1")):
        handle.cache.add_pod(p)
    o1, o2, o3 = running("o1", "n2", "1"), running("o2", "n2", "1"), running("o3", "n2", "1")
    for p in (o1, o2):
        handle.cache.add_pod(p)
    handle.cache.add_pod(o3)  # three pods where two are allowed (the cache does not check)
    pod = preemptor()
    handle.nominator.add_nominated_pod(pod, "n1")
    plugin = build_plugin(noderesources.FIT_SPEC, handle=handle)
    handle.cache.remove_pod(o3)
    assert plugin.is_schedulable_after_assigned_pod_delete(pod, o3, None) == SKIP  # 2 of 2 pods
    handle.cache.remove_pod(o2)
    assert plugin.is_schedulable_after_assigned_pod_delete(pod, o2, None) == Q


def test_its_own_victims_queue_it_only_once_it_fits_at_home() -> None:
    v1, v2 = victim("v1", "n1"), victim("v2", "n1")
    c = Cluster(v1, v2, running("o1", "n2"), running("o2", "n2"))
    assert c.delete(v1) == SKIP  # v2 still holds 2 cpu and is terminating
    assert c.delete(v2) == Q


def test_without_terminating_victims_at_home_the_pod_may_preempt_again() -> None:
    other = running("o1", "n2")
    # n1's pods are not (or no longer) leaving: the retry may preempt, as kube-scheduler's.
    c = Cluster(running("r1", "n1"), running("r2", "n1"), other, running("o2", "n2"))
    assert c.delete(other) == Q


def test_victims_of_equal_priority_or_not_preempted_do_not_hold_it() -> None:
    plain_deleted = make_pod(
        "d1", uid="d1", cpu="2", priority=10, node_name="n1", deletion_timestamp=TERMINATING
    )
    other = running("o1", "n2")
    c = Cluster(plain_deleted, victim("v2", "n1", priority=100), other, running("o2", "n2"))
    assert c.delete(other) == Q


def test_a_pod_without_a_nomination_is_queued_as_by_kube_scheduler() -> None:
    other = running("o1", "n2")
    c = Cluster(
        victim("v1", "n1"),
        victim("v2", "n1"),
        other,
        running("o2", "n2"),
        pod=make_pod("p", uid="p", cpu="4", priority=100),
    )
    assert c.delete(other) == Q


def test_the_nominator_s_nomination_counts_before_the_status_shows_it() -> None:
    other = running("o1", "n2")
    pod = make_pod("p", uid="p", cpu="4", priority=100)  # status not written back yet
    c = Cluster(victim("v1", "n1"), victim("v2", "n1"), other, running("o2", "n2"), pod=pod)
    c.handle.nominator.add_nominated_pod(pod, "n1")
    assert c.delete(other) == SKIP


def test_a_gang_member_is_queued_as_by_kube_scheduler() -> None:
    other = running("o1", "n2")
    member = preemptor(labels={"scheduling.x-k8s.io/pod-group": "g"})
    c = Cluster(victim("v1", "n1"), victim("v2", "n1"), other, running("o2", "n2"), pod=member)
    assert c.delete(other) == Q


def test_an_unknown_node_queues() -> None:
    c = Cluster(victim("v1", "n1"), victim("v2", "n1"))
    ghost = running("g", "gone-node")
    assert c.plugin.is_schedulable_after_assigned_pod_delete(c.pod, ghost, None) == Q


def test_each_deletion_reads_its_node_once_and_a_nominated_node_until_it_changes() -> None:
    v1, v2 = victim("v1", "n1"), victim("v2", "n1")
    o1, o2 = running("o1", "n2"), running("o2", "n2")
    c = Cluster(v1, v2, o1, o2)
    reads: list[str] = []
    read = c.handle.node_now

    def counting(name: str) -> Any:
        reads.append(name)
        return read(name)

    c.handle.node_now = counting  # type: ignore[method-assign]
    c.handle.cache.remove_pod(o1)
    for _ in range(3):
        assert c.plugin.is_schedulable_after_assigned_pod_delete(c.pod, o1, None) == SKIP
    assert reads == ["n2", "n1"]  # the freed node once for the deletion, n1 once
    assert c.delete(v1) == SKIP  # n1 changed: read again (as the freed node, then as home)
    assert reads[2:] == ["n1", "n1"]
    assert c.delete(v2) == Q
    # Another pod takes n1; p no longer fits anywhere, but no victim holds it back now.
    c.handle.cache.add_pod(running("r", "n1", "4"))
    o5 = running("o5", "n2")
    c.handle.cache.add_pod(o5)
    assert c.delete(o5) == Q


def test_the_nominated_node_s_victims_are_forgotten_when_the_node_goes() -> None:
    other = running("o1", "n2")
    c = Cluster(victim("v1", "n1"), victim("v2", "n1"), other, running("o2", "n2"))
    c.handle.cache.remove_pod(other)
    assert c.plugin.is_schedulable_after_assigned_pod_delete(c.pod, other, None) == SKIP
    c.handle.cache.remove_node(make_node("n1", cpu="4"))
    assert c.plugin.is_schedulable_after_assigned_pod_delete(c.pod, other, None) == Q


def test_victims_asked_to_go_hold_it_until_the_informer_shows_them_gone() -> None:
    # The preemption's calls are done, the informer still shows v1 and v2 running.
    v1, v2 = running("v1", "n1"), running("v2", "n1")
    o1 = running("o1", "n2")
    c = Cluster(v1, v2, o1, running("o2", "n2"))
    c.handle.cache.remove_pod(o1)
    assert c.plugin.is_schedulable_after_assigned_pod_delete(c.pod, o1, None) == Q
    c.handle.evictions.remember("v1")
    c.handle.evictions.remember("v2")
    assert c.plugin.is_schedulable_after_assigned_pod_delete(c.pod, o1, None) == SKIP
    assert c.delete(v1) == SKIP  # v2 still holds 2 cpu of n1
    assert c.delete(v2) == Q


def test_a_victim_not_asked_to_go_leaves_it_free_to_preempt_again() -> None:
    v1, v2 = running("v1", "n1"), running("v2", "n1")
    c = Cluster(v1, v2, running("o1", "n2"), running("o2", "n2"))
    c.handle.evictions.remember("v1")
    assert c.delete(v1) == Q  # v2 alone holds p back from n1, and nobody asked it to go


def test_only_lower_priority_pods_asked_to_go_hold_it() -> None:
    o1 = running("o1", "n2")
    c = Cluster(running("v1", "n1", priority=100), running("v2", "n1"), o1, running("o2", "n2"))
    c.handle.evictions.remember("v1")  # not below p's priority: it does not hold p back
    c.handle.cache.remove_pod(o1)
    assert c.plugin.is_schedulable_after_assigned_pod_delete(c.pod, o1, None) == Q
