"""Create fake nodes that kwok manages (and nothing else does), looking like a kubelet's.

Nodes carry kwok's annotation (that is what kwok selects on) and a ``type: kwok`` label, but
no taint: the schedulers under test must be able to place ordinary pods on them without
extra tolerations. Like a registering kubelet, a node reports an InternalIP and a Hostname
address and ``ephemeral-storage`` capacity; the kwok stage ``node-allocatable`` then keeps
extended resources in allocatable in step with capacity, as a kubelet's status loop does.
``create_node_agents`` adds the per-node system pods (kube-proxy, ...) that Kubernetes' e2e
framework looks for on every node.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from e2e.cluster.kwok import NODE_ANNOTATION_KEY, NODE_ANNOTATION_VALUE
from e2e.cluster.readiness import wait_for

ClientLike = k8s.ApiClient | k8s.CoreV1Api | str | Path

KWOK_NODE_LABELS = {"type": "kwok"}

#: Node InternalIPs are taken from here (disjoint from the pod and service ranges).
NODE_IP_RANGE = ipaddress.IPv4Network("172.16.0.0/12")

#: Put on new nodes by the API server, lifted by the node lifecycle controller once Ready.
NOT_READY_TAINT = "node.kubernetes.io/not-ready"

#: System pods Kubernetes' e2e framework (``e2enode.WaitForTotalHealthy``) wants running on
#: every schedulable node; without them each sig-scheduling BeforeEach waits out a minute.
NODE_AGENTS = ("kube-proxy", "fluentd-elasticsearch", "node-problem-detector")
#: Served by no scheduler: node agent pods are bound by create_node_agents, not scheduled.
NODE_AGENT_SCHEDULER = "kwok-node-agent"

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


def node_ip(name: str) -> str:
    """A stable InternalIP for a node name (a hash into NODE_IP_RANGE).

    Two names can collide (about 1 in a million per pair); nothing in the harness routes to
    these addresses, they only have to look like a kubelet's.
    """
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")
    hosts = NODE_IP_RANGE.num_addresses - 2
    return str(NODE_IP_RANGE.network_address + 1 + digest % hosts)


def kwok_node_manifest(
    name: str,
    cpu: str = "32",
    memory: str = "256Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str] | k8s.V1Taint] | None = None,
    extra_capacity: Mapping[str, str] | None = None,
    ephemeral_storage: str = "100Gi",
    registered_ready: bool = False,
) -> dict[str, Any]:
    """The Node object (as a dict) for a kwok-managed node with the given capacity.

    `registered_ready`: created with phase Running and a Ready condition, as scheduler_perf's
    node template, so kwok's `node-initialize` stage never matches it. Otherwise kwok reports
    the node Ready, and under load keeps replaying that stage (1 000-3 000 status patches per
    1 000 nodes, still landing 20-60 s after the node first showed Ready).
    """
    capacity = {
        "cpu": cpu,
        "memory": memory,
        "pods": str(pods),
        "ephemeral-storage": ephemeral_storage,
        **(extra_capacity or {}),
    }
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
    status: dict[str, Any] = {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "addresses": [
            {"type": "InternalIP", "address": node_ip(name)},
            {"type": "Hostname", "address": name},
        ],
    }
    if registered_ready:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status["phase"] = "Running"
        status["conditions"] = [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ]
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
        # reports the node Ready (unless it is already) and keeps its capacity and addresses.
        "status": status,
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
    ephemeral_storage: str = "100Gi",
    *,
    agents: bool = False,
) -> k8s.V1Node:
    """Create one kwok node and return it (it turns Ready shortly after; see wait_nodes_ready).

    ``agents=True`` also creates its NODE_AGENTS pods (see create_node_agents).
    """
    api = core_v1(client_or_kubeconfig)
    body = kwok_node_manifest(
        name, cpu, memory, pods, labels, taints, extra_capacity, ephemeral_storage
    )
    node: k8s.V1Node = api.create_node(body)
    if agents:
        create_node_agents(api, node)
    return node


def node_agent_manifest(agent: str, node: k8s.V1Node) -> dict[str, Any]:
    """A kube-system pod for ``node``, standing in for a kubelet's static/DaemonSet pod.

    Its scheduler name is served by no scheduler, so no scheduler under test touches it
    (create_node_agents binds it); owned by the Node, so the garbage collector removes it with
    the node. No resource requests, tolerating every taint like kube-proxy.
    """
    name = node.metadata.name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{agent}-{name}",
            "namespace": "kube-system",
            "labels": {"k8s-app": agent, "type": "kwok-node-agent"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node.metadata.uid}
            ],
        },
        "spec": {
            "schedulerName": NODE_AGENT_SCHEDULER,
            "priorityClassName": "system-node-critical",
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": agent, "image": f"registry.k8s.io/{agent}:kwok"}],
        },
    }


def create_node_agents(client_or_kubeconfig: ClientLike, node: k8s.V1Node) -> None:
    """Create the NODE_AGENTS pods of one node (kwok then reports them Running).

    Each pod is created unbound and then bound through the binding subresource, which sets
    ``nodeName`` and ``PodScheduled=True`` in one write (Kubernetes' e2e specs fail on a bound
    pod without the condition). Creating it with ``nodeName`` and patching the condition after
    gives kwok two updates to race on: it then writes two pod IPs of one family, the API server
    rejects that, and the pod stays Pending until kwok's retry backoff runs out.
    """
    api = core_v1(client_or_kubeconfig)
    target = k8s.V1ObjectReference(api_version="v1", kind="Node", name=node.metadata.name)
    for agent in NODE_AGENTS:
        pod = api.create_namespaced_pod("kube-system", node_agent_manifest(agent, node))
        binding = k8s.V1Binding(metadata=k8s.V1ObjectMeta(name=pod.metadata.name), target=target)
        api.create_namespaced_pod_binding(
            pod.metadata.name, "kube-system", binding, _preload_content=False
        )


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
    """Poll until every named node reports Ready=True (kwok's node-initialize stage) and the
    node lifecycle controller has lifted its not-ready taint."""
    api = core_v1(client_or_kubeconfig)
    pending = set(names)

    def check() -> bool | str:
        for node in api.list_node(label_selector="type=kwok").items:
            if node.metadata.name in pending and _is_ready(node):
                pending.discard(node.metadata.name)
        return True if not pending else f"not Ready: {sorted(pending)[:10]}"

    wait_for(check, timeout=timeout, what="kwok nodes", interval=0.2)


def wait_node_agents_running(
    client_or_kubeconfig: ClientLike, names: Iterable[str], timeout: float = 60.0
) -> None:
    """Poll until every NODE_AGENTS pod of the named nodes is Running (kwok's pod-ready)."""
    api = core_v1(client_or_kubeconfig)
    wanted = {f"{agent}-{name}" for name in names for agent in NODE_AGENTS}

    def check() -> bool | str:
        pods = api.list_namespaced_pod("kube-system", label_selector="type=kwok-node-agent")
        running = {p.metadata.name for p in pods.items if p.status.phase == "Running"}
        missing = sorted(wanted - running)
        return not missing or f"not Running: {missing[:10]}"

    wait_for(check, timeout=timeout, what="node agent pods", interval=0.2)


def wait_node_lease(api_client: k8s.ApiClient, name: str, timeout: float = 60.0) -> k8s.V1Lease:
    """Poll until kwok holds node `name`'s Lease (kube-node-lease, renewTime set); return it."""
    leases = k8s.CoordinationV1Api(api_client)
    held: list[k8s.V1Lease] = []

    def check() -> bool | str:
        try:
            lease = leases.read_namespaced_lease(name, "kube-node-lease")
        except k8s.ApiException as exc:
            return f"no lease yet ({exc.status})"
        if lease.spec.renew_time is None:
            return "lease has no renewTime"
        held.append(lease)
        return True

    wait_for(check, timeout=timeout, what=f"Lease kube-node-lease/{name}")
    return held[-1]


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
    """Ready=True, and no longer tainted not-ready: the API server taints every new node
    (admission plugin TaintNodesByCondition) until the node lifecycle controller sees it Ready,
    and a scheduler test that starts before that meets an untolerated taint."""
    conditions = (node.status and node.status.conditions) or []
    taints = (node.spec and node.spec.taints) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions) and not any(
        t.key == NOT_READY_TAINT for t in taints
    )
