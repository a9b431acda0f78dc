"""NodePorts: PreFilter, conflicts, events and hints."""

from __future__ import annotations

import pytest

from scheduler.api.parse import parse_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    QueueingHint,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins import (
    node_ports,
)
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot, pod_json


def _info(node_name_: str = "n1", pods: tuple[object, ...] = (), **kwargs: object) -> NodeInfo:
    info = NodeInfo(make_node(node_name_, **kwargs))
    for pod in pods:
        info.add_pod(pod)  # type: ignore[arg-type]
    return info


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
