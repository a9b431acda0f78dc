"""`kube-pysched snapshot` and `kube-pysched simulate` against the real control plane.

A snapshot of the cluster, a simulation of a workload on it, then the same workload created
for real and scheduled by kube-pysched: every pod (each one's best node unique, as the
simulation reports) lands where the simulation put it, and the pods left Pending and their
messages are the same. A drain is predicted and then done for real (the node cordoned, its
pods deleted and recreated by their ReplicaSet): the recreated pods land on the nodes
predicted. A ReplicaSet's scale-down is predicted and then done: the ReplicaSet controller
deletes the pods the simulation named. A drain under a PodDisruptionBudget: the eviction the
simulation reports blocked is the one the eviction API refuses. Two configurations of one
cluster, LeastAllocated against MostAllocated, spread and pack. Two scheduler-plugins
PodGroups under Coscheduling, one that fits and one that does not: the simulation places the
first whole and leaves every member of the second pending with the message the live group
cycle writes. The `--html` page opened in
headless Chromium (e2e/browser.py): no script or console error, every chart drawn, and a
screenshot kept.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from PIL import Image, ImageColor

from e2e import system_packages
from e2e.browser import PACKAGE, Chromium
from e2e.cluster import ControlPlane, ExternalCluster, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.pods import wait_for_pod
from e2e.podgroups import LABEL, PODGROUP_CRD, apply_crds, create_podgroup
from e2e.pysched import Pysched, default_config
from e2e.workload import pod_manifest, pod_scheduled_condition
from scheduler.simulate.html import AFTER, BEFORE, COUNT

SCHEDULER_NAME = "simulate-e2e"
POOL = "simulate-e2e/pool"
TIMEOUT = 60.0


def _config(strategy: str | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": SCHEDULER_NAME}
    if strategy is not None:
        profile["pluginConfig"] = [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": strategy}}}
        ]
    return default_config(profiles=[profile])


def _write(path: Path, doc: Any) -> str:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "scheduler", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def _snapshot(cluster: ControlPlane | ExternalCluster, path: Path) -> str:
    result = _cli("snapshot", "--kubeconfig", str(cluster.kubeconfig), "-o", str(path))
    assert "v1 Node:" in result.stderr and "v1 Pod:" in result.stderr, result.stderr
    return str(path)


def _simulate(*args: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(_cli("simulate", *args, "-o", "json").stdout)
    return report


def _pool_nodes(kwok_nodes: NodeFactory, namespace: str, cpus: list[str]) -> list[str]:
    """Nodes named after the test's namespace: an earlier test's pods, still bound to a node
    name while their namespace goes, must not land in this test's snapshot on its nodes."""
    test = namespace.rsplit("-", 1)[-1]
    names = []
    for i, cpu in enumerate(cpus):
        [made] = kwok_nodes(1, cpu=cpu, labels={POOL: namespace}, prefix=f"sim-{test}-{i}-")
        names.append(made.metadata.name)
    return names


def _pod(name: str, cpu: str, namespace: str, pool: str) -> dict[str, Any]:
    manifest = pod_manifest(
        name, scheduler_name=SCHEDULER_NAME, cpu=cpu, node_selector={POOL: pool}
    )
    manifest["metadata"]["namespace"] = namespace
    return manifest


def _attempted(pod: k8s.V1Pod | None) -> bool:
    if pod is None:
        return False
    if pod.spec.node_name:
        return True
    condition = pod_scheduled_condition(pod)
    return condition is not None and condition.reason == "Unschedulable"


