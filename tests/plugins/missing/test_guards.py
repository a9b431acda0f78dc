"""Guards of missing default plugins: a pod that needs the plugin is rejected in PreFilter with
a message naming it; every other pod passes untouched."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import FakeHandle, build_plugin, make_node, make_pod, make_snapshot
from scheduler.testing.builders import pod_json

STORAGE = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeZone")


def pod_with(labels: dict[str, str] | None = None, **spec: Any) -> Pod:
    raw = pod_json("p", labels=labels)
    raw["spec"].update(spec)
    return parse_pod(raw)


def pre_filter(name: str, pod: Pod, existing: tuple[Pod, ...] = ()) -> Status | None:
    snap = make_snapshot([make_node("n1"), make_node("n2")], existing)
    plugin = build_plugin(in_tree_registry()[name], handle=FakeHandle(snap=snap))
    _, status = plugin.pre_filter(CycleState(), pod, snap.node_info_list)
    return status


def rejected(status: Status | None, name: str, what: str) -> bool:
    return (
        status is not None
        and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        and status.message()
        == f"the pod uses {what}, which the {name} plugin checks; kube-pysched does not have "
        "that plugin yet"
    )


def skipped(status: Status | None) -> bool:
    return status is not None and status.code == Code.SKIP


PVC = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
EPHEMERAL = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
CSI = {"name": "inline", "csi": {"driver": "example.com"}}
EMPTY_DIR = {"name": "tmp", "emptyDir": {}}


@pytest.mark.parametrize("name", STORAGE)
def test_claims_need_every_storage_plugin(name: str) -> None:
    pod = pod_with(volumes=[PVC, EMPTY_DIR])
    assert rejected(pre_filter(name, pod), name, "persistentVolumeClaim volumes")
    pod = pod_with(volumes=[EPHEMERAL, PVC])
    assert rejected(pre_filter(name, pod), name, "ephemeral and persistentVolumeClaim volumes")


@pytest.mark.parametrize("name", STORAGE)
def test_pods_without_checked_volumes_pass(name: str) -> None:
    assert skipped(pre_filter(name, pod_with(volumes=[EMPTY_DIR])))
    assert skipped(pre_filter(name, make_pod("plain")))


def test_inline_csi_volumes_need_node_volume_limits_only() -> None:
    pod = pod_with(volumes=[CSI])
    assert rejected(pre_filter("NodeVolumeLimits", pod), "NodeVolumeLimits", "csi volumes")
    assert skipped(pre_filter("VolumeZone", pod))


def test_resource_claims_need_dynamic_resources() -> None:
    pod = pod_with(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}])
    assert rejected(pre_filter("DynamicResources", pod), "DynamicResources", "resource claims")
    assert skipped(pre_filter("DynamicResources", make_pod("plain")))


def test_guards_accept_the_args_kube_scheduler_configurations_give_them() -> None:
    spec = in_tree_registry()["VolumeZone"]
    assert spec.decode_args is not None
    assert spec.decode_args({"anything": 1}) == {"anything": 1}
