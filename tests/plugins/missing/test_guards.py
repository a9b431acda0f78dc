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

STORAGE = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone")


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
    assert skipped(pre_filter("VolumeBinding", pod))


def test_resource_claims_need_dynamic_resources() -> None:
    pod = pod_with(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}])
    assert rejected(pre_filter("DynamicResources", pod), "DynamicResources", "resource claims")
    assert skipped(pre_filter("DynamicResources", make_pod("plain")))


def _term(selector: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": selector}, "topologyKey": "zone", **extra}


def test_required_pod_affinity_or_anti_affinity_needs_inter_pod_affinity() -> None:
    required = {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "web"})]}
    preferred = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": _term({"app": "web"})}
        ]
    }
    name = "InterPodAffinity"
    assert rejected(
        pre_filter(name, pod_with(affinity={"podAffinity": required})),
        name,
        "required pod affinity",
    )
    assert rejected(
        pre_filter(name, pod_with(affinity={"podAntiAffinity": required})),
        name,
        "required pod anti-affinity",
    )
    assert skipped(pre_filter(name, pod_with(affinity={"podAntiAffinity": preferred})))


def _assigned_with_anti_affinity(namespace: str = "default", **term: Any) -> Pod:
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "web"}, **term)]}
    return make_pod("guardian", namespace, node_name="n1", affinity={"podAntiAffinity": anti})


def test_an_existing_pods_required_anti_affinity_that_selects_the_pod_is_guarded() -> None:
    name = "InterPodAffinity"
    web = pod_with(labels={"app": "web"})
    what = "an existing pod's required anti-affinity (default/guardian)"
    assert rejected(pre_filter(name, web, (_assigned_with_anti_affinity(),)), name, what)
    # Not selected: other labels, or another namespace than the term's.
    assert skipped(
        pre_filter(name, pod_with(labels={"app": "db"}), (_assigned_with_anti_affinity(),))
    )
    assert skipped(pre_filter(name, web, (_assigned_with_anti_affinity("other"),)))
    # namespaces named in the term, and a namespaceSelector (not narrowed: may select it).
    listed = _assigned_with_anti_affinity("other", namespaces=["default"])
    assert rejected(pre_filter(name, web, (listed,)), name, what.replace("default/", "other/"))
    by_selector = _assigned_with_anti_affinity("other", namespaceSelector={})
    assert rejected(pre_filter(name, web, (by_selector,)), name, what.replace("default/", "other/"))


def test_guards_accept_the_args_kube_scheduler_configurations_give_them() -> None:
    spec = in_tree_registry()["VolumeBinding"]
    assert spec.decode_args is not None
    assert spec.decode_args({"bindTimeoutSeconds": 600}) == {"bindTimeoutSeconds": 600}
