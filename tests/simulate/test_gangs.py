"""Gang scheduling in the simulator: PodGroups of both APIs placed whole by the live group
cycle, or left pending whole with the group's message; a pod waiting at Permit released by a
sibling or by its timeout on the fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.logging import reset_logging
from tests.simulate.test_simulate import node, pod, run, write


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    reset_logging()


COSCHEDULING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "kube-pysched",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            },
        }
    ],
}


def plugins_group(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}"},
        "spec": {"minMember": min_member},
    }


def kube_group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "uid": f"pg-{name}"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def labelled(name: str, cpu: str, group: str) -> dict[str, Any]:
    return pod(name, cpu, labels={"scheduling.x-k8s.io/pod-group": group})


def grouped(name: str, cpu: str, group: str) -> dict[str, Any]:
    raw = pod(name, cpu)
    raw["spec"]["schedulingGroup"] = {"podGroupName": group}
    return raw


def by_group(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["group"]: g for g in config["groups"]}


def test_scheduler_plugins_groups_are_placed_whole_or_not_at_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(
        tmp_path / "c.yaml",
        node("a"),
        node("b"),
        plugins_group("fits", 3),
        plugins_group("big", 3),
        *(labelled(f"fits-{i}", "1", "fits") for i in range(3)),
        *(labelled(f"big-{i}", "3", "big") for i in range(3)),
    )
    config = tmp_path / "cos.yaml"
    config.write_text(yaml.safe_dump(COSCHEDULING))
    cfg = run(capsys, "--snapshot", cluster, "--config", str(config))["configs"][0]
    assert sorted(cfg["placed"]) == [f"default/fits-{i}" for i in range(3)]
    pending = {p["pod"]: p["message"] for p in cfg["pending"]}
    assert sorted(pending) == [f"default/big-{i}" for i in range(3)]
    groups = by_group(cfg)
    assert groups["default/fits"] == {
        "group": "default/fits",
        "api": "scheduling.x-k8s.io/v1alpha1",
        "min_member": 3,
        "members": 3,
        "placed": 3,
        "state": "placed",
        "message": "",
    }
    big = groups["default/big"]
    assert (big["state"], big["placed"], big["members"]) == ("pending", 0, 3)
    assert big["message"].startswith(
        "PodGroup default/big: 2 of 3 members would fit, none is held; 1 could not be placed: "
        "0/2 nodes are available: 2 Insufficient cpu."
    )
    assert set(pending.values()) == {big["message"]}


def test_kubernetes_pod_groups_get_kube_schedulers_group_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(
        tmp_path / "c.yaml",
        node("a"),
        node("b"),
        kube_group("fits", 2),
        kube_group("big", 2),
        *(grouped(f"fits-{i}", "1500m", "fits") for i in range(2)),
        *(grouped(f"big-{i}", "3", "big") for i in range(2)),
    )
    out = run(capsys, "--snapshot", cluster, "--feature-gates", "GenericWorkload=true")
    cfg = out["configs"][0]
    assert sorted(cfg["placed"]) == ["default/fits-0", "default/fits-1"]
    assert sorted(p["pod"] for p in cfg["pending"]) == ["default/big-0", "default/big-1"]
    groups = by_group(cfg)
    assert groups["default/fits"]["state"] == "placed"
    big = groups["default/big"]
    assert (big["api"], big["state"], big["placed"]) == ("scheduling.k8s.io/v1beta1", "pending", 0)
    # The PodGroupInitiallyScheduled condition's message, as kube-scheduler writes it.
    assert big["message"] == (
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )


def test_members_held_for_a_missing_quorum_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(
        tmp_path / "c.yaml",
        node("a"),
        kube_group("short", 3),
        *(grouped(f"short-{i}", "100m", "short") for i in range(2)),
    )
    out = run(capsys, "--snapshot", cluster, "--feature-gates", "GenericWorkload=true")
    group = by_group(out["configs"][0])["default/short"]
    assert group["state"] == "pending"
    assert group["message"] == "waiting for minCount pods from a gang to appear in scheduling queue"
