"""filter_batch/score_batch agree with filter/score row by row on seeded random clusters.

The generators here deliberately cover what the vectorised paths special-case: every selector
operator, matchFields on node names, non-numeric labels under Gt/Lt, taints with and without
values, tolerations of every shape, and host ports with IPs and protocols.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.api.parse import parse_pod
from scheduler.backend.cache import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.registry import PluginSpec
from scheduler.plugins import (
    node_affinity,
    node_name,
    node_ports,
    node_unschedulable,
    taint_toleration,
)
from scheduler.testing import build_plugin, make_node, make_snapshot, pod_json

KEYS = ("zone", "rank", "disk", "example.com/pool")
VALUES = {"zone": ("a", "b", "c"), "rank": ("1", "5", "9", "x"), "disk": ("ssd", "hdd")}
TAINT_KEYS = ("dedicated", "spot", "noisy")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


def _values(rng: random.Random, key: str) -> list[str]:
    pool = VALUES.get(key, ("p1", "p2"))
    return rng.sample(pool, rng.randint(1, len(pool)))


def _expression(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(KEYS)
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if op in ("In", "NotIn"):
        return {"key": key, "operator": op, "values": _values(rng, key)}
    if op in ("Gt", "Lt"):
        return {"key": "rank", "operator": op, "values": [str(rng.randrange(10))]}
    return {"key": key, "operator": op}


def _term(rng: random.Random, n_nodes: int) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if rng.random() < 0.8:
        term["matchExpressions"] = [_expression(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.3:
        term["matchFields"] = [
            {
                "key": "metadata.name",
                "operator": rng.choice(("In", "NotIn")),
                "values": [f"n{rng.randrange(n_nodes + 2)}"],
            }
        ]
    return term


def _preferred(rng: random.Random, n_nodes: int) -> list[dict[str, Any]]:
    return [
        {"weight": rng.randint(1, 100), "preference": _term(rng, n_nodes)}
        for _ in range(rng.randint(1, 3))
    ]


def _toleration(rng: random.Random) -> dict[str, Any]:
    tol: dict[str, Any] = {}
    if rng.random() < 0.8:
        tol["key"] = rng.choice(TAINT_KEYS)
    op = rng.choice(("Equal", "Exists", "")) if "key" in tol else "Exists"
    if op:
        tol["operator"] = op
    if op != "Exists":
        tol["value"] = rng.choice(("", "yes", "gpu"))
    if rng.random() < 0.6:
        tol["effect"] = rng.choice(EFFECTS)
    return tol


def _ports(rng: random.Random) -> list[dict[str, Any]]:
    ports = []
    for _ in range(rng.randint(1, 2)):
        port: dict[str, Any] = {"containerPort": 1, "hostPort": rng.choice((80, 443, 8080))}
        if rng.random() < 0.3:
            port["protocol"] = rng.choice(("TCP", "UDP"))
        if rng.random() < 0.3:
            port["hostIP"] = rng.choice(("10.0.0.1", "10.0.0.2", "0.0.0.0"))
        ports.append(port)
    return ports


def _pod(rng: random.Random, name: str, n_nodes: int, node: str = "") -> Any:
    raw = pod_json(
        name,
        node_name=node,
        tolerations=[_toleration(rng) for _ in range(rng.randrange(3))],
        node_selector=(
            {rng.choice(("zone", "disk")): rng.choice(("a", "ssd"))} if rng.random() < 0.2 else None
        ),
    )
    if rng.random() < 0.3:
        raw["spec"]["containers"][0]["ports"] = _ports(rng)
    affinity: dict[str, Any] = {}
    if rng.random() < 0.5:
        affinity[node_affinity.args.REQUIRED] = {
            "nodeSelectorTerms": [_term(rng, n_nodes) for _ in range(rng.randint(1, 3))]
        }
    if rng.random() < 0.6:
        affinity[node_affinity.args.PREFERRED] = _preferred(rng, n_nodes)
    if affinity:
        raw["spec"]["affinity"] = {"nodeAffinity": affinity}
    if not node and rng.random() < 0.1:
        raw["spec"]["nodeName"] = f"n{rng.randrange(n_nodes + 1)}"
    return parse_pod(raw)


def _world(rng: random.Random, n_nodes: int = 30) -> Snapshot:
    nodes, pods = [], []
    for i in range(n_nodes):
        labels = {k: rng.choice(VALUES.get(k, ("p1", "p2"))) for k in KEYS if rng.random() < 0.6}
        taints = [
            {"key": k, "value": rng.choice(("", "yes", "gpu")), "effect": rng.choice(EFFECTS)}
            for k in TAINT_KEYS
            if rng.random() < 0.25
        ]
        nodes.append(
            make_node(f"n{i}", labels=labels, taints=taints, unschedulable=rng.random() < 0.15)
        )
        for j in range(rng.randrange(3)):
            pods.append(_pod(rng, f"e{i}-{j}", n_nodes, node=f"n{i}"))
    return make_snapshot(nodes, pods)


def _added_affinity(rng: random.Random, n_nodes: int) -> dict[str, Any] | None:
    if rng.random() < 0.5:
        return None
    added: dict[str, Any] = {}
    if rng.random() < 0.7:
        added[node_affinity.args.REQUIRED] = {"nodeSelectorTerms": [_term(rng, n_nodes)]}
    if rng.random() < 0.7:
        added[node_affinity.args.PREFERRED] = _preferred(rng, n_nodes)
    return {"addedAffinity": added}


FILTER_SPECS = [node_name.SPEC, node_unschedulable.SPEC, taint_toleration.SPEC, node_ports.SPEC]


@pytest.mark.parametrize("seed", range(8))
def test_filter_batch_equals_filter(seed: int) -> None:
    rng = random.Random(seed)
    snap = _world(rng)
    plugins = [build_plugin(spec) for spec in FILTER_SPECS]
    plugins += [
        build_plugin(node_affinity.SPEC, _added_affinity(rng, snap.table.n)) for _ in range(3)
    ]
    for i in range(25):
        pod = _pod(rng, f"q{i}", snap.table.n)
        for plugin in plugins:
            state = CycleState()
            if hasattr(plugin, "pre_filter"):
                plugin.pre_filter(state, pod, snap.node_info_list)
            batch = plugin.filter_batch(state, pod, snap.table)
            per_node = [plugin.filter(state, pod, info) is None for info in snap.node_info_list]
            assert batch.tolist() == per_node, (plugin.name, pod.name)


SCORE_SPECS: list[PluginSpec] = [taint_toleration.SPEC, node_affinity.SPEC]


@pytest.mark.parametrize("seed", range(8))
def test_score_batch_equals_score(seed: int) -> None:
    rng = random.Random(seed)
    snap = _world(rng)
    plugins = [build_plugin(spec) for spec in SCORE_SPECS]
    plugins += [
        build_plugin(node_affinity.SPEC, _added_affinity(rng, snap.table.n)) for _ in range(3)
    ]
    for i in range(25):
        pod = _pod(rng, f"q{i}", snap.table.n)
        rows = np.array(rng.sample(range(snap.table.n), 20), np.intp)  # unsorted on purpose
        for plugin in plugins:
            state = CycleState()
            if plugin.pre_score(state, pod, snap.node_info_list) is not None:
                continue
            batch = plugin.score_batch(state, pod, snap.table, rows)
            per_node = [plugin.score(state, pod, snap.node_info_list[int(r)]) for r in rows]
            assert batch.dtype == np.int64
            assert batch.tolist() == per_node, (plugin.name, pod.name)


def test_generators_exercise_both_outcomes() -> None:
    """Guards the random tests against degenerating into all-pass or all-fail columns."""
    rng = random.Random(0)
    snap = _world(rng)
    taint = build_plugin(taint_toleration.SPEC)
    affinity = build_plugin(node_affinity.SPEC)
    seen_taint, seen_affinity = set(), set()
    for i in range(25):
        pod = _pod(rng, f"q{i}", snap.table.n)
        seen_taint |= set(taint.filter_batch(CycleState(), pod, snap.table).tolist())
        seen_affinity |= set(affinity.filter_batch(CycleState(), pod, snap.table).tolist())
    assert seen_taint == {True, False} and seen_affinity == {True, False}
