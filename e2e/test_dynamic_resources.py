"""DynamicResources (in the default profile) on the local control plane: a
slice published through the API (no kubelet plugin, as scheduler_perf does) for a kwok node, a
pod claiming a GPU by name and one through a ResourceClaimTemplate (kube-controller-manager
generates its claim): kube-pysched allocates, writes the claims' allocation, finalizer and
reservedFor, and binds; a third pod finds no GPU left and waits. kube-scheduler runs the same
scenario on a node of its own first: the same devices are allocated and the waiting pods'
messages are equal."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from e2e.cluster.nodes import NodeFactory
from e2e.dra.objects import Resources, driver_fixture, node_slice, resources_fixture  # noqa: F401
from e2e.test_scheduling import (
    Factory,
    create,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.workload import pod_manifest

FINALIZER = "resource.kubernetes.io/delete-protection"


def _claim_spec(cls: str) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}}


def _scenario(
    core_v1: k8s.CoreV1Api,
    resources: Resources,
    namespace: str,
    node_name: str,
    group: str,
    driver: str,
    scheduler: str,
) -> tuple[set[str], str]:
    """Two pods get the node's two GPUs (by claim name, through a template); a third waits.
    Returns the devices allocated and the third pod's PodScheduled message."""
    prefix = "ks" if scheduler == "default-scheduler" else "py"
    resources.create(
        "resourceclaims",
        {"metadata": {"name": f"{prefix}-by-name"}, "spec": _claim_spec(driver)},
        namespace,
    )
    template = {"metadata": {"name": f"{prefix}-one-gpu"}, "spec": {"spec": _claim_spec(driver)}}
    resources.create("resourceclaimtemplates", template, namespace)

    def pod(pod_name: str, **claim: str) -> dict[str, Any]:
        body = pod_manifest(
            f"{prefix}-{pod_name}", scheduler_name=scheduler, node_selector={"g": group}
        )
        body["spec"]["resourceClaims"] = [{"name": "gpu", **claim}]
        return body

    named = pod("named", resourceClaimName=f"{prefix}-by-name")
    templ = pod("templ", resourceClaimTemplateName=f"{prefix}-one-gpu")
    create(core_v1, namespace, [named, templ])
    wait_bound(core_v1, namespace, [f"{prefix}-named", f"{prefix}-templ"])
    claims = {
        c["metadata"]["name"]: c
        for c in resources.list("resourceclaims", namespace)
        if c["metadata"]["name"].startswith(prefix)
    }
    devices = set()
    for claim in claims.values():
        assert FINALIZER in claim["metadata"].get("finalizers", [])
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == (driver, node_name)
        devices.add(result["device"])
        (reserved,) = claim["status"]["reservedFor"]
        assert reserved["resource"] == "pods"
    assert claims[f"{prefix}-by-name"]["status"]["reservedFor"][0]["name"] == f"{prefix}-named"
    create(core_v1, namespace, [pod("third", resourceClaimTemplateName=f"{prefix}-one-gpu")])
    condition = wait_unschedulable(core_v1, namespace, f"{prefix}-third")
    return devices, condition.message or ""


def test_gpus_through_claims_and_templates_as_kube_scheduler(
    core_v1: k8s.CoreV1Api,
    resources: Resources,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
    driver: str,
) -> None:
    name = unique("pysched")
    pysched(profile_config(name))
    # Both nodes first: each scheduler's message counts the other's node too.
    placed = []
    for scheduler in ("default-scheduler", name):
        group = unique("g")
        (node,) = kwok_nodes(1, cpu="8", memory="16Gi", labels={"g": group})
        assert node.metadata is not None and node.metadata.name is not None
        node_name = node.metadata.name
        resources.create("resourceslices", node_slice(node_name, driver, ["gpu-0", "gpu-1"]))
        placed.append((scheduler, node_name, group))
    outcomes = [
        _scenario(core_v1, resources, namespace, node_name, group, driver, scheduler)
        for scheduler, node_name, group in placed
    ]
    (ks_devices, ks_message), (py_devices, py_message) = outcomes
    assert ks_devices == py_devices == {"gpu-0", "gpu-1"}
    assert "cannot allocate all claims" in ks_message
    assert py_message == ks_message
