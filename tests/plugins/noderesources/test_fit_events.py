"""NodeResourcesFit's registered events and queueing hints, as kube-scheduler's fit.go."""

from __future__ import annotations

from scheduler.api.objects import replace_pod
from scheduler.api.resources import Resource
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.testing import make_node, make_pod
from tests.plugins.noderesources.helpers import build_fit

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def _events(**gates: bool) -> list[ClusterEvent]:
    return [e.event for e in build_fit(None, **gates).events_to_register()]


#: DRAExtendedResource (GA in v1.37): a DeviceClass may come to serve an extended resource.
DEVICE_CLASS = ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)


def test_events_with_hints_and_in_place_resize() -> None:
    assert _events() == [
        ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
        ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        DEVICE_CLASS,
        ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
        ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_SCALE_DOWN),
    ]


def test_events_without_resize_or_hints() -> None:
    events = _events(InPlacePodVerticalScaling=False, SchedulerQueueingHints=False)
    node_actions = (
        ActionType.ADD
        | ActionType.UPDATE_NODE_ALLOCATABLE
        | ActionType.UPDATE_NODE_TAINT
        | ActionType.UPDATE_NODE_LABEL
    )
    assert events == [
        ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
        ClusterEvent(EventResource.NODE, node_actions),
        DEVICE_CLASS,
    ]


def test_no_device_class_event_with_dynamic_resources_switched_off() -> None:
    assert DEVICE_CLASS not in _events(PyschedDynamicResources=False)


def test_node_change_hint_needs_a_fitting_node_with_more_room() -> None:
    plugin = build_fit()
    pod = make_pod("p", cpu="3")
    small, big = make_node("n", cpu="2"), make_node("n", cpu="4")
    assert plugin.is_schedulable_after_node_change(pod, None, small) == SKIP
    assert plugin.is_schedulable_after_node_change(pod, None, big) == Q
    assert plugin.is_schedulable_after_node_change(pod, small, big) == Q
    assert plugin.is_schedulable_after_node_change(pod, big, big) == SKIP
    # More pod slots always helps, even for a pod that requests nothing else.
    few, many = make_node("n", pods=1), make_node("n", pods=5)
    assert plugin.is_schedulable_after_node_change(make_pod("e"), few, many) == Q
    assert plugin.is_schedulable_after_node_change(make_pod("e"), many, many) == SKIP


def test_node_change_hint_ignores_no_resources() -> None:
    # isFit in the hint passes no ignored resources: a node without the GPU is still skipped.
    plugin = build_fit({"ignoredResources": ["example.com/gpu"]})
    pod = make_pod("p", requests={"example.com/gpu": "1"})
    assert plugin.is_schedulable_after_node_change(pod, None, make_node("n")) == SKIP
    more = make_node("n", extended={"example.com/gpu": "2"})
    less = make_node("n", extended={"example.com/gpu": "1"})
    assert plugin.is_schedulable_after_node_change(pod, less, more) == Q
    assert plugin.is_schedulable_after_node_change(pod, more, less) == SKIP


def test_assigned_pod_delete_hint() -> None:
    plugin = build_fit()
    pod = make_pod("p", cpu="1")
    assert (
        plugin.is_schedulable_after_assigned_pod_delete(pod, make_pod("g", node_name="n"), None)
        == Q
    )
    nominated = make_pod("g", nominated_node_name="n")
    assert plugin.is_schedulable_after_assigned_pod_delete(pod, nominated, None) == Q
    assert plugin.is_schedulable_after_assigned_pod_delete(pod, make_pod("u"), None) == SKIP


def test_assigned_pod_scale_down_hint_needs_a_relevant_decrease() -> None:
    plugin = build_fit()
    target = make_pod("t", cpu="1")
    before = make_pod("b", cpu="2", memory="2Gi", node_name="n")
    less_cpu = replace_pod(before, requests=Resource(milli_cpu=1000, memory=2 << 30))
    less_mem = replace_pod(before, requests=Resource(milli_cpu=2000, memory=1 << 30))
    hint = plugin.is_schedulable_after_assigned_pod_scale_down
    assert hint(target, before, less_cpu) == Q
    assert hint(target, before, less_mem) == SKIP  # the target asks no memory
    unbound = replace_pod(less_cpu, node_name="")
    assert hint(target, before, unbound) == SKIP
