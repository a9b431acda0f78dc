"""One simulation: a cluster, one scheduler configuration, a what-if; the live scheduler's own
parts driven to the end.

The frameworks, queue, cache, event handlers and the scheduling and binding cycles
(`schedule_one.ScheduleOne`, `PodCycle`, `GroupCycle`) are the ones the live process builds
(scheduler/cmd/app.py); what differs is below them: an `InMemoryApi` in place of the client
(bindings, deletions and status patches applied at once and fed back as the informers' watch
events, between cycles), a fake clock, binding cycles run in line, and every random choice
seeded. A binding cycle whose pod waits at Permit is parked until the wait ends
(`permit.py`): a sibling's Permit allows it, or the loop moves the fake clock past the Permit
timeout and the pod goes back to the queue as the live one would. Preemption runs
synchronously in PostFilter (the SchedulerAsyncPreemption gate is off), so its victims are
gone before the next cycle, as they would be once their deletions land.

The loop pops pods until the queue has nothing left to try and no pod waits at Permit: pods
in the unschedulable pool stay pending (nothing in a simulation changes the cluster after the
last binding but the scheduler itself, so no later event would move them).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from scheduler.algorithm import SchedulingAlgorithm
from scheduler.api.dra import (
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_claim,
)
from scheduler.api.dra_slices import parse_resource_slice
from scheduler.api.gang import (
    GENERIC_WORKLOAD,
    parse_kube_pod_group,
    parse_pod_group,
)
from scheduler.api.json_types import Json
from scheduler.api.namespace import Namespace, parse_namespace
from scheduler.api.objects import Node, Pod
from scheduler.api.parse import parse_pdb, parse_pod, parse_service, parse_workload
from scheduler.api.spread import Service, Workload
from scheduler.api.storage import (
    parse_claim,
    parse_csi_driver,
    parse_csi_node,
    parse_storage_capacity,
    parse_storage_class,
    parse_volume,
)
from scheduler.backend.cache import Cache, Snapshot
from scheduler.clock import FakeClock
from scheduler.config.types import KubeSchedulerConfiguration
from scheduler.cycle_services import CycleServices
from scheduler.eventhandlers import EventHandlers, PodTransform, transform_node
from scheduler.explain.record import ExplainStore
from scheduler.features import FeatureGates
from scheduler.framework.dra import DRAManager, StaticDRA
from scheduler.framework.gang import StaticGangs
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import Framework, FrameworkServices
from scheduler.profiles import build_frameworks, build_queue
from scheduler.schedule_group import GroupCycle
from scheduler.schedule_one import PodCycle, ScheduleOne
from scheduler.simulate.claims import ClaimController
from scheduler.simulate.cluster import ClusterObjects
from scheduler.simulate.heap import collector_paused
from scheduler.simulate.memapi import (
    InlineDispatcher,
    InMemoryApi,
    MemoryRecorder,
    PodEvent,
)
from scheduler.simulate.permit import PermitParking

#: Scheduling attempts per pod of the simulation, on average (a preemptor takes two, a pod
#: moved back by events a few); past the bound the run stops with a note, never spins.
ATTEMPTS_PER_POD = 20
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
#: The fake clock's step between two pods the what-if creates.
CREATE_INTERVAL = 0.001
#: How far the fake clock moves when only pods backing off are left.
BACKOFF_STEP = 10.0


ZONE_LABEL = "topology.kubernetes.io/zone"

#: One node's use: (zone, cpu allocatable, cpu requested (millicores), memory allocatable,
#: memory requested (bytes)).
NodeUse = tuple[str, int, int, int, int]


class SimulationError(ValueError):
    """A configuration or cluster the simulator cannot run."""


@dataclass
class Outcome:
    """What one run did, in the simulator's terms (the report is built from it)."""

    placed: dict[str, str] = field(default_factory=dict)
    pending: dict[str, str] = field(default_factory=dict)
    preemptions: dict[str, list[str]] = field(default_factory=dict)
    attempts: dict[str, Json] = field(default_factory=dict)
    #: Placed pods whose best score several nodes shared (the choice among them is the
    #: seed's): pod key -> how many nodes.
    tied: dict[str, int] = field(default_factory=dict)
    cycles: int = 0
    seconds: float = 0.0
    stopped_early: bool = False
    #: Per node, before the run and after it.
    before: dict[str, NodeUse] = field(default_factory=dict)
    after: dict[str, NodeUse] = field(default_factory=dict)


def _features(base: FeatureGates | None) -> FeatureGates:
    values = (base or FeatureGates()).as_dict()
    values["SchedulerAsyncPreemption"] = False
    return FeatureGates(values)


