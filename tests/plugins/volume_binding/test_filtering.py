"""PreFilter and Filter of VolumeBinding: claim checks, bound volumes' node affinity, static
volume matching and dynamic provisioning, with upstream's messages."""

from __future__ import annotations

from typing import Any

from scheduler.api.storage import ANN_SELECTED_NODE
from scheduler.framework.status import Code
from scheduler.plugins.volume_binding import SPEC
from scheduler.plugins.volume_binding.binder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
)
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot, run_plugin
from scheduler.testing.runner import PluginRun
from tests.plugins.volume_binding.objects import (
    HOSTNAME,
    IMMEDIATE,
    capacity,
    claim,
    csi_driver,
    pod,
    storage_class,
    volume,
)

NODES = ("n1", "n2", "n3")


def run(p: Any, *objects: Any, zones: dict[str, str] | None = None) -> PluginRun:
    nodes = [
        make_node(n, labels={HOSTNAME: n, **({"zone": zones[n]} if zones and n in zones else {})})
        for n in NODES
    ]
    handle = FakeHandle(snap=make_snapshot(nodes))
    handle.static_storage.add(storage_class(), *objects)
    plugin = build_plugin(SPEC, handle=handle)
    return run_plugin(plugin, p, handle.snap)


def test_pod_without_claims_is_skipped() -> None:
    r = run(pod("p"))
    assert r.pre_filter_status is not None and r.pre_filter_status.code == Code.SKIP
    assert r.feasible == list(NODES)
    assert r.pre_score_status is not None and r.pre_score_status.code == Code.SKIP


def prefilter_message(p: Any, *objects: Any) -> tuple[Code, str]:
    status = run(p, *objects).pre_filter_status
    assert status is not None
    return status.code, status.message()


UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_claim_problems_are_unresolvable() -> None:
    assert prefilter_message(pod("p", "a")) == (
        UNRESOLVABLE,
        'persistentvolumeclaim "a" not found',
    )
    assert prefilter_message(pod("p", ephemeral=("e",))) == (
        UNRESOLVABLE,
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-e"',
    )
    assert prefilter_message(pod("p", "a"), claim("a", deleting=True)) == (
        UNRESOLVABLE,
        'persistentvolumeclaim "a" is being deleted',
    )
    assert prefilter_message(pod("p", "a"), claim("a", volume="gone", phase="Lost")) == (
        UNRESOLVABLE,
        'persistentvolumeclaim "a" bound to non-existent persistentvolume "gone"',
    )
    assert prefilter_message(pod("p", ephemeral=("e",)), claim("p-e", owner_uid="other")) == (
        UNRESOLVABLE,
        "PVC default/p-e was not created for pod default/p (pod is not owner)",
    )


