"""Workload definitions (workloads/*.yaml) and the Pod and Node manifests they describe.

A workload names its sizes, a node template, and pod templates: init pods (placed before
measuring), measured pods, and optionally a background of pods and a churn of nodes and pods at
fixed intervals. A gang workload (`gangs:`) splits its measured pods into seeded random groups.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster import kwok_node_manifest

WORKLOADS_DIR = Path(__file__).resolve().parent / "workloads"
SCHEDULER_NAME = "bench-scheduler"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
# PriorityClasses the templates may name; scheduler_perf sets spec.priority directly, which the
# Priority admission plugin of a real API server refuses.
PRIORITY_CLASSES = {"bench-high": 9_999_999, "bench-unschedulable": 10}
# scheduler_perf's DRA template names (dra/templates); a pod's claim is named `resource`.
RESOURCE_API = "resource.k8s.io/v1"
DEVICE_CLASS, CLAIM_TEMPLATE, POD_CLAIM = "test-class", "test-claim-template", "resource"
CLAIM_SPEC = {
    "devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": DEVICE_CLASS}}]}
}


def api_object(api_version: str, kind: str, name: str, spec: Any) -> dict[str, Any]:
    """An object of `kind` named `name` with `spec`, as the API server takes it."""
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


@dataclass(frozen=True)
class Size:
    nodes: int
    init_pods: int
    measured_pods: int
    name: str = ""
    # A gang workload's group sizes, in creation order (measured_pods is their sum).
    groups: tuple[int, ...] = ()
    # How many background pods arrive at most (None: until the measured pods are settled).
    background_pods: int | None = None

    def group_of(self) -> list[int]:
        """The group index of each measured pod: groups take consecutive pods."""
        return [g for g, members in enumerate(self.groups) for _ in range(members)]


def group_sizes(count: int, smallest: int, largest: int, seed: int) -> tuple[int, ...]:
    """`count` group sizes drawn uniformly from smallest..largest with a fixed seed, so every
    scheduler (and every run) meets the same groups in the same order."""
    rng = random.Random(seed)
    return tuple(rng.randint(smallest, largest) for _ in range(count))


def _parse_size(name: str, doc: Mapping[str, Any], gang_seed: int | None) -> Size:
    if gang_seed is None:
        background = int(doc["backgroundPods"]) if "backgroundPods" in doc else None
        nodes, init = int(doc["nodes"]), int(doc.get("initPods", 0))
        return Size(nodes, init, int(doc["measuredPods"]), name, background_pods=background)
    groups = group_sizes(int(doc["groups"]), int(doc["minSize"]), int(doc["maxSize"]), gang_seed)
    return Size(int(doc["nodes"]), int(doc.get("initPods", 0)), sum(groups), name, groups)


@dataclass(frozen=True)
class PodTemplate:
    """The parts of a pod a workload varies; everything else is the same for every pod."""

    requests: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)
    priority_class: str | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> PodTemplate:
        return cls(
            requests={k: str(v) for k, v in doc.get("requests", {}).items()},
            labels=dict(doc.get("labels", {})),
            priority_class=doc.get("priorityClassName"),
            spec=dict(doc.get("spec", {})),
        )

    def manifest(self, name: str, **spec_fields: Any) -> dict[str, Any]:
        """The Pod (as a dict): one pause container with requests equal to limits, using each
        of the pod's resourceClaims."""
        spec: dict[str, Any] = {**self.spec, **spec_fields}
        resources: dict[str, Any] = {"requests": dict(self.requests), "limits": dict(self.requests)}
        if spec.get("resourceClaims"):
            resources["claims"] = [{"name": c["name"]} for c in spec["resourceClaims"]]
        spec = {
            "schedulerName": SCHEDULER_NAME,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "containers": [{"name": "pause", "image": PAUSE_IMAGE, "resources": resources}],
            **spec,
        }
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        metadata: dict[str, Any] = {"name": name}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


