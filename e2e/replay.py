"""kube-pysched's decision for one pod on a given cluster state, computed in process.

The comparison tests create pods one at a time on the live cluster (`run_sequentially`), then
replay kube-scheduler's decisions through kube-pysched's algorithm (the
default profile, the in-tree plugins) on exactly the state kube-scheduler saw, so every
decision is checked individually and ties (several best nodes) are visible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.workload import pod_scheduled_condition
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


def run_sequentially(
    core: k8s.CoreV1Api,
    namespace: str,
    bodies: list[dict[str, Any]],
    messages: dict[str, str] | None = None,
) -> dict[str, str | None]:
    """Creates the pods one by one, each after the previous one was decided; returns pod ->
    node (None when unschedulable), and fills `messages` with the unschedulable pods'
    PodScheduled messages."""
    placements: dict[str, str | None] = {}
    for body in bodies:
        name = body["metadata"]["name"]
        core.create_namespaced_pod(namespace, body)

        def decided(name: str = name) -> bool | str:
            pod = core.read_namespaced_pod(name, namespace)
            if pod.spec.node_name:
                placements[name] = pod.spec.node_name
                return True
            cond = pod_scheduled_condition(pod)
            if cond is not None and cond.status == "False":
                placements[name] = None
                if messages is not None:
                    messages[name] = cond.message or ""
                return True
            return f"{name} undecided"

        wait_for(decided, timeout=60, what=f"a decision for {name}")
    return placements


def delete_all(core: k8s.CoreV1Api, namespace: str) -> None:
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_for(
        lambda: not core.list_namespaced_pod(namespace).items or "pods remain",
        timeout=60,
        what="all pods gone",
    )


def as_json(api: k8s.ApiClient, obj: Any) -> dict[str, Any]:
    return api.sanitize_for_serialization(obj)  # type: ignore[no-any-return]


def replay(
    core: k8s.CoreV1Api, namespace: str, group: str, reference: dict[str, str | None]
) -> int | None:
    """Checks each reference decision against kube-pysched's; returns the first tie's index."""
    api = core.api_client
    nodes = [as_json(api, n) for n in core.list_node(label_selector=f"g={group}").items]
    pods = {p.metadata.name: as_json(api, p) for p in core.list_namespaced_pod(namespace).items}
    replayer = Replayer()
    placed: list[tuple[dict[str, Any], str]] = []
    first_tie = None
    for i, (name, node) in enumerate(reference.items()):
        decision = replayer.decide(nodes, placed, pods[name])
        if node is None:
            assert not decision.best, f"{name}: kube-scheduler found no node, we found {decision}"
            continue
        assert node in decision.best, f"{name}: kube-scheduler chose {node}, ours: {decision}"
        if len(decision.best) > 1 and first_tie is None:
            first_tie = i
        placed.append((pods[name], node))
    return first_tie


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
