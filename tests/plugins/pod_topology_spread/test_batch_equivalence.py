"""filter_batch and score_batch equal the per-node forms on seeded random clusters."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.api.objects import Node, Pod
from scheduler.api.spread import Service
from scheduler.framework.cycle_state import CycleState
from scheduler.testing import FakeHandle, NodeWrapper, PodWrapper, make_snapshot
from tests.plugins.pod_topology_spread.kit import HOSTNAME, plugin_for

ZONES = ("z1", "z2", "z3", "")
APPS = ("web", "db", "cache")


def _nodes(rng: random.Random) -> list[Node]:
    nodes = []
    for i in range(rng.randint(3, 30)):
        wrapper = NodeWrapper(f"n{i}").capacity(cpu="8", memory="16Gi", pods=110)
        zone = rng.choice(ZONES)
        if zone:
            wrapper.label("zone", zone)
        if rng.random() < 0.5:
            wrapper.label("rack", f"r{rng.randrange(4)}")
        if rng.random() < 0.3:
            wrapper.label("pool", "gpu")
        if rng.random() < 0.2:
            wrapper.taint("dedicated", "x", "NoSchedule")
        built = wrapper.obj()
        if rng.random() < 0.1:
            built.labels.pop(HOSTNAME)
        nodes.append(built)
    return nodes


def _pods(rng: random.Random, nodes: list[Node]) -> list[Pod]:
    pods = []
    for i in range(rng.randint(0, 80)):
        wrapper = PodWrapper(f"p{i}", rng.choice(("default", "default", "other")))
        wrapper.node(rng.choice(nodes).name).label("app", rng.choice(APPS))
        if rng.random() < 0.5:
            wrapper.label("rev", str(rng.randrange(2)))
        if rng.random() < 0.1:
            wrapper.terminating()
        pods.append(wrapper.obj())
    return pods


def _incoming(rng: random.Random) -> Pod:
    wrapper = PodWrapper("incoming").label("app", rng.choice(APPS)).label("rev", "1")
    if rng.random() < 0.3:
        wrapper.node_selector({"pool": "gpu"})
    if rng.random() < 0.3:
        wrapper.toleration("dedicated", "x", "NoSchedule")
    keys = rng.sample(["zone", "rack", HOSTNAME], rng.randint(0 if rng.random() < 0.2 else 1, 3))
    for key in keys:
        extra: dict[str, object] = {}
        if rng.random() < 0.3:
            extra["minDomains"] = rng.randint(1, 5)
        if rng.random() < 0.3:
            extra["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.3:
            extra["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.3:
            extra["matchLabelKeys"] = ["rev"]
        selector = rng.choice(
            ({"matchLabels": {"app": rng.choice(APPS)}}, None, {}, {"matchLabels": {"app": "web"}})
        )
        action = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
        wrapper.spread(rng.randint(1, 3), key, action, selector, **extra)
    return wrapper.obj()


@pytest.mark.parametrize("seed", range(60))
def test_batch_forms_equal_per_node_forms(seed: int) -> None:
    rng = random.Random(seed)
    nodes = _nodes(rng)
    snap = make_snapshot(nodes, _pods(rng, nodes))
    handle = FakeHandle(service_list=[Service("default", "svc", {"app": "web"})])
    plugin = plugin_for(snap, None, handle)
    pod = _incoming(rng)
    state = CycleState()
    infos = snap.list()
    _, status = plugin.pre_filter(state, pod, infos)
    feasible = infos
    if status is None:
        column = plugin.filter_batch(state, pod, snap.table)
        per_node = [plugin.filter(state, pod, info) for info in infos]
        assert [s is None for s in per_node] == column.tolist()
        rows = np.flatnonzero(~column)
        statuses = plugin.filter_batch_statuses(state, pod, snap.table, rows).to_list()
        assert [s.message() for s in statuses] == [per_node[r].message() for r in rows]
        feasible = [info for info, s in zip(infos, per_node, strict=True) if s is None]
    if not feasible:
        return
    if plugin.pre_score(state, pod, feasible) is not None:
        return
    raw = [plugin.score(state, pod, info) for info in feasible]
    rows = np.array([snap.table.index[info.name] for info in feasible], np.intp)
    assert plugin.score_batch(state, pod, snap.table, rows).tolist() == raw
    normalized = np.array(raw, np.int64)
    plugin.normalize_score(state, pod, normalized)
    assert all(0 <= s <= 100 for s in normalized.tolist())