class Simulation:
    """The cluster loaded into a fresh cache and queue under one configuration."""

    @collector_paused
    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        cluster: ClusterObjects,
        registry: Registry,
        *,
        features: FeatureGates | None = None,
        seed: int = 0,
    ) -> None:
        self.features = _features(features)
        self.clock = FakeClock()
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.recorder = MemoryRecorder()
        self.api = InMemoryApi(dra=self._static_dra(cluster))
        self._load_storage(cluster)
        self.dra = DRAManager(self.api.dra)
        self.claims = ClaimController(cluster.of("ResourceClaimTemplate"), seed)
        self.gangs = self._gangs(cluster)
        namespaces = {ns.name: ns for ns in map(parse_namespace, cluster.of("Namespace"))}
        pdbs = [parse_pdb(obj) for obj in cluster.of("PodDisruptionBudget")]
        services: dict[str, list[Service]] = {}
        for svc in map(parse_service, cluster.of("Service")):
            services.setdefault(svc.namespace, []).append(svc)
        workloads: dict[tuple[str, str, str], Workload] = {}
        for kind in ("ReplicationController", "ReplicaSet", "StatefulSet"):
            for obj in cluster.of(kind):
                wl = parse_workload(kind, obj)
                workloads[kind, wl.namespace, wl.name] = wl
        self._namespaces: dict[str, Namespace] = namespaces
        framework_services = FrameworkServices(
            snapshot=lambda: self.snapshot,
            api=self.api,
            event_recorder=self.recorder,
            features=self.features,
            pdbs=lambda: list(pdbs),
            pod_lookup=self.api.pods.get,
            namespace_lookup=namespaces.get,
            namespace_list=lambda: list(namespaces.values()),
            services=lambda ns: services.get(ns, []),
            workload=lambda kind, ns, name: workloads.get((kind, ns, name)),
            storage=lambda: self.api.storage,
            dra=lambda: self.dra,
            gangs=lambda: self.gangs,
            gang_members=self.cache.gang_members,
            node_now=self.cache.node_now,
            node_generation=self.cache.node_generation,
            watched_gangs=lambda: self.gangs,
            clock=self.clock,
            seed=seed,
        )
        self.frameworks: dict[str, Framework] = build_frameworks(
            config, registry, framework_services
        )
        self.parking = PermitParking(self.frameworks.values)
        self.queue = build_queue(
            self.frameworks, config, self.features, float("inf"), clock=self.clock
        )
        self.handlers = EventHandlers(self.cache, self.queue, self.frameworks)
        self.transform = PodTransform(
            self.frameworks, scheduling_groups=self.features.enabled(GENERIC_WORKLOAD)
        )
        self.explain = ExplainStore(1 << 30)
        cycle_services = CycleServices(
            cache=self.cache,
            queue=self.queue,
            snapshot=self.snapshot,
            algorithm=SchedulingAlgorithm(
                self.snapshot, config.percentage_of_nodes_to_score or 0, seed=seed
            ),
            dispatcher=InlineDispatcher(),
            api=self.api,
            recorder=self.recorder,
            pod_lookup=self.api.pods.get,
            clock=self.clock,
            binding_pool=self.parking,
            explain=self.explain,
            spawn=self.parking.spawn,
        )
        steps = PodCycle(cycle_services)
        self.schedule_one = ScheduleOne(
            cycle_services,
            self.frameworks,
            steps,
            group_cycle=GroupCycle(cycle_services, steps),
        )
        self.nodes: list[Node] = []
        for raw in cluster.of("Node"):
            node = transform_node(raw)
            self.nodes.append(node)
            self.handlers.on_node_add(node)
        self.existing: list[Pod] = []
        for raw in cluster.of("Pod"):
            if (raw.get("status") or {}).get("phase") in TERMINAL_PHASES:
                continue
            pod = self.transform(self.claims.claims_for(raw, self.api.dra))
            if pod is None:
                continue
            self.api.pods[pod.key] = pod
            self.gangs.add(pod)
            self.handlers.on_pod_add(pod)
            self.existing.append(pod)

    @staticmethod
    def _static_dra(cluster: ClusterObjects) -> StaticDRA:
        return StaticDRA(
            claims=map(parse_resource_claim, cluster.of("ResourceClaim")),
            slices=map(parse_resource_slice, cluster.of("ResourceSlice")),
            classes=map(parse_device_class, cluster.of("DeviceClass")),
            taint_rules=map(parse_device_taint_rule, cluster.of("DeviceTaintRule")),
        )

    def _load_storage(self, cluster: ClusterObjects) -> None:
        api = self.api
        for raw in cluster.of("PersistentVolumeClaim"):
            meta = raw["metadata"]
            api.raw_claims[f"{meta.get('namespace', '')}/{meta['name']}"] = raw
        for raw in cluster.of("PersistentVolume"):
            api.raw_volumes[raw["metadata"]["name"]] = raw
        api.storage.add(
            *map(parse_claim, cluster.of("PersistentVolumeClaim")),
            *map(parse_volume, cluster.of("PersistentVolume")),
            *map(parse_storage_class, cluster.of("StorageClass")),
            *map(parse_csi_node, cluster.of("CSINode")),
            *map(parse_csi_driver, cluster.of("CSIDriver")),
            *map(parse_storage_capacity, cluster.of("CSIStorageCapacity")),
        )

    @staticmethod
    def _gangs(cluster: ClusterObjects) -> StaticGangs:
        gangs = StaticGangs()
        for raw in cluster.of("PodGroup"):
            if str(raw.get("apiVersion", "")).startswith("scheduling.x-k8s.io/"):
                gangs.add(parse_pod_group(raw))
            else:
                gangs.add(parse_kube_pod_group(raw))
        return gangs

    def evict(self, keys: Iterable[str]) -> None:
        """Pods deleted (a drain's evictions), as the API server would announce it."""
        for key in keys:
            pod = self.api.pods.pop(key, None)
            if pod is not None:
                self.api.events.append(PodEvent("delete", None, pod))

    @collector_paused
    def add_pods(self, raws: Iterable[Json]) -> list[Pod]:
        """Pods created, as the API server would announce them; the ones no profile of this
        configuration schedules are returned apart (they would wait for another scheduler)."""
        others: list[Pod] = []
        for given in raws:
            # kube-controller-manager's part: the claims of the pod's templates.
            raw = self.claims.claims_for(given, self.api.dra)
            pod = self.transform(raw)
            if pod is None:
                others.append(parse_pod(raw))
                continue
            self.gangs.add(pod)
            self.api.add_pod(pod)
            # Created one after the other, as a client or controller creates them: the
            # queue's order among equal priorities is their creation order.
            self.clock.step(CREATE_INTERVAL)
        return others

    def usage(self) -> dict[str, NodeUse]:
        """Every node's allocatable and requested cpu and memory, as the cache holds them."""
        out: dict[str, NodeUse] = {}
        for node in self.nodes:
            info = self.cache.node_now(node.name)
            if info is None:
                continue
            alloc, req = info.allocatable, info.requested
            zone = node.labels.get(ZONE_LABEL, "")
            out[node.name] = (zone, alloc.milli_cpu, req.milli_cpu, alloc.memory, req.memory)
        return out

    def held_reason(self, pod: Pod) -> str:
        """The message of the PreEnqueue plugin that holds the pod out of the queue ("" when
        none does): the reason of a pod never tried, where no FailedScheduling event is."""
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None:
            return ""
        for plugin in fwk.pre_enqueue_plugins:
            status = plugin.pre_enqueue(pod)
            if status is not None and not status.is_success():
                return status.message()
        return ""

    def _deliver(self) -> None:
        """The watch events of the writes so far, through the live event handlers."""
        events = self.api.events
        while events:
            event = events.popleft()
            if event.action == "add":
                self.handlers.on_pod_add(event.new)
            elif event.action == "update" and event.old is not None:
                self.handlers.on_pod_update(event.old, event.new)
            else:
                self.handlers.on_pod_delete(event.new)
                self.gangs.remove(event.new)

    def run(self) -> Outcome:
        """Schedules until nothing is left to try."""
        start = time.perf_counter()
        outcome = Outcome()
        self._deliver()
        outcome.before = self.usage()
        limit = ATTEMPTS_PER_POD * max(1, len(self.api.pods)) + 100
        while True:
            self._deliver()
            if self.parking.run_finished():
                continue  # their bindings or rejections are events to deliver first
            if not self.queue.active_len() and not self.queue.backoff_len():
                if not self.parking:
                    break
                # Pods wait at Permit and nothing else can happen: time passes until a
                # Permit timeout rejects them (timers run on the fake clock).
                self.clock.step(BACKOFF_STEP)
                self.queue.flush_backoff_q_completed()
                continue
            if outcome.cycles >= limit:
                outcome.stopped_early = True
                break
            pinfo = self.queue.pop(timeout=0)
            if pinfo is None:
                self.clock.step(BACKOFF_STEP)
                self.queue.flush_backoff_q_completed()
                continue
            outcome.cycles += 1
            self.schedule_one.schedule(pinfo)
        outcome.seconds = time.perf_counter() - start
        outcome.after = self.usage()
        outcome.placed = dict(self.api.bindings)
        for key in outcome.placed:
            namespace, _, name = key.partition("/")
            placed = self.explain.find(namespace, name)
            scores = placed.scores if placed is not None else None
            if scores is not None and scores.best > 1:
                outcome.tied[key] = scores.best
        for key, pod in self.api.pods.items():
            if not pod.node_name and pod.scheduler_name in self.frameworks:
                outcome.pending[key] = self.recorder.failed.get(key) or self.held_reason(pod)
                attempt = self.explain.find(pod.namespace, pod.name)
                if attempt is not None:
                    outcome.attempts[key] = attempt.to_json()
        outcome.preemptions = {k: sorted(v) for k, v in self.recorder.preempted.items()}
        for fwk in self.frameworks.values():
            fwk.close()
        return outcome
