"""`python -m e2e.bench.simcluster`: a large cluster snapshot and a what-if for measuring
`kube-pysched simulate` at scale (docs/simulate.md, "Speed").

    python -m e2e.bench.simcluster -o sim-5000          # 5,000 nodes, 50,000 pods, 10,000 to add
    kube-pysched simulate --snapshot sim-5000/cluster.json --add sim-5000/add.yaml

The cluster is shaped like a production one rather than a uniform grid: nodes over three zones
in four instance types and pools (a tainted GPU pool among them), with the labels a cloud
provider sets; running pods of a few hundred Deployments (one ReplicaSet each, replica counts
skewed as real services are), every pod bound and with requests, some Deployments spread over
zones or kept apart on hosts, Services and PodDisruptionBudgets beside them. Existing pods are
placed first-fit from a random start within their pool, spread over zones, as a scheduler would
roughly have left them. The what-if (`add.yaml`) is a few Deployments of the kinds clusters
scale: zone-spread web servers, API servers with preferred anti-affinity, batch workers on
one pool, a cache pinned to memory-heavy nodes. Everything is drawn from a seeded generator,
so the files are the same on every run.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.simulate.cluster import dump_list

Json = dict[str, Any]

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
SCHEDULER = "kube-pysched"
GI = 1 << 30
MI = 1 << 20


@dataclass(frozen=True)
class NodeType:
    instance: str
    pool: str
    cpu: int  # millicores allocatable
    memory: int  # bytes allocatable
    share: float  # of all nodes
    taint: bool = False


NODE_TYPES = (
    NodeType("m5.4xlarge", "general", 15_890, 60 * GI, 0.55),
    NodeType("c5.4xlarge", "compute", 15_890, 29 * GI, 0.25),
    NodeType("r5.2xlarge", "memory", 7_910, 61 * GI, 0.15),
    NodeType("g5.4xlarge", "gpu", 15_890, 61 * GI, 0.05, taint=True),
)


@dataclass
class Sizes:
    nodes: int = 5_000
    pods: int = 50_000
    deployments: int = 300
    namespaces: int = 25
    add: int = 10_000


@dataclass
class _Node:
    name: str
    zone: str
    pool: str
    cpu_free: int
    mem_free: int
    pods_free: int = 110


@dataclass
class Generated:
    """The snapshot's objects, and the what-if's Deployments."""

    objects: list[Json] = field(default_factory=list)
    add: list[Json] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for obj in self.objects:
            out[obj["kind"]] = out.get(obj["kind"], 0) + 1
        return out


def _node(name: str, zone: str, kind: NodeType) -> Json:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": kind.instance,
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
        "nodepool": kind.pool,
    }
    spec: Json = {"providerID": f"aws:///{zone}/i-{name}"}
    if kind.taint:
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    resources = {
        "cpu": f"{kind.cpu}m",
        "memory": f"{kind.memory // MI}Mi",
        "pods": "110",
        "ephemeral-storage": "95Gi",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": spec,
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _replicas(rng: random.Random, total: int, deployments: int) -> list[int]:
    """`deployments` replica counts summing to `total`, skewed (a few large services, many
    small ones), each at least 1."""
    weights = [rng.paretovariate(1.2) for _ in range(deployments)]
    scale = (total - deployments) / sum(weights)
    counts = [1 + int(w * scale) for w in weights]
    for i in range(total - sum(counts)):
        counts[i % deployments] += 1
    return counts


def _template(rng: random.Random, app: str, pool: str, zone_spread: bool, anti: bool) -> Json:
    """A Deployment's pod template: requests, and the placement rules its kind of service
    usually carries."""
    cpu = rng.choice((50, 100, 100, 250, 250, 500, 500, 1000, 2000))
    memory = rng.choice((64, 128, 256, 256, 512, 1024, 2048, 4096)) * MI
    spec: Json = {
        "schedulerName": SCHEDULER,
        "containers": [
            {
                "name": "app",
                "image": f"registry.example/{app}:1.0",
                "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{memory // MI}Mi"}},
            }
        ],
    }
    if pool != "general":
        spec["nodeSelector"] = {"nodepool": pool}
    if pool == "gpu":
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    selector = {"matchLabels": {"app": app}}
    if zone_spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ]
    if anti:
        term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": term}
                ]
            }
        }
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def _requests(template: Json) -> tuple[int, int]:
    req = template["spec"]["containers"][0]["resources"]["requests"]
    return int(req["cpu"][:-1]), int(req["memory"][:-2]) * MI


def _fits(nodes: list[_Node], replicas: int, cpu: int, mem: int) -> bool:
    """The pods would take at most a third of what is left on `nodes`."""
    free_cpu = sum(n.cpu_free for n in nodes)
    free_mem = sum(n.mem_free for n in nodes)
    free_pods = sum(n.pods_free for n in nodes)
    return (
        3 * replicas * cpu <= free_cpu
        and 3 * replicas * mem <= free_mem
        and 3 * replicas <= free_pods
    )


def _place(rng: random.Random, nodes: list[_Node], zone: str, cpu: int, mem: int) -> _Node:
    """First fit from a random start among `nodes`, preferring `zone`."""
    start = rng.randrange(len(nodes))
    for prefer in (True, False):
        for i in range(len(nodes)):
            node = nodes[(start + i) % len(nodes)]
            if prefer and node.zone != zone:
                continue
            if node.cpu_free >= cpu and node.mem_free >= mem and node.pods_free > 0:
                node.cpu_free -= cpu
                node.mem_free -= mem
                node.pods_free -= 1
                return node
    raise ValueError("the generated cluster is too small for its pods")


def _suffix(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def generate(sizes: Sizes, seed: int = 1) -> Generated:
    rng = random.Random(seed)
    out = Generated()
    namespaces = [f"team-{i:02d}" for i in range(sizes.namespaces)]
    for ns in namespaces:
        out.objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    out.objects.append(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "batch-low"},
            "value": -100,
        }
    )
    by_pool: dict[str, list[_Node]] = {t.pool: [] for t in NODE_TYPES}
    cumulative = 0.0
    index = 0
    for kind in NODE_TYPES:
        cumulative += kind.share
        while index < round(cumulative * sizes.nodes):
            zone = ZONES[index % len(ZONES)]
            name = f"ip-10-{index // 250}-{index % 250}-{kind.pool}"
            out.objects.append(_node(name, zone, kind))
            by_pool[kind.pool].append(_Node(name, zone, kind.pool, kind.cpu, kind.memory))
            index += 1
    pools = [t.pool for t in NODE_TYPES]
    pool_weights = [t.share for t in NODE_TYPES]
    pods: list[Json] = []
    for d, replicas in enumerate(_replicas(rng, sizes.pods, sizes.deployments)):
        ns = namespaces[d % len(namespaces)]
        app = f"svc-{d:03d}"
        pool = rng.choices(pools, pool_weights)[0]
        template = _template(rng, app, pool, rng.random() < 0.3, rng.random() < 0.15)
        cpu, mem = _requests(template)
        if pool != "general" and not _fits(by_pool[pool], replicas, cpu, mem):
            # A service too large for a small pool runs on the general one.
            pool = "general"
            template = _template(rng, app, pool, rng.random() < 0.3, rng.random() < 0.15)
            cpu, mem = _requests(template)
        rs = f"{app}-{_suffix(rng, 10)}"
        rs_uid = f"uid-{ns}-{rs}"
        labels = {**template["metadata"]["labels"], "pod-template-hash": rs[len(app) + 1 :]}
        selector = {"matchLabels": labels}
        out.objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": rs, "namespace": ns, "uid": rs_uid, "labels": labels},
                "spec": {"replicas": replicas, "selector": selector},
            }
        )
        if d % 2 == 0:
            out.objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": app, "namespace": ns},
                    "spec": {"selector": {"app": app}},
                }
            )
        if d % 5 == 0:
            out.objects.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": app, "namespace": ns},
                    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
                }
            )
        owner = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rs,
            "uid": rs_uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        for r in range(replicas):
            node = _place(rng, by_pool[pool], ZONES[r % len(ZONES)], cpu, mem)
            name = f"{rs}-{_suffix(rng, 5)}{r}"
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "uid": f"uid-{ns}-{name}",
                        "labels": labels,
                        "ownerReferences": [owner],
                        "creationTimestamp": "2026-01-01T00:00:00Z",
                    },
                    "spec": {**template["spec"], "nodeName": node.name, "priority": 0},
                    "status": {"phase": "Running"},
                }
            )
    out.objects += pods
    out.add = _whatif(sizes.add)
    return out


def _deployment(name: str, replicas: int, template: Json, priority: str = "") -> Json:
    if priority:
        template["spec"]["priorityClassName"] = priority
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "rollout"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template,
        },
    }


def _whatif(total: int) -> list[Json]:
    """Four Deployments, 40/30/20/10 % of `total` replicas."""
    rng = random.Random(0)
    web = _template(rng, "web", "general", zone_spread=True, anti=False)
    web["spec"]["topologySpreadConstraints"].append(
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    )
    api = _template(rng, "api", "general", zone_spread=False, anti=True)
    batch = _template(rng, "batch", "compute", zone_spread=False, anti=False)
    cache = _template(rng, "cache", "memory", zone_spread=True, anti=False)
    cache["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": ["r5.2xlarge"],
                            }
                        ]
                    }
                ]
            }
        }
    }
    counts = [total * 4 // 10, total * 3 // 10, total * 2 // 10]
    counts.append(total - sum(counts))
    return [
        _deployment("web", counts[0], web),
        _deployment("api", counts[1], api),
        _deployment("batch", counts[2], batch, priority="batch-low"),
        _deployment("cache", counts[3], cache),
    ]


def write(generated: Generated, directory: Path) -> tuple[Path, Path]:
    """cluster.json (as `kube-pysched snapshot` writes it) and add.yaml."""
    directory.mkdir(parents=True, exist_ok=True)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rollout"}}
    cluster = directory / "cluster.json"
    with cluster.open("wb") as stream:
        dump_list([*generated.objects, namespace], stream)
    add = directory / "add.yaml"
    add.write_text(yaml.safe_dump_all(generated.add, sort_keys=False))
    return cluster, add


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.bench.simcluster", description=__doc__)
    parser.add_argument("-o", "--output", required=True, help="directory for the two files")
    parser.add_argument("--nodes", type=int, default=Sizes.nodes)
    parser.add_argument("--pods", type=int, default=Sizes.pods, help="running pods")
    parser.add_argument("--deployments", type=int, default=Sizes.deployments)
    parser.add_argument("--add", type=int, default=Sizes.add, help="pods the what-if adds")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = Sizes(nodes=args.nodes, pods=args.pods, deployments=args.deployments, add=args.add)
    if min(sizes.nodes, sizes.pods, sizes.deployments, sizes.add) < 1 or sizes.nodes < 10:
        parser.error("--nodes must be at least 10; --pods, --deployments and --add at least 1")
    if sizes.deployments > sizes.pods:
        parser.error("--deployments must not exceed --pods")
    try:
        generated = generate(sizes, args.seed)
    except ValueError as err:
        print(f"simcluster: {err}", file=sys.stderr)
        return 1
    cluster, add = write(generated, Path(args.output))
    counts = ", ".join(f"{kind} {n}" for kind, n in generated.counts().items())
    print(f"{cluster}: {counts}; {add}: {sizes.add} pods in {len(generated.add)} Deployments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
