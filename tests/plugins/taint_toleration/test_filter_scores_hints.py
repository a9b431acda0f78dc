"""TaintToleration: filter, scoring and hints."""

from __future__ import annotations

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import QueueingHint
from scheduler.framework.status import Code
from scheduler.plugins import (
    taint_toleration,
)
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


GPU_TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]


def test_untolerated_taint_filters_and_toleration_admits() -> None:
    info = make_snapshot([make_node("gpu", taints=GPU_TAINT)]).get("gpu")
    plugin = build_plugin(taint_toleration.SPEC)
    status = plugin.filter(CycleState(), make_pod("p"), info)
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) had untolerated taint(s)",
    )
    tolerant = make_pod("q", tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert plugin.filter(CycleState(), tolerant, info) is None


def test_prefer_no_schedule_taints_are_counted_and_normalised_in_reverse() -> None:
    soft = {"effect": "PreferNoSchedule", "value": ""}
    snap = make_snapshot(
        [
            make_node("clean"),
            make_node("one", taints=[{"key": "a", **soft}]),
            make_node("two", taints=[{"key": "a", **soft}, {"key": "b", **soft}]),
        ]
    )
    plugin = build_plugin(taint_toleration.SPEC)
    state = CycleState()
    pod = make_pod("p")
    plugin.pre_score(state, pod, snap.node_info_list)
    scores = np.array([plugin.score(state, pod, snap.get(n)) for n in ("clean", "one", "two")])
    assert scores.tolist() == [0, 1, 2]
    plugin.normalize_score(state, pod, scores)
    assert scores.tolist() == [100, 50, 0]


def test_taint_hint_queues_when_the_blocking_taint_goes_away() -> None:
    plugin = build_plugin(taint_toleration.SPEC)
    tainted, clean = make_node("n", taints=GPU_TAINT), make_node("n")
    pod = make_pod("p")
    assert plugin.is_schedulable_after_node_change(pod, tainted, clean) == Q
    assert plugin.is_schedulable_after_node_change(pod, clean, tainted) == SKIP
    assert plugin.is_schedulable_after_node_change(pod, None, tainted) == SKIP
