"""Plugin builders and small clusters for the resource plugins' tests."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Node, Pod
from scheduler.backend.cache import Snapshot
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import NodeInfo
from scheduler.plugins import noderesources
from scheduler.plugins.noderesources import balanced_allocation as balanced
from scheduler.plugins.noderesources import fit
from scheduler.testing import FakeHandle, build_plugin, make_snapshot


def build_fit(raw: dict[str, Any] | None = None, **gates: bool) -> fit.NodeResourcesFit:
    plugin = build_plugin(noderesources.FIT_SPEC, raw, FakeHandle(features=FeatureGates(gates)))
    assert isinstance(plugin, fit.NodeResourcesFit)
    return plugin


def build_balanced(raw: dict[str, Any] | None = None) -> balanced.BalancedAllocation:
    plugin = build_plugin(noderesources.BALANCED_ALLOCATION_SPEC, raw)
    assert isinstance(plugin, balanced.BalancedAllocation)
    return plugin


def node_info(node: Node, *pods: Pod) -> NodeInfo:
    info = NodeInfo(node)
    for pod in pods:
        info.add_pod(pod)
    return info


def cluster(nodes: list[Node], pods: list[Pod] | None = None) -> Snapshot:
    return make_snapshot(nodes, pods or [])


def prefiltered(plugin: fit.NodeResourcesFit, pod: Pod) -> CycleState:
    state = CycleState()
    plugin.pre_filter(state, pod, [])
    return state
