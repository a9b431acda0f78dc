"""A what-if from end to end: the snapshot changed as asked (nodes drained, workloads added),
then one simulation per configuration on the same start, and the report comparing them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler.api.json_types import Json
from scheduler.api.parse import parse_pod
from scheduler.config.load import load_config
from scheduler.features import FeatureGates
from scheduler.framework.registry import Registry
from scheduler.simulate.claims import pod_devices
from scheduler.simulate.cluster import ClusterObjects, read_objects
from scheduler.simulate.engine import Outcome, Simulation
from scheduler.simulate.fragmentation import common_shape, parse_shape, room
from scheduler.simulate.groups import pod_groups
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
from scheduler.simulate.workloads import Priorities, drain, expand


@dataclass
class WhatIf:
    snapshot: Sequence[str]
    configs: Sequence[str] = ()
    add: Sequence[str] = ()
    drain: Sequence[str] = ()
    seed: int = 0
    features: FeatureGates = field(default_factory=FeatureGates)
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


def _key(pod: Json) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def prepare(whatif: WhatIf) -> Prepared:
    cluster = read_objects(whatif.snapshot)
    nodes = {n["metadata"]["name"]: n for n in cluster.of("Node")}
    # The evicted pods stay in the cluster loaded: the simulation evicts them, so the use
    # "before" is the cluster's as the snapshot found it.
    _, drained = drain(cluster.of("Pod"), nodes, whatif.drain)
    priorities = Priorities.of(cluster.of("PriorityClass"))
    new_pods = list(drained.recreated.values())
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
    evicted = [*drained.recreated, *drained.lost]
    return Prepared(cluster, new_pods, added, drained.nodes, drained.lost, evicted)


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
    outcome = sim.run()
    outcome.before = before
    cfg = _config_report(name, sim, outcome, [p.key for p in others])
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
                nodes=len(prepared.cluster.of("Node")),
                existing_pods=len(prepared.cluster.of("Pod")),
                added=prepared.added,
                drained=prepared.drained,
                lost=prepared.lost,
                shape=_shape(whatif, prepared) or {},
            )
        cfg, _ = run_one(name, path, prepared, registry, whatif, report.shape)
        report.configs.append(cfg)
        simulated |= set(cfg.placed) | {p.pod for p in cfg.pending}
    assert report is not None  # configs is never empty
    report.differences = differences(report.configs, sorted(simulated))
    return report
