"""TaintToleration: filter reasons, PreferNoSchedule counting, reverse normalisation, hints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins import taint_toleration
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot

GPU = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
SPOT = {"key": "spot", "value": "", "effect": "NoExecute"}


def _info(taints: list[dict[str, str]]) -> NodeInfo:
    return NodeInfo(make_node("n", taints=taints))


@pytest.mark.parametrize(
    ("taints", "tolerations", "fits"),
    [
        ([GPU], [], False),
        ([GPU], [{"key": "dedicated", "operator": "Equal", "value": "gpu"}], True),
        ([GPU], [{"key": "dedicated", "value": "gpu"}], True),  # "" operator means Equal
        ([GPU], [{"key": "dedicated", "operator": "Equal", "value": "cpu"}], False),
        ([GPU], [{"key": "dedicated", "operator": "Exists"}], True),
        ([GPU], [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], False),
        ([GPU], [{"operator": "Exists"}], True),
        ([GPU], [{"operator": "Exists", "effect": "NoSchedule"}], True),
        ([SPOT], [{"key": "spot", "operator": "Equal", "value": ""}], True),
        ([SPOT], [{"key": "spot", "operator": "Equal", "value": "yes"}], False),
        ([GPU, SPOT], [{"key": "dedicated", "operator": "Exists"}], False),
        ([{"key": "x", "value": "", "effect": "PreferNoSchedule"}], [], True),
        # Gt/Lt tolerations need the alpha TaintTolerationComparisonOperators gate (off).
        (
            [{"key": "n", "value": "5", "effect": "NoSchedule"}],
            [{"key": "n", "operator": "Lt", "value": "9"}],
            False,
        ),
    ],
)
def test_filter(
    taints: list[dict[str, str]], tolerations: list[dict[str, Any]], fits: bool
) -> None:
    plugin = build_plugin(taint_toleration.SPEC)
    pod = make_pod(tolerations=tolerations)
    status = plugin.filter(CycleState(), pod, _info(taints))
    if fits:
        assert status is None
    else:
        assert status == Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)"
        )
    snap = make_snapshot([make_node("t", taints=taints), make_node("plain")])
    assert plugin.filter_batch(CycleState(), pod, snap.table).tolist() == [fits, True]


def test_score_counts_untolerated_prefer_no_schedule_taints() -> None:
    plugin = build_plugin(taint_toleration.SPEC)
    taints = [
        {"key": "a", "value": "1", "effect": "PreferNoSchedule"},
        {"key": "b", "value": "", "effect": "PreferNoSchedule"},
        {"key": "c", "value": "x", "effect": "NoSchedule"},
    ]
    cases = [
        ([], 2),
        # A toleration for another effect is dropped in PreScore: it tolerates nothing here.
        ([{"key": "a", "operator": "Exists", "effect": "NoSchedule"}], 2),
        ([{"key": "a", "operator": "Exists"}], 1),
        ([{"key": "a", "operator": "Equal", "value": "2", "effect": "PreferNoSchedule"}], 2),
        ([{"key": "b", "operator": "Equal", "value": "", "effect": "PreferNoSchedule"}], 1),
        ([{"operator": "Exists"}], 0),
    ]
    snap = make_snapshot([make_node("n", taints=taints), make_node("m")])
    for tolerations, expected in cases:
        pod = make_pod(tolerations=tolerations)
        state = CycleState()
        assert plugin.pre_score(state, pod, snap.node_info_list) is None
        assert plugin.score(state, pod, snap.node_info_list[0]) == expected
        assert plugin.score(state, pod, snap.node_info_list[1]) == 0
        rows = np.array([1, 0], np.intp)
        assert plugin.score_batch(state, pod, snap.table, rows).tolist() == [0, expected]


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ([0, 1, 2, 4], [100, 75, 50, 0]),
        ([3, 1], [0, 67]),
        ([0, 0], [100, 100]),
        ([], []),
    ],
)
def test_normalize_is_reversed(raw: list[int], normalised: list[int]) -> None:
    plugin = build_plugin(taint_toleration.SPEC)
    scores = np.array(raw, np.int64)
    assert plugin.score_extensions().normalize_score(CycleState(), make_pod(), scores) is None
    assert scores.tolist() == normalised


def test_events_to_register() -> None:
    node_reg, pod_reg = build_plugin(taint_toleration.SPEC).events_to_register()
    assert node_reg.event == ClusterEvent(
        EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT
    )
    assert pod_reg.event == ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION)


def test_node_hint_queues_only_when_the_node_becomes_tolerated() -> None:
    (node_reg, _) = build_plugin(taint_toleration.SPEC).events_to_register()
    hint = node_reg.hint_fn
    pod = make_pod(tolerations=[{"key": "dedicated", "operator": "Exists"}])
    tainted = make_node("n", taints=[SPOT])
    tolerated = make_node("n", taints=[GPU])
    clean = make_node("n")
    assert hint(pod, None, clean) == QueueingHint.QUEUE
    assert hint(pod, None, tolerated) == QueueingHint.QUEUE
    assert hint(pod, None, tainted) == QueueingHint.QUEUE_SKIP
    assert hint(pod, tainted, tolerated) == QueueingHint.QUEUE
    assert hint(pod, tainted, clean) == QueueingHint.QUEUE
    assert hint(pod, clean, tolerated) == QueueingHint.QUEUE_SKIP
    assert hint(pod, clean, tainted) == QueueingHint.QUEUE_SKIP
    # Only NoSchedule/NoExecute taints decide; a PreferNoSchedule taint never blocks.
    soft = make_node("n", taints=[{"key": "s", "value": "", "effect": "PreferNoSchedule"}])
    assert hint(pod, tainted, soft) == QueueingHint.QUEUE


def test_toleration_hint_always_queues() -> None:
    (_, pod_reg) = build_plugin(taint_toleration.SPEC).events_to_register()
    pod = make_pod()
    assert pod_reg.hint_fn(pod, pod, make_pod(tolerations=[{"operator": "Exists"}])) == (
        QueueingHint.QUEUE
    )
