"""The pod-count queries kept node by node equal the same queries answered from scratch, as
pods come and go, change labels and start terminating, and nodes are added, relabelled and
removed."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from scheduler.api.labels import LabelSelector
from scheduler.api.objects import Pod
from scheduler.backend.cache import Cache, Snapshot
from scheduler.framework.node_table import NodeTable
from scheduler.framework.types import AFFINITY_KINDS
from scheduler.testing import make_node, make_pod

ZONES = ("z1", "z2", "z3")


def _selector(raw: dict[str, Any]) -> LabelSelector:
    parsed = LabelSelector.parse(raw)
    assert parsed is not None
    return parsed


QUERIES: dict[str, Callable[[Pod], bool]] = {
    "web": lambda p: _selector({"matchLabels": {"app": "web"}}).matches(p.labels),
    "web-live-ns1": lambda p: (
        p.namespace == "ns1" and p.deletion_timestamp is None and p.labels.get("app") == "web"
    ),
    "tier-not-db": lambda p: _selector(
        {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}
    ).matches(p.labels),
    "any-live": lambda p: p.deletion_timestamp is None,
}


def _naive_counts(table: NodeTable, matches: Callable[[Pod], bool]) -> list[int]:
    return [sum(1 for pod in info.pods if matches(pod)) for info in table.infos]


def _naive_terms(table: NodeTable, kind: str) -> dict[Any, dict[int, int]]:
    found: dict[Any, dict[int, int]] = {}
    for row, info in enumerate(table.infos):
        for pod in info.pods:
            for term in getattr(pod.pod_affinity, kind, ()):
                found.setdefault(term, {})
                found[term][row] = found[term].get(row, 0) + 1
    return found


def _naive_domains(table: NodeTable, key: str) -> list[str | None]:
    return [info.node.labels.get(key) if info.node is not None else None for info in table.infos]


def _random_pod(rng: random.Random, serial: int, nodes: list[str]) -> Pod:
    labels = {}
    if rng.random() < 0.7:
        labels["app"] = rng.choice(["web", "db", "cache"])
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(["db", "front"])
    affinity: dict[str, Any] | None = None
    if rng.random() < 0.4:
        term = {
            "labelSelector": {"matchLabels": {"app": rng.choice(["web", "db"])}},
            "topologyKey": rng.choice(["zone", "kubernetes.io/hostname"]),
        }
        kind = rng.choice(["podAffinity", "podAntiAffinity"])
        if rng.random() < 0.5:
            affinity = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        else:
            weighted = {"weight": rng.choice([1, 5]), "podAffinityTerm": term}
            affinity = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}}
    return make_pod(
        f"p{serial}",
        rng.choice(["ns1", "ns2"]),
        node_name=rng.choice(nodes),
        labels=labels,
        affinity=affinity,
        deletion_timestamp="2026-01-01T00:00:00Z" if rng.random() < 0.1 else None,
    )


def _check(table: NodeTable) -> None:
    for key, matches in QUERIES.items():
        assert table.pod_counts(key, matches).tolist() == _naive_counts(table, matches), key
    for kind in AFFINITY_KINDS:
        served = {
            term: dict(zip(rows.tolist(), counts.tolist(), strict=True))
            for term, (rows, counts) in table.affinity_term_counts(kind).items()
        }
        assert served == _naive_terms(table, kind), kind
    for key in ("zone", "rack"):
        ids, values = table.topology_domains(key)
        assert [values[i] if i >= 0 else None for i in ids.tolist()] == _naive_domains(table, key)
        assert set(values) == {v for v in _naive_domains(table, key) if v is not None}


def test_counts_kept_node_by_node_equal_counts_from_scratch() -> None:
    rng = random.Random(11)
    cache = Cache()
    nodes = {f"n{i}": make_node(f"n{i}", labels={"zone": rng.choice(ZONES)}) for i in range(8)}
    for node in nodes.values():
        cache.add_node(node)
    pods: list[Pod] = []
    snapshot = Snapshot()
    serial = 0
    for step in range(300):
        for _ in range(rng.randint(1, 3)):  # several changes between two snapshots
            op = rng.random()
            serial += 1
            if op < 0.45 or not pods:
                pod = _random_pod(rng, serial, sorted(nodes))
                cache.add_pod(pod)
                pods.append(pod)
            elif op < 0.65:
                cache.remove_pod(pods.pop(rng.randrange(len(pods))))
            elif op < 0.75:
                old = pods.pop(rng.randrange(len(pods)))
                new = make_pod(
                    old.name,
                    old.namespace,
                    uid=old.uid,
                    node_name=old.node_name,
                    labels={"app": rng.choice(["web", "db"])},
                    deletion_timestamp="2026-01-01T00:00:00Z" if rng.random() < 0.3 else None,
                )
                cache.update_pod(old, new)
                pods.append(new)
            elif op < 0.85:
                name = rng.choice(sorted(nodes))
                labels = {"zone": rng.choice(ZONES)} if rng.random() < 0.8 else {"rack": "r1"}
                new_node = make_node(name, labels=labels)
                cache.update_node(nodes[name], new_node)
                nodes[name] = new_node
            elif op < 0.92 and len(nodes) > 3:
                name = rng.choice(sorted(nodes))
                for pod in [p for p in pods if p.node_name == name]:
                    cache.remove_pod(pod)
                    pods.remove(pod)
                cache.remove_node(nodes.pop(name))
            else:
                name = f"new{serial}"
                nodes[name] = make_node(name, labels={"zone": rng.choice(ZONES)})
                cache.add_node(nodes[name])
        cache.update_snapshot(snapshot)
        if step % 3 == 0 or step > 250:
            _check(snapshot.table)  # queried now, so kept (and checked) from here on


def test_counts_are_read_only_and_shared_per_key() -> None:
    cache = Cache()
    cache.add_node(make_node("a"))
    cache.add_pod(make_pod("p", node_name="a", labels={"app": "web"}))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    counts = snapshot.table.pod_counts("web", QUERIES["web"])
    assert counts is snapshot.table.pod_counts("web", QUERIES["web"])
    assert not counts.flags.writeable
    np.testing.assert_array_equal(counts, [1])
