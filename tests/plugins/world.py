"""Random clusters and pods for equivalence tests (batch vs per-node forms, first rejections).

Built with the testing kit (`scheduler.testing`), as the scheduler would see them.
"""

from __future__ import annotations

import random

from scheduler.api.objects import Pod
from scheduler.backend.cache import Snapshot
from scheduler.testing import make_node, make_pod, make_snapshot

ZONES = ("a", "b", "c")
TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "value": "", "effect": "NoExecute"},
    {"key": "noisy", "value": "yes", "effect": "PreferNoSchedule"},
    {"key": "old", "value": "", "effect": "PreferNoSchedule"},
)


def random_world(rng: random.Random, n_nodes: int = 40) -> Snapshot:
    """Nodes of mixed sizes, labels, taints and cordons, with pods (some with host ports)."""
    nodes = []
    pods = []
    for i in range(n_nodes):
        name = f"n{i}"
        taints = [t for t in TAINTS if rng.random() < 0.2]
        extended = {"example.com/gpu": str(rng.choice([0, 1, 4]))} if rng.random() < 0.3 else {}
        nodes.append(
            make_node(
                name,
                cpu=f"{rng.choice([1000, 2000, 4000, 8000])}m",
                memory=f"{rng.choice([2, 4, 16])}Gi",
                pods=rng.choice([3, 10, 110]),
                ephemeral_storage=rng.choice([None, "10Gi"]),
                extended=extended,
                labels={"zone": rng.choice(ZONES), "rank": str(rng.randrange(10))},
                taints=taints,
                unschedulable=rng.random() < 0.1,
            )
        )
        for j in range(rng.randrange(4)):
            pods.append(
                make_pod(
                    f"p{i}-{j}",
                    cpu=rng.choice([None, "100m", "500m", "1"]),
                    memory=rng.choice([None, "128Mi", "1Gi"]),
                    node_name=name,
                    host_ports=[8080] if rng.random() < 0.2 else None,
                )
            )
    return make_snapshot(nodes, pods)


def random_pod(rng: random.Random, i: int) -> Pod:
    tolerations = []
    if rng.random() < 0.5:
        tolerations.append({"key": "dedicated", "operator": "Equal", "value": "gpu"})
    if rng.random() < 0.3:
        tolerations.append({"key": "noisy", "operator": "Exists", "effect": "PreferNoSchedule"})
    if rng.random() < 0.2:
        tolerations.append({"operator": "Exists"})
    affinity = None
    if rng.random() < 0.4:
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a", "b"]}
                            ]
                        },
                        {"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["6"]}]},
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                        },
                    },
                    {
                        "weight": 2,
                        "preference": {"matchExpressions": [{"key": "rank", "operator": "Exists"}]},
                    },
                ],
            }
        }
    requests = {}
    if rng.random() < 0.3:
        requests["example.com/gpu"] = str(rng.choice([1, 2]))
    return make_pod(
        f"q{i}",
        cpu=rng.choice([None, "200m", "1500m", "3"]),
        memory=rng.choice([None, "256Mi", "3Gi"]),
        requests=requests,
        node_selector={"zone": "c"} if rng.random() < 0.15 else None,
        affinity=affinity,
        tolerations=tolerations,
        host_ports=[8080] if rng.random() < 0.3 else None,
    )
