"""Scores worked out by hand from kube-scheduler's scorer code (derivations in comments)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo
from scheduler.plugins.helper.shape import BrokenLinear
from scheduler.plugins.noderesources.resource_allocation import (
    balanced_resource_score,
    balanced_resource_score_matrix,
)
from scheduler.testing import make_node, make_pod
from tests.plugins.noderesources.helpers import build_balanced, build_fit, cluster

GPU = "example.com/gpu"


def _busy_node() -> tuple[Any, Pod]:
    """4000m / 8Gi with a pod using 1000m / 2Gi; the incoming pod asks 1000m / 1Gi."""
    snap = cluster(
        [make_node("n", cpu="4", memory="8Gi")],
        [make_pod("a", cpu="1", memory="2Gi", node_name="n")],
    )
    return snap, make_pod("p", cpu="1", memory="1Gi")


def _fit_score(raw: dict[str, Any] | None, snap: Any, pod: Pod) -> int:
    plugin = build_fit(raw)
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.list()) is None
    info = snap.list()[0]
    score = plugin.score(state, pod, info)
    batch = plugin.score_batch(state, pod, snap.table, np.array([0], np.intp))
    assert batch is not None and batch.tolist() == [score]
    assert isinstance(score, int)
    return score


def _rtcr(shape: list[tuple[int, int]], **extra: Any) -> dict[str, Any]:
    points = [{"utilization": u, "score": s} for u, s in shape]
    strategy = {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": points}}
    return {"scoringStrategy": {**strategy, **extra}}


def test_least_allocated() -> None:
    # cpu: (4000-2000)*100/4000 = 50; memory: (8Gi-3Gi)*100/8Gi = 62 (62.5 truncated);
    # (50 + 62) / 2 = 56.
    snap, pod = _busy_node()
    assert _fit_score(None, snap, pod) == 56


def test_least_allocated_weights() -> None:
    # (50*3 + 62*1) / 4 = 212 / 4 = 53.
    snap, pod = _busy_node()
    raw = {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
        }
    }
    assert _fit_score(raw, snap, pod) == 53


def test_most_allocated() -> None:
    # cpu: 2000*100/4000 = 50; memory: 3Gi*100/8Gi = 37 (37.5); (50 + 37) / 2 = 43.
    snap, pod = _busy_node()
    assert _fit_score({"scoringStrategy": {"type": "MostAllocated"}}, snap, pod) == 43


def test_most_allocated_caps_requests_at_capacity_least_gives_zero() -> None:
    # cpu requested 5000 > 4000: most = 100, least = 0; memory 1Gi of 8Gi: most 12, least 87.
    snap = cluster([make_node("n", cpu="4", memory="8Gi")])
    pod = make_pod("p", cpu="5", memory="1Gi")
    assert _fit_score({"scoringStrategy": {"type": "MostAllocated"}}, snap, pod) == (100 + 12) // 2
    assert _fit_score(None, snap, pod) == (0 + 87) // 2


def test_pod_requesting_nothing_scores_with_non_zero_defaults() -> None:
    # Defaults 100m and 200Mi on an empty 1000m / 1000Mi node:
    # cpu (1000-100)*100/1000 = 90, memory (1000-200)*100/1000 = 80, mean 85.
    snap = cluster([make_node("n", cpu="1", memory="1000Mi")])
    assert _fit_score(None, snap, make_pod("p")) == 85
    # The node's existing request-less pod counts with the defaults too: 200m / 400Mi -> 80, 60.
    snap = cluster([make_node("n", cpu="1", memory="1000Mi")], [make_pod("a", node_name="n")])
    assert _fit_score(None, snap, make_pod("p")) == 70


def test_extended_resource_weight_counts_only_when_requested_and_offered() -> None:
    raw = {
        "scoringStrategy": {
            "resources": [{"name": "cpu"}, {"name": GPU, "weight": 3}],
            "type": "LeastAllocated",
        }
    }
    # Node offers 4 GPUs, pod asks 1: gpu (4-1)*100/4 = 75, cpu (4000-1000)*100/4000 = 75 ... and
    # with cpu 2: 50 -> (50 + 75*3) / 4 = 68.
    snap = cluster([make_node("n", cpu="4", extended={GPU: "4"})])
    assert _fit_score(raw, snap, make_pod("p", cpu="2", requests={GPU: "1"})) == 68
    # Not requested: the gpu is left out entirely, only cpu counts.
    assert _fit_score(raw, snap, make_pod("q", cpu="2")) == 50
    # Requested but the node has none: left out as well.
    bare = cluster([make_node("m", cpu="4")])
    assert _fit_score(raw, bare, make_pod("p", cpu="2", requests={GPU: "1"})) == 50


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    # Shape (0,0)-(100,10) scaled to (0,0)-(100,100): cpu utilization 50 -> 50; memory
    # 3Gi*100/8Gi = 37 -> 37; math.Round(87 / 2) = 44 (integer strategies would give 43).
    snap, pod = _busy_node()
    assert _fit_score(_rtcr([(0, 0), (100, 10)]), snap, pod) == 44


def test_requested_to_capacity_ratio_decreasing_shape() -> None:
    # (0,100)-(100,0): cpu 100 + (-100*50)/100 = 50; memory 100 + (-100*37)/100 = 63;
    # math.Round(113 / 2) = 57.
    snap, pod = _busy_node()
    assert _fit_score(_rtcr([(0, 10), (100, 0)]), snap, pod) == 57


def test_requested_to_capacity_ratio_zero_scores_drop_out_of_the_weights() -> None:
    # Shape (50,0)-(100,10): cpu utilization 50 -> 0 is left out (weight too); memory 37 <= 50
    # -> 0 too: nothing counts, score 0.
    snap, pod = _busy_node()
    assert _fit_score(_rtcr([(50, 0), (100, 10)]), snap, pod) == 0
    # A 3-cpu pod: cpu 4000/4000 = 100 -> 100, memory 0: only cpu counts -> 100.
    assert _fit_score(_rtcr([(50, 0), (100, 10)]), snap, make_pod("c", cpu="3")) == 100


def test_requested_to_capacity_ratio_over_capacity_uses_max_utilization() -> None:
    # cpu 5000 > 4000 -> f(100) = 20 on shape (0,10)-(100,2); memory 1Gi/8Gi = 12 ->
    # 100 + (-80*12)/100 = 100 - 9 = 91 (9.6 truncated); math.Round(111 / 2) = 56.
    snap = cluster([make_node("n", cpu="4", memory="8Gi")])
    pod = make_pod("p", cpu="5", memory="1Gi")
    assert _fit_score(_rtcr([(0, 10), (100, 2)]), snap, pod) == 56


def test_broken_linear_truncates_toward_zero_and_clamps() -> None:
    f = BrokenLinear([(10, 100), (30, 0), (60, 90)])
    # Before the first point: its score; after the last: the last score.
    assert f(0) == 100 and f(10) == 100 and f(80) == 90
    # 100 + (-100 * 15) / 20 = 100 - 75 = 25; at 13: 100 + trunc(-300/20 = -15) = 85;
    # at 11: 100 + trunc(-100/20 = -5) = 95; at 12: 100 + trunc(-10) = 90; at 14: 80.
    assert [f(p) for p in (11, 12, 13, 14, 25)] == [95, 90, 85, 80, 25]
    g = BrokenLinear([(0, 100), (30, 0)])
    # 10: 100 + trunc(-1000/30 = -33.3) = 67 (flooring would give 66)
    assert g(10) == 67
    points = np.arange(-5, 120, dtype=np.int64)
    for fn in (f, g, BrokenLinear([(50, 40)])):
        assert fn.apply(points).tolist() == [fn(int(p)) for p in points]


def test_balanced_allocation_two_resources() -> None:
    # With the pod: cpu 2000/4000 = 0.5, memory 3Gi/8Gi = 0.375: std |0.125/2| = 0.0625,
    # (1 - 0.0625) * 100 = 93.75 -> 93. Without: 0.25 and 0.25 -> 100.
    # 50 + (50 + 93 - 100) / 2 = 50 + 21 = 71.
    snap, pod = _busy_node()
    plugin = build_balanced()
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.list()) is None
    assert plugin.score(state, pod, snap.list()[0]) == 71


def test_balanced_allocation_three_resources_uses_the_standard_deviation() -> None:
    # Empty node 4000m / 8Gi / 4 GPUs, pod 1000m / 2Gi / 2 GPUs: fractions .25 .25 .5,
    # mean 1/3, variance (2*(1/12)^2 + (1/6)^2)/3 = 1/72, std 0.11785 -> 88.2 -> 88.
    # Without the pod all zero -> 100. 50 + (50 + 88 - 100) / 2 = 69.
    raw = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}
    snap = cluster([make_node("n", cpu="4", memory="8Gi", extended={GPU: "4"})])
    plugin = build_balanced(raw)
    pod = make_pod("p", cpu="1", memory="2Gi", requests={GPU: "2"})
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.list()) is None
    assert plugin.score(state, pod, snap.list()[0]) == 69
    # Without a GPU request the GPU is left out: .25 and .25 -> 100; 50 + 50/2 = 75.
    no_gpu = make_pod("q", cpu="1", memory="2Gi")
    assert plugin.score(CycleState(), no_gpu, snap.list()[0]) == 75


def test_balanced_allocation_skips_best_effort_pods_and_uses_real_requests() -> None:
    plugin = build_balanced()
    pod = make_pod("p")
    state = CycleState()
    status = plugin.pre_score(state, pod, [])
    assert status is not None and status.code == Code.SKIP
    assert plugin.score(state, pod, NodeInfo(make_node("n"))) == 0
    # A memory-only pod on an empty node: cpu fraction 0 (no 100m default), memory 16Gi/32Gi.
    # std 0.25 -> 75; without 100; 50 + (50 + 75 - 100) / 2 = 62.
    half = make_pod("h", memory="16Gi")
    assert plugin.pre_score(CycleState(), half, []) is None
    assert plugin.score(CycleState(), half, NodeInfo(make_node("n", memory="32Gi"))) == 62


@pytest.mark.parametrize(
    ("requested", "allocatable", "expected"),
    [
        ([0, 0], [0, 0], 100),  # nothing offered: std 0
        ([5, 1], [4, 0], 100),  # one fraction (capped at 1): std 0
        ([3, 1], [10, 10], 90),  # |0.3 - 0.1| / 2 = 0.1 -> 90
        ([1, 2, 3], [3, 3, 3], 72),  # std of 1/3, 2/3, 1 = 0.2722 -> 72
    ],
)
def test_balanced_resource_score(
    requested: list[int], allocatable: list[int], expected: int
) -> None:
    assert balanced_resource_score(requested, allocatable) == expected


def test_balanced_score_matrix_two_offered_resources_match_the_general_form() -> None:
    """Two resources offered on every node take a shorter path; it must give the general
    form's scores (a third resource offered nowhere forces that form) and the per-node ones."""
    rng = np.random.default_rng(7)
    m = 2000
    allocatable = np.vstack([rng.integers(1, 64_000, m), rng.integers(1, 1 << 40, m)])
    # requests from nothing to past capacity, so fractions above 1 are capped as in Go
    requested = (allocatable * rng.uniform(0, 1.3, (2, m))).astype(np.int64)
    requested[:, :5] = allocatable[:, :5]  # exactly full
    requested[:, 5:10] = 0
    allocatable = allocatable.astype(np.int64)
    fast = balanced_resource_score_matrix(requested, allocatable)
    none = np.zeros((1, m), np.int64)
    general = balanced_resource_score_matrix(
        np.vstack([requested, none]), np.vstack([allocatable, none])
    )
    per_node = [
        balanced_resource_score(requested[:, j].tolist(), allocatable[:, j].tolist())
        for j in range(m)
    ]
    assert fast.tolist() == general.tolist() == per_node
    assert len(set(per_node)) > 20  # the scores spread; not all 100