def _only(config: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A configuration's report kept to the test's namespace: the snapshot is the whole
    cluster, so pods other tests left Pending are simulated too."""
    ours = f"{namespace}/"
    return {
        "placed": {k: n for k, n in config["placed"].items() if k.startswith(ours)},
        "pending": [p for p in config["pending"] if p["pod"].startswith(ours)],
        "tied": {k: n for k, n in config["tied"].items() if k.startswith(ours)},
    }


def test_simulation_predicts_where_kube_pysched_places_a_workload(
    cluster: ControlPlane | ExternalCluster,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Callable[..., Pysched],
    tmp_path: Path,
) -> None:
    nodes = _pool_nodes(kwok_nodes, namespace, ["3", "5", "8", "13"])
    pysched(_config())
    # Running pods bound where the test says (a scheduler would choose among equal nodes).
    for name, cpu, node in (("existing-0", "1", nodes[0]), ("existing-1", "2", nodes[2])):
        manifest = _pod(name, cpu, namespace, namespace)
        manifest["spec"]["nodeName"] = node
        core_v1.create_namespaced_pod(namespace, manifest)
    snapshot = _snapshot(cluster, tmp_path / "cluster.yaml")

    # Sizes chosen so that no pod's best node is shared with another: every placement is
    # the one kube-pysched must make.
    cpus = ["1", "2", "500m", "3", "1500m", "2200m", "40", "1100m", "2500m", "4"]
    workload = [_pod(f"w-{i}", cpu, namespace, namespace) for i, cpu in enumerate(cpus)]
    workload.append(_pod("w-elsewhere", "1", namespace, "no-such-pool"))
    add = _write(
        tmp_path / "workload.yaml", {"apiVersion": "v1", "kind": "List", "items": workload}
    )
    config = _write(tmp_path / "config.yaml", _config())
    report = _simulate("--snapshot", snapshot, "--config", config, "--add", add, "--seed", "1")
    predicted = _only(report["configs"][0], namespace)

    for manifest in workload:  # one at a time: the queue sees them in this order, as simulated
        name = manifest["metadata"]["name"]
        core_v1.create_namespaced_pod(namespace, manifest)
        wait_for_pod(core_v1, namespace, name, _attempted, timeout=TIMEOUT, what="attempted")
    live = {p.metadata.name: p for p in core_v1.list_namespaced_pod(namespace).items}

    assert predicted["tied"] == {}, predicted
    assert len(predicted["placed"]) == 9
    for key, node in predicted["placed"].items():
        assert live[key.split("/", 1)[1]].spec.node_name == node, key
    pending_live = {
        f"{namespace}/{name}": pod_scheduled_condition(pod).message
        for name, pod in live.items()
        if not pod.spec.node_name
    }
    pending_predicted = {p["pod"]: p["message"] for p in predicted["pending"]}
    assert pending_predicted == pending_live
    assert set(pending_live) == {f"{namespace}/w-6", f"{namespace}/w-elsewhere"}
    reasons = {p["pod"]: p["reasons"] for p in predicted["pending"]}
    assert reasons[f"{namespace}/w-6"]["Insufficient cpu"] == 4


def test_a_drain_is_predicted_as_the_replica_set_recreates_the_pods(
    cluster: ControlPlane | ExternalCluster,
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Callable[..., Pysched],
    tmp_path: Path,
) -> None:
    nodes = _pool_nodes(kwok_nodes, namespace, ["4", "6", "10"])
    pysched(_config())
    labels = {"app": "web"}
    template = {
        "metadata": {"labels": labels},
        "spec": _pod("web", "1", namespace, namespace)["spec"],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"replicas": 6, "selector": {"matchLabels": labels}, "template": template},
    }
    k8s.AppsV1Api(api_client).create_namespaced_deployment(namespace, deployment)

    def pods() -> list[k8s.V1Pod]:
        items: list[k8s.V1Pod] = core_v1.list_namespaced_pod(namespace).items
        return [p for p in items if p.metadata.deletion_timestamp is None]

    def all_bound(avoid: str = "") -> bool | str:
        current = pods()
        bound = [p for p in current if p.spec.node_name and p.spec.node_name != avoid]
        return (len(current) == 6 and len(bound) == 6) or f"{len(bound)}/{len(current)} bound"

    wait_for(all_bound, timeout=TIMEOUT, what="the deployment's pods bound")
    before = pods()
    drained = Counter(p.spec.node_name for p in before).most_common(1)[0][0]
    assert drained in nodes
    snapshot = _snapshot(cluster, tmp_path / "cluster.yaml")
    config = _write(tmp_path / "config.yaml", _config())
    report = _simulate(
        "--snapshot", snapshot, "--config", config, "--drain", drained, "--seed", "1"
    )
    predicted = _only(report["configs"][0], namespace)
    assert predicted["pending"] == [] and predicted["tied"] == {}, predicted
    moved = predicted["placed"]
    evicted = [p for p in before if p.spec.node_name == drained]
    assert len(moved) == len(evicted)

    core_v1.patch_node(drained, {"spec": {"unschedulable": True}})
    for pod in evicted:
        core_v1.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
    wait_for(lambda: all_bound(avoid=drained), timeout=TIMEOUT, what="recreated pods bound")
    kept = {p.metadata.uid for p in before}
    recreated = [p for p in pods() if p.metadata.uid not in kept]
    assert Counter(p.spec.node_name for p in recreated) == Counter(moved.values())


def test_a_scale_down_is_predicted_as_the_replica_set_controller_deletes(
    cluster: ControlPlane | ExternalCluster,
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    tmp_path: Path,
) -> None:
    """Six pods a ReplicaSet adopts over three nodes, four with pod-deletion-costs; scaled to
    two, the simulation names the pods the ReplicaSet controller then deletes, cheapest first.
    (The doubled-up ranking is left to the unit tests: against kube-controller-manager it did
    not decide the same pods in every run.)"""
    nodes = _pool_nodes(kwok_nodes, namespace, ["4", "4", "4"])
    labels = {"app": "web"}
    layout = {"a0": 0, "a1": 0, "a2": 0, "b0": 1, "b1": 1, "c0": 2}
    costs = {"c0": "-10", "a2": "-9", "b0": "-8", "a1": "-7"}
    for name, index in layout.items():
        manifest = _pod(name, "100m", namespace, namespace)
        manifest["metadata"]["labels"] = labels
        manifest["spec"]["nodeName"] = nodes[index]
        if name in costs:
            manifest["metadata"]["annotations"] = {
                "controller.kubernetes.io/pod-deletion-cost": costs[name]
            }
        core_v1.create_namespaced_pod(namespace, manifest)
    template = {
        "metadata": {"labels": labels},
        "spec": _pod("t", "100m", namespace, namespace)["spec"],
    }
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"replicas": 6, "selector": {"matchLabels": labels}, "template": template},
    }
    apps = k8s.AppsV1Api(api_client)
    apps.create_namespaced_replica_set(namespace, replica_set)

    def live() -> list[k8s.V1Pod]:
        items: list[k8s.V1Pod] = core_v1.list_namespaced_pod(namespace).items
        return [p for p in items if p.metadata.deletion_timestamp is None]

    def is_ready(pod: k8s.V1Pod) -> bool:
        conditions = pod.status.conditions or []
        return any(c.type == "Ready" and c.status == "True" for c in conditions)

    def adopted_and_ready() -> bool | str:
        pods = live()
        ready = [p for p in pods if p.metadata.owner_references and is_ready(p)]
        return (len(pods) == 6 and len(ready) == 6) or f"{len(ready)}/{len(pods)} adopted, ready"

    # Readiness ranks pods before anything else in the controller's order: the prediction is
    # compared only with a scale-down that meets the readiness the snapshot recorded.
    predicted: list[str] = []

    def predicted_while_ready() -> bool | str:
        wait_for(adopted_and_ready, timeout=TIMEOUT, what="the pods adopted and Ready")
        snapshot = _snapshot(cluster, tmp_path / "cluster.yaml")
        report = _simulate("--snapshot", snapshot, "--scale", f"{namespace}/rs/web=2")
        assert report["scaled"] == [f"{namespace}/replicaset/web: 6 -> 2"]
        if adopted_and_ready() is not True:
            return "a pod's readiness changed after the snapshot"
        predicted[:] = [key.split("/", 1)[1] for key in report["scaled_down"]]
        return True

    wait_for(predicted_while_ready, timeout=TIMEOUT, what="a steady snapshot")
    assert predicted == ["c0", "a2", "b0", "a1"]

    apps.patch_namespaced_replica_set(
        namespace=namespace, name="web", body={"spec": {"replicas": 2}}
    )
    wait_for(lambda: len(live()) == 2 or f"{len(live())} left", timeout=TIMEOUT, what="scaled down")
    assert {p.metadata.name for p in live()} == set(layout) - set(predicted)


def test_a_drain_meets_the_disruption_budget_as_the_eviction_api_does(
    cluster: ControlPlane | ExternalCluster,
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    namespace: str,
    kwok_nodes: NodeFactory,
    tmp_path: Path,
) -> None:
    """Three pods of a ReplicaSet under a budget of two available, two of them on the node
    drained: the simulation evicts one and reports the other blocked; the eviction API then
    grants the first and refuses the second with the same message."""
    nodes = _pool_nodes(kwok_nodes, namespace, ["4", "4"])
    labels = {"app": "guarded"}
    for name, index in (("g0", 0), ("g1", 0), ("g2", 1)):
        manifest = _pod(name, "100m", namespace, namespace)
        manifest["metadata"]["labels"] = labels
        manifest["spec"]["nodeName"] = nodes[index]
        core_v1.create_namespaced_pod(namespace, manifest)
    template = {
        "metadata": {"labels": labels},
        "spec": _pod("t", "100m", namespace, namespace)["spec"],
    }
    apps = k8s.AppsV1Api(api_client)
    apps.create_namespaced_replica_set(
        namespace,
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "guarded", "namespace": namespace},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": template},
        },
    )
    policy = k8s.PolicyV1Api(api_client)
    policy.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guarded", "namespace": namespace},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": labels}},
        },
    )

    def budget_counted() -> bool | str:
        pdb = policy.read_namespaced_pod_disruption_budget("guarded", namespace)
        status = pdb.status
        done = (
            status is not None
            and status.observed_generation == pdb.metadata.generation
            and status.disruptions_allowed == 1
        )
        return done or f"status {status}"

    wait_for(budget_counted, timeout=TIMEOUT, what="the budget counted by its controller")
    snapshot = _snapshot(cluster, tmp_path / "cluster.yaml")
    report = _simulate("--snapshot", snapshot, "--drain", nodes[0])
    ours = {k: v for k, v in report["blocked"].items() if k.startswith(f"{namespace}/")}
    assert set(ours) == {f"{namespace}/g1"}, report["blocked"]
    assert ours[f"{namespace}/g1"].startswith(
        "Cannot evict pod as it would violate the pod's disruption budget."
    )

    def evict(name: str) -> None:
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        core_v1.create_namespaced_pod_eviction(name, namespace, body)

    evict("g0")
    with pytest.raises(k8s.ApiException) as refused:
        evict("g1")
    assert refused.value.status == 429
    message = json.loads(refused.value.body)["message"]
    assert ours[f"{namespace}/g1"].startswith(message)


def test_least_and_most_allocated_spread_and_pack(
    cluster: ControlPlane | ExternalCluster,
    namespace: str,
    kwok_nodes: NodeFactory,
    tmp_path: Path,
) -> None:
    nodes = _pool_nodes(kwok_nodes, namespace, ["8", "8", "8", "8"])
    snapshot = _snapshot(cluster, tmp_path / "cluster.yaml")
    workload = [_pod(f"p-{i}", "1", namespace, namespace) for i in range(6)]
    add = _write(
        tmp_path / "workload.yaml", {"apiVersion": "v1", "kind": "List", "items": workload}
    )
    least = _write(tmp_path / "least.yaml", _config("LeastAllocated"))
    most = _write(tmp_path / "most.yaml", _config("MostAllocated"))
    report = _simulate("--snapshot", snapshot, "--add", add, "--config", least, "--config", most)
    spread, packed = (set(_only(cfg, namespace)["placed"].values()) for cfg in report["configs"])
    assert spread == set(nodes)
    assert len(packed) == 1
    assert report["differences"]


def _broken_copy(page: Path) -> Path:
    """The page with what the browser checks must catch: a script error, a console error and
    a chart with nothing drawn."""
    broken = page.with_name("broken.html")
    injected = (
        '<script>console.error("injected"); throw new Error("injected");</script>'
        '<svg role="img" aria-label="injected empty chart" width="300" height="40"></svg>'
    )
    broken.write_text(page.read_text().replace("</body>", injected + "</body>"))
    return broken


def _keep(artefact: Path) -> None:
    """Into $E2E_ARTEFACTS as well when set (CI keeps that directory); tmp_path has it anyway."""
    out = os.environ.get("E2E_ARTEFACTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copy(artefact, Path(out) / artefact.name)
    print(f"kept {artefact}")


def test_the_html_report_renders_in_headless_chromium(
    cluster: ControlPlane | ExternalCluster,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    tmp_path: Path,
) -> None:
    """The page a reader opens: no script or console error, every chart with a box and bars,
    and a full-page screenshot (kept) with the bars' colours in it."""
    try:
        system_packages.install([PACKAGE])
    except system_packages.Unavailable as exc:
        pytest.skip(str(exc))
    nodes = _pool_nodes(kwok_nodes, namespace, ["4", "8", "16"])
    for i, node in enumerate(nodes[:2]):
        manifest = _pod(f"running-{i}", "2", namespace, namespace)
        manifest["spec"]["nodeName"] = node
        core_v1.create_namespaced_pod(namespace, manifest)
    snapshot = _snapshot(cluster, tmp_path / "cluster.yaml")
    workload = [_pod(f"w-{i}", "3", namespace, namespace) for i in range(5)]
    workload.append(_pod("too-big", "40", namespace, namespace))
    add = _write(
        tmp_path / "workload.yaml", {"apiVersion": "v1", "kind": "List", "items": workload}
    )
    least = _write(tmp_path / "least.yaml", _config("LeastAllocated"))
    most = _write(tmp_path / "most.yaml", _config("MostAllocated"))
    page = tmp_path / "report.html"
    _cli(
        "simulate",
        "--snapshot",
        snapshot,
        "--add",
        add,
        "--config",
        least,
        "--config",
        most,
        "--html",
        str(page),
    )

    browser = Chromium(tmp_path)
    try:
        view = browser.open(page)
        broken = browser.open(_broken_copy(page))
    finally:
        browser.close()

    screenshot = tmp_path / "simulate-report.png"
    screenshot.write_bytes(view.screenshot)
    _keep(screenshot)
    assert view.problems() == []
    # Per configuration: cpu and memory per node, pods placed per node, pending per reason.
    labels = [chart.label for chart in view.charts]
    assert labels == 2 * [
        "cpu requested / allocatable",
        "memory requested / allocatable",
        "pods placed per node",
        "pending pods per reason",
    ], labels
    with Image.open(io.BytesIO(view.screenshot)) as image:
        assert image.format == "PNG"
        assert image.size == view.size and min(view.size) > 0
        colours = {colour for _, colour in image.convert("RGB").getcolors(1 << 24) or []}
    for bar in (BEFORE, AFTER, COUNT):
        assert ImageColor.getrgb(bar) in colours, bar

    # The same checks fail on a broken page: they do look at what the browser did.
    found = "\n".join(broken.problems())
    assert "script error: Error: injected" in found, found
    assert "console.error: injected" in found, found
    assert "(injected empty chart) draws nothing" in found, found


def _gang_config() -> dict[str, Any]:
    """scheduler-plugins' sample: Coscheduling at every point it has, and as the QueueSort."""
    plugins = {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
    }
    return default_config(profiles=[{"schedulerName": SCHEDULER_NAME, "plugins": plugins}])


def test_a_gang_is_predicted_whole_or_not_at_all_as_kube_pysched_places_it(
    cluster: ControlPlane | ExternalCluster,
    api_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Callable[..., Pysched],
    tmp_path: Path,
) -> None:
    apply_crds(api_client, PODGROUP_CRD)
    _pool_nodes(kwok_nodes, namespace, ["4", "4"])
    pysched(_gang_config())
    # Created within the same second: Coscheduling's order then falls to the groups' names,
    # so "first" goes first in the simulation, as it does live (its pods are created first).
    create_podgroup(api_client, namespace, "first", 3)
    create_podgroup(api_client, namespace, "second", 3)
    snapshot = _snapshot(cluster, tmp_path / "cluster.yaml")

    def member(name: str, cpu: str, group: str) -> dict[str, Any]:
        manifest = _pod(name, cpu, namespace, namespace)
        manifest["metadata"].setdefault("labels", {})[LABEL] = group
        return manifest

    first = [member(f"first-{i}", "1", "first") for i in range(3)]
    second = [member(f"second-{i}", "3", "second") for i in range(3)]
    items = first + second
    add = _write(tmp_path / "gangs.yaml", {"apiVersion": "v1", "kind": "List", "items": items})
    config = _write(tmp_path / "config.yaml", _gang_config())
    report = _simulate("--snapshot", snapshot, "--config", config, "--add", add)["configs"][0]
    predicted = _only(report, namespace)
    groups = {g["group"]: g for g in report["groups"] if g["group"].startswith(f"{namespace}/")}

    for batch in (first, second):  # the second group once the first is placed, as simulated
        for manifest in batch:
            core_v1.create_namespaced_pod(namespace, manifest)
        for manifest in batch:
            name = manifest["metadata"]["name"]
            wait_for_pod(core_v1, namespace, name, _attempted, timeout=TIMEOUT, what="attempted")
    live = {p.metadata.name: p for p in core_v1.list_namespaced_pod(namespace).items}

    placed_live = sorted(f"{namespace}/{n}" for n, p in live.items() if p.spec.node_name)
    assert sorted(predicted["placed"]) == placed_live
    assert placed_live == [f"{namespace}/first-{i}" for i in range(3)]
    pending_live = {
        f"{namespace}/{name}": pod_scheduled_condition(pod).message
        for name, pod in live.items()
        if not pod.spec.node_name
    }
    assert {p["pod"]: p["message"] for p in predicted["pending"]} == pending_live
    assert groups[f"{namespace}/first"]["state"] == "placed"
    second_group = groups[f"{namespace}/second"]
    assert (second_group["state"], second_group["placed"]) == ("pending", 0)
    assert set(pending_live.values()) == {second_group["message"]}
    assert second_group["message"].startswith(f"PodGroup {namespace}/second: ")
