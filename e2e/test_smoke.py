"""Smoke test: the real control plane schedules a pod onto a kwok node and runs it."""

from __future__ import annotations

from kubernetes import client as k8s

from e2e.cluster import is_gone, is_running, wait_for_pod
from e2e.cluster.nodes import NodeFactory


def _pod(name: str) -> k8s.V1Pod:
    """A pod with the default schedulerName; grace 0 so that deletion needs no waiting."""
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name),
        spec=k8s.V1PodSpec(
            # Only kwok nodes: a real cluster (kind) may also have a schedulable real node.
            node_selector={"type": "kwok"},
            termination_grace_period_seconds=0,
            containers=[
                k8s.V1Container(
                    name="app",
                    image="registry.k8s.io/pause:3.10",
                    resources=k8s.V1ResourceRequirements(
                        requests={"cpu": "100m", "memory": "64Mi"}
                    ),
                )
            ],
        ),
    )


def test_default_scheduler_binds_and_kwok_runs_pod(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory
) -> None:
    nodes = {n.metadata.name for n in kwok_nodes(3)}

    core_v1.create_namespaced_pod(namespace, _pod("smoke"))
    pod = wait_for_pod(core_v1, namespace, "smoke", is_running, what="bound and Running")

    assert pod is not None
    assert pod.spec.scheduler_name == "default-scheduler"
    assert pod.spec.node_name in nodes
    assert pod.status.pod_ip

    core_v1.delete_namespaced_pod("smoke", namespace)
    wait_for_pod(core_v1, namespace, "smoke", is_gone, what="deleted")
