"""Extended resources backed by DRA (DRAExtendedResource, GA in v1.37), kube-scheduler v1.37.2
and kube-pysched on one control plane: a DeviceClass with `extendedResourceName`, a node that
advertises no such resource but whose GPU a driver publishes in a ResourceSlice. A pod asking
for one of that resource is bound, and the scheduler creates its claim (generated name,
annotation, the pod as owner, the delete-protection finalizer, the GPU allocated, reserved
for the pod) and records it in the pod's status.extendedResourceClaimStatus; a second such pod
finds the GPU taken and waits with the same message in both schedulers."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from e2e.cluster.nodes import NodeFactory
from e2e.dra.objects import Resources, node_slice
from e2e.test_scheduling import (
    Factory,
    create,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.workload import pod_manifest

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
FINALIZER = "resource.kubernetes.io/delete-protection"


def _scenario(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    resources: Resources,
    namespace: str,
    prefix: str,
    scheduler: str,
    group: str,
    resource: str,
) -> dict[str, Any]:
    def pod(name: str) -> dict[str, Any]:
        return pod_manifest(
            f"{prefix}-{name}",
            scheduler_name=scheduler,
            node_selector={"g": group},
            extra_requests={resource: "1"},
        )

    create(core_v1, namespace, [pod("first")])
    wait_bound(core_v1, namespace, [f"{prefix}-first"])
    first = api_client.sanitize_for_serialization(
        core_v1.read_namespaced_pod(f"{prefix}-first", namespace)
    )
    status = first["status"]["extendedResourceClaimStatus"]
    (claim,) = [
        c
        for c in resources.list("resourceclaims", namespace)
        if c["metadata"]["name"] == status["resourceClaimName"]
    ]
    meta = claim["metadata"]
    (owner,) = meta["ownerReferences"]
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    (reserved,) = claim["status"]["reservedFor"]
    create(core_v1, namespace, [pod("second")])
    waiting = wait_unschedulable(core_v1, namespace, f"{prefix}-second")
    return {
        "mappings": status["requestMappings"],
        "claim_prefix": meta["generateName"] == f"{prefix}-first-extended-resources-"
        and meta["name"].startswith(meta["generateName"]),
        "annotations": meta.get("annotations"),
        "finalizers": meta.get("finalizers"),
        "owner": (owner["kind"], owner["name"] == f"{prefix}-first", owner.get("controller")),
        "spec": claim["spec"],
        "device": (
            result["request"],
            result["device"],
            result["pool"] == first["spec"]["nodeName"],
        ),
        "reserved": (reserved["resource"], reserved["name"] == f"{prefix}-first"),
        "second": waiting.message,
    }


def test_an_extended_resource_backed_by_dra_as_kube_scheduler(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
) -> None:
    resources = Resources(api_client)
    name = unique("pysched")
    pysched(profile_config(name))
    driver = f"{unique('gpu')}.example.com"
    resource = f"{driver}/gpu"
    cls = unique("gpu")
    selector = {"cel": {"expression": f'device.driver == "{driver}"'}}
    resources.create(
        "deviceclasses",
        {
            "metadata": {"name": cls},
            "spec": {"selectors": [selector], "extendedResourceName": resource},
        },
    )
    runs = []
    try:
        # Both nodes first: each scheduler's message counts the other's node too.
        for scheduler in ("default-scheduler", name):
            group = unique("g")
            (node,) = kwok_nodes(1, cpu="8", memory="16Gi", labels={"g": group})
            assert node.metadata is not None and node.metadata.name is not None
            node_name = node.metadata.name
            resources.create("resourceslices", node_slice(node_name, driver, ["gpu-0"]))
            runs.append((scheduler, group))
        outcomes = [
            _scenario(
                core_v1,
                api_client,
                resources,
                namespace,
                "ks" if scheduler == "default-scheduler" else "py",
                scheduler,
                group,
                resource,
            )
            for scheduler, group in runs
        ]
    finally:
        resources.delete_driver(driver, cls)
    theirs, ours = outcomes
    print(f"kube-scheduler: {theirs}\nkube-pysched: {ours}")
    assert ours == theirs
    request = "container-0-request-1"  # cpu, <resource>, memory: the resource is the second
    assert theirs["mappings"] == [
        {"containerName": "app", "requestName": request, "resourceName": resource}
    ]
    assert theirs["claim_prefix"] is True
    assert theirs["annotations"] == {ANNOTATION: "true"}
    assert theirs["finalizers"] == [FINALIZER]
    assert theirs["device"] == (request, "gpu-0", True)
    assert theirs["owner"] == ("Pod", True, True)
    assert theirs["reserved"] == ("pods", True)
    nodes = len(core_v1.list_node().items)
    assert theirs["second"].startswith(
        f"0/{nodes} nodes are available: 1 cannot allocate all claims"
    )