@dataclass(frozen=True)
class ResourceDriver:
    """scheduler_perf's DRA objects (dra/templates, its createResourceDriver op): a
    ResourceSlice per node with `devices` devices of `driver`, published as the op does (no
    kubelet plugin), the DeviceClass selecting the driver and the ResourceClaimTemplate asking
    one device of that class."""

    driver: str
    devices: int

    def slice(self, node: str) -> dict[str, Any]:
        attributes = {"model": {"string": "A100"}, "family": {"string": "GPU"}}
        attributes["driverVersion"] = {"version": "1.2.3"}
        devices = [
            {
                "name": f"instance-{i}",
                "attributes": {**attributes, "dra.example.com/numa": {"int": i}},
                "capacity": {"memory": {"value": "1Gi"}},
            }
            for i in range(self.devices)
        ]
        pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
        spec = {"driver": self.driver, "nodeName": node, "pool": pool, "devices": devices}
        return api_object(RESOURCE_API, "ResourceSlice", node, spec)

    def device_class(self) -> dict[str, Any]:
        selector = {"cel": {"expression": f'device.driver == "{self.driver}"'}}
        return api_object(RESOURCE_API, "DeviceClass", DEVICE_CLASS, {"selectors": [selector]})

    def claim_template(self) -> dict[str, Any]:
        return api_object(
            RESOURCE_API, "ResourceClaimTemplate", CLAIM_TEMPLATE, {"spec": CLAIM_SPEC}
        )

    def allocated_claim(
        self, name: str, node: str, device: int
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A claim of `device` on `node` and its status as allocated (scheduler_perf's
        allocResourceClaims): what an init pod placed on `node` holds."""
        claim = api_object(RESOURCE_API, "ResourceClaim", name, CLAIM_SPEC)
        result = {"request": "req-0", "driver": self.driver, "pool": node}
        result["device"] = f"instance-{device}"
        on_node = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        allocation = {
            "devices": {"results": [result]},
            "nodeSelector": {"nodeSelectorTerms": [on_node]},
        }
        return claim, {"status": {"allocation": allocation}}


@dataclass(frozen=True)
class NodeTemplate:
    """Node capacity plus labels assigned round-robin over each label's values."""

    capacity: Mapping[str, Any]
    labels: Mapping[str, list[str]] = field(default_factory=dict)
    # CSI driver name -> attach limit: a CSINode per node, as its CSI node plugin would create.
    csi_node: Mapping[str, int] = field(default_factory=dict)
    resource_driver: ResourceDriver | None = None

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> NodeTemplate:
        labels = {k: [str(v) for v in vs] for k, vs in doc.get("labels", {}).items()}
        csi = {str(k): int(v["count"]) for k, v in doc.get("csiNodeAllocatable", {}).items()}
        dra = doc.get("resourceDriver")
        driver = ResourceDriver(str(dra["name"]), int(dra["maxClaimsPerNode"])) if dra else None
        return cls(dict(doc["capacity"]), labels, csi, driver)

    def node_objects(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        """(collection path, manifest) of each object named as the node that its drivers would
        publish: a CSINode, a ResourceSlice."""
        out = []
        if self.csi_node:
            drivers = [
                {"name": driver, "nodeID": name, "allocatable": {"count": count}}
                for driver, count in self.csi_node.items()
            ]
            csi_node = api_object("storage.k8s.io/v1", "CSINode", name, {"drivers": drivers})
            out.append(("/apis/storage.k8s.io/v1/csinodes", csi_node))
        if self.resource_driver is not None:
            out.append((f"/apis/{RESOURCE_API}/resourceslices", self.resource_driver.slice(name)))
        return out

    def manifest(self, name: str, index: int, run_label: Mapping[str, str]) -> dict[str, Any]:
        labels = {key: values[index % len(values)] for key, values in self.labels.items()}
        labels.update(run_label)
        return kwok_node_manifest(
            name,
            cpu=str(self.capacity.get("cpu", "4")),
            memory=str(self.capacity.get("memory", "32Gi")),
            pods=int(self.capacity.get("pods", 110)),
            labels=labels,
            extra_capacity={
                k: str(v) for k, v in self.capacity.items() if k not in ("cpu", "memory", "pods")
            },
            registered_ready=True,
        )


@dataclass(frozen=True)
class VolumeTemplate:
    """A pre-bound PV and claim per pod (scheduler_perf's pv-csi.yaml and pvc.yaml): the PV
    names the claim in its claimRef, the claim names the PV. Unlike scheduler_perf (which has no
    PV controller and writes both statuses itself), the claim does not carry
    pv.kubernetes.io/bind-completed: kube-controller-manager's PV controller completes the
    binding (with the annotation and a claim synced before its PV it would mark it Lost)."""

    csi_driver: str
    size: str = "1Gi"
    access_mode: str = "ReadOnlyMany"

    @classmethod
    def parse(cls, doc: Mapping[str, Any] | None) -> VolumeTemplate | None:
        if not doc:
            return None
        return cls(
            str(doc["csiDriver"]),
            str(doc.get("size", "1Gi")),
            str(doc.get("accessMode", "ReadOnlyMany")),
        )

    def manifests(self, namespace: str, pod: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(claim name, PV, claim) for the pod `pod`; PVs are cluster-wide, so the PV's name
        starts with the namespace."""
        claim, volume = f"pvc-{pod}", f"{namespace}-{pod}"
        claim_ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": claim}
        pv = api_object(
            "v1",
            "PersistentVolume",
            volume,
            {
                "accessModes": [self.access_mode],
                "capacity": {"storage": self.size},
                "csi": {"driver": self.csi_driver, "volumeHandle": volume},
                "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {**claim_ref, "namespace": namespace},
            },
        )
        resources = {"requests": {"storage": self.size}}
        pvc_spec = {"accessModes": [self.access_mode], "resources": resources, "volumeName": volume}
        return claim, pv, api_object("v1", "PersistentVolumeClaim", claim, pvc_spec)


@dataclass(frozen=True)
class Arrivals:
    """Pods created one every `interval` seconds while measuring (scheduler_perf churn)."""

    interval: float
    template: PodTemplate
    node: NodeTemplate | None = None  # churn only: a node recreated with each pod

    @classmethod
    def parse(cls, doc: Mapping[str, Any] | None) -> Arrivals | None:
        if not doc:
            return None
        node = NodeTemplate.parse(doc["node"]) if "node" in doc else None
        return cls(float(doc["intervalMs"]) / 1000, PodTemplate.parse(doc["template"]), node)


@dataclass(frozen=True)
class Workload:
    name: str
    sizes: Mapping[str, Size]
    nodes: NodeTemplate
    measured: PodTemplate
    init: PodTemplate | None = None
    background: Arrivals | None = None
    churn: Arrivals | None = None
    requires: tuple[str, ...] = ()  # plugins beyond kube-pysched's current set the workload needs
    # ReplicaSet: the measured pods are created by one ReplicaSet (kube-controller-manager),
    # not by the harness; service: a Service selects them. Both feed default spreading.
    owner: str = ""
    service: bool = False
    volumes: VolumeTemplate | None = None  # a pre-bound PV/claim pair per init and measured pod
    # Gang workload: the seed of its group sizes (each size names groups, minSize, maxSize).
    gang_seed: int | None = None

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> Workload:
        gangs = doc.get("gangs")
        seed = int(gangs["seed"]) if gangs else None
        sizes = {str(name): _parse_size(str(name), s, seed) for name, s in doc["sizes"].items()}
        init = doc.get("initPods")
        return cls(
            name=doc["name"],
            sizes=sizes,
            nodes=NodeTemplate.parse(doc["nodes"]),
            measured=PodTemplate.parse(doc["measuredPods"]["template"]),
            init=PodTemplate.parse(init["template"]) if init else None,
            background=Arrivals.parse(doc.get("background")),
            churn=Arrivals.parse(doc.get("churn")),
            requires=tuple(doc.get("requires", ())),
            owner=str(doc.get("measuredPods", {}).get("owner", "")),
            service=bool(doc.get("measuredPods", {}).get("service", False)),
            volumes=VolumeTemplate.parse(doc.get("persistentVolumes")),
            gang_seed=seed,
        )


def replica_set_manifest(
    name: str, template: PodTemplate, replicas: int, extra_labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A ReplicaSet whose pods are `template`'s, selected by its labels; `extra_labels` go on
    the pods only (not the selector)."""
    pod = {
        "metadata": {"labels": {**template.labels, **(extra_labels or {})}},
        "spec": template.manifest("unused")["spec"],
    }
    selector = {"matchLabels": dict(template.labels)}
    spec = {"replicas": replicas, "selector": selector, "template": pod}
    return api_object("apps/v1", "ReplicaSet", name, spec)


def service_manifest(name: str, template: PodTemplate) -> dict[str, Any]:
    """A ClusterIP Service selecting `template`'s pods (scheduler_perf's service.yaml)."""
    ports = [{"protocol": "TCP", "port": 80, "targetPort": 8000}]
    return api_object("v1", "Service", name, {"selector": dict(template.labels), "ports": ports})


def millicpu(quantity: str) -> int:
    """A CPU quantity as the workload files write it ("900m", "4") in millicores."""
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def _check_background(path: Path, workload: Workload) -> None:
    """Background pods that fit on a node keep its room: arriving without end they would take
    every node and leave the measured pods not yet bound nowhere to go (PreemptionAsync's
    pods preempt a whole node each; a slow run would lose measured pods, a fast one would not).
    So each size caps such a background with backgroundPods, fewer than its nodes. Pods that
    never fit (Unschedulable) need no cap."""
    background = workload.background
    cpu = background.template.requests.get("cpu") if background else None
    if cpu is None or millicpu(cpu) > millicpu(str(workload.nodes.capacity["cpu"])):
        return
    for size in workload.sizes.values():
        if size.background_pods is None or not 0 < size.background_pods < size.nodes:
            raise ValueError(
                f"{path}: size {size.name} needs backgroundPods between 1 and {size.nodes - 1} "
                "(each preempting background pod takes a node from the measured pods)"
            )


def load_workloads(directory: Path = WORKLOADS_DIR) -> dict[str, Workload]:
    """Every workload file, by name, in file-name order."""
    workloads: dict[str, Workload] = {}
    for path in sorted(directory.glob("*.yaml")):
        workload = Workload.parse(yaml.safe_load(path.read_text()))
        if workload.name != path.stem:
            raise ValueError(f"{path}: name {workload.name!r} differs from the file name")
        if workload.owner not in ("", "ReplicaSet"):
            raise ValueError(f"{path}: measuredPods.owner {workload.owner!r}: only ReplicaSet")
        if (workload.owner or workload.service) and not workload.measured.labels:
            raise ValueError(f"{path}: an owner or a service needs measured pod labels")
        devices = workload.nodes.resource_driver.devices if workload.nodes.resource_driver else 0
        for size in workload.sizes.values() if devices else ():
            if size.init_pods > size.nodes * devices:  # each holds a device of its node
                raise ValueError(f"{path}: size {size.name} has more init pods than devices")
        _check_background(path, workload)
        workloads[workload.name] = workload
    return workloads


# The order `--workload all` runs them in: cheapest first, as scheduler_perf's files list them.
DEFAULT_ORDER = (
    "SchedulingBasic",
    "SchedulingNodeAffinity",
    "SchedulingPodAntiAffinity",
    "TopologySpreading",
    "SchedulingPodAffinity",
    "SchedulingPreferredPodAffinity",
    "SchedulingPreferredPodAntiAffinity",
    "PreferredTopologySpreading",
    "DefaultTopologySpreading",
    "Unschedulable",
    "PreemptionBasic",
    "PreemptionAsync",
    "MixedChurn",
    "SchedulingCSIPVs",
    "SchedulingWithResourceClaimTemplate",
)


def ordered_names(workloads: Mapping[str, Workload]) -> list[str]:
    """The scheduler_perf-style workloads `--workload all` runs. Gang workloads are left out:
    they run on a control plane of their own (feature gates) with their own set of schedulers,
    and only when named (gang_names)."""
    plain = {n: w for n, w in workloads.items() if w.gang_seed is None}
    known = [n for n in DEFAULT_ORDER if n in plain]
    return known + sorted(n for n in plain if n not in DEFAULT_ORDER)


def gang_names(workloads: Mapping[str, Workload]) -> list[str]:
    return sorted(n for n, w in workloads.items() if w.gang_seed is not None)
