"""`make demo`: a local control plane, kwok nodes, kube-pysched, and a sample workload.

The GPU node publishes two GPUs in a ResourceSlice (created through the API, as scheduler_perf
does: no driver runs) and a DeviceClass selects them; one pod claims a GPU through a
ResourceClaimTemplate (kube-controller-manager generates its claim) and DynamicResources
allocates it. Prints where each pod landed, the devices allocated to its claims and, for the
pods that wait, kube-pysched's own explanation (the PodScheduled condition message), then the
metrics URL. With a terminal attached it keeps
everything running until Ctrl-C so the metrics can be browsed; `--exit` tears down at once.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kubernetes import client as k8s

from e2e.cluster import (
    ControlPlane,
    create_kwok_node,
    wait_default_service_account,
    wait_for,
    wait_nodes_ready,
)
from e2e.pysched import Pysched, metric_value
from e2e.workload import pod_manifest, pod_scheduled_condition

NAMESPACE = "demo"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

NODES: list[dict[str, Any]] = [
    {"name": "kwok-small-a", "cpu": "2", "memory": "4Gi", "labels": {ZONE: "a"}},
    {"name": "kwok-small-b", "cpu": "2", "memory": "4Gi", "labels": {ZONE: "b"}},
    {"name": "kwok-large-a", "cpu": "16", "memory": "64Gi", "labels": {ZONE: "a", "disk": "ssd"}},
    {
        "name": "kwok-gpu-b",
        "cpu": "8",
        "memory": "32Gi",
        "labels": {ZONE: "b", "accelerator": "gpu"},
        "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
    },
]

GPU_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
GPU_NODE = "kwok-gpu-b"
GPU_DRIVER = "gpu.example.com"
RESOURCE_GROUP, RESOURCE_VERSION = "resource.k8s.io", "v1"


def gpu_objects() -> list[tuple[str, dict[str, Any]]]:
    """(plural, object) of resource.k8s.io/v1, cluster-scoped first: the GPU node's slice of
    two GPUs, the class that selects them, and the template of a one-GPU claim."""
    gpus = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": "a100"}},
            "capacity": {"memory": {"value": "40Gi"}},
        }
        for i in range(2)
    ]
    slice_ = {
        "metadata": {"name": f"{GPU_NODE}-{GPU_DRIVER}"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": GPU_NODE,
            "pool": {"name": GPU_NODE, "generation": 1, "resourceSliceCount": 1},
            "devices": gpus,
        },
    }
    selector = {"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}
    device_class = {"metadata": {"name": "gpu"}, "spec": {"selectors": [selector]}}
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    template = {
        "metadata": {"name": "one-gpu"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }
    return [
        ("resourceslices", slice_),
        ("deviceclasses", device_class),
        ("resourceclaimtemplates", template),
    ]


def create_gpu_objects(api: k8s.ApiClient) -> None:
    custom = k8s.CustomObjectsApi(api)
    for plural, body in gpu_objects():
        if plural == "resourceclaimtemplates":
            custom.create_namespaced_custom_object(
                RESOURCE_GROUP, RESOURCE_VERSION, NAMESPACE, plural, body
            )
        else:
            custom.create_cluster_custom_object(RESOURCE_GROUP, RESOURCE_VERSION, plural, body)


def pod_devices(custom: k8s.CustomObjectsApi, pod: Any) -> str:
    """The devices allocated to the pod's claims, as `driver/device`, comma-separated."""
    names = [s.resource_claim_name for s in pod.status.resource_claim_statuses or ()]
    names += [
        c.resource_claim_name for c in pod.spec.resource_claims or () if c.resource_claim_name
    ]
    devices = []
    for name in names:
        if not name:
            continue
        claim = custom.get_namespaced_custom_object(
            RESOURCE_GROUP, RESOURCE_VERSION, NAMESPACE, "resourceclaims", name
        )
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            devices.append(f"{result['driver']}/{result['device']}")
    return ", ".join(devices)


WEB_REPLICAS = 8


def web_objects() -> tuple[dict[str, Any], dict[str, Any]]:
    """A Deployment of 8 and the Service in front of it: no constraint of their own, spread over
    nodes and zones by PodTopologySpread's system default constraints, as kube-scheduler does."""
    labels = {"app": "web"}
    template = pod_manifest("unused", cpu="250m", memory="256Mi", labels=labels)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": WEB_REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": template["spec"]},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    return deployment, service


def one_per_node(name: str) -> dict[str, Any]:
    """A `cache` replica: required anti-affinity keeps two of them off the same node."""
    term = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME}
    return pod_manifest(
        name,
        labels={"app": "cache"},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )


