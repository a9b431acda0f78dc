"""Pod affinity, anti-affinity and topology spreading: a seeded random mix, scheduled once by
kube-scheduler and once by kube-pysched, pod by pod, on the same nodes.

As in test_comparison: each kube-scheduler decision is replayed through kube-pysched's
algorithm on the state kube-scheduler saw (its node must be one of ours with the best score, a
pod it rejects we reject), then kube-pysched schedules the same pods live and must make the same
decisions, with the same PodScheduled messages for the pods that stay Pending. Equal best scores
would be broken at random by both schedulers: the seed was chosen so that there is none (the
replay checks it).
"""

from __future__ import annotations

import random
from typing import Any

from kubernetes import client as k8s

from e2e.cluster.nodes import NodeFactory
from e2e.replay import delete_all, replay, run_sequentially
from e2e.test_scheduling import Factory, profile_config, unique
from e2e.workload import pod_manifest

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
# (zone, cpu, memory): distinct sizes, so resource scores separate most nodes.
NODES = [
    ("z1", "4", "8Gi"),
    ("z1", "6", "16Gi"),
    ("z1", "9", "12Gi"),
    ("z2", "5", "20Gi"),
    ("z2", "8", "10Gi"),
    ("z3", "7", "6Gi"),
    ("z3", "10", "24Gi"),
]
APPS = ("web", "api", "cache")
SEED, COUNT = 111, 40  # no equal best scores, 5 pods left Pending (found by replaying seeds)


def _term(app: str, topology_key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": topology_key}


def _spread(app: str, key: str, max_skew: int, hard: bool, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }


def _constraints(rng: random.Random, app: str) -> tuple[dict[str, Any] | None, list[Any]]:
    """One of the rules (or none), as (affinity, topologySpreadConstraints)."""
    kind = rng.randrange(9)
    other = rng.choice(APPS)
    weight = rng.choice([1, 10, 50, 100])
    if kind == 0:
        anti = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app, HOSTNAME)]}
        return {"podAntiAffinity": anti}, []
    if kind == 1:
        required = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(other, ZONE)]}
        return {"podAffinity": required}, []
    if kind == 2:
        preferred = [{"weight": weight, "podAffinityTerm": _term(other, HOSTNAME)}]
        return {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}, []
    if kind == 3:
        preferred = [{"weight": weight, "podAffinityTerm": _term(other, ZONE)}]
        anti = {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
        return {"podAntiAffinity": anti}, []
    if kind == 4:
        return None, [_spread(app, ZONE, 1, hard=True)]
    if kind == 5:
        return None, [_spread(app, HOSTNAME, 1, hard=False)]
    if kind == 6:
        return None, [_spread(app, ZONE, 1, hard=True, minDomains=4)]
    if kind == 7:
        return None, [_spread(app, ZONE, 2, hard=False), _spread(app, HOSTNAME, 1, hard=True)]
    return None, []


def workload(group: str, scheduler_name: str) -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    pods = []
    for i in range(COUNT):
        app = rng.choice(APPS)
        affinity, spread = _constraints(rng, app)
        body = pod_manifest(
            f"p-{i:02d}-{app}",
            scheduler_name=scheduler_name,
            cpu=rng.choice(["100m", "250m", "500m", "1"]),
            memory=rng.choice(["128Mi", "512Mi", "1Gi"]),
            labels={"app": app},
            node_selector={"g": group},
            affinity=affinity,
        )
        if spread:
            body["spec"]["topologySpreadConstraints"] = spread
        pods.append(body)
    return pods


def test_same_decisions_as_kube_scheduler_with_affinity_and_spreading(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> None:
    group = unique("g")
    for zone, cpu, memory in NODES:
        kwok_nodes(1, cpu=cpu, memory=memory, labels={"g": group, ZONE: zone})
    name = unique("pysched")
    pysched(profile_config(name))

    reference_messages: dict[str, str] = {}
    reference = run_sequentially(
        core_v1, namespace, workload(group, "default-scheduler"), reference_messages
    )
    first_tie = replay(core_v1, namespace, group, reference)
    delete_all(core_v1, namespace)
    our_messages: dict[str, str] = {}
    ours = run_sequentially(core_v1, namespace, workload(group, name), our_messages)

    assert first_tie is None, f"the workload has a tie at pod {first_tie}; pick another SEED"
    differing = {p: (reference[p], ours[p]) for p in reference if reference[p] != ours[p]}
    assert not differing, f"decisions differ (kube-scheduler, kube-pysched): {differing}"
    pending = [p for p in reference if reference[p] is None]
    assert len(pending) == 5
    assert {p: our_messages[p] for p in pending} == {p: reference_messages[p] for p in pending}
