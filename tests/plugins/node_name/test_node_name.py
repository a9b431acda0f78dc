"""NodeName: PreFilter narrowing, Filter and its batch form, events."""

from __future__ import annotations

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    EVENT_NODE_ADD,
)
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, PreFilterResult
from scheduler.plugins import (
    node_name,
)
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot


def _info(node_name_: str = "n1", pods: tuple[object, ...] = (), **kwargs: object) -> NodeInfo:
    info = NodeInfo(make_node(node_name_, **kwargs))
    for pod in pods:
        info.add_pod(pod)  # type: ignore[arg-type]
    return info


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
