"""NodeResourcesFit and BalancedAllocation against numbers worked out from kube-scheduler's code."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Code
from scheduler.plugins import noderesources
from scheduler.plugins.noderesources import balanced_allocation_args, fit_args
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot


def _score(plugin: object, pod: object, snap: object, name: str) -> int:
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.node_info_list) is None  # type: ignore[attr-defined]
    info = snap.get(name)  # type: ignore[attr-defined]
    per_node = plugin.score(state, pod, info)  # type: ignore[attr-defined]
    rows = np.array([snap.table.index[name]], np.intp)  # type: ignore[attr-defined]
    batch = plugin.score_batch(state, pod, snap.table, rows)  # type: ignore[attr-defined]
    if batch is not None:
        assert int(batch[0]) == per_node
    return int(per_node)


@pytest.fixture
def half_used() -> object:
    # Node: 4 cpu, 10000 bytes; an existing pod requests 1 cpu and 2000 bytes.
    node = make_node("n", cpu="4", memory="10000")
    return make_snapshot([node], [make_pod("old", cpu="1", memory="2000", node_name="n")])


def test_least_allocated(half_used: object) -> None:
    # requested cpu 1000+1000=2000 of 4000 -> (4000-2000)*100/4000 = 50
    # requested mem 2000+2000=4000 of 10000 -> (10000-4000)*100/10000 = 60; (50+60)/2 = 55
    pod = make_pod("p", cpu="1", memory="2000")
    assert _score(build_plugin(noderesources.FIT_SPEC), pod, half_used, "n") == 55


def test_most_allocated(half_used: object) -> None:
    # cpu 2000*100/4000 = 50, mem 4000*100/10000 = 40 -> 45
    pod = make_pod("p", cpu="1", memory="2000")
    plugin = build_plugin(noderesources.FIT_SPEC, {"scoringStrategy": {"type": "MostAllocated"}})
    assert _score(plugin, pod, half_used, "n") == 45


def test_requested_to_capacity_ratio_with_weights(half_used: object) -> None:
    # Shape (0,10)->(100,0) scaled to scores 100..0: cpu at 50% -> 50, mem at 40% -> 60.
    # Weighted: (50*2 + 60*1) / 3 = 53.33 -> math.Round -> 53
    pod = make_pod("p", cpu="1", memory="2000")
    plugin = build_plugin(
        noderesources.FIT_SPEC,
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
                },
            }
        },
    )
    assert _score(plugin, pod, half_used, "n") == 53


def test_pod_without_requests_scores_with_non_zero_defaults() -> None:
    # Empty node 1000m / 1000Mi. A pod with no requests counts as 100m and 200Mi:
    # cpu (1000-100)*100/1000 = 90, mem (1000-200)*100/1000 = 80 -> 85
    snap = make_snapshot([make_node("n", cpu="1", memory="1000Mi")])
    assert _score(build_plugin(noderesources.FIT_SPEC), make_pod("p"), snap, "n") == 85


def test_balanced_allocation_scores_the_change_the_pod_makes(half_used: object) -> None:
    # Fractions with the pod: cpu 0.5, mem 0.4 -> std 0.05 -> int(0.95*100) = 95
    # without: 0.25, 0.2 -> std 0.025 -> int(97.5) = 97; 50 + (50 + 95 - 97)/2 = 74
    pod = make_pod("p", cpu="1", memory="2000")
    assert _score(build_plugin(noderesources.BALANCED_ALLOCATION_SPEC), pod, half_used, "n") == 74


def test_balanced_allocation_skips_best_effort_pods(half_used: object) -> None:
    plugin = build_plugin(noderesources.BALANCED_ALLOCATION_SPEC)
    status = plugin.pre_score(CycleState(), make_pod("p"), half_used.node_info_list)  # type: ignore[attr-defined]
    assert status is not None and status.code == Code.SKIP


def test_filter_reasons_and_codes() -> None:
    snap = make_snapshot(
        [make_node("n", cpu="2", memory="1Gi", pods=1)],
        [make_pod("old", cpu="1", node_name="n")],
    )
    info = snap.get("n")
    plugin = build_plugin(noderesources.FIT_SPEC)
    state = CycleState()
    # Fits the empty node but not the used one: Unschedulable (preemption could help).
    status = plugin.filter(state, make_pod("p", cpu="1500m"), info)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["Too many pods", "Insufficient cpu"]
    # More than the node has at all: UnschedulableAndUnresolvable.
    status = plugin.filter(state, make_pod("q", memory="2Gi"), info)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ["Too many pods", "Insufficient memory"]


def test_extended_resources_and_ignored_resources() -> None:
    snap = make_snapshot([make_node("n", extended={"example.com/gpu": "1"})])
    info = snap.get("n")
    pod = make_pod("p", requests={"example.com/gpu": "2", "other.io/fpga": "1"})
    status = build_plugin(noderesources.FIT_SPEC).filter(CycleState(), pod, info)
    assert status.reasons == ["Insufficient example.com/gpu", "Insufficient other.io/fpga"]
    ignoring = build_plugin(
        noderesources.FIT_SPEC,
        {"ignoredResources": ["example.com/gpu"], "ignoredResourceGroups": ["other.io"]},
    )
    assert ignoring.filter(CycleState(), pod, info) is None


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources[0].weight",
            "Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "Fancy"}},
            "scoringStrategy.type",
            'Unsupported value: "Fancy": supported values: "LeastAllocated", "MostAllocated", '
            '"RequestedToCapacityRatio"',
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio",
            "Required value: must be specified when type is RequestedToCapacityRatio",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            "Invalid value: 10: values must be sorted in increasing order",
        ),
        (
            {"ignoredResourceGroups": ["a/b"]},
            "ignoredResourceGroups[0]",
            "Invalid value: \"a/b\": resource group name can't contain '/'",
        ),
        ({"scoringStrategie": {}}, "scoringStrategie", 'unknown field "scoringStrategie"'),
    ],
)
def test_fit_args_errors(raw: dict[str, object], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as err:
        fit_args.decode_args(raw)
    assert (err.value.path, err.value.message) == (path, message)


def test_balanced_allocation_args_weight_must_be_one() -> None:
    with pytest.raises(ArgsError) as err:
        balanced_allocation_args.decode_args({"resources": [{"name": "cpu", "weight": 2}]})
    assert (err.value.path, err.value.message) == (
        "resources[0].weight",
        "Invalid value: 2: must be 1",
    )
