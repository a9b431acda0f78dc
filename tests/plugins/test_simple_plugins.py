"""PrioritySort, SchedulingGates, NodeName, NodeUnschedulable, NodePorts and DefaultBinder."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.api.parse import parse_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PreFilterResult, QueuedPodInfo
from scheduler.plugins import (
    default_binder,
    node_name,
    node_ports,
    node_unschedulable,
    priority_sort,
    scheduling_gates,
)
from tests.builders import make_node, make_pod, pod_json
from tests.plugins.fake_handle import FakeHandle, build_plugin, make_snapshot


def _info(node_name_: str = "n1", pods: tuple[object, ...] = (), **kwargs: object) -> NodeInfo:
    info = NodeInfo(make_node(node_name_, **kwargs))
    for pod in pods:
        info.add_pod(pod)  # type: ignore[arg-type]
    return info


# --- PrioritySort --------------------------------------------------------------------------


def test_priority_sort_orders_by_priority_then_enqueue_time() -> None:
    plugin = build_plugin(priority_sort.SPEC)
    high_late = QueuedPodInfo(make_pod("a", priority=10), timestamp=5.0)
    high_early = QueuedPodInfo(make_pod("b", priority=10), timestamp=1.0)
    low_early = QueuedPodInfo(make_pod("c", priority=1), timestamp=0.0)
    assert plugin.less(high_late, low_early)
    assert not plugin.less(low_early, high_late)
    assert plugin.less(high_early, high_late)
    assert not plugin.less(high_late, high_late)


def test_priority_sort_key_agrees_with_less() -> None:
    rng = random.Random(7)
    plugin = build_plugin(priority_sort.SPEC)
    infos = [
        QueuedPodInfo(
            make_pod(f"p{i}", priority=rng.choice([None, -5, 0, 3, 1000])),
            timestamp=float(rng.randrange(4)),
        )
        for i in range(40)
    ]
    for a in infos:
        for b in infos:
            assert plugin.less(a, b) == (plugin.sort_key(a) < plugin.sort_key(b))


# --- SchedulingGates -------------------------------------------------------------------------


def test_scheduling_gates_message_lists_gates_in_order() -> None:
    plugin = build_plugin(scheduling_gates.SPEC)
    status = plugin.pre_enqueue(make_pod(scheduling_gates=["example.com/b", "example.com/a"]))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for scheduling gates: [example.com/b example.com/a]"
    assert plugin.pre_enqueue(make_pod()) is None


def test_scheduling_gates_registers_gate_removal_and_always_queues() -> None:
    plugin = build_plugin(scheduling_gates.SPEC)
    (registration,) = plugin.events_to_register()
    assert registration.event == ClusterEvent(
        EventResource.TARGET_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    )
    pod = make_pod()
    assert registration.hint_fn(pod, pod, pod) == QueueingHint.QUEUE


# --- NodeName --------------------------------------------------------------------------------


def test_node_name_prefilter_narrows_to_the_named_node() -> None:
    plugin = build_plugin(node_name.SPEC)
    result, status = plugin.pre_filter(CycleState(), make_pod(node_name="n2"), [])
    assert status is None and result == PreFilterResult(frozenset({"n2"}))
    assert plugin.pre_filter(CycleState(), make_pod(), []) == (None, None)


def test_node_name_filter_and_batch() -> None:
    plugin = build_plugin(node_name.SPEC)
    pod = make_pod(node_name="n2")
    status = plugin.filter(CycleState(), pod, _info("n1"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "node(s) didn't match the requested node name"
    assert plugin.filter(CycleState(), pod, _info("n2")) is None
    snap = make_snapshot([make_node(n) for n in ("n1", "n2", "n3")])
    mask = plugin.filter_batch(CycleState(), pod, snap.table)
    expected = [plugin.filter(CycleState(), pod, i) is None for i in snap.node_info_list]
    assert mask.tolist() == expected and sum(expected) == 1
    assert plugin.filter_batch(CycleState(), make_pod(), snap.table).all()
    missing = plugin.filter_batch(CycleState(), make_pod(node_name="gone"), snap.table)
    assert not missing.any()


def test_node_name_registers_node_add_without_hint() -> None:
    (registration,) = build_plugin(node_name.SPEC).events_to_register()
    assert registration.event == EVENT_NODE_ADD and registration.hint_fn is None


# --- NodeUnschedulable -----------------------------------------------------------------------

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


# --- NodePorts -------------------------------------------------------------------------------


def _port_pod(name: str, ports: list[dict[str, object]], node: str = "") -> object:
    raw = pod_json(name, node_name=node)
    raw["spec"]["containers"][0]["ports"] = ports
    return parse_pod(raw)


def test_node_ports_prefilter_skips_pods_without_host_ports() -> None:
    plugin = build_plugin(node_ports.SPEC)
    assert plugin.pre_filter(CycleState(), make_pod(), [])[1] == Status(Code.SKIP)
    assert plugin.pre_filter(CycleState(), make_pod(host_ports=[80]), []) == (None, None)


@pytest.mark.parametrize(
    ("used", "wanted", "fits"),
    [
        ({"hostPort": 80}, {"hostPort": 80}, False),
        ({"hostPort": 80}, {"hostPort": 81}, True),
        ({"hostPort": 80, "protocol": "UDP"}, {"hostPort": 80}, True),
        ({"hostPort": 80, "hostIP": "10.0.0.1"}, {"hostPort": 80, "hostIP": "10.0.0.2"}, True),
        ({"hostPort": 80, "hostIP": "10.0.0.1"}, {"hostPort": 80}, False),
        ({"hostPort": 80}, {"hostPort": 80, "hostIP": "10.0.0.2"}, False),
        ({"hostPort": 80, "hostIP": "10.0.0.1"}, {"hostPort": 80, "hostIP": "10.0.0.1"}, False),
    ],
)
def test_node_ports_conflicts(
    used: dict[str, object], wanted: dict[str, object], fits: bool
) -> None:
    plugin = build_plugin(node_ports.SPEC)
    existing = _port_pod("old", [{"containerPort": 1, **used}], node="n1")
    pod = _port_pod("new", [{"containerPort": 1, **wanted}])
    info = _info("n1", pods=(existing,))
    status = plugin.filter(CycleState(), pod, info)
    if fits:
        assert status is None
    else:
        assert status == Status(
            Code.UNSCHEDULABLE, "node(s) didn't have free ports for the requested pod ports"
        )
    snap = make_snapshot([make_node("n1"), make_node("n2")], [existing])  # type: ignore[list-item]
    assert plugin.filter_batch(CycleState(), pod, snap.table).tolist() == [fits, True]


def test_node_ports_events_and_delete_hint() -> None:
    plugin = build_plugin(node_ports.SPEC)
    delete_reg, add_reg = plugin.events_to_register()
    assert delete_reg.event == EVENT_ASSIGNED_POD_DELETE
    assert add_reg.event == EVENT_NODE_ADD and add_reg.hint_fn is None
    pod = make_pod(host_ports=[8080])
    hint = delete_reg.hint_fn
    assert hint(pod, make_pod("x", node_name="n", host_ports=[8080]), None) == QueueingHint.QUEUE
    assert hint(pod, make_pod("x", node_name="n", host_ports=[9090]), None) == (
        QueueingHint.QUEUE_SKIP
    )
    assert hint(pod, make_pod("x", node_name="n"), None) == QueueingHint.QUEUE_SKIP
    unscheduled = make_pod("x", host_ports=[8080])
    assert hint(pod, unscheduled, None) == QueueingHint.QUEUE_SKIP
    nominated = make_pod("x", host_ports=[8080], nominated_node_name="n")
    assert hint(pod, nominated, None) == QueueingHint.QUEUE


# --- DefaultBinder ---------------------------------------------------------------------------


def test_default_binder_binds_through_the_api() -> None:
    handle = FakeHandle()
    plugin = build_plugin(default_binder.SPEC, handle=handle)
    pod = make_pod("web", namespace="prod")
    assert plugin.bind(CycleState(), pod, "n1") is None
    assert handle.fake_api.binds == [(pod.key, "n1")]


def test_default_binder_returns_error_status_when_the_api_fails() -> None:
    handle = FakeHandle()
    handle.fake_api.fail_with = RuntimeError('pods "web" not found')
    plugin = build_plugin(default_binder.SPEC, handle=handle)
    status = plugin.bind(CycleState(), make_pod("web"), "n1")
    assert status.code == Code.ERROR
    assert 'pods "web" not found' in status.message()
    assert isinstance(status.error, RuntimeError)
    assert handle.fake_api.binds == []


def test_batch_columns_have_one_entry_per_row() -> None:
    snap = make_snapshot([make_node(f"n{i}") for i in range(5)])
    pod = make_pod(host_ports=[80])
    for spec in (node_name.SPEC, node_unschedulable.SPEC, node_ports.SPEC):
        column = build_plugin(spec).filter_batch(CycleState(), pod, snap.table)
        assert column.dtype == np.bool_ and column.shape == (5,)
