"""Nominator: which pods are nominated to which nodes."""

from __future__ import annotations

from scheduler.api.objects import replace_pod
from scheduler.backend.queue import Nominator
from scheduler.clock import FakeClock
from scheduler.framework.types import CLEAR_NOMINATED_NODE, NominatingInfo, NominatingMode
from scheduler.testing import make_pod
from tests.backend.queue.helpers import fail, make_queue, pop_and_fail


def test_nominates_from_status_when_no_nominating_info() -> None:
    n = Nominator()
    pod = make_pod("p", nominated_node_name="n1")
    n.add_nominated_pod(pod)
    assert n.nominated_pods_for_node("n1") == [pod]
    assert n.nominated_node_names() == {"n1"}


def test_pod_without_nomination_is_not_recorded() -> None:
    n = Nominator()
    n.add_nominated_pod(make_pod("p"), NominatingInfo("", NominatingMode.NOOP))
    assert n.nominated_node_names() == set()


def test_override_nominating_info_wins_over_status() -> None:
    n = Nominator()
    pod = make_pod("p", nominated_node_name="n1")
    n.add_nominated_pod(pod, NominatingInfo("n2", NominatingMode.OVERRIDE))
    assert n.nominated_pods_for_node("n1") == []
    assert n.nominated_pods_for_node("n2") == [pod]
    n.add_nominated_pod(pod, "n3")  # a plain node name is an override too
    assert n.nominated_node_names() == {"n3"}


def test_clearing_override_removes_nomination() -> None:
    n = Nominator()
    pod = make_pod("p", nominated_node_name="n1")
    n.add_nominated_pod(pod)
    n.add_nominated_pod(pod, CLEAR_NOMINATED_NODE)
    assert n.nominated_node_names() == set()


def test_readding_a_pod_keeps_one_entry() -> None:
    n = Nominator()
    pod = make_pod("p", nominated_node_name="n1")
    n.add_nominated_pod(pod)
    n.add_nominated_pod(pod)
    assert n.nominated_pods_for_node("n1") == [pod]


def test_update_keeps_scheduler_made_nomination_until_status_carries_it() -> None:
    n = Nominator()
    pod = make_pod("p")
    n.add_nominated_pod(pod, NominatingInfo("n1", NominatingMode.OVERRIDE))
    new = replace_pod(pod, labels={"a": "b"}, resource_version="2")
    n.update_nominated_pod(pod, new)
    assert n.nominated_pods_for_node("n1") == [new]
    moved = replace_pod(new, nominated_node_name="n2", resource_version="3")
    n.update_nominated_pod(new, moved)
    assert n.nominated_node_names() == {"n2"}


def test_a_failed_attempt_keeps_a_nomination_the_status_does_not_show_yet() -> None:
    n = Nominator()
    pod = make_pod("p")
    n.add_nominated_pod(pod, NominatingInfo("n1", NominatingMode.OVERRIDE))
    n.renominate_after_failure(pod, None)
    assert n.nominated_pods_for_node("n1") == [pod]
    # The status, once it shows a nomination, is followed; so is new nominating info.
    shown = replace_pod(pod, nominated_node_name="n2", resource_version="2")
    n.renominate_after_failure(shown, None)
    assert n.nominated_node_names() == {"n2"}
    n.renominate_after_failure(shown, CLEAR_NOMINATED_NODE)
    assert n.nominated_node_names() == set()


def test_delete_nominated_pod_if_exists() -> None:
    n = Nominator()
    a, b = make_pod("a", nominated_node_name="n1"), make_pod("b", nominated_node_name="n1")
    n.add_nominated_pod(a)
    n.add_nominated_pod(b)
    n.delete_nominated_pod_if_exists(a)
    n.delete_nominated_pod_if_exists(make_pod("never-added"))
    assert n.nominated_pods_for_node("n1") == [b]
    n.delete_nominated_pod_if_exists(b)
    assert n.nominated_node_names() == set()


def test_queue_nominates_added_pods_and_returns_its_current_version() -> None:
    q = make_queue(FakeClock())
    pod = make_pod("p", nominated_node_name="n1")
    q.add(pod)
    assert q.nominator.nominated_pods_for_node("n1") == [pod]
    assert q.nominated_node_names() == {"n1"}
    pop_and_fail(q, "Fit")
    relabeled = replace_pod(pod, labels={"a": "b"}, resource_version="2")
    q.update(pod, relabeled)
    assert q.nominated_pods_for_node("n1") == [relabeled]
    assert q.nominated_pods_by_node() == {"n1": [relabeled]}


