"""kube-pysched's decision for one pod on a given cluster state, computed in process.

The comparison test replays kube-scheduler's decisions through kube-pysched's algorithm (the
default profile, the in-tree plugins) on exactly the state kube-scheduler saw, so every
decision is checked individually and ties (several best nodes) are visible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.algorithm import SchedulingAlgorithm
from scheduler.api.objects import replace_pod
from scheduler.api.parse import parse_node, parse_pod
from scheduler.backend.cache import Cache, Snapshot
from scheduler.backend.queue import Nominator
from scheduler.config import load_config
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.runtime import Framework, FrameworkServices
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import FakeApi, FakeRecorder


@dataclass(frozen=True)
class Decision:
    best: frozenset[str]  # empty when no node fits
    scores: dict[str, int]


class Replayer:
    def __init__(self) -> None:
        registry = in_tree_registry()
        spec = load_config(None, set(registry)).profiles[0].to_spec()
        self.snapshot = Snapshot()
        services = FrameworkServices(
            snapshot=lambda: self.snapshot,
            api=FakeApi(fail_with=AssertionError("replay never writes to the API")),
            event_recorder=FakeRecorder(),
            features=FeatureGates(),
        )
        self.fwk = Framework(spec, registry, services)
        self.fwk.set_queue(Nominator(), lambda pods: None)

    def decide(
        self,
        nodes: list[dict[str, Any]],
        placed: list[tuple[dict[str, Any], str]],
        pod: dict[str, Any],
    ) -> Decision:
        """The best nodes for `pod` when `placed` pods sit on their nodes."""
        cache = Cache()
        for node in nodes:
            cache.add_node(parse_node(node))
        for body, node_name in placed:
            cache.add_pod(replace_pod(parse_pod(body), node_name=node_name))
        self.snapshot = Snapshot()
        cache.update_snapshot(self.snapshot)
        algorithm = SchedulingAlgorithm(self.snapshot)
        target = replace_pod(parse_pod(pod), node_name="")
        state = CycleState()
        feasible, _ = algorithm.find_nodes_that_fit_pod(self.fwk, state, target)
        if not feasible:
            return Decision(frozenset(), {})
        assert self.fwk.run_pre_score_plugins(state, target, feasible) is None
        index = self.snapshot.table.index
        rows = np.array([index[info.name] for info in feasible], np.intp)
        totals, status = self.fwk.run_score_plugins(
            state, target, self.snapshot.table, rows, feasible
        )
        assert status is None and totals is not None
        scores = {info.name: int(t) for info, t in zip(feasible, totals, strict=True)}
        top = max(scores.values())
        return Decision(frozenset(n for n, s in scores.items() if s == top), scores)
