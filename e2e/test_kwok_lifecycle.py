"""kwok behaves like kubelets as far as scheduling tests care: grace periods and liveness."""

from __future__ import annotations

from kubernetes import client as k8s

from e2e.cluster import is_gone, is_running, wait_for, wait_for_pod
from e2e.cluster.kwok import stage_names

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
    leases = k8s.CoordinationV1Api(api_client)
    name = kwok_node.metadata.name

    def lease_renewed() -> bool | str:
        try:
            lease = leases.read_namespaced_lease(name, "kube-node-lease")
        except k8s.ApiException as exc:
            return f"no lease yet ({exc.status})"
        return lease.spec.renew_time is not None or "lease has no renewTime"

    wait_for(lease_renewed, timeout=60, what=f"Lease kube-node-lease/{name}")
    node = core_v1.read_node(name)
    assert node.metadata.labels["type"] == "kwok"
    assert not node.spec.taints


def test_shipped_stages_are_the_ones_documented() -> None:
    assert stage_names() == [
        "node-initialize",
        "node-heartbeat-with-lease",
        "pod-ready",
        "pod-complete",
        "pod-delete",
    ]
