"""Keyword builders for pods, nodes and PDBs: API-shaped JSON, parsed by the real parser.

Going through the parser (not constructing `Pod` directly) means a test sees exactly the object
the informers would hand the scheduler, defaults and derived fields included. The fluent
wrappers in `wrappers.py` are built on these functions.
"""

from __future__ import annotations

import itertools
from typing import Any

from scheduler.api.objects import Node, Pod, PodDisruptionBudget
from scheduler.api.parse import parse_node, parse_pdb, parse_pod

_uids = itertools.count(1)


def pod_json(
    name: str = "pod",
    namespace: str = "default",
    *,
    uid: str | None = None,
    cpu: str | None = None,
    memory: str | None = None,
    requests: dict[str, str] | None = None,
    priority: int | None = None,
    scheduler_name: str = "kube-pysched",
    node_name: str = "",
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    host_ports: list[int] | None = None,
    scheduling_gates: list[str] | None = None,
    nominated_node_name: str = "",
    creation_timestamp: str = "2026-01-01T00:00:00Z",
    resource_version: str = "1",
    extra_containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    preemption_policy: str | None = None,
    start_time: str | None = None,
    deletion_timestamp: str | None = None,
    conditions: list[dict[str, str]] | None = None,
    topology_spread_constraints: list[dict[str, Any]] | None = None,
    owner_references: list[dict[str, Any]] | None = None,
    pod_group_name: str = "",
) -> dict[str, Any]:
    """A pod as the API server would return it, with only the given fields set."""
    reqs = dict(requests or {})
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if reqs:
        container["resources"] = {"requests": reqs}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [container, *(extra_containers or [])],
    }
    if init_containers:
        spec["initContainers"] = init_containers
    if priority is not None:
        spec["priority"] = priority
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    if pod_group_name:
        spec["schedulingGroup"] = {"podGroupName": pod_group_name}
    if topology_spread_constraints:
        spec["topologySpreadConstraints"] = topology_spread_constraints
    status: dict[str, Any] = {"phase": "Running" if start_time else "Pending"}
    if nominated_node_name:
        status["nominatedNodeName"] = nominated_node_name
    if start_time:
        status["startTime"] = start_time
    if conditions:
        status["conditions"] = conditions
    metadata_extra: dict[str, Any] = (
        {"deletionTimestamp": deletion_timestamp} if deletion_timestamp else {}
    )
    if owner_references:
        metadata_extra["ownerReferences"] = owner_references
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{next(_uids)}",
            "resourceVersion": resource_version,
            "labels": labels or {},
            "creationTimestamp": creation_timestamp,
            **metadata_extra,
        },
        "spec": spec,
        "status": status,
    }


def make_pod(name: str = "pod", namespace: str = "default", **kwargs: Any) -> Pod:
    """`pod_json(...)` parsed: the Pod the scheduler would see."""
    return parse_pod(pod_json(name, namespace, **kwargs))


def node_json(
    name: str = "node",
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int = 110,
    ephemeral_storage: str | None = None,
    extended: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    resource_version: str = "1",
) -> dict[str, Any]:
    """A node as the API server would return it."""
    allocatable: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if ephemeral_storage is not None:
        allocatable["ephemeral-storage"] = ephemeral_storage
    allocatable.update(extended or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"node-uid-{name}",
            "resourceVersion": resource_version,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def make_node(name: str = "node", **kwargs: Any) -> Node:
    """`node_json(...)` parsed: the Node the scheduler would see."""
    return parse_node(node_json(name, **kwargs))


def make_pdb(
    name: str,
    namespace: str = "default",
    *,
    match_labels: dict[str, str] | None = None,
    disruptions_allowed: int = 0,
    disrupted_pods: list[str] | None = None,
) -> PodDisruptionBudget:
    """A PodDisruptionBudget with the status the disruption controller would have written."""
    spec: dict[str, Any] = {}
    if match_labels is not None:
        spec["selector"] = {"matchLabels": match_labels}
    status: dict[str, Any] = {"disruptionsAllowed": disruptions_allowed}
    if disrupted_pods:
        status["disruptedPods"] = dict.fromkeys(disrupted_pods, "2026-01-01T00:00:00Z")
    return parse_pdb(
        {"metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": status}
    )
