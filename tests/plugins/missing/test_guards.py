"""Guards of missing default plugins: a pod that needs the plugin is rejected in PreFilter with
a message naming it; every other pod passes untouched."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeToStatus
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import FakeHandle, build_plugin, make_node, make_pod, make_snapshot
from scheduler.testing.builders import pod_json


def pod_with(**spec: Any) -> Pod:
    raw = pod_json("p")
    raw["spec"].update(spec)
    return parse_pod(raw)


def pre_filter(name: str, pod: Pod) -> Status | None:
    snap = make_snapshot([make_node("n1"), make_node("n2")])
    plugin = build_plugin(in_tree_registry()[name], handle=FakeHandle(snap=snap))
    _, status = plugin.pre_filter(CycleState(), pod, snap.node_info_list)
    return status


def test_resource_claims_need_dynamic_resources() -> None:
    pod = pod_with(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}])
    status = pre_filter("DynamicResources", pod)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "the pod uses resource claims, which the DynamicResources plugin checks; kube-pysched "
        "does not have that plugin yet"
    )


def test_pods_without_resource_claims_pass() -> None:
    status = pre_filter("DynamicResources", make_pod("plain"))
    assert status is not None and status.code == Code.SKIP


def test_guards_accept_the_args_kube_scheduler_configurations_give_them() -> None:
    spec = in_tree_registry()["DynamicResources"]
    assert spec.decode_args is not None
    # Decoded as kube-scheduler decodes DynamicResourcesArgs, whichever of guard and plugin
    # the PyschedDynamicResources switch builds.
    assert spec.decode_args({"filterTimeout": "10s"}).filter_timeout == 10.0


def test_dynamic_resources_post_filter_is_kube_schedulers() -> None:
    """PostFilter fails with `not found` when an earlier PreFilter rejected the pod (its state
    was never written), so preemption does not run and the message ends in `not found`;
    otherwise it is Unschedulable without a reason and DefaultPreemption decides."""
    snap = make_snapshot([make_node("n1")])
    plugin = build_plugin(in_tree_registry()["DynamicResources"], handle=FakeHandle(snap=snap))
    never_pre_filtered = CycleState()
    _, status = plugin.post_filter(never_pre_filtered, make_pod("p"), NodeToStatus())
    assert (status.code, status.message()) == (Code.ERROR, "not found")

    state = CycleState()
    plugin.pre_filter(state, make_pod("p"), snap.node_info_list)
    _, status = plugin.post_filter(state, make_pod("p"), NodeToStatus())
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, [])
