"""kwok behaves like kubelets as far as scheduling tests care: grace periods and liveness."""

from __future__ import annotations

import time

from kubernetes import client as k8s

from e2e.cluster import (
    ControlPlane,
    create_kwok_nodes,
    is_gone,
    is_running,
    wait_for,
    wait_for_pod,
    wait_node_lease,
)
from e2e.cluster.kwok import stage_names
from e2e.cluster.nodes import (
    NODE_AGENTS,
    NodeFactory,
    node_ip,
    wait_node_agents_running,
)
from e2e.cluster.nodes import core_v1 as core_v1_api

GRACE_SECONDS = 5


def test_pod_is_removed_only_after_its_grace_period(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_node: k8s.V1Node
) -> None:
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="graceful"),
        spec=k8s.V1PodSpec(
            node_name=kwok_node.metadata.name,  # bound directly: this tests kwok, not a scheduler
            termination_grace_period_seconds=GRACE_SECONDS,
            containers=[k8s.V1Container(name="app", image="registry.k8s.io/pause:3.10")],
        ),
    )
    core_v1.create_namespaced_pod(namespace, pod)
    wait_for_pod(core_v1, namespace, "graceful", is_running, what="Running")

    core_v1.delete_namespaced_pod("graceful", namespace)
    terminating = core_v1.read_namespaced_pod("graceful", namespace)
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == GRACE_SECONDS

    gone = wait_for_pod(
        core_v1, namespace, "graceful", is_gone, timeout=GRACE_SECONDS + 30, what="deleted"
    )
    assert gone is None


def test_kwok_renews_node_leases(
    core_v1: k8s.CoreV1Api, api_client: k8s.ApiClient, kwok_node: k8s.V1Node
) -> None:
    """Liveness is carried by Leases, so busy kwok status updates never make nodes NotReady."""
    name = kwok_node.metadata.name
    wait_node_lease(api_client, name)
    node = core_v1.read_node(name)
    assert node.metadata.labels["type"] == "kwok"
    assert not node.spec.taints


def test_shipped_stages_are_the_ones_documented() -> None:
    assert stage_names() == [
        "node-initialize",
        "node-allocatable",
        "node-heartbeat-with-lease",
        "pod-ready",
        "pod-complete",
        "pod-delete",
    ]


def test_nodes_look_like_a_kubelets(core_v1: k8s.CoreV1Api, kwok_node: k8s.V1Node) -> None:
    """Addresses and ephemeral storage as a registering kubelet reports them."""
    name = kwok_node.metadata.name
    node = core_v1.read_node(name)
    addresses = {a.type: a.address for a in node.status.addresses}
    assert addresses == {"InternalIP": node_ip(name), "Hostname": name}
    assert node.status.allocatable["ephemeral-storage"] == "100Gi"


def test_extended_capacity_appears_in_allocatable(
    core_v1: k8s.CoreV1Api, kwok_node: k8s.V1Node
) -> None:
    """Capacity-only status writes (as Kubernetes' e2e specs do) reach allocatable, and back."""
    name = kwok_node.metadata.name
    resource = "example.com/beardsecond"

    def allocatable_is(expected: str | None) -> bool | str:
        got = (core_v1.read_node(name).status.allocatable or {}).get(resource)
        return got == expected or f"allocatable {resource}={got}, want {expected}"

    def replace_capacity() -> bool | str:
        # A full status update that leaves allocatable as it was, like the pod-overhead spec;
        # kwok writes the node's status too, so a stale read is refused (409) and read again.
        node = core_v1.read_node(name)
        node.status.capacity[resource] = "1k"
        try:
            core_v1.replace_node_status(name, node)
        except k8s.ApiException as err:
            if err.status != 409:
                raise
            return f"conflict: {err.reason}"
        return True

    wait_for(replace_capacity, timeout=30, what="a status update without a conflict")
    wait_for(lambda: allocatable_is("1k"), timeout=30, what="extended allocatable")
    assert core_v1.read_node(name).status.allocatable["cpu"] == "32"

    core_v1.patch_node_status(name, {"status": {"capacity": {resource: None}}})
    wait_for(lambda: allocatable_is(None), timeout=30, what="extended allocatable removed")


def test_node_agents_run_on_their_node(core_v1: k8s.CoreV1Api, kwok_nodes: NodeFactory) -> None:
    """The per-node system pods of Kubernetes' e2e framework, bound and Running."""
    (node,) = kwok_nodes(1, agents=True)
    name = node.metadata.name
    wait_node_agents_running(core_v1, [name])
    pods = core_v1.list_namespaced_pod("kube-system", field_selector=f"spec.nodeName={name}")
    assert sorted(p.metadata.name for p in pods.items) == sorted(
        f"{agent}-{name}" for agent in NODE_AGENTS
    )
    for pod in pods.items:
        conditions = {c.type: c.status for c in pod.status.conditions}
        assert conditions["PodScheduled"] == "True", pod.metadata.name
        assert conditions["Ready"] == "True", pod.metadata.name
        assert len(pod.status.pod_ips) == 1, pod.status.pod_ips


def test_prompt_pod_deletion_waits_only_for_prestop_sleep(local_control_plane: object) -> None:
    """ControlPlane(prompt_pod_deletion=True): containers exit on SIGTERM, preStop hooks hold."""
    with ControlPlane(prompt_pod_deletion=True) as cp:
        api = core_v1_api(cp.kubeconfig)
        (node,) = create_kwok_nodes(api, 1, "prompt-")
        hook = k8s.V1Lifecycle(pre_stop=k8s.V1LifecycleHandler(sleep=k8s.V1SleepAction(seconds=4)))
        for name, lifecycle in (("plain", None), ("hooked", hook)):
            pod = k8s.V1Pod(
                metadata=k8s.V1ObjectMeta(name=name),
                spec=k8s.V1PodSpec(
                    node_name=node.metadata.name,
                    termination_grace_period_seconds=30,
                    containers=[k8s.V1Container(name="app", image="pause", lifecycle=lifecycle)],
                ),
            )
            api.create_namespaced_pod("default", pod)
            wait_for_pod(api, "default", name, is_running, what="Running")
        started = time.monotonic()
        api.delete_namespaced_pod("plain", "default")
        api.delete_namespaced_pod("hooked", "default")
        wait_for_pod(api, "default", "plain", is_gone, timeout=10, what="plain deleted")
        assert api.read_namespaced_pod("hooked", "default").metadata.deletion_timestamp
        wait_for_pod(api, "default", "hooked", is_gone, timeout=15, what="hooked deleted")
        assert 3 <= time.monotonic() - started < 12
