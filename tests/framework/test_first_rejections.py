"""A pod that fits nowhere: the FilterPass diagnosis of many rows equals filtering node by node."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.algorithm import SchedulingError
from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.registry import PluginSpec, Registry
from scheduler.framework.runtime import FilterPass
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import PROFILE, Harness
from tests.plugins.world import random_pod, random_world

FILTERS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "OddRankOut",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
)


class OddRankOut:
    """A Filter plugin without a batch form, between batch ones: rejects odd `rank` labels."""

    name = "OddRankOut"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if int(node_info.node.labels.get("rank", "0")) % 2:
            return Status(Code.UNSCHEDULABLE, "odd rank")
        return None


@pytest.mark.parametrize("with_per_node_plugin", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_first_rejections_equal_running_the_filters_node_by_node(
    seed: int, with_per_node_plugin: bool
) -> None:
    plugins = dict(in_tree_registry())
    plugins["OddRankOut"] = PluginSpec(lambda args, h: OddRankOut())
    names = [n for n in FILTERS if with_per_node_plugin or n != "OddRankOut"]
    enabled = (
        PluginRef("PrioritySort"),
        *(PluginRef(n) for n in names),
        PluginRef("DefaultBinder"),
    )
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    h = Harness(spec, plugins=Registry(plugins))
    try:
        rng = random.Random(seed)
        snap = random_world(rng, 80)
        infos = snap.node_info_list
        fwk = h.fwk
        compared = 0
        for i in range(25):
            pod = random_pod(rng, i)
            state = CycleState()
            _, status, _ = fwk.run_pre_filter_plugins(state, pod, infos)
            if status is not None:
                continue
            rows = np.arange(len(infos), dtype=np.intp)[::-1].copy()  # feasible rows too
            got = FilterPass(fwk, state, pod, snap.table).rejections(rows).to_list()
            want = [fwk.run_filter_plugins(state, pod, infos[int(r)]) for r in rows]
            assert [_described(s) for s in got] == [_described(s) for s in want], pod.name
            compared += sum(s is not None for s in want)
        assert compared > 300  # the random worlds reject plenty of nodes
    finally:
        h.close()


def _described(status: Status | None) -> tuple[object, ...] | None:
    return None if status is None else (status.code, status.plugin, tuple(status.reasons))


class ErrorOn:
    """A Filter plugin without a batch form that errs on the nodes named `err-*`."""

    name = "ErrorOn"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.name.startswith("err-"):
            return Status(Code.ERROR, f"broken {node_info.name}")
        return Status(Code.UNSCHEDULABLE, "not here")


def test_an_error_in_the_diagnosis_stops_the_cycle_with_the_first_in_round_robin_order() -> None:
    """A pod that fits nowhere (NodeResourcesFit's column rejects every row) is diagnosed node
    by node for the plugin without a column; the Error met first from the round-robin start is
    the cycle's error, whichever other nodes err too."""
    plugins = dict(in_tree_registry())
    plugins["ErrorOn"] = PluginSpec(lambda args, h: ErrorOn())
    enabled = tuple(
        PluginRef(n) for n in ("PrioritySort", "ErrorOn", "NodeResourcesFit", "DefaultBinder")
    )
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    h = Harness(spec, plugins=Registry(plugins))
    try:
        names = ["a", "err-1", "b", "c", "err-2", "d"]
        for name in names:
            h.add_node(make_node(name, cpu="1"))
        algorithm = h.scheduler.schedule_one_pod.s.algorithm
        h.cache.update_snapshot(algorithm.snapshot)
        pod = make_pod("big", cpu="2")
        for start, expected in [(0, "err-1"), (2, "err-2"), (5, "err-1"), (4, "err-2")]:
            algorithm.next_start_node_index = start
            with pytest.raises(SchedulingError) as raised:
                algorithm.find_nodes_that_fit_pod(h.fwk, CycleState(), pod)
            assert raised.value.status.message().endswith(f"broken {expected}"), start
    finally:
        h.close()
