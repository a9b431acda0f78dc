"""Every plugin's column-at-a-time form agrees with its per-node form, on random clusters."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import Pod
from scheduler.backend.cache.snapshot import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.registry import PluginSpec
from scheduler.plugins import (
    node_affinity,
    node_name,
    node_ports,
    node_unschedulable,
    noderesources,
    taint_toleration,
)
from scheduler.testing import build_plugin
from tests.plugins.world import random_pod, random_world

FILTERS: list[tuple[str, PluginSpec]] = [
    (node_name.NAME, node_name.SPEC),
    (node_unschedulable.NAME, node_unschedulable.SPEC),
    (taint_toleration.NAME, taint_toleration.SPEC),
    (node_affinity.NAME, node_affinity.SPEC),
    (node_ports.NAME, node_ports.SPEC),
    (noderesources.FIT_NAME, noderesources.FIT_SPEC),
]
SCORE_CONFIGS: list[tuple[PluginSpec, dict[str, object] | None]] = [
    (taint_toleration.SPEC, None),
    (node_affinity.SPEC, None),
    (noderesources.FIT_SPEC, None),
    (noderesources.FIT_SPEC, {"scoringStrategy": {"type": "MostAllocated"}}),
    (
        noderesources.FIT_SPEC,
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": 3},
                    {"name": "memory", "weight": 1},
                    {"name": "example.com/gpu", "weight": 5},
                ],
            }
        },
    ),
    (noderesources.BALANCED_ALLOCATION_SPEC, None),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("spec", [spec for _, spec in FILTERS], ids=[name for name, _ in FILTERS])
def test_filter_batch_equals_per_node_filter(seed: int, spec: PluginSpec) -> None:
    rng = random.Random(seed)
    snap = random_world(rng)
    plugin = build_plugin(spec)
    for i in range(15):
        pod = random_pod(rng, i)
        state = CycleState()
        if hasattr(plugin, "pre_filter"):
            plugin.pre_filter(state, pod, snap.node_info_list)
        batch = plugin.filter_batch(state, pod, snap.table)
        per_node = [plugin.filter(state, pod, info) is None for info in snap.node_info_list]
        assert batch.tolist() == per_node, pod.name
        if hasattr(plugin, "filter_batch_statuses"):
            assert_statuses_match_filter(plugin, state, pod, snap, ~batch)


def assert_statuses_match_filter(
    plugin: Any, state: CycleState, pod: Pod, snap: Snapshot, rejected: Any
) -> None:
    """filter_batch_statuses gives, for the rows the column rejects, what filter gives."""
    rows = np.flatnonzero(rejected)[::-1].copy()  # any order, not only ascending
    statuses = plugin.filter_batch_statuses(state, pod, snap.table, rows).to_list()
    expected = [plugin.filter(state, pod, snap.node_info_list[int(r)]) for r in rows]
    assert [(s.code, s.reasons) for s in statuses] == [(s.code, s.reasons) for s in expected], (
        pod.name
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("spec", "args"), SCORE_CONFIGS)
def test_score_batch_equals_per_node_score(
    seed: int, spec: PluginSpec, args: dict[str, object] | None
) -> None:
    rng = random.Random(seed)
    snap = random_world(rng)
    plugin = build_plugin(spec, args)
    for i in range(15):
        pod = random_pod(rng, i)
        state = CycleState()
        if plugin.pre_score(state, pod, snap.node_info_list) is not None:
            continue  # Skip: the plugin does not score this pod
        rows = np.array(rng.sample(range(snap.table.n), 25), np.intp)
        batch = plugin.score_batch(state, pod, snap.table, rows)
        if batch is None:
            continue
        per_node = [plugin.score(state, pod, snap.node_info_list[int(r)]) for r in rows]
        assert batch.tolist() == per_node, pod.name
