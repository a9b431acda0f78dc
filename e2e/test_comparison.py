"""The same nodes and pods, scheduled once by kube-scheduler and once by kube-pysched.

Pods are created one at a time and each is waited for (bound, or marked unschedulable), so
every decision is made on a known cluster state. Every one of kube-scheduler's decisions is
then replayed through kube-pysched's algorithm on exactly the state kube-scheduler saw: the node
kube-scheduler chose must be one of kube-pysched's best-scoring nodes, and a pod one rejects the
other rejects too. Equal best scores are broken at random by both schedulers, so the live
kube-pysched run is compared pod by pod up to the first such tie (the workload's seed was
chosen so that there is none, which the replay also checks).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from kubernetes import client as k8s

from e2e.cluster.nodes import NodeFactory
from e2e.replay import delete_all, replay, run_sequentially
from e2e.test_scheduling import Factory, profile_config, unique
from e2e.workload import pod_manifest

NODE_SIZES = [
    ("2", "4Gi"),
    ("3", "10Gi"),
    ("5", "6Gi"),
    ("7", "20Gi"),
    ("11", "14Gi"),
    ("13", "40Gi"),
]


SEED, COUNT = 102, 44  # 5 unschedulable pods, no equal best scores (see the module doc)


def workload(group: str, scheduler_name: str) -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    pods = []
    for i in range(COUNT):
        cpu = rng.choice(["100m", "250m", "500m", "900m", "1500m", "2"])
        memory = rng.choice(["128Mi", "300Mi", "1Gi", "1500Mi", "3Gi"])
        pods.append(
            pod_manifest(
                f"p-{i:02d}",
                scheduler_name=scheduler_name,
                cpu=cpu,
                memory=memory,
                node_selector={"g": group},
            )
        )
    pods.insert(
        10,
        pod_manifest("huge", scheduler_name=scheduler_name, cpu="20", node_selector={"g": group}),
    )
    return pods


def test_same_decisions_as_kube_scheduler(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> None:
    group = unique("g")
    for cpu, memory in NODE_SIZES:
        kwok_nodes(1, cpu=cpu, memory=memory, labels={"g": group})
    name = unique("pysched")
    pysched(profile_config(name))

    reference = run_sequentially(core_v1, namespace, workload(group, "default-scheduler"))
    first_tie = replay(core_v1, namespace, group, reference)
    assert first_tie is None, f"the workload has a tie at pod {first_tie}; pick another SEED"
    delete_all(core_v1, namespace)
    ours = run_sequentially(core_v1, namespace, workload(group, name))

    unschedulable = {p for p, n in reference.items() if n is None}
    assert len(unschedulable) == 5
    assert {p for p, n in ours.items() if n is None} == unschedulable
    assert Counter(n for n in ours.values() if n) == Counter(n for n in reference.values() if n)
    differing = {p: (reference[p], ours[p]) for p in reference if reference[p] != ours[p]}
    assert not differing, f"placements differ (kube-scheduler, kube-pysched): {differing}"
