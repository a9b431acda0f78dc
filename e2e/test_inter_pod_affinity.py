"""InterPodAffinity on the local control plane: each scenario run by kube-scheduler (the
control plane's default scheduler) and by kube-pysched, with the same outcome.

Both schedulers watch every pod, and pod (anti-)affinity looks at every pod, so each run keeps
to itself: its own group of kwok nodes (nodeSelector `g`) and label values of its own, so the
other scheduler's pods can neither attract nor repel its pods.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import wait_default_service_account, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.preemption_scenarios import create_priority_classes, delete_priority_classes
from e2e.test_scheduling import (
    Factory,
    create,
    pods_by_name,
    profile_config,
    unique,
    wait_bound,
    wait_unschedulable,
)
from e2e.workload import pod_manifest

HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
REF = "default-scheduler"


class Run:
    """One scheduler's side of a scenario: its node group and a label value of its own."""

    def __init__(self, side: str, scheduler: str, nodes: list[str], group: str) -> None:
        self.side = side  # "ref" (kube-scheduler) or "ours" (kube-pysched)
        self.scheduler = scheduler
        self.nodes = nodes
        self.group = group
        self.tag = f"{side}-{uuid.uuid4().hex[:4]}"

    def pod(self, name: str, app: str, **kw: Any) -> dict[str, Any]:
        """A pod of this run in its group, labelled app=<app>-<tag>; `on` pins it to a node."""
        node = kw.pop("on", None)
        selector = {HOST: node} if node is not None else {"g": self.group}
        labels = {"app": self.app(app), **kw.pop("labels", {})}
        return pod_manifest(
            f"{self.side}-{name}",
            scheduler_name=self.scheduler,
            node_selector=selector,
            labels=labels,
            **kw,
        )

    def app(self, app: str) -> str:
        return f"{app}-{self.tag}"

    def name(self, pod: str) -> str:
        return f"{self.side}-{pod}"


