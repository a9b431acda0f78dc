"""NodeResourcesFit and NodeResourcesBalancedAllocation scoring an extended resource backed by
DRA, as upstream's resource_allocation.go: on a node that does not advertise the resource, its
allocatable is the number of devices there matching the resource's DeviceClass and its use the
number of those allocated; a node advertising it (a device plugin) scores as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import structlog

from scheduler.api.dra import parse_device_class
from scheduler.api.dra_slices import parse_resource_slice
from scheduler.api.parse import parse_pod
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.dra import StaticDRA
from scheduler.plugins.dynamic_resources import SPEC as DRA_SPEC
from scheduler.plugins.noderesources import BALANCED_ALLOCATION_SPEC, FIT_SPEC
from scheduler.plugins.registry import DRA_SWITCH
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot
from tests.plugins.dynamic_resources.builders import device, device_class, slice_
from tests.plugins.dynamic_resources.plugin_kit import DRIVER, NS, allocation, claim, gpu_slice

GPU = "example.com/gpu"
FOUR = ("gpu-0", "gpu-1", "gpu-2", "gpu-3")


def _handle(selectors: bool = True) -> FakeHandle:
    raw = device_class("gpu", DRIVER)
    raw["spec"]["extendedResourceName"] = GPU
    if not selectors:
        del raw["spec"]["selectors"]
    snap = make_snapshot(
        [make_node("one-used"), make_node("three-used"), make_node("plugin", extended={GPU: "4"})]
    )
    claims = (
        claim("a", allocation=allocation("one-used", "gpu-0")),
        claim("b", allocation=allocation("three-used", "gpu-0", "gpu-1", "gpu-2")),
    )
    other_driver = parse_resource_slice(
        slice_("other", "one-used", "other", "other.example.com", device("x-0"), device("x-1"))
    )
    slices = (gpu_slice("one-used", *FOUR), gpu_slice("three-used", *FOUR), other_driver)
    return FakeHandle(
        snap=snap,
        static_dra=StaticDRA(claims, slices, (parse_device_class(raw),)),
        features=FeatureGates({DRA_SWITCH: True}),
    )


def _pod(count: str) -> Any:
    container = {"name": "c", "resources": {"requests": {GPU: count}, "limits": {GPU: count}}}
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": NS, "uid": "p"},
            "spec": {"containers": [container]},
        }
    )


def _scores(plugin: Any, handle: FakeHandle, pod: Any) -> dict[str, int]:
    state = CycleState()
    nodes = handle.snap.list()
    assert plugin.pre_score(state, pod, nodes) is None
    table = handle.snap.table
    rows = table.rows(["one-used", "three-used", "plugin"])
    # The batch form leaves such a pod to the per-node score.
    assert plugin.score_batch(state, pod, table, np.array(rows, np.intp)) is None
    out = {}
    for info in nodes:
        assert info.node is not None
        out[info.node.name] = plugin.score(state, pod, info)
    return out


ARGS = {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": GPU, "weight": 1}]}}


def test_least_allocated_counts_the_class_devices_on_the_node() -> None:
    handle = _handle()
    build_plugin(DRA_SPEC, None, handle=handle)  # lends its CEL evaluation
    fit = build_plugin(FIT_SPEC, ARGS, handle=handle)
    # one-used: 4 devices, 1 allocated + 2 asked: (4-3)*100/4; three-used: 3+2 > 4;
    # plugin: advertised 4, none requested: (4-2)*100/4.
    assert _scores(fit, handle, _pod("2")) == {"one-used": 25, "three-used": 0, "plugin": 50}


def test_most_allocated_and_balanced_allocation_count_them_too() -> None:
    handle = _handle()
    build_plugin(DRA_SPEC, None, handle=handle)
    most = {"scoringStrategy": {**ARGS["scoringStrategy"], "type": "MostAllocated"}}
    fit = build_plugin(FIT_SPEC, most, handle=handle)
    assert _scores(fit, handle, _pod("1")) == {"one-used": 50, "three-used": 100, "plugin": 25}
    resources = [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}]
    balanced = build_plugin(BALANCED_ALLOCATION_SPEC, {"resources": resources}, handle=handle)
    # cpu at 0 everywhere; the GPU fraction with and without the pod: one-used 3/4 and 1/4
    # (50 + (50 + 62 - 87) / 2), three-used 5/4 capped at 1 and 3/4 (50 + (50 + 50 - 62) / 2).
    scores = _scores(balanced, handle, _pod("2"))
    assert scores == {"one-used": 62, "three-used": 69, "plugin": 62}


def test_a_class_without_selectors_needs_no_cel_and_a_selector_needs_dynamic_resources() -> None:
    handle = _handle(selectors=False)
    fit = build_plugin(FIT_SPEC, ARGS, handle=handle)
    # Every device of the node counts (6, the other driver's too): (6 - 1 - 2) * 100 / 6.
    assert _scores(fit, handle, _pod("2"))["one-used"] == 50
    handle = _handle()
    fit = build_plugin(FIT_SPEC, ARGS, handle=handle)
    with structlog.testing.capture_logs() as logs:
        scores = _scores(fit, handle, _pod("2"))
    # No CEL evaluation lent: the resource is left out of those nodes' scores, with an error.
    assert scores == {"one-used": 0, "three-used": 0, "plugin": 50}
    assert any(e["log_level"] == "error" for e in logs)
