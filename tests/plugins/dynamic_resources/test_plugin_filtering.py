"""DynamicResources' SignPod, PreEnqueue, PreFilter, Filter and Score with the kit, with
kube-scheduler v1.37's messages."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework import ArgsError
from scheduler.framework.status import Code
from scheduler.plugins.dynamic_resources.args import decode_args
from scheduler.testing import run_plugin
from tests.plugins.dynamic_resources.builders import prioritized, sub_request
from tests.plugins.dynamic_resources.plugin_kit import (
    allocation,
    claim,
    gpu_slice,
    handle,
    plugin,
    pod,
)


def test_pods_with_claims_are_not_signable_and_others_are() -> None:
    p = plugin(handle())
    fragments, status = p.sign_pod(pod("p", claims={"gpu": "c1"}))
    assert fragments is None and status.code == Code.UNSCHEDULABLE
    assert status.message() == "pods with dra resource claims are not signable"
    assert p.sign_pod(pod("q")) == (None, None)


def test_pre_enqueue_waits_for_claims_with_upstreams_messages() -> None:
    h = handle(claims=(claim("mine", owner="p"), claim("deleted")))
    p = plugin(h)
    assert p.pre_enqueue(pod("q")) is None
    status = p.pre_enqueue(pod("p", templates={"gpu": "t"}))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'pod "ns/p": ResourceClaim not created yet'
    status = p.pre_enqueue(pod("p", claims={"gpu": "missing"}))
    assert status.message() == 'could not find ResourceClaim "ns/missing"'
    status = p.pre_enqueue(pod("x", templates={"gpu": "t"}, generated={"gpu": "mine"}))
    assert status.message() == (
        "ResourceClaim ns/mine was not created for Pod ns/x (Pod is not owner)"
    )
    assert p.pre_enqueue(pod("p", templates={"gpu": "t"}, generated={"gpu": "mine"})) is None


def test_unallocated_claim_fits_nodes_with_a_free_device() -> None:
    h = handle(
        ("n1", "n2", "n3"),
        claims=(claim("c1"), claim("taken", allocation=allocation("n2", "gpu-0"))),
        slices=(gpu_slice("n1", "gpu-0"), gpu_slice("n2", "gpu-0")),
    )
    r = run_plugin(plugin(h), pod("p", claims={"gpu": "c1"}), h.snap)
    assert r.feasible == ["n1"]
    assert r.rejections() == {
        "n2": "cannot allocate all claims",
        "n3": "cannot allocate all claims",
    }


def test_allocated_claim_is_usable_only_where_its_node_selector_matches() -> None:
    h = handle(claims=(claim("c1", allocation=allocation("n2", "gpu-0")),))
    r = run_plugin(plugin(h), pod("p", claims={"gpu": "c1"}), h.snap)
    assert r.feasible == ["n2"]
    assert r.rejections() == {"n1": "resourceclaim not available on the node"}


def test_pre_filter_rejects_a_missing_class_and_skips_pods_without_claims() -> None:
    h = handle(classes=())
    r = run_plugin(plugin(h), pod("p", claims={"gpu": "c1"}), h.snap)
    assert r.pre_filter_status is not None
    assert r.pre_filter_status.message() == 'could not find ResourceClaim "ns/c1"'
    h = handle(claims=(claim("c1"),), classes=())
    r = run_plugin(plugin(h), pod("p", claims={"gpu": "c1"}), h.snap)
    assert r.pre_filter_status is not None
    assert r.pre_filter_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert r.pre_filter_status.message() == "request gpu: device class gpu does not exist"
    r = run_plugin(plugin(h), pod("q"), h.snap)
    assert r.pre_filter_status is not None and r.pre_filter_status.code == Code.SKIP


def test_claim_in_flight_makes_the_next_pod_wait() -> None:
    h = handle(claims=(claim("shared"),))
    p = plugin(h)
    first = run_plugin(p, pod("a", claims={"gpu": "shared"}), h.snap)
    assert p.reserve(first.state, pod("a", claims={"gpu": "shared"}), first.feasible[0]) is None
    r = run_plugin(p, pod("b", claims={"gpu": "shared"}), h.snap)
    assert r.pre_filter_status is not None
    assert r.pre_filter_status.message() == (
        "resource claim ns/shared is in the process of being allocated"
    )


def test_reserved_devices_are_taken_for_the_next_pod() -> None:
    h = handle(("n1",), claims=(claim("c1"), claim("c2")))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    first = run_plugin(p, a, h.snap)
    assert first.feasible == ["n1"]
    assert p.reserve(first.state, a, "n1") is None
    second = run_plugin(p, pod("b", claims={"gpu": "c2"}), h.snap)
    assert second.rejections() == {"n1": "cannot allocate all claims"}
    p.unreserve(first.state, a, "n1")
    assert run_plugin(p, pod("b", claims={"gpu": "c2"}), h.snap).feasible == ["n1"]


def test_score_prefers_the_first_available_subrequest() -> None:
    requests = [
        prioritized(
            "gpu",
            sub_request("big", "gpu", 2),
            sub_request("small", "gpu", 1),
        )
    ]
    h = handle(
        ("n1", "n2"),
        claims=(claim("c1", requests=requests),),
        slices=(gpu_slice("n1", "gpu-0", "gpu-1"), gpu_slice("n2", "gpu-0")),
    )
    r = run_plugin(plugin(h), pod("p", claims={"gpu": "c1"}), h.snap)
    assert r.feasible == ["n1", "n2"]
    assert r.raw_scores == {"n1": 8, "n2": 7}
    assert r.scores == {"n1": 100, "n2": 87}


def test_score_is_one_zero_column_unless_a_claim_has_a_first_available_list() -> None:
    h = handle(
        ("n1", "n2"),
        claims=(claim("c1"),),
        slices=(gpu_slice("n1", "gpu-0"), gpu_slice("n2", "gpu-0")),
    )
    p = plugin(h)
    rows = np.array([0, 1], np.intp)
    for subject in (pod("plain"), pod("p", claims={"gpu": "c1"})):
        r = run_plugin(p, subject, h.snap)  # checks the column against score per node
        assert r.raw_scores == {"n1": 0, "n2": 0}
        column = p.score_batch(r.state, subject, h.snap.table, rows)
        assert column is not None and column.tolist() == [0, 0]
    ranked = handle(
        ("n1",),
        claims=(claim("c2", requests=[prioritized("gpu", sub_request("one", "gpu", 1))]),),
        slices=(gpu_slice("n1", "gpu-0"),),
    )
    p = plugin(ranked)
    subject = pod("q", claims={"gpu": "c2"})
    r = run_plugin(p, subject, ranked.snap)
    assert p.score_batch(r.state, subject, ranked.snap.table, rows[:1]) is None


def test_args_defaults_and_validation() -> None:
    args = decode_args(None)
    assert (args.filter_timeout, args.binding_timeout) == (10.0, 600.0)
    assert decode_args({"filterTimeout": "0s", "bindingTimeout": "1m30s"}).binding_timeout == 90
    with pytest.raises(ArgsError, match="must be zero or positive"):
        decode_args({"filterTimeout": "-1s"})
    with pytest.raises(ArgsError, match="must be at least 1 second"):
        decode_args({"bindingTimeout": "500ms"})
    with pytest.raises(ArgsError, match="invalid duration"):
        decode_args({"bindingTimeout": "soon"})
    with pytest.raises(ArgsError):
        decode_args({"timeout": "1s"})


def test_node_pools_are_gathered_once_until_a_slice_changes() -> None:
    h = handle(("n1",), claims=(claim("c1"), claim("c2")), slices=())
    p = plugin(h)
    first = run_plugin(p, pod("a", claims={"gpu": "c1"}), h.snap)
    assert first.rejections() == {"n1": "cannot allocate all claims"}
    pools = p._pools["n1"][2]
    run_plugin(p, pod("b", claims={"gpu": "c2"}), h.snap)
    assert p._pools["n1"][2] is pools, "the same slices: the node's pools are reused"
    h.static_dra.add_slice(gpu_slice("n1", "gpu-0"))
    assert run_plugin(p, pod("a", claims={"gpu": "c1"}), h.snap).feasible == ["n1"]


def test_claim_reserved_for_other_pods_is_shared_without_a_limit_in_pre_filter() -> None:
    """v1.37's PreFilter refuses an allocated claim with `resourceclaim in use` only when
    resourceclaim.CanBeReserved is false, and CanBeReserved is true for every claim: sharing
    is unrestricted there. A full status.reservedFor (256 entries, the API's maximum) is left
    to the API server, which rejects PreBind's write."""
    others = [{"resource": "pods", "name": f"o{i}", "uid": f"o{i}"} for i in range(256)]
    h = handle(claims=(claim("c1", allocation=allocation("n2", "gpu-0"), reserved_for=others),))
    p = plugin(h)
    a = pod("a", claims={"gpu": "c1"})
    r = run_plugin(p, a, h.snap)
    assert r.pre_filter_status is None
    assert r.feasible == ["n2"]
    assert p.reserve(r.state, a, "n2") is None
    h.fake_api.fail_with = RuntimeError(
        'ResourceClaim.resource.k8s.io "c1" is invalid: status.reservedFor: Too many: 257: '
        "must have at most 256 items"
    )
    status = p.pre_bind(r.state, a, "n2")
    assert status is not None and status.code == Code.ERROR
    assert "status.reservedFor: Too many" in status.message()
