"""Create fake nodes that kwok manages (and nothing else does).

Nodes carry kwok's annotation (that is what kwok selects on) and a ``type: kwok`` label, but
no taint: the schedulers under test must be able to place ordinary pods on them without
extra tolerations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from e2e.cluster.kwok import NODE_ANNOTATION_KEY, NODE_ANNOTATION_VALUE
from e2e.cluster.readiness import wait_for

ClientLike = k8s.ApiClient | k8s.CoreV1Api | str | Path

KWOK_NODE_LABELS = {"type": "kwok"}

#: The ``kwok_nodes`` fixture's type: ``(count, **create_kwok_node args) -> Ready nodes``.
NodeFactory = Callable[..., list[k8s.V1Node]]


def core_v1(client_or_kubeconfig: ClientLike) -> k8s.CoreV1Api:
    """A CoreV1Api from an ApiClient, a CoreV1Api, or a kubeconfig path."""
    if isinstance(client_or_kubeconfig, k8s.CoreV1Api):
        return client_or_kubeconfig
    if isinstance(client_or_kubeconfig, k8s.ApiClient):
        return k8s.CoreV1Api(client_or_kubeconfig)
    api_client = k8s_config.new_client_from_config(config_file=str(client_or_kubeconfig))
    return k8s.CoreV1Api(api_client)


def kwok_node_manifest(
    name: str,
    cpu: str = "32",
    memory: str = "256Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str] | k8s.V1Taint] | None = None,
    extra_capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The Node object (as a dict) for a kwok-managed node with the given capacity."""
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_capacity or {})}
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node-role.kubernetes.io/agent": "",
        **KWOK_NODE_LABELS,
        **(labels or {}),
    }
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [t.to_dict() if isinstance(t, k8s.V1Taint) else dict(t) for t in taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels,
            "annotations": {
                NODE_ANNOTATION_KEY: NODE_ANNOTATION_VALUE,
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": spec,
        # The API server keeps status on create (kubelets register like this); kwok then
        # reports the node Ready and keeps its capacity as given.
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def create_kwok_node(
    client_or_kubeconfig: ClientLike,
    name: str,
    cpu: str = "32",
    memory: str = "256Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str] | k8s.V1Taint] | None = None,
    extra_capacity: Mapping[str, str] | None = None,
) -> k8s.V1Node:
    """Create one kwok node and return it (it turns Ready shortly after; see wait_nodes_ready)."""
    api = core_v1(client_or_kubeconfig)
    body = kwok_node_manifest(name, cpu, memory, pods, labels, taints, extra_capacity)
    node: k8s.V1Node = api.create_node(body)
    return node


def create_kwok_nodes(
    client_or_kubeconfig: ClientLike,
    count: int,
    prefix: str = "kwok-node-",
    *,
    wait_ready: bool = True,
    timeout: float = 60.0,
    **node_args: Any,
) -> list[k8s.V1Node]:
    """Create ``count`` identical kwok nodes named ``{prefix}{i}``, by default until Ready."""
    api = core_v1(client_or_kubeconfig)
    nodes = [create_kwok_node(api, f"{prefix}{i}", **node_args) for i in range(count)]
    if wait_ready:
        wait_nodes_ready(api, [n.metadata.name for n in nodes], timeout=timeout)
    return nodes


def wait_nodes_ready(
    client_or_kubeconfig: ClientLike, names: Iterable[str], timeout: float = 60.0
) -> None:
    """Poll until every named node reports Ready=True (kwok's node-initialize stage)."""
    api = core_v1(client_or_kubeconfig)
    pending = set(names)

    def check() -> bool | str:
        for node in api.list_node(label_selector="type=kwok").items:
            if node.metadata.name in pending and _is_ready(node):
                pending.discard(node.metadata.name)
        return True if not pending else f"not Ready: {sorted(pending)[:10]}"

    wait_for(check, timeout=timeout, what="kwok nodes", interval=0.2)


def delete_kwok_nodes(client_or_kubeconfig: ClientLike, names: Iterable[str]) -> None:
    """Delete nodes, ignoring ones that are already gone."""
    api = core_v1(client_or_kubeconfig)
    for name in names:
        try:
            api.delete_node(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


def _is_ready(node: k8s.V1Node) -> bool:
    conditions = (node.status and node.status.conditions) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)
