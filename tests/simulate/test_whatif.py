"""The what-if's changes to a snapshot: scaling workloads as their controllers would, nodes
removed and added, drains that meet PodDisruptionBudgets, preemption victims recreated, and
PodGroups among the added objects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler.api.gang import parse_kube_pod_group, parse_pod_group
from scheduler.simulate.cli import simulate_main
from scheduler.simulate.cluster import ClusterObjects
from scheduler.simulate.evictions import SEVERAL, TOO_MANY, Budgets
from scheduler.simulate.nodes import matching_nodes, node_copies, parse_selector
from scheduler.simulate.scale import ScaleTarget, deletion_order, scale
from scheduler.simulate.whatif import WhatIf, prepare
from scheduler.simulate.workloads import UnknownWorkloadError, WorkloadError, remove_nodes
from tests.simulate.test_simulate import node, owned, pod, restore_structlog, run, write

__all__ = ["restore_structlog"]

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def stamp(ago: timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def ready(p: dict[str, Any], since: timedelta | None = None) -> dict[str, Any]:
    cond: dict[str, Any] = {"type": "Ready", "status": "True"}
    if since is not None:
        cond["lastTransitionTime"] = stamp(since)
    p["status"]["conditions"] = [cond]
    return p


def replica_set(
    name: str, replicas: int, deployment: str = "", revision: str = "1"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": name}
    if deployment:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "controller": True}
        ]
        meta["annotations"] = {"deployment.kubernetes.io/revision": revision}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "pod-template-hash": "h1"}},
                "spec": {
                    "schedulerName": "kube-pysched",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                },
            },
        },
    }


def stateful_set(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
        },
    }


def sts_pod(name: str, ordinal: int, node_name: str) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "uid": name}
    return pod(f"{name}-{ordinal}", "1", node_name, ownerReferences=[{**ref, "controller": True}])


def cluster_of(*objects: dict[str, Any]) -> ClusterObjects:
    out = ClusterObjects()
    for obj in objects:
        out.add(obj)
    return out


# --- --scale -------------------------------------------------------------------------------


def test_scale_targets_parse_with_or_without_a_namespace() -> None:
    assert ScaleTarget.parse("deployment/web=5", "default") == ScaleTarget(
        "default", "Deployment", "web", 5
    )
    assert ScaleTarget.parse("prod/sts/db=0", "default") == ScaleTarget(
        "prod", "StatefulSet", "db", 0
    )
    assert ScaleTarget.parse("rs/x=2", "ns") == ScaleTarget("ns", "ReplicaSet", "x", 2)
    for bad, message in [
        ("web=5", "expected"),
        ("daemonset/x=1", "cannot scale a daemonset"),
        ("deployment/web=-1", "whole number"),
        ("deployment/web", "expected"),
    ]:
        with pytest.raises(ValueError, match=message):
            ScaleTarget.parse(bad, "default")


def test_replica_set_deletion_order_follows_the_controllers_ranking() -> None:
    unassigned = pod("unassigned", "1")
    pending_bound = pod("pending-bound", "1", "a")
    pending_bound["status"]["phase"] = "Pending"
    not_ready = pod("not-ready", "1", "a")
    cheap = ready(
        pod("cheap", "1", "b", annotations={"controller.kubernetes.io/pod-deletion-cost": "-5"})
    )
    doubled = [ready(pod(f"doubled-{i}", "1", "c"), timedelta(days=30)) for i in range(2)]
    young = ready(pod("young", "1", "d"), timedelta(minutes=1))
    old = ready(pod("old", "1", "e"), timedelta(days=30))
    restarted = ready(pod("restarted", "1", "f"), timedelta(days=30))
    restarted["status"]["containerStatuses"] = [{"name": "c", "restartCount": 3}]
    pods = [old, restarted, young, *doubled, cheap, not_ready, pending_bound, unassigned]
    order = [p["metadata"]["name"] for p in deletion_order(pods, pods, NOW)]
    assert order[:4] == ["unassigned", "pending-bound", "not-ready", "cheap"]
    assert set(order[4:6]) == {"doubled-0", "doubled-1"}
    assert order[6:] == ["young", "restarted", "old"]


def test_scaling_a_deployment_goes_through_its_current_replica_set() -> None:
    cluster = cluster_of(
        replica_set("web-old", 0, "web", "1"),
        replica_set("web-new", 2, "web", "2"),
        ready(owned("web-new-a", "1", "n1", "web-new"), timedelta(days=1)),
        ready(owned("web-new-b", "1", "n2", "web-new"), timedelta(minutes=1)),
    )
    up = scale(cluster, [ScaleTarget("default", "Deployment", "web", 4)], NOW)
    assert up.summary == ["default/deployment/web: 2 -> 4"]
    assert [p["metadata"]["name"] for p in up.created] == ["web-new-00000", "web-new-00001"]
    made = up.created[0]
    assert made["metadata"]["labels"]["pod-template-hash"] == "h1"
    assert made["metadata"]["ownerReferences"][0]["name"] == "web-new"
    assert "nodeName" not in made["spec"]
    down = scale(cluster, [ScaleTarget("default", "Deployment", "web", 1)], NOW)
    assert down.deleted == ["default/web-new-b"] and not down.created


def test_a_deployment_in_a_rollout_or_unknown_is_refused() -> None:
    cluster = cluster_of(
        replica_set("web-old", 1, "web", "1"), replica_set("web-new", 1, "web", "2")
    )
    with pytest.raises(WorkloadError, match="rollout is in progress"):
        scale(cluster, [ScaleTarget("default", "Deployment", "web", 3)], NOW)
    with pytest.raises(UnknownWorkloadError, match="no ReplicaSet of a Deployment default/api"):
        scale(cluster, [ScaleTarget("default", "Deployment", "api", 3)], NOW)
    with pytest.raises(UnknownWorkloadError, match="no StatefulSet default/db"):
        scale(cluster, [ScaleTarget("default", "StatefulSet", "db", 3)], NOW)


def test_a_stateful_set_grows_at_the_next_ordinals_and_shrinks_from_the_highest() -> None:
    cluster = cluster_of(stateful_set("db", 2), sts_pod("db", 0, "a"), sts_pod("db", 1, "a"))
    up = scale(cluster, [ScaleTarget("default", "StatefulSet", "db", 4)], NOW)
    assert [p["metadata"]["name"] for p in up.created] == ["db-2", "db-3"]
    claims = [c["metadata"]["name"] for c in cluster.of("PersistentVolumeClaim")]
    assert claims == ["data-db-2", "data-db-3"]
    down = scale(cluster, [ScaleTarget("default", "StatefulSet", "db", 0)], NOW)
    assert down.deleted == ["default/db-1", "default/db-0"]


def test_scale_runs_end_to_end_and_an_unknown_workload_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = write(
        tmp_path / "c.yaml",
        node("a"),
        replica_set("web", 1),
        ready(owned("web-x", "1", "a", "web")),
    )
    report = run(capsys, "--snapshot", snap, "--scale", "rs/web=3")
    assert report["scaled"] == ["default/replicaset/web: 1 -> 3"]
    assert report["scaled_down"] == []
    assert report["configs"][0]["placed"] == {"default/web-00000": "a", "default/web-00001": "a"}
    assert simulate_main(["--snapshot", snap, "--scale", "deployment/nope=3"]) == 2
    assert "no ReplicaSet of a Deployment default/nope" in capsys.readouterr().err
    assert simulate_main(["--snapshot", snap, "--scale", "web=3"]) == 2
    assert "expected [NAMESPACE/]KIND/NAME=REPLICAS" in capsys.readouterr().err


# --- --remove-nodes and --add-nodes --------------------------------------------------------


def test_selectors_read_as_kubectl_reads_them() -> None:
    sel = parse_selector("zone in (a, b),tier!=gpu,spot,!legacy")
    assert sel.matches({"zone": "a", "spot": "yes"})
    assert not sel.matches({"zone": "c", "spot": "yes"})
    assert not sel.matches({"zone": "a", "spot": "", "tier": "gpu"})
    assert not sel.matches({"zone": "b", "spot": "", "legacy": "1"})
    assert parse_selector("pool==big").matches({"pool": "big"})
    assert not parse_selector("pool notin (big)").matches({"pool": "big"})
    for bad in ["", "a=(", "zone in a", "=x"]:
        with pytest.raises(ValueError):
            parse_selector(bad)


def test_removed_nodes_take_daemon_pods_and_give_back_controlled_ones() -> None:
    daemon = pod(
        "ds-1",
        "100m",
        "a",
        ownerReferences=[{"kind": "DaemonSet", "name": "ds", "controller": True}],
    )
    pods = [owned("web-1", "1", "a", "web"), pod("lone", "1", "a"), daemon, pod("x", "1", "b")]
    cluster = cluster_of(node("a", pool="old"), node("b", pool="new"), *pods)
    names = matching_nodes(cluster, ["pool=old"])
    assert names == ["a"]
    nodes, kept, out = remove_nodes(pods, cluster.of("Node"), names)
    assert [n["metadata"]["name"] for n in nodes] == ["b"]
    assert [p["metadata"]["name"] for p in kept] == ["x"]
    assert list(out.recreated) == ["default/web-1"]
    assert out.lost == ["default/lone"] and out.kept == ["default/ds-1"]
    with pytest.raises(UnknownWorkloadError, match="no node of the snapshot matches"):
        matching_nodes(cluster, ["pool=none"])


def test_node_copies_are_named_and_labelled_per_copy() -> None:
    template = node("big", "16", **{"topology.kubernetes.io/zone": "z1"})
    copies = node_copies(template, 2, {"a"})
    assert [n["metadata"]["name"] for n in copies] == ["big-1", "big-2"]
    labels = copies[1]["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "big-2"
    assert labels["topology.kubernetes.io/zone"] == "z1"
    assert copies[0]["metadata"]["uid"] != copies[1]["metadata"]["uid"]
    generated = {**template, "metadata": {"generateName": "pool-"}}
    assert [n["metadata"]["name"] for n in node_copies(generated, 1, set())] == ["pool-1"]
    with pytest.raises(WorkloadError, match="already has a node 'big-1'"):
        node_copies(template, 1, {"big-1"})
    with pytest.raises(WorkloadError, match=r"no status\.allocatable"):
        node_copies({**template, "status": {}}, 1, set())


def test_nodes_removed_and_added_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = write(tmp_path / "c.yaml", node("old", pool="old"), owned("web-1", "2", "old", "web"))
    template = write(tmp_path / "n.yaml", node("fresh", "4"))
    report = run(
        capsys,
        "--snapshot",
        snap,
        "--remove-nodes",
        "pool=old",
        "--add-nodes",
        template,
        "--count",
        "2",
    )
    assert report["removed_nodes"] == ["old"]
    assert report["added_nodes"] == ["fresh-1", "fresh-2"]
    cfg = report["configs"][0]
    assert set(cfg["placed"].values()) <= {"fresh-1", "fresh-2"}
    assert sorted(n["node"] for n in cfg["nodes"]) == ["fresh-1", "fresh-2"]
    assert simulate_main(["--snapshot", snap, "--remove-nodes", "pool in (x"]) == 2
    assert "--remove-nodes: cannot parse" in capsys.readouterr().err
    assert simulate_main(["--snapshot", snap, "--count", "3"]) == 2
    assert "--count applies to --add-nodes" in capsys.readouterr().err


# --- drains and PodDisruptionBudgets -------------------------------------------------------


def pdb(name: str, allowed: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": allowed,
            "desiredHealthy": 2,
            "currentHealthy": 2 + allowed - 1,
        },
    }


def web(name: str, node_name: str = "a") -> dict[str, Any]:
    p = ready(owned(name, "1", node_name, "web"))
    p["metadata"]["labels"] = {"app": "web"}
    return p


def test_the_eviction_api_charges_and_enforces_the_budget() -> None:
    budgets = Budgets.of([pdb("web", 1)])
    assert budgets.evict(web("w1")) is None
    refused = budgets.evict(web("w2"))
    assert refused is not None and refused.startswith(TOO_MANY)
    assert budgets.pdbs[0]["status"]["disruptionsAllowed"] == 0
    assert "w1" in budgets.pdbs[0]["status"]["disruptedPods"]
    pending = web("w3")
    pending["status"]["phase"] = "Pending"
    assert budgets.evict(pending) is None
    unready = web("w4")
    unready["status"]["conditions"] = []
    assert (
        Budgets.of([pdb("web", 0, unhealthyPodEvictionPolicy="AlwaysAllow")]).evict(unready) is None
    )
    assert Budgets.of([pdb("web", 0)]).evict(unready) is not None
    assert Budgets.of([pdb("a", 1), pdb("b", 1)]).evict(web("w5")) == SEVERAL
    assert Budgets.of([pdb("all", 0, selector={})]).evict(web("w6")) is not None
    assert Budgets.of([pdb("none", 0, selector=None)]).evict(web("w7")) is None
    negative = Budgets.of([pdb("web", -1)]).evict(web("w8"))
    assert negative is not None and "negative" in negative


def test_drain_leaves_pods_a_budget_protects_unless_eviction_is_disabled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = write(tmp_path / "c.yaml", node("a"), node("b"), web("w1"), web("w2"), pdb("web", 1))
    report = run(capsys, "--snapshot", snap, "--drain", "a")
    [blocked] = report["blocked"]
    assert report["blocked"][blocked].startswith(TOO_MANY)
    assert len(report["configs"][0]["placed"]) == 1
    forced = run(capsys, "--snapshot", snap, "--drain", "a", "--disable-eviction")
    assert forced["blocked"] == {} and len(forced["configs"][0]["placed"]) == 2


# --- preemption victims recreated ----------------------------------------------------------


def test_victims_come_back_pending_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = write(
        tmp_path / "c.yaml",
        node("a", "2"),
        node("b", "1"),
        owned("low-1", "2", "a", "low"),
        pod("bare", "1", "b"),
    )
    add = write(tmp_path / "add.yaml", pod("high", "2", priority=100), pod("mid", "1", priority=50))
    plain = run(capsys, "--snapshot", snap, "--add", add)["configs"][0]
    assert plain["recreated_victims"] == {} and plain["pending"] == []
    assert len(plain["preemptions"]) == 2
    cfg = run(capsys, "--snapshot", snap, "--add", add, "--recreate-victims")["configs"][0]
    victims = {v for p in cfg["preemptions"] for v in p["victims"]}
    assert victims == {"default/low-1", "default/bare"}
    again = cfg["recreated_victims"]["default/low-1"]
    assert again.startswith("default/low-sim")
    assert cfg["recreated_victims"]["default/bare"] == ""
    assert [p["pod"] for p in cfg["pending"]] == [again]


# --- PodGroups in --add --------------------------------------------------------------------


def test_pod_groups_in_the_add_file_are_loaded_before_their_pods(tmp_path: Path) -> None:
    snap = write(tmp_path / "c.yaml", node("a"))
    groups = [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "train"},
            "spec": {"minMember": 2},
        },
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "infer", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        },
    ]
    add = write(tmp_path / "add.yaml", *groups, pod("p", "1"))
    prepared = prepare(WhatIf(snapshot=[snap], add=[add]))
    loaded = prepared.cluster.of("PodGroup")
    assert [g["metadata"]["namespace"] for g in loaded] == ["default", "ml"]
    train = parse_pod_group(loaded[0])
    assert (train.namespace, train.name, train.min_member) == ("default", "train", 2)
    infer = parse_kube_pod_group(loaded[1])
    assert (infer.namespace, infer.name) == ("ml", "infer")
    bad = write(
        tmp_path / "bad.yaml", {"apiVersion": "v1", "kind": "PodGroup", "metadata": {"name": "x"}}
    )
    with pytest.raises(WorkloadError, match="not a PodGroup API"):
        prepare(WhatIf(snapshot=[snap], add=[bad]))
