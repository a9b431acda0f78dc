"""kube-pysched scheduling real pods on the local control plane: the basic acceptance tests.

Each test starts its own kube-pysched whose only profile has a unique schedulerName, so pods and
metrics of one test are never another's. Nodes are labelled per test and pods select them.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.pysched import Pysched, metric_value
from e2e.workload import pod_manifest, pod_scheduled_condition
from scheduler.api.quantity import milli_value, value

Factory = Callable[..., Pysched]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def profile_config(scheduler_name: str, **profile: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name, **profile}],
    }


def create(core: k8s.CoreV1Api, namespace: str, bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        core.create_namespaced_pod(namespace, body)


def pods_by_name(core: k8s.CoreV1Api, namespace: str) -> dict[str, k8s.V1Pod]:
    return {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}


def wait_bound(
    core: k8s.CoreV1Api, namespace: str, names: list[str], timeout: float = 120.0
) -> dict[str, k8s.V1Pod]:
    def check() -> bool | str:
        pods = pods_by_name(core, namespace)
        unbound = [n for n in names if n not in pods or not pods[n].spec.node_name]
        return not unbound or f"{len(unbound)} unbound, e.g. {unbound[:5]}"

    wait_for(check, timeout=timeout, what=f"{len(names)} pods bound")
    return pods_by_name(core, namespace)


def wait_unschedulable(
    core: k8s.CoreV1Api, namespace: str, name: str, timeout: float = 60.0
) -> k8s.V1PodCondition:
    found: list[k8s.V1PodCondition] = []

    def check() -> bool | str:
        pod = core.read_namespaced_pod(name, namespace)
        cond = pod_scheduled_condition(pod)
        if cond is not None and cond.status == "False":
            found.append(cond)
            return True
        return f"no PodScheduled=False on {name} yet"

    wait_for(check, timeout=timeout, what=f"{name} marked unschedulable")
    return found[-1]


def assert_no_overcommit(core: k8s.CoreV1Api, node_names: set[str]) -> None:
    """Sum of requests of all pods bound to each node stays within its allocatable."""
    cpu: dict[str, int] = defaultdict(int)
    mem: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for pod in core.list_pod_for_all_namespaces().items:
        node = pod.spec.node_name
        if node not in node_names or pod.status.phase in ("Succeeded", "Failed"):
            continue
        count[node] += 1
        for c in pod.spec.containers:
            requests = (c.resources.requests or {}) if c.resources else {}
            cpu[node] += milli_value(requests.get("cpu", "0"))
            mem[node] += value(requests.get("memory", "0"))
    for node in node_names:
        alloc = core.read_node(node).status.allocatable
        assert cpu[node] <= milli_value(alloc["cpu"]), f"{node} cpu overcommitted"
        assert mem[node] <= value(alloc["memory"]), f"{node} memory overcommitted"
        assert count[node] <= int(alloc["pods"]), f"{node} has too many pods"


def incoming(text: str, event: str) -> float:
    """Pods that entered activeQ or backoffQ on `event`."""
    return sum(
        metric_value(text, "scheduler_queue_incoming_pods_total", {"queue": q, "event": event})
        or 0.0
        for q in ("active", "backoff")
    )


def test_200_pods_on_20_nodes_all_bound_and_other_schedulers_pods_untouched(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> None:
    name = unique("pysched")
    group = unique("g")
    nodes = {n.metadata.name for n in kwok_nodes(20, cpu="4", memory="8Gi", labels={"g": group})}
    pysched(profile_config(name))

    bodies = [
        pod_manifest(
            f"p-{i}", scheduler_name=name, cpu="300m", memory="256Mi", node_selector={"g": group}
        )
        for i in range(200)
    ]
    others = [
        pod_manifest(f"other-{i}", scheduler_name="someone-else", node_selector={"g": group})
        for i in range(5)
    ]
    create(core_v1, namespace, others + bodies)
    pods = wait_bound(core_v1, namespace, [b["metadata"]["name"] for b in bodies])

    assert {pods[b["metadata"]["name"]].spec.node_name for b in bodies} <= nodes
    assert_no_overcommit(core_v1, nodes)
    for body in others:
        pod = pods[body["metadata"]["name"]]
        assert pod.spec.node_name is None
        assert pod_scheduled_condition(pod) is None, "another scheduler's pod was touched"


def test_unschedulable_pod_gets_condition_event_and_moves_on_node_add_not_on_unrelated_label(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
) -> None:
    name = unique("pysched")
    group = unique("g")
    kwok_nodes(2, cpu="1", memory="2Gi", labels={"g": group})
    unrelated = kwok_nodes(1, cpu="1", memory="2Gi")[0].metadata.name
    sched = pysched(profile_config(name))

    create(
        core_v1,
        namespace,
        [pod_manifest("big", scheduler_name=name, cpu="2", node_selector={"g": group})],
    )
    cond = wait_unschedulable(core_v1, namespace, "big")
    assert cond.reason == "Unschedulable"
    assert re.fullmatch(r"0/\d+ nodes are available: .*\.", cond.message), cond.message
    assert "2 Insufficient cpu" in cond.message
    assert "node(s) didn't match Pod's node affinity/selector" in cond.message

    events = k8s.EventsV1Api(api_client)

    def failed_event() -> bool | str:
        items = events.list_namespaced_event(namespace).items
        hits = [e for e in items if e.reason == "FailedScheduling" and e.regarding.name == "big"]
        return bool(hits) or "no FailedScheduling event yet"

    wait_for(failed_event, timeout=30, what="FailedScheduling event")

    # An event that cannot help: a label change on a node the pod does not select.
    core_v1.patch_node(unrelated, {"metadata": {"labels": {"unrelated": "yes"}}})
    # Then one that can: a node that fits. Node events are handled in order, so once the pod is
    # bound the label change has been seen too.
    kwok_nodes(1, cpu="4", memory="8Gi", labels={"g": group})
    wait_bound(core_v1, namespace, ["big"], timeout=60)

    text = sched.metrics()
    assert incoming(text, "NodeAdd") >= 1
    assert incoming(text, "NodeUpdateNodeLabel") == 0
    assert incoming(text, "UnschedulableTimeout") == 0
    scheduled = metric_value(
        text, "scheduler_schedule_attempts_total", {"result": "scheduled", "profile": name}
    )
    assert scheduled == 1


def test_gated_pod_is_not_attempted_until_gate_removed(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> None:
    name = unique("pysched")
    group = unique("g")
    kwok_nodes(1, labels={"g": group})
    sched = pysched(profile_config(name))
    create(
        core_v1,
        namespace,
        [
            pod_manifest(
                "gated",
                scheduler_name=name,
                node_selector={"g": group},
                scheduling_gates=["example.com/wait"],
            )
        ],
    )

    def gated_counted() -> bool | str:
        gated = metric_value(sched.metrics(), "scheduler_pending_pods", {"queue": "gated"})
        return gated == 1 or f"gated={gated}"

    wait_for(gated_counted, timeout=30, what="the pod counted as gated")
    text = sched.metrics()
    attempts = sum(
        metric_value(text, "scheduler_schedule_attempts_total", {"result": r, "profile": name})
        or 0.0
        for r in ("scheduled", "unschedulable", "error")
    )
    assert attempts == 0
    pod = core_v1.read_namespaced_pod("gated", namespace)
    assert pod.spec.node_name is None
    assert pod_scheduled_condition(pod) is None or pod_scheduled_condition(pod).reason == (
        "SchedulingGated"
    )

    core_v1.patch_namespaced_pod("gated", namespace, {"spec": {"schedulingGates": None}})
    wait_bound(core_v1, namespace, ["gated"], timeout=30)
    assert metric_value(sched.metrics(), "scheduler_pending_pods", {"queue": "gated"}) == 0


def test_taints_affinity_and_host_ports_decide_placement(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> None:
    name = unique("pysched")
    group = unique("g")
    tainted = kwok_nodes(
        1,
        labels={"g": group, "role": "gpu"},
        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
    )[0].metadata.name
    zone_x = kwok_nodes(1, labels={"g": group, "zone": "x"})[0].metadata.name
    zone_y = kwok_nodes(1, labels={"g": group, "zone": "y"})[0].metadata.name
    pysched(profile_config(name))

    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    prefer_y = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "g", "operator": "In", "values": [group]}]}
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["y"]}]
                    },
                }
            ],
        }
    }
    untainted_only = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "zone", "operator": "Exists"},
                            {"key": "g", "operator": "In", "values": [group]},
                        ]
                    }
                ]
            }
        }
    }
    create(
        core_v1,
        namespace,
        [
            pod_manifest(
                "tolerates",
                scheduler_name=name,
                tolerations=[toleration],
                node_selector={"g": group, "role": "gpu"},
            ),
            pod_manifest(
                "no-toleration", scheduler_name=name, node_selector={"g": group, "role": "gpu"}
            ),
            pod_manifest("prefers-y", scheduler_name=name, affinity=prefer_y),
            pod_manifest("port-1", scheduler_name=name, host_port=8080, affinity=untainted_only),
            pod_manifest("port-2", scheduler_name=name, host_port=8080, affinity=untainted_only),
            pod_manifest("port-3", scheduler_name=name, host_port=8080, affinity=untainted_only),
        ],
    )
    pods = wait_bound(core_v1, namespace, ["tolerates", "prefers-y", "port-1", "port-2"])
    assert pods["tolerates"].spec.node_name == tainted
    assert pods["prefers-y"].spec.node_name == zone_y
    assert {pods["port-1"].spec.node_name, pods["port-2"].spec.node_name} == {zone_x, zone_y}

    taint_msg = wait_unschedulable(core_v1, namespace, "no-toleration").message
    assert "1 node(s) had untolerated taint(s)" in taint_msg, taint_msg
    port_msg = wait_unschedulable(core_v1, namespace, "port-3").message
    assert "2 node(s) didn't have free ports for the requested pod ports" in port_msg, port_msg


@pytest.mark.reliability
def test_restart_mid_run_binds_everything_without_overcommit(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> None:
    name = unique("pysched")
    group = unique("g")
    # Exactly full: 5 nodes x 4 CPU = 100 pods x 200m; any overcommit strands a pod.
    nodes = {n.metadata.name for n in kwok_nodes(5, cpu="4", memory="16Gi", labels={"g": group})}
    first = pysched(profile_config(name), name="first")
    bodies = [
        pod_manifest(
            f"p-{i}", scheduler_name=name, cpu="200m", memory="64Mi", node_selector={"g": group}
        )
        for i in range(100)
    ]
    create(core_v1, namespace, bodies)

    def some_bound() -> bool | str:
        bound = sum(1 for p in pods_by_name(core_v1, namespace).values() if p.spec.node_name)
        return bound >= 20 or f"{bound} bound"

    wait_for(some_bound, timeout=60, what="the first pods bound")
    first.stop()
    pysched(profile_config(name), name="second")
    wait_bound(core_v1, namespace, [b["metadata"]["name"] for b in bodies])
    assert_no_overcommit(core_v1, nodes)


@pytest.mark.reliability
def test_api_server_restart_under_running_scheduler(
    local_control_plane: Any,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
) -> None:
    name = unique("pysched")
    group = unique("g")
    kwok_nodes(2, labels={"g": group})
    sched = pysched(profile_config(name))
    create(
        core_v1,
        namespace,
        [pod_manifest("before", scheduler_name=name, node_selector={"g": group})],
    )
    wait_bound(core_v1, namespace, ["before"])

    local_control_plane.restart_apiserver(down_seconds=3.0)

    create(
        core_v1,
        namespace,
        [
            pod_manifest(f"after-{i}", scheduler_name=name, node_selector={"g": group})
            for i in range(10)
        ],
    )
    wait_bound(core_v1, namespace, [f"after-{i}" for i in range(10)], timeout=120)
    assert sched.alive()


def wait_untainted(core: k8s.CoreV1Api, group: str) -> None:
    """kube-controller-manager removes the not-ready taint a moment after kwok reports Ready."""

    def untainted() -> bool | str:
        nodes = core.list_node(label_selector=f"g={group}").items
        return all(not n.spec.taints for n in nodes) or "nodes still tainted"

    wait_for(untainted, timeout=60, what="the new nodes without taints")


def requeues(text: str) -> int:
    """Pods moved back to activeQ/backoffQ by any event other than their creation."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == "scheduler_queue_incoming_pods_total"
                and sample.labels.get("queue") in ("active", "backoff")
                and sample.labels.get("event") != "UnscheduledPodAdd"
            ):
                total += sample.value
    return int(total)


