"""Small builders for the PodTopologySpread tests, in the style of upstream's tables."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.api.objects import Node, Pod
from scheduler.backend.cache import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.plugins import pod_topology_spread
from scheduler.testing import FakeHandle, NodeWrapper, PodWrapper, build_plugin, make_snapshot

HOSTNAME = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
FOO = {"matchLabels": {"foo": ""}}
BAR = {"matchLabels": {"bar": ""}}


def node(name: str, *taints: str, **labels: str) -> Node:
    """A node with exactly these labels (`hostname=` sets kubernetes.io/hostname) and
    NoSchedule taints."""
    wrapper = NodeWrapper(name).capacity(cpu="8", memory="16Gi", pods=110)
    for key, value in labels.items():
        wrapper.label(HOSTNAME if key == "hostname" else key, value)
    for taint in taints:
        wrapper.taint(taint, "", "NoSchedule")
    built = wrapper.obj()
    if "hostname" not in labels:
        built.labels.pop(HOSTNAME, None)  # the builder labels every node with its hostname
    return built


def pods_on(node_name: str, count: int, *labels: str, namespace: str = "default") -> list[Pod]:
    """`count` running pods on a node, each with the given (empty-valued) labels."""
    result = []
    for i in range(count):
        wrapper = PodWrapper(f"{node_name}-{'-'.join(labels) or 'x'}-{i}", namespace).node(
            node_name
        )
        for label in labels:
            wrapper.label(label, "")
        result.append(wrapper.obj())
    return result


def incoming(*labels: str) -> PodWrapper:
    wrapper = PodWrapper("p")
    for label in labels:
        wrapper.label(label, "")
    return wrapper


def plugin_for(
    snap: Snapshot, args: dict[str, Any] | None = None, handle: FakeHandle | None = None
) -> Any:
    handle = handle if handle is not None else FakeHandle()
    handle.snap = snap
    return build_plugin(pod_topology_spread.SPEC, args, handle)


def filter_codes(
    pod: Pod, nodes: list[Node], pods: list[Pod], args: dict[str, Any] | None = None
) -> dict[str, Code]:
    """PreFilter then Filter on every node (checked against filter_batch): node -> Code."""
    snap = make_snapshot(nodes, pods)
    plugin = plugin_for(snap, args)
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snap.list())
    assert status is None, status
    codes = {}
    column = plugin.filter_batch(state, pod, snap.table)
    for row, info in enumerate(snap.list()):
        result = plugin.filter(state, pod, info)
        codes[info.name] = Code.SUCCESS if result is None else result.code
        assert bool(column[row]) == (result is None), info.name
    return codes


def scores(
    pod: Pod,
    nodes: list[Node],
    pods: list[Pod],
    failed: tuple[str, ...] = (),
    args: dict[str, Any] | None = None,
    handle: FakeHandle | None = None,
) -> dict[str, int]:
    """PreScore on the nodes not in `failed`, Score (checked against score_batch) and
    NormalizeScore: node -> normalized score."""
    snap = make_snapshot(nodes, pods)
    plugin = plugin_for(snap, args, handle)
    filtered = [info for info in snap.list() if info.name not in failed]
    state = CycleState()
    status = plugin.pre_score(state, pod, filtered)
    assert status is None, status
    raw = [plugin.score(state, pod, info) for info in filtered]
    rows = np.array([snap.table.index[info.name] for info in filtered], np.intp)
    assert [int(s) for s in plugin.score_batch(state, pod, snap.table, rows)] == raw
    column = np.array(raw, np.int64)
    assert plugin.normalize_score(state, pod, column) is None
    return {info.name: int(s) for info, s in zip(filtered, column, strict=True)}
