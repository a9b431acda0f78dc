"""Vectorised filter_batch/score_batch agree with the per-node methods on random clusters."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import Node, Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.testing import make_node, make_pod
from tests.plugins.noderesources.helpers import build_balanced, build_fit, cluster
from tests.plugins.test_batch_equivalence import assert_statuses_match_filter

GPU = "example.com/gpu"
FPGA = "vendor.io/fpga"
HUGE = "hugepages-2Mi"

FIT_ARGS: list[dict[str, Any] | None] = [
    None,
    {"scoringStrategy": {"type": "MostAllocated"}},
    {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [
                {"name": "cpu", "weight": 3},
                {"name": "memory", "weight": 1},
                {"name": GPU, "weight": 5},
                {"name": "ephemeral-storage", "weight": 2},
            ],
        }
    },
    {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu"}, {"name": FPGA, "weight": 7}, {"name": HUGE}],
        }
    },
    {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 2}, {"name": "memory"}, {"name": GPU}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        }
    },
    {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [
                    {"utilization": 10, "score": 10},
                    {"utilization": 35, "score": 3},
                    {"utilization": 70, "score": 7},
                    {"utilization": 90, "score": 1},
                ]
            },
        }
    },
    {"ignoredResources": [GPU], "ignoredResourceGroups": ["vendor.io"]},
]

BALANCED_ARGS: list[dict[str, Any] | None] = [
    None,
    {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]},
    {
        "resources": [
            {"name": "cpu"},
            {"name": "memory"},
            {"name": "ephemeral-storage"},
            {"name": GPU},
            {"name": FPGA},
        ]
    },
    {"resources": [{"name": "memory"}]},
]


def _quantity(rng: random.Random, choices: list[str | None]) -> str | None:
    return rng.choice(choices)


def random_node(rng: random.Random, i: int) -> Node:
    extended: dict[str, str] = {}
    if rng.random() < 0.4:
        extended[GPU] = str(rng.choice([0, 1, 2, 4, 8]))
    if rng.random() < 0.3:
        extended[FPGA] = str(rng.choice([1, 3]))
    if rng.random() < 0.3:
        extended[HUGE] = rng.choice(["0", "64Mi", "1Gi"])
    return make_node(
        f"n{i}",
        cpu=rng.choice(["0", "500m", "1", "2", "3500m", "8", "96"]),
        memory=rng.choice(["0", "1Gi", "3Gi", "16Gi", "100Gi", "1234567891"]),
        pods=rng.choice([0, 1, 2, 3, 110]),
        ephemeral_storage=rng.choice([None, "0", "10Gi", "100Gi"]),
        extended=extended,
    )


def random_pod(rng: random.Random, name: str, node_name: str = "") -> Pod:
    requests: dict[str, str] = {}
    if rng.random() < 0.35:
        requests[GPU] = str(rng.choice([0, 1, 2, 3]))
    if rng.random() < 0.2:
        requests[FPGA] = str(rng.choice([1, 2]))
    if rng.random() < 0.2:
        requests[HUGE] = rng.choice(["2Mi", "128Mi"])
    if rng.random() < 0.3:
        requests["ephemeral-storage"] = rng.choice(["1Gi", "20Gi"])
    init = None
    if rng.random() < 0.2:
        init = [
            {
                "name": "init",
                "resources": {"requests": {"cpu": rng.choice(["100m", "4"]), "memory": "64Mi"}},
            }
        ]
        if rng.random() < 0.5:
            init[0]["restartPolicy"] = "Always"
    return make_pod(
        name,
        cpu=_quantity(rng, [None, "0", "1m", "50m", "250m", "1", "1500m", "3"]),
        memory=_quantity(rng, [None, "0", "1Mi", "200Mi", "512Mi", "2Gi", "7Gi"]),
        requests=requests,
        node_name=node_name,
        init_containers=init,
    )


def random_cluster(rng: random.Random) -> tuple[Any, list[Node]]:
    nodes = [random_node(rng, i) for i in range(rng.randrange(1, 30))]
    pods = [
        random_pod(rng, f"{node.name}-p{j}", node.name)
        for node in nodes
        for j in range(rng.randrange(4))
    ]
    return cluster(nodes, pods), nodes


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("args", FIT_ARGS)
def test_fit_batch_forms_match_per_node(seed: int, args: dict[str, Any] | None) -> None:
    rng = random.Random(seed)
    snap, _ = random_cluster(rng)
    plugin = build_fit(args)
    infos = snap.list()
    for k in range(4):
        pod = random_pod(rng, f"incoming-{k}")
        state = CycleState()
        plugin.pre_filter(state, pod, infos)
        mask = plugin.filter_batch(state, pod, snap.table)
        assert mask is not None
        expected = [plugin.filter(state, pod, info) is None for info in infos]
        assert mask.tolist() == expected
        assert_statuses_match_filter(plugin, state, pod, snap, ~mask)

        assert plugin.pre_score(state, pod, infos) is None
        order = list(range(len(infos)))
        rng.shuffle(order)
        rows = np.array(order, dtype=np.intp)
        batch = plugin.score_batch(state, pod, snap.table, rows)
        assert batch is not None
        per_node = [plugin.score(state, pod, infos[r]) for r in rows]
        assert batch.tolist() == per_node
        assert all(0 <= s <= 100 for s in batch.tolist())


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("args", BALANCED_ARGS)
def test_balanced_batch_matches_per_node(seed: int, args: dict[str, Any] | None) -> None:
    rng = random.Random(1000 + seed)
    snap, _ = random_cluster(rng)
    plugin = build_balanced(args)
    infos = snap.list()
    for k in range(4):
        pod = random_pod(rng, f"incoming-{k}")
        state = CycleState()
        status = plugin.pre_score(state, pod, infos)
        rows = np.arange(len(infos), dtype=np.intp)[::-1].copy()
        batch = plugin.score_batch(state, pod, snap.table, rows)
        assert batch is not None
        per_node = [plugin.score(state, pod, infos[r]) for r in rows]
        assert batch.tolist() == per_node
        if status is not None:
            assert status.code == Code.SKIP
            assert per_node == [0] * len(rows)
        assert all(0 <= s <= 100 for s in batch.tolist())


def test_filter_batch_sees_updated_rows() -> None:
    """After a pod lands on a node, the table row and NodeInfo agree again."""
    node = make_node("n", cpu="2", memory="4Gi", pods=110)
    snap = cluster([node], [make_pod("a", cpu="1500m", node_name="n")])
    plugin = build_fit()
    pod = make_pod("b", cpu="1")
    state = CycleState()
    plugin.pre_filter(state, pod, snap.list())
    mask = plugin.filter_batch(state, pod, snap.table)
    assert mask is not None
    assert mask.tolist() == [False]
    assert plugin.filter(state, pod, snap.list()[0]) is not None
