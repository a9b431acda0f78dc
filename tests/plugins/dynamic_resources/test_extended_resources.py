"""Extended resources backed by DRA: which DeviceClass serves a name, the device requests a
pod's containers turn into (upstream's createRequestsAndMappings cases), NodeResourcesFit
leaving such a resource to DynamicResources on nodes without it, and the whole path in the
in-process scheduler: the claim created, allocated and reserved, the pod's
status.extendedResourceClaimStatus, the next pod finding the device taken."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from scheduler import metrics
from scheduler.api.dra import parse_device_class, parse_resource_claim
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.dra import DRAManager, StaticDRA
from scheduler.framework.events import QueueingHint
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.status import Code
from scheduler.plugins.dynamic_resources.extended import requests_and_mappings
from scheduler.plugins.noderesources import FIT_SPEC, fit
from scheduler.plugins.registry import DRA_SWITCH, in_tree_registry
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot
from scheduler.testing.harness import PROFILE, Harness
from tests.plugins.dynamic_resources.builders import device_class, request
from tests.plugins.dynamic_resources.plugin_kit import DRIVER, NS, gpu_slice

GPU = "example.com/gpu"


def _class(name: str, extended: str = "", created: str = "2026-01-01T00:00:00Z") -> Any:
    raw = device_class(name, DRIVER)
    raw["metadata"]["creationTimestamp"] = created
    if extended:
        raw["spec"]["extendedResourceName"] = extended
    return parse_device_class(raw)


def _container(name: str, requests: dict[str, str], sidecar: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "resources": {"requests": requests}}
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def _pod(
    name: str = "p",
    containers: tuple[dict[str, Any], ...] = (),
    inits: tuple[dict[str, Any], ...] = (),
) -> Pod:
    spec: dict[str, Any] = {"schedulerName": PROFILE, "containers": list(containers)}
    if inits:
        spec["initContainers"] = list(inits)
    return parse_pod({"metadata": {"name": name, "namespace": NS, "uid": name}, "spec": spec})


# --- which class serves a name --------------------------------------------------------------


def test_every_class_serves_its_implicit_name_and_the_newest_its_explicit_one() -> None:
    older = _class("b-old", GPU, "2026-01-01T00:00:00Z")
    newer = _class("c-new", GPU, "2026-02-01T00:00:00Z")
    twin = _class("a-twin", GPU, "2026-02-01T00:00:00Z")
    plain = _class("plain")
    dra = DRAManager(StaticDRA(classes=[older, newer, plain]))
    served = dra.extended_resource_classes()
    assert served[GPU] is newer
    assert served["deviceclass.resource.kubernetes.io/plain"] is plain
    assert served["deviceclass.resource.kubernetes.io/b-old"] is older
    # Equally new: the smaller name.
    dra = DRAManager(StaticDRA(classes=[newer, twin]))
    assert dra.extended_resource_classes()[GPU] is twin


# --- requests and mappings (upstream's test cases) ------------------------------------------


def _names(pod: Pod, classes: dict[str, str]) -> list[tuple[str, str, int]]:
    served = {resource: _class(name) for resource, name in classes.items()}
    requests, _ = requests_and_mappings(pod, served)
    return [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests]


EXT, EXT1, INIT = "example.com/r", "example.com/r1", "example.com/rinit"


def test_one_container_gets_one_request_per_resource_in_sorted_order() -> None:
    pod = _pod(containers=(_container("c0", {EXT: "1", EXT1: "2"}),))
    assert _names(pod, {EXT: "class"}) == [("container-0-request-0", "class", 1)]
    assert _names(pod, {EXT: "class", EXT1: "class1"}) == [
        ("container-0-request-0", "class", 1),
        ("container-0-request-1", "class1", 2),
    ]


def test_two_containers_each_get_their_request() -> None:
    pod = _pod(containers=(_container("c0", {EXT: "1"}), _container("c1", {EXT1: "2"})))
    assert _names(pod, {EXT: "class", EXT1: "class1"}) == [
        ("container-0-request-0", "class", 1),
        ("container-1-request-0", "class1", 2),
    ]


def test_init_containers_share_the_largest_request() -> None:
    pod = _pod(
        containers=(_container("c", {EXT: "1"}),),
        inits=(_container("i0", {INIT: "1"}), _container("i1", {INIT: "2"})),
    )
    requests, mappings = requests_and_mappings(
        pod, {EXT: _class("class"), INIT: _class("classInit")}
    )
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [
        ("container-1-request-0", 2),
        ("container-2-request-0", 1),
    ]
    assert {(m["containerName"], m["requestName"]) for m in mappings} == {
        ("c", "container-2-request-0"),
        ("i0", "container-1-request-0"),
        ("i1", "container-1-request-0"),
    }


def test_an_init_container_reuses_a_later_sidecars_request() -> None:
    pod = _pod(
        containers=(_container("c", {EXT: "1"}),),
        inits=(
            _container("i0", {INIT: "1"}),
            _container("side", {INIT: "1"}, sidecar=True),
            _container("i2", {INIT: "2"}),
        ),
    )
    assert _names(pod, {EXT: "class", INIT: "classInit"}) == [
        ("container-1-request-0", "classInit", 1),
        ("container-2-request-0", "classInit", 2),
        ("container-3-request-0", "class", 1),
    ]


# --- NodeResourcesFit -------------------------------------------------------------------------


def _fit(gpu_class_extended: bool) -> tuple[Any, FakeHandle]:
    classes = [_class("gpu", GPU if gpu_class_extended else "")]
    snap = make_snapshot([make_node("dra"), make_node("plugin", extended={GPU: "1"})])
    handle = FakeHandle(
        snap=snap,
        static_dra=StaticDRA(classes=classes),
        features=FeatureGates({DRA_SWITCH: True}),
    )
    return build_plugin(FIT_SPEC, None, handle=handle), handle


def test_fit_leaves_a_dra_backed_resource_to_dra_on_nodes_without_it() -> None:
    plugin, handle = _fit(True)
    pod = _pod(containers=(_container("c", {GPU: "2"}),))
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snap.list())
    dra_node, plugin_node = handle.snap.get("dra"), handle.snap.get("plugin")
    assert dra_node is not None and plugin_node is not None
    assert plugin.filter(state, pod, dra_node) is None
    status = plugin.filter(state, pod, plugin_node)
    assert status is not None and status.message() == f"Insufficient {GPU}"
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    _, why = plugin.sign_pod(pod)
    assert why is not None and why.message() == fit.NOT_SIGNABLE
    # The batch forms agree, row by row.
    table = handle.snap.table
    rows = table.rows(["dra", "plugin"])
    mask = plugin.filter_batch(state, pod, table)
    assert mask is not None and [bool(mask[r]) for r in rows] == [True, False]
    statuses = plugin.filter_batch_statuses(state, pod, table, np.array(rows, np.intp))
    assert statuses is not None
    found = statuses.to_list()
    assert found[0] is None
    assert found[1] is not None and found[1].message() == f"Insufficient {GPU}"
    assert found[1].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_fit_checks_the_resource_as_before_when_no_class_serves_it() -> None:
    plugin, handle = _fit(False)
    pod = _pod(containers=(_container("c", {GPU: "1"}),))
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snap.list())
    node = handle.snap.get("dra")
    assert node is not None
    status = plugin.filter(state, pod, node)
    assert status is not None and status.message() == f"Insufficient {GPU}"
    fragments, why = plugin.sign_pod(pod)
    assert why is None and fragments


# --- the whole path ---------------------------------------------------------------------------


@pytest.fixture
def h() -> Iterator[Harness]:
    names = ("PrioritySort", "NodeResourcesFit", "DynamicResources", "DefaultBinder")
    enabled = tuple(PluginRef(n) for n in names)
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    dra = StaticDRA([], [gpu_slice("n", "gpu-0")], [_class("gpu", GPU)])
    harness = Harness(
        spec, plugins=in_tree_registry(), features=FeatureGates({DRA_SWITCH: True}), dra=dra
    )
    harness.add_node(make_node("n", cpu="8"))
    yield harness
    harness.close()


def _creates() -> float:
    labels = {"status": "success", "admin_access": "false", "owner_api_group": ""}
    family = "dynamic_resource_allocation_resourceclaim_creates_total"
    return metrics.REGISTRY.get_sample_value(family, {**labels, "owner_api_kind": "Pod"}) or 0.0


def test_a_pod_asking_for_the_resource_gets_a_claim_of_its_own(h: Harness) -> None:
    creates = _creates()
    h.add_pod(_pod("a", containers=(_container("app", {"cpu": "1", GPU: "1"}),)))
    h.schedule_next()
    h.api.wait_for(lambda: "ns/a" in h.api.binds)
    assert _creates() == creates + 1
    (create, reserve) = h.api.resource_claim_writes
    assert create[0] == "create"
    body = create[2]
    assert body["metadata"]["generateName"] == "a-extended-resources-"
    assert body["metadata"]["annotations"] == {
        "resource.kubernetes.io/extended-resource-claim": "true"
    }
    (owner,) = body["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod",
        "a",
        "a",
        True,
    )
    (request,) = body["spec"]["devices"]["requests"]
    assert request == {
        "name": "container-0-request-1",
        "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
    }
    assert reserve[0] == "reserve" and reserve[1] == create[1]
    allocation, consumer = reserve[2]
    assert allocation["devices"]["results"][0]["device"] == "gpu-0"
    assert consumer["uid"] == "a"
    (patch,) = [p for key, p in h.api.status_patches if key == "ns/a"]
    claim_name = create[1].split("/", 1)[1]
    assert patch["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [
            {"containerName": "app", "resourceName": GPU, "requestName": "container-0-request-1"}
        ],
        "resourceClaimName": claim_name,
    }
    assert h.dra.claims.in_flight_count() == 0
    # The written claim is assumed: the next pod finds the only GPU taken.
    h.add_pod(_pod("b", containers=(_container("app", {"cpu": "1", GPU: "1"}),)))
    h.schedule_next()
    h.api.wait_for(lambda: any(key == "ns/b" for key, _ in h.api.status_patches))
    failed = [m for key, reason, m in h.recorder.events if key == "ns/b"]
    assert failed == ["0/1 nodes are available: 1 cannot allocate all claims."]
    assert len(h.api.resource_claim_writes) == 2


def test_a_claim_left_from_an_earlier_attempt_is_deleted_to_start_anew() -> None:
    stale = parse_resource_claim(
        {
            "metadata": {
                "name": "a-extended-resources-x1",
                "namespace": NS,
                "uid": "stale",
                "resourceVersion": "3",
                "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                "ownerReferences": [{"kind": "Pod", "name": "a", "uid": "a", "controller": True}],
            },
            "spec": {"devices": {"requests": [request("container-0-request-1", "gpu", 1)]}},
        }
    )
    assert stale.extended_resource
    names = ("PrioritySort", "NodeResourcesFit", "DynamicResources", "DefaultBinder")
    enabled = tuple(PluginRef(n) for n in names)
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    dra = StaticDRA([stale], [gpu_slice("n", "gpu-0")], [_class("gpu", GPU)])
    h = Harness(
        spec, plugins=in_tree_registry(), features=FeatureGates({DRA_SWITCH: True}), dra=dra
    )
    try:
        h.add_node(make_node("n", cpu="8"))
        h.add_pod(_pod("a", containers=(_container("app", {"cpu": "1", GPU: "1"}),)))
        h.schedule_next()
        h.api.wait_for(lambda: any(key == "ns/a" for key, _ in h.api.status_patches))
        assert h.api.resource_claim_writes == [("delete", "ns/a-extended-resources-x1", "stale")]
        (message,) = [m for key, _, m in h.recorder.events if key == "ns/a"]
        assert message == (
            "0/1 nodes are available: 1 cannot schedule extended resource claim. "
            "deletion of ResourceClaim completed"
        )
        assert h.api.binds == {}
    finally:
        h.close()


def test_a_failed_binding_deletes_the_claim_prebind_created(h: Harness) -> None:
    h.api.fail_binds = True
    h.add_pod(_pod("a", containers=(_container("app", {"cpu": "1", GPU: "1"}),)))
    h.schedule_next()
    h.api.wait_for(lambda: [w[0] for w in h.api.resource_claim_writes][-1:] == ["delete"])
    kinds = [(kind, key) for kind, key, _ in h.api.resource_claim_writes]
    created = kinds[0][1]
    assert kinds == [
        ("create", created),
        ("reserve", created),
        ("unreserve", created),
        ("delete", created),
    ]
    assert h.dra.claims.in_flight_count() == 0


def test_fit_requeues_on_a_class_that_serves_what_the_pod_asks_for() -> None:
    plugin, _ = _fit(True)
    pod = _pod(containers=(_container("c", {GPU: "1"}),))
    hint = plugin.is_schedulable_after_device_class_event
    assert hint(pod, None, _class("gpu", GPU)) == QueueingHint.QUEUE
    assert hint(pod, None, _class("other", "example.com/other")) == QueueingHint.QUEUE_SKIP
    assert hint(pod, _class("gpu"), _class("gpu", GPU)) == QueueingHint.QUEUE
    assert hint(pod, _class("gpu", GPU), _class("gpu", GPU)) == QueueingHint.QUEUE_SKIP
    implicit = _pod(containers=(_container("c", {"deviceclass.resource.kubernetes.io/x": "1"}),))
    assert hint(implicit, None, _class("x")) == QueueingHint.QUEUE
