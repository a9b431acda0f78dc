"""On seeded random clusters (random zones, racks, pod labels, namespaces and terms): the batch
forms equal the per-node forms, and both equal a direct transcription of kube-scheduler's
map-based loops (tests/plugins/inter_pod_affinity/reference.py)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.api.namespace import Namespace
from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.testing import make_node, make_pod
from tests.plugins.inter_pod_affinity import reference
from tests.plugins.inter_pod_affinity.terms import HOST, affinity, expr, plugin_on, term, weighted

APPS = ("web", "db", "cache", "api")
KEYS = ("zone", "rack", HOST, "region")
NAMESPACES = {
    "default": {"env": "prod"},
    "team-a": {"team": "a", "env": "dev"},
    "team-b": {"team": "b"},
}
REASONS = {
    "node(s) didn't match pod affinity rules": "affinity",
    "node(s) didn't match pod anti-affinity rules": "anti",
    "node(s) didn't satisfy existing pods anti-affinity rules": "existing",
}


def random_term(rng: random.Random) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.15:
        extra["namespaces"] = rng.sample([*sorted(NAMESPACES), "ghost"], 2)
    elif roll < 0.3:
        extra["namespaceSelector"] = rng.choice(
            [
                {},
                {"matchLabels": {"team": "a"}},
                expr("env", "Exists"),
                expr("team", "DoesNotExist"),
            ]
        )
    if rng.random() < 0.2:
        return term(
            rng.choice(KEYS), labelSelector=expr("app", "In", *rng.sample(APPS, 2)), **extra
        )
    return term(rng.choice(KEYS), {"app": rng.choice(APPS)}, **extra)


def random_affinity(rng: random.Random, p: float) -> dict[str, Any] | None:
    lists: dict[str, list[dict[str, Any]]] = {}
    for kind in ("required", "anti_required"):
        if rng.random() < p:
            lists[kind] = [random_term(rng) for _ in range(rng.randint(1, 2))]
    for kind in ("preferred", "anti_preferred"):
        if rng.random() < p:
            lists[kind] = [
                weighted(rng.randint(1, 100), random_term(rng)) for _ in range(rng.randint(1, 2))
            ]
    return affinity(**lists) if lists else None


def random_pod(rng: random.Random, name: str, node: str = "", p: float = 0.3) -> Pod:
    return make_pod(
        name,
        namespace=rng.choice([*sorted(NAMESPACES), "ghost"]),
        node_name=node,
        labels={"app": rng.choice(APPS)} if rng.random() < 0.9 else {},
        affinity=random_affinity(rng, p),
    )


def random_cluster(rng: random.Random) -> tuple[list[Any], list[Pod]]:
    nodes, pods = [], []
    for i in range(rng.randint(3, 25)):
        labels: dict[str, str] = {}
        if rng.random() < 0.85:
            labels["zone"] = rng.choice("abc")
        if rng.random() < 0.6:
            labels["rack"] = rng.choice(("r1", "r2", "r3", "r4"))
        if rng.random() < 0.3:
            labels["region"] = rng.choice(("eu", "us"))
        nodes.append(make_node(f"n{i}", labels=labels))
        for j in range(rng.randrange(4)):
            pods.append(random_pod(rng, f"p{i}-{j}", f"n{i}", p=0.25))
    return nodes, pods


@pytest.mark.parametrize("seed", range(60))
def test_batch_per_node_and_reference_agree(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = random_cluster(rng)
    hard = rng.choice((0, 1, 5))
    plugin, snap, _ = plugin_on(
        nodes, pods, args={"hardPodAffinityWeight": hard}, namespaces=NAMESPACES
    )
    known = [Namespace(name, labels) for name, labels in NAMESPACES.items()]
    for k in range(5):
        pod = random_pod(rng, f"incoming-{k}", p=0.6)
        state = CycleState()
        _, status = plugin.pre_filter(state, pod, snap.list())
        expected = reference.filter_reasons(snap, pod, known)
        if expected is None:
            assert status is not None and status.is_skip()
        else:
            assert status is None
            per_node = {}
            for info in snap.list():
                result = plugin.filter(state, pod, info)
                per_node[info.name] = "" if result is None else REASONS[result.message()]
            assert per_node == expected
            fits = plugin.filter_batch(state, pod, snap.table)
            assert [bool(f) for f in fits] == [not expected[n] for n in snap.table.names]
            rows = np.arange(snap.table.n, dtype=np.intp)
            statuses = plugin.filter_batch_statuses(state, pod, snap.table, rows).to_list()
            assert ["" if s is None else REASONS[s.message()] for s in statuses] == [
                expected[n] for n in snap.table.names
            ]
        wanted_scores = reference.raw_scores(snap, pod, known, hard)
        status = plugin.pre_score(state, pod, snap.list())
        if wanted_scores is None:
            assert status is not None and status.is_skip()
            continue
        assert status is None
        per_node_scores = {info.name: plugin.score(state, pod, info) for info in snap.list()}
        assert per_node_scores == wanted_scores
        rows = np.array(rng.sample(range(snap.table.n), rng.randint(1, snap.table.n)), np.intp)
        batch = plugin.score_batch(state, pod, snap.table, rows)
        assert batch.tolist() == [wanted_scores[snap.table.names[r]] for r in rows]
