"""NodeUnschedulable: cordoned nodes, tolerations, batch form, events and hints."""

from __future__ import annotations

import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins import (
    node_unschedulable,
)
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot


def _info(node_name_: str = "n1", pods: tuple[object, ...] = (), **kwargs: object) -> NodeInfo:
    info = NodeInfo(make_node(node_name_, **kwargs))
    for pod in pods:
        info.add_pod(pod)  # type: ignore[arg-type]
    return info


UNSCHEDULABLE_TOLERATIONS = [
    [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
    [{"operator": "Exists"}],
    [{"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": ""}],
]


def test_cordoned_node_rejects_pods_without_toleration() -> None:
    plugin = build_plugin(node_unschedulable.SPEC)
    status = plugin.filter(CycleState(), make_pod(), _info(unschedulable=True))
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) were unschedulable")
    assert plugin.filter(CycleState(), make_pod(), _info()) is None


@pytest.mark.parametrize("tolerations", UNSCHEDULABLE_TOLERATIONS)
def test_cordoned_node_admits_pods_tolerating_the_unschedulable_taint(
    tolerations: list[dict[str, str]],
) -> None:
    plugin = build_plugin(node_unschedulable.SPEC)
    pod = make_pod(tolerations=tolerations)
    assert plugin.filter(CycleState(), pod, _info(unschedulable=True)) is None
    snap = make_snapshot([make_node("a", unschedulable=True), make_node("b")])
    assert plugin.filter_batch(CycleState(), pod, snap.table).tolist() == [True, True]


def test_unschedulable_toleration_with_other_value_or_effect_does_not_help() -> None:
    plugin = build_plugin(node_unschedulable.SPEC)
    for tol in (
        {"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": "x"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"},
    ):
        pod = make_pod(tolerations=[tol])
        assert plugin.filter(CycleState(), pod, _info(unschedulable=True)) is not None


def test_unschedulable_batch_matches_filter() -> None:
    plugin = build_plugin(node_unschedulable.SPEC)
    snap = make_snapshot([make_node(f"n{i}", unschedulable=i % 3 == 0) for i in range(9)])
    pod = make_pod()
    expected = [plugin.filter(CycleState(), pod, i) is None for i in snap.node_info_list]
    assert plugin.filter_batch(CycleState(), pod, snap.table).tolist() == expected
    assert expected.count(False) == 3


def test_unschedulable_events_and_hints() -> None:
    plugin = build_plugin(node_unschedulable.SPEC)
    node_reg, pod_reg = plugin.events_to_register()
    assert node_reg.event == ClusterEvent(
        EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT
    )
    assert pod_reg.event == ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION)
    pod = make_pod()
    cordoned, ready = make_node("n", unschedulable=True), make_node("n")
    assert node_reg.hint_fn(pod, None, ready) == QueueingHint.QUEUE
    assert node_reg.hint_fn(pod, None, cordoned) == QueueingHint.QUEUE_SKIP
    assert node_reg.hint_fn(pod, cordoned, ready) == QueueingHint.QUEUE
    assert node_reg.hint_fn(pod, ready, ready) == QueueingHint.QUEUE_SKIP
    assert node_reg.hint_fn(pod, ready, cordoned) == QueueingHint.QUEUE_SKIP
    tolerating = make_pod(tolerations=UNSCHEDULABLE_TOLERATIONS[0])
    assert pod_reg.hint_fn(pod, pod, tolerating) == QueueingHint.QUEUE
    other = make_pod(tolerations=[{"key": "x", "operator": "Exists"}])
    assert pod_reg.hint_fn(pod, pod, other) == QueueingHint.QUEUE_SKIP
