"""Preemption and devices, kube-scheduler v1.37.2 and kube-pysched on one control plane: a
low-priority pod holds the only GPU of its node (a claim from a ResourceClaimTemplate); a
high-priority pod claiming a GPU the same way arrives. kube-scheduler v1.37.2 never preempts
for a device: DynamicResources rejects the node as UnschedulableAndUnresolvable, and its dry
run (no PreFilter extensions) still counts the victim's device as allocated. So in both
schedulers the preemptor stays pending with the same message and the holder keeps running.

Two cases per scheduler: the node has room for both pods' CPU (DynamicResources alone rejects
it: preemption "is not helpful"), and the node is short of CPU too (NodeResourcesFit rejects it
first, so preemption tries it, and finds that removing the holder frees no device)."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from e2e.cluster.nodes import NodeFactory
from e2e.dra.objects import Resources, driver_fixture, node_slice, resources_fixture  # noqa: F401
from e2e.preemption_scenarios import create_priority_classes, delete_priority_classes
from e2e.test_scheduling import (
    Factory,
    create,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.workload import pod_manifest

#: case -> (node CPU, each pod's CPU)
CASES = {"devices": ("8", "1"), "cpu-too": ("2", "1500m")}


def _holder_and_preemptor(
    core_v1: k8s.CoreV1Api,
    resources: Resources,
    namespace: str,
    prefix: str,
    scheduler: str,
    group: str,
    cpu: str,
    driver_name: str,
    classes: dict[int, str],
) -> dict[str, Any]:
    """The low-priority holder binds; the high-priority pod is marked unschedulable. Returns
    the preemptor's message and nomination and the holder's state afterwards."""
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver_name}}]}}
    resources.create(
        "resourceclaimtemplates",
        {"metadata": {"name": f"{prefix}-gpu"}, "spec": {"spec": spec}},
        namespace,
    )

    def pod(name: str, priority: int) -> dict[str, Any]:
        body = pod_manifest(
            f"{prefix}-{name}",
            scheduler_name=scheduler,
            cpu=cpu,
            node_selector={"g": group},
            priority_class=classes[priority],
        )
        body["spec"]["resourceClaims"] = [
            {"name": "gpu", "resourceClaimTemplateName": f"{prefix}-gpu"}
        ]
        return body

    create(core_v1, namespace, [pod("low", 100)])
    wait_bound(core_v1, namespace, [f"{prefix}-low"])
    create(core_v1, namespace, [pod("high", 1000)])
    # PostFilter (DefaultPreemption) has run once the condition is written.
    condition = wait_unschedulable(core_v1, namespace, f"{prefix}-high")
    high = core_v1.read_namespaced_pod(f"{prefix}-high", namespace)
    low = core_v1.read_namespaced_pod(f"{prefix}-low", namespace)
    disruption = [c.type for c in low.status.conditions or () if c.type == "DisruptionTarget"]
    return {
        "message": condition.message or "",
        "reason": condition.reason,
        "nominated": high.status.nominated_node_name,
        "low_bound": bool(low.spec.node_name),
        "low_deleting": low.metadata.deletion_timestamp is not None,
        "low_disrupted": disruption,
    }


def test_a_device_holder_is_not_preempted_as_in_kube_scheduler(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    resources: Resources,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    driver: str,
) -> None:
    name = unique("pysched")
    pysched(profile_config(name))
    classes = create_priority_classes(api_client, (100, 1000))
    try:
        # Every node first: each scheduler's message counts the other runs' nodes too.
        runs = []
        for case, (node_cpu, pod_cpu) in CASES.items():
            for scheduler in ("default-scheduler", name):
                group = unique("g")
                (node,) = kwok_nodes(1, cpu=node_cpu, memory="16Gi", labels={"g": group})
                assert node.metadata is not None and node.metadata.name is not None
                resources.create(
                    "resourceslices", node_slice(node.metadata.name, driver, ["gpu-0"])
                )
                prefix = f"{'ks' if scheduler == 'default-scheduler' else 'py'}-{case}"
                runs.append((case, scheduler, group, pod_cpu, prefix))
        outcomes: dict[str, list[dict[str, Any]]] = {case: [] for case in CASES}
        for case, scheduler, group, pod_cpu, prefix in runs:
            outcomes[case].append(
                _holder_and_preemptor(
                    core_v1,
                    resources,
                    namespace,
                    prefix,
                    scheduler,
                    group,
                    pod_cpu,
                    driver,
                    classes,
                )
            )
    finally:
        delete_priority_classes(api_client, classes)
    nodes = len(core_v1.list_node().items)
    for case, (theirs, ours) in outcomes.items():
        print(f"{case}: kube-scheduler {theirs}\n{case}: kube-pysched {ours}")
        assert ours == theirs, case
        assert theirs["low_bound"] and not theirs["low_deleting"] and not theirs["low_disrupted"]
        assert theirs["nominated"] is None
        assert theirs["reason"] == "Unschedulable"
    devices, cpu_too = outcomes["devices"][0]["message"], outcomes["cpu-too"][0]["message"]
    assert devices.startswith(f"0/{nodes} nodes are available: 1 cannot allocate all claims")
    assert devices.endswith(
        f"preemption: 0/{nodes} nodes are available: {nodes} Preemption is not helpful for "
        "scheduling."
    )
    assert cpu_too.startswith(f"0/{nodes} nodes are available: 1 Insufficient cpu")
    # The dry run without the holder: NodeResourcesFit passes, DynamicResources still counts
    # the holder's GPU as allocated.
    assert cpu_too.endswith(
        f"preemption: 0/{nodes} nodes are available: 1 cannot allocate all claims, "
        f"{nodes - 1} Preemption is not helpful for scheduling."
    )