def gpu_pod(name: str) -> dict[str, Any]:
    """A pod that asks for one GPU through the `one-gpu` ResourceClaimTemplate."""
    pod = pod_manifest(name, cpu="4", memory="8Gi", tolerations=[GPU_TOLERATION])
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def workload() -> list[dict[str, Any]]:
    """A mix that exercises resources, selectors, taints, host ports, gates and affinity."""
    pods = [one_per_node(f"cache-{i}") for i in range(4)]
    pods += [
        pod_manifest("db-ssd", cpu="2", memory="8Gi", node_selector={"disk": "ssd"}),
        gpu_pod("trainer"),
        pod_manifest("ingress-1", host_port=8080),
        pod_manifest("ingress-2", host_port=8080),
        pod_manifest("zone-b-cache", cpu="500m", node_selector={ZONE: "b"}),
        pod_manifest("too-big", cpu="64", memory="1Gi"),
        pod_manifest("needs-gpu-no-toleration", node_selector={"accelerator": "gpu"}),
        pod_manifest("gated", scheduling_gates=["example.com/approval"]),
    ]
    return pods


def wait_settled(core: k8s.CoreV1Api, count: int, timeout: float = 60.0) -> None:
    """`count` pods exist, and every one is bound, or has a PodScheduled condition, or is gated."""

    def settled() -> bool | str:
        pods = core.list_namespaced_pod(NAMESPACE).items
        waiting = []
        for pod in pods:
            cond = pod_scheduled_condition(pod)
            if not pod.spec.node_name and cond is None:
                waiting.append(pod.metadata.name)
        if len(pods) < count:
            return f"{len(pods)}/{count} pods created"
        return not waiting or f"waiting for {', '.join(sorted(waiting))}"

    wait_for(settled, timeout=timeout, what="the demo workload to settle")


def print_table(core: k8s.CoreV1Api) -> None:
    custom = k8s.CustomObjectsApi(core.api_client)
    rows = [("POD", "NODE", "PHASE", "DEVICES", "WHY")]
    for pod in sorted(core.list_namespaced_pod(NAMESPACE).items, key=lambda p: p.metadata.name):
        cond = pod_scheduled_condition(pod)
        why = ""
        if not pod.spec.node_name and cond is not None:
            why = f"{cond.reason}: {cond.message}"
        devices = pod_devices(custom, pod) if pod.spec.node_name else ""
        rows.append(
            (
                pod.metadata.name,
                pod.spec.node_name or "-",
                pod.status.phase or "",
                devices or "-",
                why,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])


def print_spread(core: k8s.CoreV1Api) -> None:
    """Where the Deployment's replicas went, per node and per zone."""
    zone_of = {n["name"]: n["labels"][ZONE] for n in NODES}
    per_node: dict[str, int] = {}
    for pod in core.list_namespaced_pod(NAMESPACE, label_selector="app=web").items:
        if pod.spec.node_name:
            per_node[pod.spec.node_name] = per_node.get(pod.spec.node_name, 0) + 1
    per_zone: dict[str, int] = {}
    for node, count in per_node.items():
        per_zone[zone_of[node]] = per_zone.get(zone_of[node], 0) + count
    nodes = ", ".join(f"{n}={c}" for n, c in sorted(per_node.items()))
    zones = ", ".join(f"{z}={c}" for z, c in sorted(per_zone.items()))
    print(f"Deployment web ({WEB_REPLICAS} replicas) per node: {nodes}; per zone: {zones}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--exit", action="store_true", help="tear down instead of waiting")
    args = parser.parse_args(argv)
    keep = sys.stdin.isatty() and not args.exit

    print("starting the local control plane (etcd, kube-apiserver, kcm, kwok) ...", flush=True)
    with ControlPlane(with_scheduler=False) as cp:
        core = k8s.CoreV1Api(cp.api_client())
        for node in NODES:
            create_kwok_node(core, **node)
        wait_nodes_ready(core, [n["name"] for n in NODES])
        print(f"{len(NODES)} kwok nodes ready; starting kube-pysched ...", flush=True)
        sched = Pysched(cp.kubeconfig, workdir=cp.log_dir).start()
        try:
            core.create_namespace({"metadata": {"name": NAMESPACE}})
            wait_default_service_account(core, NAMESPACE)
            create_gpu_objects(core.api_client)
            deployment, service = web_objects()
            core.create_namespaced_service(NAMESPACE, service)
            k8s.AppsV1Api(core.api_client).create_namespaced_deployment(NAMESPACE, deployment)
            pods = workload()
            for body in pods:
                core.create_namespaced_pod(NAMESPACE, body)
            wait_settled(core, len(pods) + WEB_REPLICAS)
            time.sleep(1.0)  # demo output only: let kwok report the phase of the last pods
            print()
            print_table(core)
            print()
            print_spread(core)
            text = sched.metrics()
            print()
            for result in ("scheduled", "unschedulable", "error"):
                value = metric_value(text, "scheduler_schedule_attempts_total", {"result": result})
                print(f"scheduler_schedule_attempts_total{{result={result!r}}} = {value or 0:g}")
            print(f"\nmetrics:    {sched.base_url}/metrics")
            print(f"kubeconfig: export KUBECONFIG={cp.kubeconfig}")
            print(f"logs:       {sched.log_path}")
            if keep:
                print("\nkube-pysched keeps running; press Ctrl-C to tear everything down.")
                try:
                    while sched.alive():
                        time.sleep(1.0)
                except KeyboardInterrupt:
                    print()
        finally:
            sched.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