def test_metrics_match_what_happened(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, pysched: Factory
) -> None:
    name = unique("pysched")
    group = unique("g")
    kwok_nodes(2, cpu="2", labels={"g": group})
    wait_untainted(core_v1, group)
    sched = pysched(profile_config(name))
    fits = [
        pod_manifest(f"fit-{i}", scheduler_name=name, cpu="100m", node_selector={"g": group})
        for i in range(10)
    ]
    create(
        core_v1,
        namespace,
        [
            *fits,
            pod_manifest("never", scheduler_name=name, cpu="8", node_selector={"g": group}),
        ],
    )
    wait_bound(core_v1, namespace, [b["metadata"]["name"] for b in fits])
    wait_unschedulable(core_v1, namespace, "never")

    def settled() -> bool | str:
        text = sched.metrics()
        unsched = metric_value(text, "scheduler_pending_pods", {"queue": "unschedulable"})
        return unsched == 1 or f"unschedulable={unsched}"

    wait_for(settled, timeout=30, what="the pending pod in the unschedulable pool")
    text = sched.metrics()
    labels = {"profile": name}
    assert (
        metric_value(text, "scheduler_schedule_attempts_total", {**labels, "result": "scheduled"})
        == 10
    )
    # Every attempt after the first was caused by a queue move the metrics also recorded
    # (other tests' nodes may change meanwhile; their events are legitimate moves).
    incoming = [line for line in text.splitlines() if "queue_incoming_pods_total{" in line]
    attempts = metric_value(
        text, "scheduler_schedule_attempts_total", {**labels, "result": "unschedulable"}
    )
    assert attempts == 1 + requeues(text), incoming
    assert metric_value(text, "scheduler_pending_pods", {"queue": "active"}) == 0
    assert (
        metric_value(
            text, "scheduler_unschedulable_pods", {"plugin": "NodeResourcesFit", "profile": name}
        )
        == 1
    )
    assert (
        metric_value(text, "scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": "1"})
        == 10
    )
    assert metric_value(text, "scheduler_pod_scheduling_attempts_count") == 10
    assert (
        metric_value(
            text,
            "scheduler_queue_incoming_pods_total",
            {"queue": "active", "event": "UnscheduledPodAdd"},
        )
        == 11
    )
    assert (
        metric_value(
            text,
            "scheduler_scheduling_attempt_duration_seconds_count",
            {**labels, "result": "scheduled"},
        )
        or 0
    ) == 10
    assert (
        metric_value(
            text,
            "scheduler_framework_extension_point_duration_seconds_count",
            {**labels, "extension_point": "Filter", "status": "Success"},
        )
        or 0
    ) >= 10
    assert (metric_value(text, "scheduler_cache_size", {"type": "nodes"}) or 0) >= 2
