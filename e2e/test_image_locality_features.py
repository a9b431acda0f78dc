"""ImageLocality and NodeDeclaredFeatures on the local control plane, each scenario run by
kube-scheduler (the control plane's default scheduler) and by kube-pysched with the same
outcome.

Nodes report `status.images` and `status.declaredFeatures` from their creation (the API server
keeps status on create, as for a registering kubelet); the tests first check that kwok's node
stages left those fields in place.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster.nodes import delete_kwok_nodes, kwok_node_manifest, wait_nodes_ready
from e2e.test_scheduling import Factory, profile_config, unique, wait_bound, wait_unschedulable
from e2e.workload import pod_manifest

MIB = 1024 * 1024
BIG_IMAGE = "example.com/e2e/big-model:v1"
FEATURE = "RestartAllContainersOnContainerExits"
FEATURE_MESSAGE = "node(s) didn't match Pod's required features"


@pytest.fixture
def status_nodes(core_v1: k8s.CoreV1Api) -> Iterator[Any]:
    """Factory: kwok nodes created with extra status fields, Ready when returned."""
    created: list[str] = []

    def make(name: str, labels: Mapping[str, str], **status: Any) -> None:
        body = kwok_node_manifest(name, cpu="8", memory="32Gi", labels=labels)
        body["status"].update(status)
        core_v1.create_node(body)
        created.append(name)

    yield make
    delete_kwok_nodes(core_v1, created)


def raw_node_status(core: k8s.CoreV1Api, name: str) -> dict[str, Any]:
    """The node's status as JSON (the client's models may not know declaredFeatures)."""
    resp = core.read_node(name, _preload_content=False)
    return json.loads(resp.data)["status"]  # type: ignore[no-any-return]


def wait_status_kept(core: k8s.CoreV1Api, names: Sequence[str], field: str, want: Any) -> None:
    """After kwok marked the nodes Ready, `field` of each status still reads `want`."""
    wait_nodes_ready(core, names)
    for name in names:
        got = raw_node_status(core, name).get(field)
        assert got == want[name], f"{name}: status.{field} is {got!r}, created with {want[name]!r}"


def image_pod(name: str, scheduler: str, group: str) -> dict[str, Any]:
    body = pod_manifest(name, scheduler_name=scheduler, node_selector={"g": group})
    body["spec"]["containers"][0]["image"] = BIG_IMAGE
    return body


def feature_pod(name: str, scheduler: str, group: str) -> dict[str, Any]:
    """A pod whose container restarts the whole pod on exit code 42: it needs nodes declaring
    RestartAllContainersOnContainerExits (beta, on by default in v1.37's API server)."""
    body = pod_manifest(name, scheduler_name=scheduler, node_selector={"g": group})
    body["spec"]["containers"][0].update(
        restartPolicy="Never",
        restartPolicyRules=[
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ],
    )
    return body


def test_image_locality_picks_the_only_node_holding_a_big_image(
    core_v1: k8s.CoreV1Api, namespace: str, status_nodes: Any, pysched: Factory
) -> None:
    """Two groups of three identical nodes (one per scheduler); in each the middle node holds
    a 600 MiB image. With every other score equal, both schedulers put the pod there."""
    images = {}
    groups = {"ref": unique("g"), "ours": unique("g")}
    for group in groups.values():
        for i in range(3):
            name = f"{group}-{i}"
            held = [{"names": [BIG_IMAGE], "sizeBytes": 600 * MIB}] if i == 1 else []
            status_nodes(name, {"g": group}, images=held)
            images[name] = held or None
    wait_status_kept(core_v1, list(images), "images", images)
    name = unique("pysched")
    pysched(profile_config(name))

    core_v1.create_namespaced_pod(namespace, image_pod("ref", "default-scheduler", groups["ref"]))
    core_v1.create_namespaced_pod(namespace, image_pod("ours", name, groups["ours"]))
    pods = wait_bound(core_v1, namespace, ["ref", "ours"])
    assert pods["ref"].spec.node_name == f"{groups['ref']}-1", "kube-scheduler"
    assert pods["ours"].spec.node_name == f"{groups['ours']}-1", "kube-pysched"


def test_declared_features_decide_where_a_pod_may_go_and_when_it_may_not(
    core_v1: k8s.CoreV1Api, namespace: str, status_nodes: Any, pysched: Factory
) -> None:
    """Three nodes, only the last declares the feature: both schedulers place the pod there.
    In a group where no node declares it, both leave the pod Pending with the same message,
    until a node of that group declares it."""
    feature_group, bare_group = unique("g"), unique("g")
    declared: dict[str, Any] = {}
    for i in range(3):
        name = f"{feature_group}-{i}"
        features = [FEATURE] if i == 2 else []
        status_nodes(name, {"g": feature_group}, declaredFeatures=features)
        declared[name] = features or None
    for i in range(2):
        name = f"{bare_group}-{i}"
        status_nodes(name, {"g": bare_group})
        declared[name] = None
    wait_status_kept(core_v1, list(declared), "declaredFeatures", declared)
    name = unique("pysched")
    pysched(profile_config(name))

    for pod, scheduler in (("ref", "default-scheduler"), ("ours", name)):
        core_v1.create_namespaced_pod(namespace, feature_pod(pod, scheduler, feature_group))
        core_v1.create_namespaced_pod(
            namespace, feature_pod(f"{pod}-nowhere", scheduler, bare_group)
        )
    pods = wait_bound(core_v1, namespace, ["ref", "ours"])
    assert pods["ref"].spec.node_name == f"{feature_group}-2", "kube-scheduler"
    assert pods["ours"].spec.node_name == f"{feature_group}-2", "kube-pysched"

    ref = wait_unschedulable(core_v1, namespace, "ref-nowhere")
    ours = wait_unschedulable(core_v1, namespace, "ours-nowhere")
    assert f"2 {FEATURE_MESSAGE}" in ref.message, ref.message
    assert (ours.reason, ours.message) == (ref.reason, ref.message)

    # A node that starts declaring the feature (UpdateNodeDeclaredFeature) lets both in.
    core_v1.patch_node_status(f"{bare_group}-1", {"status": {"declaredFeatures": [FEATURE]}})
    pods = wait_bound(core_v1, namespace, ["ref-nowhere", "ours-nowhere"], timeout=60)
    assert pods["ref-nowhere"].spec.node_name == f"{bare_group}-1", "kube-scheduler"
    assert pods["ours-nowhere"].spec.node_name == f"{bare_group}-1", "kube-pysched"


def test_user_namespace_with_host_network_is_rejected_by_the_api_server(
    core_v1: k8s.CoreV1Api, namespace: str
) -> None:
    """hostNetwork with hostUsers: false needs the alpha UserNamespacesHostNetworkSupport gate,
    off in the local control plane, so that feature cannot be exercised end to end here."""
    body = pod_manifest("userns", scheduler_name="nobody")
    body["spec"].update(hostNetwork=True, hostUsers=False)
    with pytest.raises(k8s.ApiException) as err:
        core_v1.create_namespaced_pod(namespace, body)
    assert err.value.status == 422
    assert "spec.hostNetwork: Forbidden: when `hostUsers` is false" in err.value.body
