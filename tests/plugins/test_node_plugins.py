"""Filter reasons, scores and QueueingHints of the node-level plugins."""

from __future__ import annotations

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code
from scheduler.framework.types import PreFilterResult
from scheduler.plugins import (
    node_affinity,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    scheduling_gates,
    taint_toleration,
)
from tests.builders import make_node, make_pod
from tests.plugins.world import build, snapshot

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
GPU_TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]


def test_scheduling_gates_message_lists_the_gates() -> None:
    status = build(scheduling_gates.SPEC).pre_enqueue(make_pod("p", scheduling_gates=["a", "b"]))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for scheduling gates: [a b]"


def test_untolerated_taint_filters_and_toleration_admits() -> None:
    info = snapshot([make_node("gpu", taints=GPU_TAINT)]).get("gpu")
    plugin = build(taint_toleration.SPEC)
    status = plugin.filter(CycleState(), make_pod("p"), info)
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) had untolerated taint(s)",
    )
    tolerant = make_pod("q", tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert plugin.filter(CycleState(), tolerant, info) is None


def test_prefer_no_schedule_taints_are_counted_and_normalised_in_reverse() -> None:
    soft = {"effect": "PreferNoSchedule", "value": ""}
    snap = snapshot(
        [
            make_node("clean"),
            make_node("one", taints=[{"key": "a", **soft}]),
            make_node("two", taints=[{"key": "a", **soft}, {"key": "b", **soft}]),
        ]
    )
    plugin = build(taint_toleration.SPEC)
    state = CycleState()
    pod = make_pod("p")
    plugin.pre_score(state, pod, snap.node_info_list)
    scores = np.array([plugin.score(state, pod, snap.get(n)) for n in ("clean", "one", "two")])
    assert scores.tolist() == [0, 1, 2]
    plugin.normalize_score(state, pod, scores)
    assert scores.tolist() == [100, 50, 0]


def test_node_affinity_match_fields_narrow_the_nodes_in_prefilter() -> None:
    plugin = build(node_affinity.SPEC)
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    pod = make_pod(
        "p",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        },
    )
    result, status = plugin.pre_filter(CycleState(), pod, [])
    assert status is None and result == PreFilterResult(frozenset({"n1"}))
    result, status = plugin.pre_filter(CycleState(), make_pod("plain"), [])
    assert result is None and status.code == Code.SKIP


def test_node_affinity_preferred_terms_score_their_weights() -> None:
    snap = snapshot([make_node("a", labels={"zone": "a"}), make_node("b", labels={"zone": "b"})])
    pref = [
        {
            "weight": 7,
            "preference": {
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
            },
        },
        {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}},
    ]
    pod = make_pod(
        "p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}}
    )
    plugin = build(node_affinity.SPEC)
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.node_info_list) is None
    scores = plugin.score_batch(state, pod, snap.table, np.array([0, 1], np.intp))
    by_name = dict(zip(snap.table.names, scores.tolist(), strict=True))
    assert by_name == {"a": 10, "b": 3}
    plugin.normalize_score(state, pod, scores)
    assert sorted(scores.tolist()) == [30, 100]


def test_added_affinity_is_enforced_with_its_own_reason() -> None:
    plugin = build(
        node_affinity.SPEC,
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "pool", "operator": "In", "values": ["batch"]}
                            ]
                        }
                    ]
                }
            }
        },
    )
    info = snapshot([make_node("n", labels={"pool": "web"})]).get("n")
    status = plugin.filter(CycleState(), make_pod("p"), info)
    assert status.message() == "node(s) didn't match scheduler-enforced node affinity"


def test_node_affinity_hint_queues_only_when_a_node_starts_matching() -> None:
    plugin = build(node_affinity.SPEC)
    pod = make_pod("p", node_selector={"disk": "ssd"})
    hdd, ssd = make_node("n", labels={"disk": "hdd"}), make_node("n", labels={"disk": "ssd"})
    assert plugin.is_schedulable_after_node_change(pod, None, ssd) == Q
    assert plugin.is_schedulable_after_node_change(pod, None, hdd) == SKIP
    assert plugin.is_schedulable_after_node_change(pod, hdd, ssd) == Q
    assert plugin.is_schedulable_after_node_change(pod, ssd, ssd) == SKIP


def test_taint_hint_queues_when_the_blocking_taint_goes_away() -> None:
    plugin = build(taint_toleration.SPEC)
    tainted, clean = make_node("n", taints=GPU_TAINT), make_node("n")
    pod = make_pod("p")
    assert plugin.is_schedulable_after_node_change(pod, tainted, clean) == Q
    assert plugin.is_schedulable_after_node_change(pod, clean, tainted) == SKIP
    assert plugin.is_schedulable_after_node_change(pod, None, tainted) == SKIP


def test_unschedulable_hint_queues_on_uncordon() -> None:
    plugin = build(node_unschedulable.SPEC)
    cordoned, open_ = make_node("n", unschedulable=True), make_node("n")
    assert plugin.is_schedulable_after_node_change(make_pod("p"), cordoned, open_) == Q
    assert plugin.is_schedulable_after_node_change(make_pod("p"), open_, open_) == SKIP


def test_fit_hint_needs_a_node_big_enough_and_more_room() -> None:
    plugin = build(node_resources_fit.SPEC)
    pod = make_pod("p", cpu="3")
    small, big = make_node("n", cpu="2"), make_node("n", cpu="4")
    assert plugin.is_schedulable_after_node_change(pod, None, small) == SKIP
    assert plugin.is_schedulable_after_node_change(pod, None, big) == Q
    assert plugin.is_schedulable_after_node_change(pod, small, big) == Q
    assert plugin.is_schedulable_after_node_change(pod, big, big) == SKIP
    gone = make_pod("gone", cpu="1", node_name="n")
    assert plugin.is_schedulable_after_pod_deleted(pod, gone, None) == Q
    assert plugin.is_schedulable_after_pod_deleted(pod, make_pod("never-bound"), None) == SKIP


def test_ports_hint_queues_only_when_a_conflicting_port_is_freed() -> None:
    plugin = build(node_ports.SPEC)
    pod = make_pod("p", host_ports=[8080])
    same = make_pod("a", host_ports=[8080], node_name="n")
    other = make_pod("b", host_ports=[9090], node_name="n")
    assert plugin.is_schedulable_after_pod_deleted(pod, same, None) == Q
    assert plugin.is_schedulable_after_pod_deleted(pod, other, None) == SKIP
