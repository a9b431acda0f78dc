"""The simulator end to end on small clusters: loading, workload expansion, drains, the
scheduling run (placements, pending reasons, preemption), seeds and configuration diffs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.logging import reset_logging
from scheduler.simulate.cli import simulate_main
from scheduler.simulate.cluster import ClusterFileError, dump_list, read_objects
from scheduler.simulate.workloads import Priorities, WorkloadError, drain, expand

SCHED = "kube-pysched"


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    """simulate_main configures logging for the process; later tests must not log into
    captured streams."""
    yield
    reset_logging()


def node(name: str, cpu: str = "4", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str, node_name: str = "", priority: int = 0, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHED,
        "priority": priority,
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", **meta},
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def owned(name: str, cpu: str, node_name: str, rs: str) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs, "controller": True}
    return pod(name, cpu, node_name, generateName=f"{rs}-", ownerReferences=[ref])


def write(path: Path, *objects: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert simulate_main([*argv, "-o", "json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_lists_typed_lists_and_documents_are_read(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    nodes = {"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": {"name": "a"}}]}
    path.write_text(yaml.safe_dump_all([nodes, pod("p", "1")]))
    objects = read_objects([path])
    assert objects.counts() == {"Node": 1, "Pod": 1}
    assert objects.of("Node")[0]["apiVersion"] == "v1"


def test_a_written_snapshot_is_json_that_yaml_readers_read_too(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with path.open("wb") as out:
        dump_list([node("a"), pod("p", "1")], out)
    assert yaml.safe_load(path.read_text())["items"][0]["metadata"]["name"] == "a"
    assert read_objects([path]).counts() == {"Node": 1, "Pod": 1}


def test_an_object_without_kind_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"metadata": {"name": "a"}}))
    with pytest.raises(ClusterFileError, match="document 1: the object has no kind"):
        read_objects([path])


def test_a_deployment_becomes_a_replica_set_and_its_pods() -> None:
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
        },
    }
    pods, controllers = expand(deployment)
    assert [c["kind"] for c in controllers] == ["ReplicaSet"]
    rs = controllers[0]
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"]
        assert p["metadata"]["labels"]["app"] == "web"
        assert "pod-template-hash" in p["metadata"]["labels"]
    assert len({p["metadata"]["uid"] for p in pods}) == 3


def test_stateful_set_pods_keep_ordinals_and_get_their_claims() -> None:
    sts = {
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": []}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
        },
    }
    pods, objs = expand(sts)
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1"]
    assert sorted(o["metadata"]["name"] for o in objs if o["kind"] == "PersistentVolumeClaim") == [
        "data-db-0",
        "data-db-1",
    ]


def test_an_unknown_priority_class_is_refused_as_admission_would() -> None:
    p = pod("p", "1")
    del p["spec"]["priority"]
    p["spec"]["priorityClassName"] = "gold"
    with pytest.raises(WorkloadError, match="no PriorityClass with name gold"):
        Priorities.of([]).admit(p)
    Priorities.of([{"metadata": {"name": "gold"}, "value": 7}]).admit(p)
    assert p["spec"]["priority"] == 7


def test_drain_recreates_controlled_pods_and_reports_the_others() -> None:
    nodes = {"a": node("a"), "b": node("b")}
    pods = [owned("web-1", "1", "a", "web"), pod("lone", "1", "a"), pod("other", "1", "b")]
    kept, drained = drain(pods, nodes, ["a"])
    assert nodes["a"]["spec"]["unschedulable"] is True
    assert [p["metadata"]["name"] for p in kept] == ["other"]
    assert list(drained.recreated) == ["default/web-1"]
    assert "nodeName" not in drained.recreated["default/web-1"]["spec"]
    assert drained.lost == ["default/lone"]
    with pytest.raises(WorkloadError, match="no node 'c'"):
        drain(pods, nodes, ["c"])


def test_pods_are_placed_and_the_rest_pending_with_the_fit_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path / "c.yaml", node("a", "2"), node("b", "2"), pod("x", "1", "a"))
    add = write(tmp_path / "add.yaml", pod("p1", "2"), pod("p2", "1500m"), pod("p3", "1"))
    report = run(capsys, "--snapshot", cluster, "--add", add)
    cfg = report["configs"][0]
    assert cfg["placed"]["default/p1"] == "b"
    assert cfg["placed"]["default/p3"] == "a"
    [pending] = cfg["pending"]
    assert pending["pod"] == "default/p2"
    assert pending["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert pending["reasons"] == {"Insufficient cpu": 2}


def test_preemption_evicts_lower_priority_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path / "c.yaml", node("a", "2"), pod("low", "2", "a"))
    add = write(tmp_path / "add.yaml", pod("high", "2", priority=100))
    cfg = run(capsys, "--snapshot", cluster, "--add", add)["configs"][0]
    assert cfg["placed"] == {"default/high": "a"}
    assert cfg["preemptions"] == [
        {"preemptor": "default/high", "node": "a", "victims": ["default/low"]}
    ]


def test_the_seed_decides_ties_and_the_same_seed_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path / "c.yaml", *(node(f"n{i}") for i in range(8)))
    add = write(tmp_path / "add.yaml", *(pod(f"p{i}", "100m") for i in range(6)))
    runs = [
        run(capsys, "--snapshot", cluster, "--add", add, "--seed", str(seed))["configs"][0][
            "placed"
        ]
        for seed in (1, 1, 2, 3)
    ]
    assert runs[0] == runs[1]
    assert len({json.dumps(r, sort_keys=True) for r in runs}) > 1


def test_two_configurations_pack_differently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path / "c.yaml", node("a"), node("b"), pod("x", "1", "a"))
    add = write(tmp_path / "add.yaml", pod("p", "1"))
    most = tmp_path / "most.yaml"
    most.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": SCHED,
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFit",
                                "args": {"scoringStrategy": {"type": "MostAllocated"}},
                            }
                        ],
                    }
                ],
            }
        )
    )
    least = tmp_path / "least.yaml"
    least.write_text(most.read_text().replace("MostAllocated", "LeastAllocated"))
    report = run(
        capsys, "--snapshot", cluster, "--add", add, "--config", str(least), "--config", str(most)
    )
    assert [c["placed"]["default/p"] for c in report["configs"]] == ["b", "a"]
    assert report["differences"] == [
        {"pod": "default/p", "nodes": {str(least): "b", str(most): "a"}}
    ]


def test_a_drained_nodes_pods_go_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(
        tmp_path / "c.yaml", node("a"), node("b"), node("c", "1"), owned("web-1", "2", "a", "web")
    )
    report = run(capsys, "--snapshot", cluster, "--drain", "a")
    assert report["drained"] == ["a"]
    assert report["configs"][0]["placed"] == {"default/web-sim001": "b"}


def test_bad_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write(tmp_path / "c.yaml", node("a"))
    assert simulate_main(["--snapshot", cluster, "--drain", "zz"]) == 1
    assert "--drain zz: the snapshot has no node 'zz'" in capsys.readouterr().err
    assert simulate_main(["--snapshot", str(tmp_path / "missing.yaml")]) == 1
    assert "cannot read the file" in capsys.readouterr().err
