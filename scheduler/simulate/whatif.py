"""A what-if from end to end: the snapshot changed as asked (workloads scaled, nodes removed,
added and drained, workloads added), then one simulation per configuration on the same start,
and the report comparing them.

The changes apply in that order: scaling reads the workloads' pods as the snapshot has them;
a pod scaling deletes is not evicted again by a drain or a node's removal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scheduler.api.json_types import Json
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.config.load import load_config
from scheduler.features import FeatureGates
from scheduler.framework.registry import Registry
from scheduler.simulate.claims import pod_devices
from scheduler.simulate.cluster import ClusterObjects, read_objects
from scheduler.simulate.engine import Outcome, Simulation
from scheduler.simulate.evictions import Budgets
from scheduler.simulate.fragmentation import common_shape, parse_shape, room
from scheduler.simulate.groups import pod_groups
from scheduler.simulate.nodes import matching_nodes, node_copies
from scheduler.simulate.report import (
    ConfigReport,
    Headroom,
    NodeUse,
    PendingPod,
    Preemption,
    Report,
    differences,
    reason_counts,
)
from scheduler.simulate.scale import ScaleTarget, scale
from scheduler.simulate.workloads import (
    RECREATING_OWNERS,
    Priorities,
    controller_of,
    drain,
    expand,
    recreated,
    remove_nodes,
)


@dataclass
class WhatIf:
    snapshot: Sequence[str]
    configs: Sequence[str] = ()
    add: Sequence[str] = ()
    drain: Sequence[str] = ()
    seed: int = 0
    features: FeatureGates = field(default_factory=FeatureGates)
    scale: Sequence[ScaleTarget] = ()
    #: Label selectors (kubectl's -l syntax) of the nodes to delete.
    remove_nodes: Sequence[str] = ()
    #: Node manifests to copy, `add_node_count` copies of each.
    add_nodes: Sequence[str] = ()
    add_node_count: int = 1
    #: Drain by deletion, without the eviction API's PodDisruptionBudget check.
    disable_eviction: bool = False
    #: A preempted pod whose controller recreates it comes back as a new pending pod.
    recreate_victims: bool = False
    #: The time a scale-down ranks pods' ages from (the run's start when None).
    now: datetime | None = None
    #: The reference pod shape of the headroom figures ("cpu=1,memory=2Gi"); empty: the most
    #: common request among the added pods.
    shape: str = ""


@dataclass
class Prepared:
    """The cluster after the what-if's changes, and the pods to create in it, in order."""

    cluster: ClusterObjects
    new_pods: list[Json]
    added: list[str]
    drained: list[str]
    lost: list[str]
    evicted: list[str]
    scaled: list[str] = field(default_factory=list)
    scaled_down: list[str] = field(default_factory=list)
    removed_nodes: list[str] = field(default_factory=list)
    added_nodes: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    #: Every pod of the what-if's start, as JSON (what a recreated victim is made from).
    raw_pods: dict[str, Json] = field(default_factory=dict)
    #: The snapshot's nodes and pods, before the what-if's changes.
    snapshot_nodes: int = 0
    snapshot_pods: int = 0