def test_unbound_immediate_claims() -> None:
    expected = (UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims")
    assert (
        prefilter_message(
            pod("p", "a"), claim("a", sc="fast"), storage_class("fast", mode=IMMEDIATE)
        )
        == expected
    )
    # No class at all, or a class that does not exist: immediate binding.
    assert prefilter_message(pod("p", "a"), claim("a", sc=None)) == expected
    assert prefilter_message(pod("p", "a"), claim("a", sc="nope")) == expected
    # Pre-bound by volumeName but not yet bound by the controller.
    assert prefilter_message(pod("p", "a"), claim("a", volume="pv1")) == expected


def test_owned_ephemeral_claim_is_used() -> None:
    r = run(
        pod("p", ephemeral=("e",)),
        claim("p-e", owner_uid="uid-p", volume="pv", bound=True),
        volume("pv", node="n2"),
    )
    assert r.feasible == ["n2"]


def test_bound_claims_need_their_volume_on_the_node() -> None:
    c = claim("a", volume="pv", bound=True)
    r = run(pod("p", "a"), c, volume("pv", node="n1", claim_ref=c))
    assert r.pre_filter_status is None
    assert r.feasible == ["n1"]
    assert r.rejections() == {"n2": REASON_NODE_CONFLICT, "n3": REASON_NODE_CONFLICT}
    assert r.filter_statuses["n2"] is not None
    assert r.filter_statuses["n2"].code == UNRESOLVABLE


def test_bound_claim_of_a_missing_volume() -> None:
    r = run(pod("p", "a"), claim("a", volume="pv", bound=True))
    assert r.feasible == []
    assert set(r.rejections().values()) == {REASON_PV_NOT_EXIST}


def test_wait_for_first_consumer_finds_static_volumes() -> None:
    r = run(
        pod("p", "a"), claim("a"), volume("pv1", node="n1", size="2Gi"), volume("pv2", node="n2")
    )
    assert r.feasible == ["n1", "n2"]
    assert r.rejections() == {"n3": REASON_BIND_CONFLICT}


def test_volume_matching_rules() -> None:
    c = claim("a", size="2Gi", modes=("ReadWriteMany",), selector={"matchLabels": {"tier": "db"}})
    ok: dict[str, Any] = {"size": "2Gi", "modes": ("ReadWriteMany",), "labels": {"tier": "db"}}
    r = run(
        pod("p", "a"),
        c,
        volume("good", node="n1", **ok),
        volume("small", node="n2", **{**ok, "size": "1Gi"}),
        volume("modes", node="n2", **{**ok, "modes": ("ReadWriteOnce",)}),
        volume("labels", node="n2", **{**ok, "labels": {"tier": "web"}}),
        volume("class", node="n2", sc="other", **ok),
        volume("released", node="n2", phase="Released", **ok),
        volume("taken", node="n3", claim_ref=claim("b"), **ok),
    )
    assert r.feasible == ["n1"]


def test_one_volume_is_not_matched_twice() -> None:
    r = run(
        pod("p", "a", "b"),
        claim("a"),
        claim("b"),
        volume("pv1", node="n1"),
        volume("pv2", node="n2"),
        volume("pv3", node="n2"),
    )
    assert r.feasible == ["n2"]
    assert r.rejections()["n1"] == REASON_BIND_CONFLICT


def test_pre_bound_volume_wins_and_must_fit_the_node() -> None:
    c = claim("a")
    r = run(
        pod("p", "a"),
        c,
        volume("mine", node="n1", size="10Gi", claim_ref=c),
        volume("small", node="n1"),
        volume("other", node="n2"),
    )
    assert r.feasible == ["n1"]
    assert r.state.read("VolumeBinding").by_node["n1"].static_bindings[0].pv.name == "mine"


def test_dynamic_provisioning_and_allowed_topologies() -> None:
    sc = storage_class("csi", provisioner="csi.example.com", topologies=[{"zone": ["a"]}])
    r = run(pod("p", "a"), claim("a", sc="csi"), sc, zones={"n1": "a", "n2": "b"})
    assert r.feasible == ["n1"]
    assert r.rejections() == {"n2": REASON_BIND_CONFLICT, "n3": REASON_BIND_CONFLICT}


def test_storage_capacity_of_drivers_that_publish_it() -> None:
    sc = storage_class("csi", provisioner="csi.example.com")
    r = run(
        pod("p", "a"),
        claim("a", sc="csi", size="1Gi"),
        sc,
        csi_driver("csi.example.com"),
        capacity("csi", node="n1", size="10Gi"),
        capacity("csi", node="n2", size="100Gi", max_size="500Mi"),
    )
    assert r.feasible == ["n1"]
    assert r.rejections() == {"n2": REASON_NOT_ENOUGH_SPACE, "n3": REASON_NOT_ENOUGH_SPACE}
    # A driver without storageCapacity is not checked.
    r = run(pod("p", "a"), claim("a", sc="csi"), sc, csi_driver("csi.example.com", capacity=False))
    assert r.feasible == list(NODES)


def test_claim_selected_for_another_node() -> None:
    sc = storage_class("csi", provisioner="csi.example.com")
    r = run(pod("p", "a"), claim("a", sc="csi", annotations={ANN_SELECTED_NODE: "n2"}), sc)
    assert r.feasible == ["n2"]
    assert r.rejections()["n1"] == REASON_BIND_CONFLICT


def test_reasons_combine() -> None:
    bound = claim("a", volume="pv", bound=True)
    r = run(
        pod("p", "a", "b"),
        bound,
        volume("pv", node="n1", claim_ref=bound),
        claim("b"),
        volume("pv2", node="n2"),
    )
    assert r.feasible == []
    assert r.rejections() == {
        "n1": REASON_BIND_CONFLICT,
        "n2": REASON_NODE_CONFLICT,
        "n3": f"{REASON_NODE_CONFLICT}, {REASON_BIND_CONFLICT}",
    }


def test_claim_selected_for_a_node_with_a_class_that_cannot_provision() -> None:
    r = run(pod("p", "a"), claim("a", annotations={ANN_SELECTED_NODE: "n1"}), volume("pv"))
    assert r.feasible == []
    assert set(r.rejections().values()) == {REASON_BIND_CONFLICT}
