"""DynamicResources with PyschedDynamicResources=false: the stand-in rejects a pod with resource
claims in PreFilter with a message naming the plugin and the switch, lets every other pod pass,
keeps kube-scheduler's PostFilter outcome and reads nothing of resource.k8s.io."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeToStatus
from scheduler.plugins.dynamic_resources.plugin import DynamicResources
from scheduler.plugins.registry import DRA_SWITCH, in_tree_registry
from scheduler.testing import FakeHandle, build_plugin, make_node, make_pod, make_snapshot
from scheduler.testing.builders import pod_json

OFF = FeatureGates({DRA_SWITCH: False})


def pod_with(**spec: Any) -> Pod:
    raw = pod_json("p")
    raw["spec"].update(spec)
    return parse_pod(raw)


def switched_off(handle: FakeHandle) -> Any:
    return build_plugin(in_tree_registry()["DynamicResources"], handle=handle)


def pre_filter(pod: Pod) -> Status | None:
    snap = make_snapshot([make_node("n1"), make_node("n2")])
    plugin = switched_off(FakeHandle(snap=snap, features=OFF))
    status: Status | None = plugin.pre_filter(CycleState(), pod, snap.node_info_list)[1]
    return status


def test_the_switch_picks_the_plugin_or_its_stand_in() -> None:
    spec = in_tree_registry()["DynamicResources"]
    assert isinstance(build_plugin(spec, handle=FakeHandle()), DynamicResources)
    handle = FakeHandle(features=OFF)
    plugin = switched_off(handle)
    assert not isinstance(plugin, DynamicResources)
    assert plugin.name == "DynamicResources"
    assert handle.dra_manager is None  # nothing of resource.k8s.io asked for


def test_resource_claims_wait_with_the_plugin_and_the_switch_named() -> None:
    pod = pod_with(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}])
    status = pre_filter(pod)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "the pod uses resource claims, which the DynamicResources plugin checks; it is switched "
        "off in this kube-pysched (--feature-gates=PyschedDynamicResources=false)"
    )


def test_pods_without_resource_claims_pass() -> None:
    status = pre_filter(make_pod("plain"))
    assert status is not None and status.code == Code.SKIP


def test_args_are_decoded_as_the_plugin_decodes_them() -> None:
    spec = in_tree_registry()["DynamicResources"]
    assert spec.decode_args is not None
    assert spec.decode_args({"filterTimeout": "10s"}).filter_timeout == 10.0


def test_pods_with_claims_are_not_signable() -> None:
    plugin = switched_off(FakeHandle(features=OFF))
    pod = pod_with(resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}])
    _, status = plugin.sign_pod(pod)
    assert status.message() == "pods with dra resource claims are not signable"
    assert plugin.sign_pod(make_pod("plain")) == (None, None)


def test_post_filter_is_kube_schedulers() -> None:
    """PostFilter fails with `not found` when an earlier PreFilter rejected the pod (its state
    was never written), so preemption does not run and the message ends in `not found`;
    otherwise it is Unschedulable without a reason and DefaultPreemption decides."""
    snap = make_snapshot([make_node("n1")])
    plugin = switched_off(FakeHandle(snap=snap, features=OFF))
    never_pre_filtered = CycleState()
    _, status = plugin.post_filter(never_pre_filtered, make_pod("p"), NodeToStatus())
    assert (status.code, status.message()) == (Code.ERROR, "not found")

    state = CycleState()
    plugin.pre_filter(state, make_pod("p"), snap.node_info_list)
    _, status = plugin.post_filter(state, make_pod("p"), NodeToStatus())
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, [])
