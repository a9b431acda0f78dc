"""NodeAffinity: PreFilter narrowing, scoring, addedAffinity, hints."""

from __future__ import annotations

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code
from scheduler.framework.types import PreFilterResult
from scheduler.plugins import (
    node_affinity,
)
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_node_affinity_match_fields_narrow_the_nodes_in_prefilter() -> None:
    plugin = build_plugin(node_affinity.SPEC)
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
    snap = make_snapshot(
        [make_node("a", labels={"zone": "a"}), make_node("b", labels={"zone": "b"})]
    )
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
    plugin = build_plugin(node_affinity.SPEC)
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.node_info_list) is None
    scores = plugin.score_batch(state, pod, snap.table, np.array([0, 1], np.intp))
    by_name = dict(zip(snap.table.names, scores.tolist(), strict=True))
    assert by_name == {"a": 10, "b": 3}
    plugin.normalize_score(state, pod, scores)
    assert sorted(scores.tolist()) == [30, 100]


def test_added_affinity_is_enforced_with_its_own_reason() -> None:
    plugin = build_plugin(
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
    info = make_snapshot([make_node("n", labels={"pool": "web"})]).get("n")
    status = plugin.filter(CycleState(), make_pod("p"), info)
    assert status.message() == "node(s) didn't match scheduler-enforced node affinity"


def test_node_affinity_hint_queues_only_when_a_node_starts_matching() -> None:
    plugin = build_plugin(node_affinity.SPEC)
    pod = make_pod("p", node_selector={"disk": "ssd"})
    hdd, ssd = make_node("n", labels={"disk": "hdd"}), make_node("n", labels={"disk": "ssd"})
    assert plugin.is_schedulable_after_node_change(pod, None, ssd) == Q
    assert plugin.is_schedulable_after_node_change(pod, None, hdd) == SKIP
    assert plugin.is_schedulable_after_node_change(pod, hdd, ssd) == Q
    assert plugin.is_schedulable_after_node_change(pod, ssd, ssd) == SKIP