def term(run: Run, app: str, key: str = HOST, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": run.app(app)}}, "topologyKey": key, **extra}


@pytest.fixture
def runs(kwok_nodes: NodeFactory, pysched: Factory) -> Callable[..., tuple[Run, Run]]:
    """Factory: `runs(count, cpu=...)` gives kube-scheduler's and kube-pysched's runs, each
    with `count` Ready nodes of its own, kube-pysched started with a profile of its own."""

    def make(count: int = 3, **node_args: Any) -> tuple[Run, Run]:
        made = []
        for side in ("ref", "ours"):
            group = unique("g")
            nodes = kwok_nodes(count, prefix=f"{group}-", labels={"g": group}, **node_args)
            made.append((side, group, [n.metadata.name for n in nodes]))
        name = unique("pysched")
        pysched(profile_config(name))
        (ref_side, ref_group, ref_nodes), (ours_side, ours_group, ours_nodes) = made
        return (
            Run(ref_side, REF, ref_nodes, ref_group),
            Run(ours_side, name, ours_nodes, ours_group),
        )

    return make


def test_required_anti_affinity_spreads_three_of_five_pods_over_three_nodes(
    core_v1: k8s.CoreV1Api, namespace: str, runs: Callable[..., tuple[Run, Run]]
) -> None:
    ref, ours = runs(3, cpu="8", memory="32Gi")
    for run in (ref, ours):
        spread = {"podAntiAffinity": {REQUIRED: [term(run, "spread")]}}
        create(core_v1, namespace, [run.pod(f"s{i}", "spread", affinity=spread) for i in range(5)])
    outcome = {}
    for run in (ref, ours):
        names = [run.name(f"s{i}") for i in range(5)]

        def three_bound(names: list[str] = names) -> bool | str:
            pods = pods_by_name(core_v1, namespace)
            bound = [n for n in names if n in pods and pods[n].spec.node_name]
            return len(bound) == 3 or f"{len(bound)} bound"

        wait_for(three_bound, timeout=60, what=f"{run.side}: 3 pods bound")
        pods = pods_by_name(core_v1, namespace)
        bound = sorted(pods[n].spec.node_name for n in names if pods[n].spec.node_name)
        assert bound == sorted(run.nodes), run.side
        pending = [n for n in names if not pods[n].spec.node_name]
        conditions = [wait_unschedulable(core_v1, namespace, n) for n in pending]
        messages = {(c.reason, c.message) for c in conditions}
        assert len(messages) == 1, messages
        outcome[run.side] = messages.pop()
    assert "3 node(s) didn't match pod anti-affinity rules" in outcome["ref"][1], outcome
    assert outcome["ours"] == outcome["ref"]


def test_required_affinity_co_locates_three_pods_with_the_web_pod(
    core_v1: k8s.CoreV1Api, namespace: str, runs: Callable[..., tuple[Run, Run]]
) -> None:
    """The clients are created with the web pod: they wait until it is bound (a requeue by
    the AssignedPod add hint), then join it."""
    ref, ours = runs(3, cpu="8", memory="32Gi")
    for run in (ref, ours):
        with_web = {"podAffinity": {REQUIRED: [term(run, "web")]}}
        clients = [run.pod(f"c{i}", "client", affinity=with_web) for i in range(3)]
        create(core_v1, namespace, [run.pod("web", "web"), *clients])
    for run in (ref, ours):
        names = [run.name(n) for n in ("web", "c0", "c1", "c2")]
        pods = wait_bound(core_v1, namespace, names, timeout=90)
        nodes = {pods[n].spec.node_name for n in names}
        assert len(nodes) == 1 and nodes <= set(run.nodes), (run.side, nodes)


def test_preferred_affinity_and_anti_affinity_outweigh_resource_scores(
    core_v1: k8s.CoreV1Api, namespace: str, runs: Callable[..., tuple[Run, Run]]
) -> None:
    """Node 0 holds a big filler, node 1 a big `magnet` pod, node 2 a small `noisy` pod, so
    resource scores alone rank node 2 first, then node 1. A pod preferring the magnet lands on
    node 1, and so does a pod avoiding `noisy` (node 2 is worst for it, node 1 beats node 0 on
    resources): without either preference both would take node 2."""
    ref, ours = runs(3, cpu="8", memory="32Gi")
    for run in (ref, ours):
        n0, n1, n2 = run.nodes
        create(
            core_v1,
            namespace,
            [
                run.pod("magnet", "magnet", on=n1, cpu="4", memory="16Gi"),
                run.pod("filler", "filler", on=n0, cpu="6", memory="24Gi"),
                run.pod("noisy", "noisy", on=n2, cpu="100m", memory="64Mi"),
            ],
        )
        wait_bound(core_v1, namespace, [run.name(n) for n in ("magnet", "filler", "noisy")])
    for run in (ref, ours):
        likes = {
            "podAffinity": {PREFERRED: [{"weight": 50, "podAffinityTerm": term(run, "magnet")}]}
        }
        avoids = {
            "podAntiAffinity": {PREFERRED: [{"weight": 50, "podAffinityTerm": term(run, "noisy")}]}
        }
        create(
            core_v1,
            namespace,
            [run.pod("likes", "x", affinity=likes), run.pod("avoids", "y", affinity=avoids)],
        )
    for run in (ref, ours):
        pods = wait_bound(core_v1, namespace, [run.name("likes"), run.name("avoids")])
        assert pods[run.name("likes")].spec.node_name == run.nodes[1], run.side
        assert pods[run.name("avoids")].spec.node_name == run.nodes[1], run.side


@pytest.fixture
def labelled_namespaces(core_v1: k8s.CoreV1Api) -> Iterator[Callable[[dict[str, str]], str]]:
    """Factory: a namespace with the given labels, ready for pods; deleted afterwards."""
    created: list[str] = []

    def make(labels: dict[str, str]) -> str:
        name = unique("e2e-ipa-ns")
        core_v1.create_namespace(
            k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name, labels=labels))
        )
        created.append(name)
        wait_default_service_account(core_v1, name)
        return name

    yield make
    for name in created:
        try:
            core_v1.delete_namespace(name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise


def test_namespace_selector_picks_the_namespaces_whose_pods_count(
    core_v1: k8s.CoreV1Api,
    namespace: str,
    runs: Callable[..., tuple[Run, Run]],
    labelled_namespaces: Callable[[dict[str, str]], str],
) -> None:
    """A `db` pod runs on node 0 in a namespace labelled team=<run>, an identical one on node 2
    in a namespace without it: affinity by namespaceSelector joins node 0 only, and
    anti-affinity by the same selector avoids node 0 only (pinned there, it waits)."""
    ref, ours = runs(3, cpu="8", memory="32Gi")
    for run in (ref, ours):
        selected = labelled_namespaces({"team": run.tag})
        other = labelled_namespaces({"team": f"not-{run.tag}"})
        core_v1.create_namespaced_pod(selected, run.pod("db", "db", on=run.nodes[0]))
        core_v1.create_namespaced_pod(other, run.pod("db", "db", on=run.nodes[2]))
        wait_bound(core_v1, selected, [run.name("db")])
        wait_bound(core_v1, other, [run.name("db")])
    outcome = {}
    for run in (ref, ours):
        by_team = term(run, "db", namespaceSelector={"matchLabels": {"team": run.tag}})
        create(
            core_v1,
            namespace,
            [
                run.pod("joins", "x", affinity={"podAffinity": {REQUIRED: [by_team]}}),
                run.pod(
                    "pinned-away",
                    "y",
                    on=run.nodes[0],
                    affinity={"podAntiAffinity": {REQUIRED: [by_team]}},
                ),
            ],
        )
    for run in (ref, ours):
        pods = wait_bound(core_v1, namespace, [run.name("joins")])
        assert pods[run.name("joins")].spec.node_name == run.nodes[0], run.side
        cond = wait_unschedulable(core_v1, namespace, run.name("pinned-away"))
        outcome[run.side] = (cond.reason, cond.message)
    assert "1 node(s) didn't match pod anti-affinity rules" in outcome["ref"][1], outcome
    assert outcome["ours"] == outcome["ref"]


def test_an_existing_pods_anti_affinity_repels_a_new_pod(
    core_v1: k8s.CoreV1Api, namespace: str, runs: Callable[..., tuple[Run, Run]]
) -> None:
    """A guard on node 0 refuses `newcomer` pods on its host: one newcomer takes node 1, one
    pinned to node 0 waits with kube-scheduler's symmetry message."""
    ref, ours = runs(2, cpu="8", memory="32Gi")
    for run in (ref, ours):
        guard = {"podAntiAffinity": {REQUIRED: [term(run, "newcomer")]}}
        core_v1.create_namespaced_pod(
            namespace, run.pod("guard", "guard", on=run.nodes[0], affinity=guard)
        )
        wait_bound(core_v1, namespace, [run.name("guard")])
    outcome = {}
    for run in (ref, ours):
        create(
            core_v1,
            namespace,
            [run.pod("free", "newcomer"), run.pod("pinned", "newcomer", on=run.nodes[0])],
        )
    for run in (ref, ours):
        pods = wait_bound(core_v1, namespace, [run.name("free")])
        assert pods[run.name("free")].spec.node_name == run.nodes[1], run.side
        cond = wait_unschedulable(core_v1, namespace, run.name("pinned"))
        outcome[run.side] = (cond.reason, cond.message)
    assert "1 node(s) didn't satisfy existing pods anti-affinity rules" in outcome["ref"][1]
    assert outcome["ours"] == outcome["ref"]


def test_the_first_pods_of_a_self_affine_group_are_not_left_pending(
    core_v1: k8s.CoreV1Api, namespace: str, runs: Callable[..., tuple[Run, Run]]
) -> None:
    """Three pods that require each other on one host, created together: the first goes
    anywhere (no pod matches yet and it matches its own term), the others join it."""
    ref, ours = runs(3, cpu="8", memory="32Gi")
    for run in (ref, ours):
        together = {"podAffinity": {REQUIRED: [term(run, "group")]}}
        create(core_v1, namespace, [run.pod(f"m{i}", "group", affinity=together) for i in range(3)])
    for run in (ref, ours):
        names = [run.name(f"m{i}") for i in range(3)]
        pods = wait_bound(core_v1, namespace, names, timeout=90)
        nodes = {pods[n].spec.node_name for n in names}
        assert len(nodes) == 1 and nodes <= set(run.nodes), (run.side, nodes)


def test_preemption_evicts_a_lower_priority_anti_affinity_blocker(
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    runs: Callable[..., tuple[Run, Run]],
) -> None:
    """One roomy node holding a low-priority `db` pod; a high-priority pod that refuses `db`
    on its host can only run there after the db pod is preempted."""
    classes = create_priority_classes(api_client, (10, 1000))
    try:
        ref, ours = runs(1, cpu="8", memory="32Gi")
        for run in (ref, ours):
            core_v1.create_namespaced_pod(
                namespace, run.pod("db", "db", priority_class=classes[10])
            )
            wait_bound(core_v1, namespace, [run.name("db")])
        for run in (ref, ours):
            refuses_db = {"podAntiAffinity": {REQUIRED: [term(run, "db")]}}
            core_v1.create_namespaced_pod(
                namespace,
                run.pod("important", "app", affinity=refuses_db, priority_class=classes[1000]),
            )
        for run in (ref, ours):
            pods = wait_bound(core_v1, namespace, [run.name("important")], timeout=90)
            assert pods[run.name("important")].spec.node_name == run.nodes[0], run.side

            def db_gone(run: Run = run) -> bool | str:
                return run.name("db") not in pods_by_name(core_v1, namespace) or "db still there"

            wait_for(db_gone, timeout=60, what=f"{run.side}: the db pod preempted")
    finally:
        delete_priority_classes(api_client, classes)