def _key(pod: Json) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def prepare(whatif: WhatIf) -> Prepared:
    cluster = read_objects(whatif.snapshot)
    counts = len(cluster.of("Node")), len(cluster.of("Pod"))
    scaled = scale(cluster, whatif.scale, whatif.now or datetime.now(UTC))
    gone = set(scaled.deleted)
    new_pods = list(scaled.created)
    removed: list[str] = []
    lost: list[str] = []
    if whatif.remove_nodes:
        names = matching_nodes(cluster, whatif.remove_nodes)
        doomed = set(names)
        on_removed = {
            _key(p) for p in cluster.of("Pod") if (p.get("spec") or {}).get("nodeName") in doomed
        }
        nodes_left, pods_left, deleted = remove_nodes(
            [p for p in cluster.of("Pod") if _key(p) not in gone], cluster.of("Node"), names
        )
        gone -= on_removed
        cluster.by_kind["Node"] = nodes_left
        cluster.by_kind["Pod"] = [
            *pods_left,
            *(p for p in cluster.of("Pod") if _key(p) in gone),
        ]
        removed = deleted.nodes
        lost += deleted.lost
        new_pods += deleted.recreated.values()
    added_nodes: list[str] = []
    taken = {n["metadata"]["name"] for n in cluster.of("Node")}
    for template in read_objects(whatif.add_nodes):
        for node in node_copies(template, whatif.add_node_count, taken):
            cluster.add(node)
            taken.add(node["metadata"]["name"])
            added_nodes.append(node["metadata"]["name"])
    nodes = {n["metadata"]["name"]: n for n in cluster.of("Node")}
    # The evicted pods stay in the cluster loaded: the simulation evicts them, so the use
    # "before" is the cluster's as the snapshot found it.
    budgets = None if whatif.disable_eviction else Budgets.of(cluster.of("PodDisruptionBudget"))
    _, drained = drain(
        [p for p in cluster.of("Pod") if _key(p) not in gone],
        nodes,
        whatif.drain,
        budgets,
        serial=len(new_pods),
    )
    priorities = Priorities.of(cluster.of("PriorityClass"))
    new_pods += drained.recreated.values()
    lost += drained.lost
    added: list[str] = []
    for obj in read_objects(whatif.add):
        made, controllers = expand(obj)
        for controller in controllers:
            cluster.add(controller)
        for pod in made:
            priorities.admit(pod)
            pod["spec"].setdefault("schedulerName", "default-scheduler")
            added.append(_key(pod))
        new_pods += made
    for pod in new_pods:
        priorities.admit(pod)
        pod["spec"].setdefault("schedulerName", "default-scheduler")
    evicted = [*sorted(gone), *drained.recreated, *drained.lost]
    raw_pods = {_key(p): p for p in cluster.of("Pod")}
    raw_pods.update((_key(p), p) for p in new_pods)
    return Prepared(
        cluster,
        new_pods,
        added,
        drained.nodes,
        lost,
        evicted,
        scaled=scaled.summary,
        scaled_down=scaled.deleted,
        removed_nodes=removed,
        added_nodes=added_nodes,
        blocked=drained.blocked,
        raw_pods=raw_pods,
        snapshot_nodes=counts[0],
        snapshot_pods=counts[1],
    )


class _VictimRecreator:
    """Puts back, as new pending pods, the preemption victims whose controller recreates them
    (the ReplicaSet, StatefulSet or Job controller would, at once)."""

    def __init__(self, sim: Simulation, prepared: Prepared) -> None:
        self.sim = sim
        self.raw = prepared.raw_pods
        self.serial = 1000 + len(prepared.new_pods)
        self.made: dict[str, str] = {}

    def __call__(self, victim: Pod) -> None:
        raw = self.raw.get(victim.key)
        if raw is None or (controller_of(raw) or {}).get("kind") not in RECREATING_OWNERS:
            self.made[victim.key] = ""  # no controller puts it back
            return
        self.serial += 1
        pod = recreated(raw, self.serial)
        new_key = _key(pod)
        self.raw[new_key] = pod
        self.made[victim.key] = new_key
        self.sim.add_pods([pod])