def test_pods_by_node_equal_each_nodes_pods_in_their_current_version() -> None:
    q = make_queue(FakeClock())
    pods = [make_pod(f"p{i}", nominated_node_name=f"n{i % 3}") for i in range(7)]
    for pod in pods:
        q.add(pod)
    q.add_nominated_pod(make_pod("held"), "n5")  # nominated, not in the queue: kept as given
    for _ in pods:
        pop_and_fail(q, "Fit")
    relabeled = replace_pod(pods[4], labels={"a": "b"}, resource_version="2")
    q.update(pods[4], relabeled)
    by_node = q.nominated_pods_by_node()
    assert set(by_node) == q.nominated_node_names() == {"n0", "n1", "n2", "n5"}
    for node, nominated in by_node.items():
        assert nominated == q.nominated_pods_for_node(node)
    assert relabeled in by_node["n1"]
    assert Nominator().nominated_pods_by_node() == {}


def test_queue_add_nominated_pod_accepts_post_filter_nominating_info() -> None:
    q = make_queue(FakeClock())
    pod = make_pod("p")
    q.add_nominated_pod(pod, NominatingInfo("n9", NominatingMode.OVERRIDE))
    assert q.nominated_pods_for_node("n9") == [pod]
    q.delete_nominated_pod_if_exists(pod)
    assert q.nominated_pods_for_node("n9") == []


def test_pods_by_node_is_reused_until_a_nomination_or_a_pod_version_changes() -> None:
    q = make_queue(FakeClock())
    a, b = make_pod("a", nominated_node_name="n1"), make_pod("b", nominated_node_name="n2")
    q.add(a)
    q.add(b)
    first = q.nominated_pods_by_node()
    assert first == {"n1": [a], "n2": [b]}
    assert q.nominated_pods_by_node() is first  # nothing changed: the same read-only mapping
    relabeled = replace_pod(a, labels={"x": "y"}, resource_version="2")
    q.update(a, relabeled)
    assert q.nominated_pods_by_node() == {"n1": [relabeled], "n2": [b]}
    q.delete(b)
    assert q.nominated_pods_by_node() == {"n1": [relabeled]}
    c = make_pod("c", nominated_node_name="n1")
    q.add(c)
    assert q.nominated_pods_by_node() == {"n1": [relabeled, c]}
    assert first == {"n1": [a], "n2": [b]}  # an earlier answer is never changed afterwards


def test_renominating_the_same_pod_to_its_node_keeps_the_read_mapping() -> None:
    """A failed retry renominates its pod where it was: the readers' mapping stays valid (a
    preemption burst reads it every cycle); another node or a newer pod object replaces it."""
    nominator = Nominator()
    a, b = make_pod("a", nominated_node_name="n1"), make_pod("b", nominated_node_name="n2")
    nominator.add_nominated_pod(a)
    nominator.add_nominated_pod(b)
    first = nominator.nominated_pods_by_node()
    nominator.renominate_after_failure(a, None)
    nominator.add_nominated_pod(b, "n2")
    assert nominator.nominated_pods_by_node() is first
    newer = replace_pod(a, resource_version="2")
    nominator.renominate_after_failure(newer, None)
    assert nominator.nominated_pods_by_node() == {"n1": [newer], "n2": [b]}
    moved = nominator.nominated_pods_by_node()
    nominator.add_nominated_pod(b, "n3")
    assert nominator.nominated_pods_by_node() == {"n1": [newer], "n3": [b]}
    assert moved == {"n1": [newer], "n2": [b]}


def test_a_pod_requeued_as_a_newer_version_is_nominated_as_that_version() -> None:
    """The failure handler requeues the informer's newer copy of a pod without renominating
    it (a cycle that does not update nominations): the nomination reads the copy the queue
    holds, as kube-scheduler's reads the queue's version of each nominated pod."""
    q = make_queue(FakeClock())
    pod = make_pod("p", nominated_node_name="n1")
    q.add(pod)
    pinfo = q.pop()
    assert pinfo is not None
    newer = replace_pod(pod, labels={"a": "b"}, resource_version="2")
    pinfo.pod = newer
    fail(q, pinfo, "Fit")
    assert q.nominated_pods_for_node("n1") == [newer]
    assert q.nominator.nominations().by_node == {"n1": [newer]}


def test_nominations_view_is_one_object_until_a_change_and_tracks_the_lowest_priority() -> None:
    n = Nominator()
    low, high = make_pod("low", priority=10), make_pod("high", priority=100)
    n.add_nominated_pod(low, "n1")
    n.add_nominated_pod(high, "n1")
    view = n.nominations()
    assert n.nominations() is view
    assert (view.lowest, dict(view.node_of)) == (10, {low.uid: "n1", high.uid: "n1"})
    n.delete_nominated_pod_if_exists(low)
    after = n.nominations()
    assert after is not view and after.lowest == 100
    assert after.by_node == {"n1": [high]}
    assert view.by_node == {"n1": [low, high]}  # an earlier view is never changed afterwards
    n.refresh(replace_pod(high, priority=5))  # a newer copy: its priority is counted instead
    assert n.nominations().lowest == 5
    n.delete_nominated_pod_if_exists(high)
    assert (n.nominations().by_node, n.nominations().lowest) == ({}, 0)
