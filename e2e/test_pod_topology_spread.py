"""PodTopologySpread on the local control plane: each scenario run by kube-scheduler (the
control plane's default scheduler) and by kube-pysched, on node groups of their own (a
nodeSelector keeps each side's pods on its group; nodeAffinityPolicy Honor, the default, then
leaves the other group out of the counts), with the same outcome: where pods land when the
best node is unique, which pods stay Pending and the PodScheduled message they get.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.test_scheduling import (
    Factory,
    create,
    pods_by_name,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.workload import pod_manifest, pod_scheduled_condition

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
DNS, SA = "DoNotSchedule", "ScheduleAnyway"


class Side:
    """One scheduler's half of a scenario: its schedulerName, node group and app label."""

    def __init__(self, tag: str, scheduler: str) -> None:
        self.tag = tag
        self.scheduler = scheduler
        self.group = unique("g")
        self.app = unique(tag)

    def pod(self, name: str, *constraints: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        body = pod_manifest(
            f"{self.tag}-{name}",
            scheduler_name=self.scheduler,
            labels={"app": self.app},
            node_selector={"g": self.group, **kwargs.pop("node_selector", {})},
            **kwargs,
        )
        if constraints:
            body["spec"]["topologySpreadConstraints"] = list(constraints)
        return body

    def pinned(self, name: str, node: str, *, app: str | None = None, cpu: str = "10m") -> Any:
        """A pod bound by the test itself (spec.nodeName): an existing pod for the counts."""
        body = pod_manifest(
            f"{self.tag}-{name}",
            scheduler_name="nobody",
            cpu=cpu,
            labels={"app": app or self.app},
        )
        body["spec"]["nodeName"] = node
        return body

    def constraint(self, max_skew: int, key: str, action: str, **extra: Any) -> dict[str, Any]:
        return {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": action,
            "labelSelector": {"matchLabels": {"app": self.app}},
            **extra,
        }


@pytest.fixture
def sides(pysched: Factory) -> Iterator[tuple[Side, Side]]:
    name = unique("pysched")
    pysched(profile_config(name))
    yield Side("ref", "default-scheduler"), Side("ours", name)


def make_nodes(
    core: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    side: Side,
    labels_by_node: Mapping[str, Mapping[str, str]],
    **kw: Any,
) -> dict[str, str]:
    """Nodes named after `labels_by_node`'s keys in the side's group (key -> node name), once
    the side's scheduler has them in its cache (see `prime`)."""
    names = {}
    taints = [t for t in kw.get("taints", {}).values() if t]
    for key, labels in labels_by_node.items():
        node = kwok_nodes(
            1,
            prefix=f"{side.group}-{key}-",
            cpu=kw.get("cpu", {}).get(key, "8"),
            memory="16Gi",
            labels={"g": side.group, **labels},
            taints=kw.get("taints", {}).get(key),
        )[0]
        names[key] = node.metadata.name
    prime(core, namespace, side, list(names.values()), [t for ts in taints for t in ts])
    return names


def prime(
    core: k8s.CoreV1Api,
    namespace: str,
    side: Side,
    nodes: list[str],
    test_taints: list[Mapping[str, str]],
) -> None:
    """A probe pod per node, scheduled by the side's scheduler onto that node and deleted.

    Nodes and pods come through separate watches, so a scheduler may place a pod before it
    knows a node the test has just created; once a probe is bound there, the node is in its
    cache, and the probe's deletion precedes every later pod on the pods watch. The probe
    tolerates only the taints the test gave the node: a new node carries the node lifecycle
    controller's `node.kubernetes.io/not-ready` taint until that controller notices it is Ready
    (seconds, more on a busy machine), and a probe tolerating everything would bind while the
    scheduler still sees the node tainted for the scenario's pods."""
    tolerations = [{"key": t["key"], "operator": "Exists"} for t in test_taints]
    probes = []
    for node in nodes:
        body = pod_manifest(
            f"{side.tag}-probe-{node}",
            scheduler_name=side.scheduler,
            node_selector={HOSTNAME: node},
            labels={"app": "probe"},
        )
        if tolerations:
            body["spec"]["tolerations"] = tolerations
        probes.append(body)
    create(core, namespace, probes)
    names = [p["metadata"]["name"] for p in probes]
    wait_bound(core, namespace, names)
    for name in names:
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    def gone() -> bool | str:
        left = set(names) & set(pods_by_name(core, namespace))
        return not left or f"probes still present: {sorted(left)}"

    wait_for(gone, timeout=60, what="probe pods deleted")


def node_of(pods: Mapping[str, k8s.V1Pod], name: str) -> str:
    return str(pods[name].spec.node_name)


def test_nine_pods_spread_3_3_3_over_three_zones(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, sides: tuple[Side, Side]
) -> None:
    """DoNotSchedule, maxSkew 1, two nodes per zone: each zone gets exactly three pods."""
    for side in sides:
        layout = {f"{z}{i}": {ZONE: f"zone-{z}"} for z in "abc" for i in range(2)}
        nodes = make_nodes(core_v1, namespace, kwok_nodes, side, layout)
        zone_of = {nodes[key]: labels[ZONE] for key, labels in layout.items()}
        create(
            core_v1,
            namespace,
            [side.pod(f"p{i}", side.constraint(1, ZONE, DNS)) for i in range(9)],
        )
        names = [f"{side.tag}-p{i}" for i in range(9)]
        pods = wait_bound(core_v1, namespace, names)
        per_zone = Counter(zone_of[node_of(pods, n)] for n in names)
        assert sorted(per_zone.values()) == [3, 3, 3], (side.tag, per_zone)


def test_schedule_anyway_prefers_the_emptier_zone_over_the_freer_node(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, sides: tuple[Side, Side]
) -> None:
    """Zone a holds three matching pods on an almost idle node; zone b's node is busier but
    holds none. Resource scoring alone (the control pod) picks zone a; the ScheduleAnyway
    constraint (weight 2) picks zone b."""
    for side in sides:
        nodes = make_nodes(
            core_v1, namespace, kwok_nodes, side, {"a": {ZONE: "zone-a"}, "b": {ZONE: "zone-b"}}
        )
        create(
            core_v1,
            namespace,
            [
                *(side.pinned(f"existing{i}", nodes["a"]) for i in range(3)),
                side.pinned("busy", nodes["b"], app="other", cpu="2"),
            ],
        )
        wait_bound(core_v1, namespace, [f"{side.tag}-existing{i}" for i in range(3)])
        create(core_v1, namespace, [side.pod("spread", side.constraint(1, ZONE, SA))])
        pods = wait_bound(core_v1, namespace, [f"{side.tag}-spread"])
        assert node_of(pods, f"{side.tag}-spread") == nodes["b"], side.tag
        control = side.pod("control")
        control["metadata"]["labels"] = {"app": "control"}
        create(core_v1, namespace, [control])
        pods = wait_bound(core_v1, namespace, [f"{side.tag}-control"])
        assert node_of(pods, f"{side.tag}-control") == nodes["a"], side.tag


def _same_pending_message(core: k8s.CoreV1Api, namespace: str, names: list[str]) -> str:
    ref = wait_unschedulable(core, namespace, names[0])
    ours = wait_unschedulable(core, namespace, names[1])
    assert (ours.reason, ours.message) == (ref.reason, ref.message)
    return str(ref.message)


def test_node_taints_policy_decides_whether_a_tainted_empty_node_counts(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, sides: tuple[Side, Side]
) -> None:
    """Hostname spread, one matching pod on each of two nodes, a third node tainted and empty.
    Ignore (the default) counts the tainted node: the minimum is 0, both untainted nodes are
    one too many and the taint rejects the third, so the pod waits. Honor leaves it out: the
    minimum is 1 and the pod fits."""
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    for side in sides:
        nodes = make_nodes(
            core_v1, namespace, kwok_nodes, side, {"t": {}, "n1": {}, "n2": {}}, taints={"t": taint}
        )
        create(core_v1, namespace, [side.pinned("e1", nodes["n1"]), side.pinned("e2", nodes["n2"])])
        create(
            core_v1,
            namespace,
            [
                side.pod("ignore", side.constraint(1, HOSTNAME, DNS)),
                side.pod("honor", side.constraint(1, HOSTNAME, DNS, nodeTaintsPolicy="Honor")),
            ],
        )
    message = _same_pending_message(core_v1, namespace, ["ref-ignore", "ours-ignore"])
    assert "2 node(s) didn't match pod topology spread constraints" in message, message
    # both groups' tainted nodes: TaintToleration rejects before NodeAffinity
    assert "2 node(s) had untolerated taint(s)" in message, message
    pods = wait_bound(core_v1, namespace, ["ref-honor", "ours-honor"])
    for name in ("ref-honor", "ours-honor"):
        assert "-t-" not in node_of(pods, name), name


def test_node_affinity_policy_decides_whether_unselected_nodes_count(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, sides: tuple[Side, Side]
) -> None:
    """The pod selects pool y (two nodes, one matching pod each); pool x's node is empty.
    Honor (the default) counts pool y only and the pod fits; Ignore counts the empty node too,
    so both pool y nodes exceed maxSkew and the pod waits."""
    for side in sides:
        nodes = make_nodes(
            core_v1,
            namespace,
            kwok_nodes,
            side,
            {"x": {"pool": "x"}, "y1": {"pool": "y"}, "y2": {"pool": "y"}},
        )
        create(core_v1, namespace, [side.pinned("e1", nodes["y1"]), side.pinned("e2", nodes["y2"])])
        create(
            core_v1,
            namespace,
            [
                side.pod("honor", side.constraint(1, HOSTNAME, DNS), node_selector={"pool": "y"}),
                side.pod(
                    "ignore",
                    side.constraint(1, HOSTNAME, DNS, nodeAffinityPolicy="Ignore"),
                    node_selector={"pool": "y"},
                ),
            ],
        )
    pods = wait_bound(core_v1, namespace, ["ref-honor", "ours-honor"])
    for name in ("ref-honor", "ours-honor"):
        assert "-y" in node_of(pods, name), name
    message = _same_pending_message(core_v1, namespace, ["ref-ignore", "ours-ignore"])
    assert "2 node(s) didn't match pod topology spread constraints" in message, message


def test_min_domains_above_the_zones_present_allows_one_pod_per_zone(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_nodes: NodeFactory, sides: tuple[Side, Side]
) -> None:
    """Two zones, minDomains 3, maxSkew 1: the global minimum counts as 0, so each zone takes
    one pod and the third pod waits."""
    for side in sides:
        make_nodes(
            core_v1, namespace, kwok_nodes, side, {"a": {ZONE: "zone-a"}, "b": {ZONE: "zone-b"}}
        )
        constraint = side.constraint(1, ZONE, DNS, minDomains=3)
        create(core_v1, namespace, [side.pod(f"p{i}", constraint) for i in range(3)])

    def settled() -> bool | str:
        pods = pods_by_name(core_v1, namespace)
        for tag in ("ref", "ours"):
            mine = [p for n, p in pods.items() if n.startswith(f"{tag}-p")]
            bound = [p for p in mine if p.spec.node_name]
            waiting = [p for p in mine if _pending(p)]
            if len(bound) != 2 or len(waiting) != 1:
                return f"{tag}: {len(bound)} bound, {len(waiting)} marked unschedulable"
        return True

    wait_for(settled, timeout=60, what="two pods bound and one Pending per scheduler")
    pods = pods_by_name(core_v1, namespace)
    pending = {}
    for tag in ("ref", "ours"):
        mine = {n: p for n, p in pods.items() if n.startswith(f"{tag}-p")}
        zones = {p.spec.node_name.split("-")[2] for p in mine.values() if p.spec.node_name}
        assert zones == {"a", "b"}, (tag, zones)
        (waiting,) = [p for p in mine.values() if not p.spec.node_name]
        pending[tag] = pod_scheduled_condition(waiting)
    assert (pending["ours"].reason, pending["ours"].message) == (
        pending["ref"].reason,
        pending["ref"].message,
    )
    assert "2 node(s) didn't match pod topology spread constraints" in pending["ref"].message


def _pending(pod: k8s.V1Pod) -> bool:
    cond = pod_scheduled_condition(pod)
    return cond is not None and cond.status == "False"


def test_replica_set_behind_a_service_spreads_by_the_system_defaults(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    sides: tuple[Side, Side],
) -> None:
    """Six replicas on one 32-CPU and two 4-CPU nodes: resource scoring alone would favour the
    big node, the system default constraints (hostname maxSkew 3, from the Service's and the
    ReplicaSet's selectors) even them out to 2/2/2. The ReplicaSet controller of the local
    control plane creates the pods.

    Services and ReplicaSets reach a scheduler on watches of their own, with no order against
    the pods: a replica scheduled before its scheduler has seen the Service is spread by
    nothing. So both exist (the ReplicaSet at 0 replicas) before the nodes are created and
    primed (seconds of node readiness and probe pods), and only then is it scaled to 6."""
    apps = k8s.AppsV1Api(api_client)
    for side in sides:
        core_v1.create_namespaced_service(
            namespace,
            {
                "metadata": {"name": side.app},
                "spec": {"selector": {"app": side.app}, "ports": [{"port": 80}]},
            },
        )
        template = side.pod("replica")
        apps.create_namespaced_replica_set(
            namespace,
            {
                "metadata": {"name": side.app},
                "spec": {
                    "replicas": 0,
                    "selector": {"matchLabels": {"app": side.app}},
                    "template": {
                        "metadata": {"labels": template["metadata"]["labels"]},
                        "spec": template["spec"],
                    },
                },
            },
        )
    for side in sides:
        make_nodes(
            core_v1, namespace, kwok_nodes, side, {"big": {}, "s1": {}, "s2": {}}, cpu={"big": "32"}
        )
    for side in sides:
        apps.patch_namespaced_replica_set_scale(side.app, namespace, {"spec": {"replicas": 6}})
    per_node: dict[str, Counter[str]] = {}

    def all_bound() -> bool | str:
        pods = core_v1.list_namespaced_pod(namespace).items
        for side in sides:
            mine = [p for p in pods if (p.metadata.labels or {}).get("app") == side.app]
            bound = [p for p in mine if p.spec.node_name]
            if len(bound) != 6:
                return f"{side.tag}: {len(bound)}/6 bound ({len(mine)} created)"
            per_node[side.tag] = Counter(p.spec.node_name for p in bound)
        return True

    wait_for(all_bound, timeout=120, what="both ReplicaSets' pods bound")
    for side in sides:
        assert sorted(per_node[side.tag].values()) == [2, 2, 2], (side.tag, per_node[side.tag])