def run_one(
    name: str,
    config_path: str | None,
    prepared: Prepared,
    registry: Registry,
    whatif: WhatIf,
    shape: dict[str, str] | None = None,
) -> tuple[ConfigReport, Simulation]:
    config = load_config(config_path, available_plugins=set(registry), features=whatif.features)
    sim = Simulation(config, prepared.cluster, registry, features=whatif.features, seed=whatif.seed)
    before = sim.usage()
    room_before = room(sim.cache, sim.nodes, shape) if shape else None
    sim.evict(prepared.evicted)
    others = sim.add_pods(prepared.new_pods)
    victims = _VictimRecreator(sim, prepared) if whatif.recreate_victims else None
    sim.api.on_deleted = victims
    outcome = sim.run()
    outcome.before = before
    cfg = _config_report(name, sim, outcome, [p.key for p in others])
    if victims is not None:
        cfg.recreated_victims = dict(sorted(victims.made.items()))
    if shape and room_before is not None:
        after = room(sim.cache, sim.nodes, shape)
        cfg.headroom = Headroom(room_before[0], after[0], room_before[1], after[1])
    return cfg, sim


def _config_report(name: str, sim: Simulation, outcome: Outcome, others: list[str]) -> ConfigReport:
    placed = {
        key: node
        for key, node in outcome.placed.items()
        if key in sim.api.pods and sim.api.pods[key].node_name == node
    }
    victims_node = {p.key: p.node_name for p in sim.api.deleted}
    nodes = [
        NodeUse(
            name,
            zone,
            cpu,
            outcome.before[name][2],
            cpu_after,
            mem,
            outcome.before[name][4],
            mem_after,
        )
        for name, (zone, cpu, cpu_after, mem, mem_after) in sorted(outcome.after.items())
        if name in outcome.before
    ]
    return ConfigReport(
        config=name,
        placed=dict(sorted(placed.items())),
        pending=[
            PendingPod(key, message, reason_counts(outcome.attempts.get(key)))
            for key, message in sorted(outcome.pending.items())
        ],
        preemptions=[
            Preemption(preemptor, victims_node.get(victims[0], "") if victims else "", victims)
            for preemptor, victims in sorted(outcome.preemptions.items())
        ],
        groups=pod_groups(sim),
        devices={
            key: devices
            for key in sorted(placed)
            if (devices := pod_devices(sim.api.pods[key], sim.api.dra))
        },
        tied={key: n for key, n in sorted(outcome.tied.items()) if key in placed},
        placed_per_node=dict(sorted(Counter(placed.values()).items())),
        nodes=nodes,
        other_scheduler=sorted(others),
        cycles=outcome.cycles,
        seconds=outcome.seconds,
        stopped_early=outcome.stopped_early,
    )


def _shape(whatif: WhatIf, prepared: Prepared) -> dict[str, str] | None:
    if whatif.shape:
        return parse_shape(whatif.shape)
    added = set(prepared.added)
    return common_shape(parse_pod(p) for p in prepared.new_pods if _key(p) in added)


def simulate(whatif: WhatIf, registry: Registry) -> Report:
    """Runs every configuration (kube-scheduler's defaults, under the profile name
    kube-pysched, when none is given) on the same prepared cluster."""
    configs: list[tuple[str, str | None]] = [(path, path) for path in whatif.configs] or [
        ("defaults", None)
    ]
    report: Report | None = None
    simulated: set[str] = set()
    for name, path in configs:
        # Each run starts from the files: a run changes the objects it loads.
        prepared = prepare(whatif)
        if report is None:
            report = Report(
                snapshot=list(whatif.snapshot),
                seed=whatif.seed,
                nodes=prepared.snapshot_nodes,
                existing_pods=prepared.snapshot_pods,
                added=prepared.added,
                drained=prepared.drained,
                lost=prepared.lost,
                scaled=prepared.scaled,
                scaled_down=prepared.scaled_down,
                removed_nodes=prepared.removed_nodes,
                added_nodes=prepared.added_nodes,
                blocked=prepared.blocked,
                shape=_shape(whatif, prepared) or {},
            )
        cfg, _ = run_one(name, path, prepared, registry, whatif, report.shape)
        report.configs.append(cfg)
        simulated |= set(cfg.placed) | {p.pod for p in cfg.pending}
    assert report is not None  # configs is never empty
    report.differences = differences(report.configs, sorted(simulated))
    return report
