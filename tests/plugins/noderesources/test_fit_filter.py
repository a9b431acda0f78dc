"""NodeResourcesFit Filter: reasons and codes as kube-scheduler's fitsRequest produces them."""

from __future__ import annotations

import random

from scheduler.api.resources import Resource
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_table import NodeTable
from scheduler.framework.status import Code
from scheduler.testing import make_node, make_pod
from tests.plugins.noderesources.helpers import build_fit, node_info, prefiltered

GPU = "example.com/gpu"


def test_request_equal_to_free_cpu_fits_one_milli_more_does_not() -> None:
    # Node 2000m with 1500m used leaves 500m: 500m fits; 501m is Insufficient but would fit on
    # an empty node (501 <= 2000), so the code is plain Unschedulable.
    plugin = build_fit()
    info = node_info(make_node("n", cpu="2"), make_pod("a", cpu="1500m", node_name="n"))
    ok = make_pod("ok", cpu="500m")
    assert plugin.filter(prefiltered(plugin, ok), ok, info) is None
    big = make_pod("big", cpu="501m")
    status = plugin.filter(prefiltered(plugin, big), big, info)
    assert status is not None
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, ["Insufficient cpu"])


def test_request_above_allocatable_is_unresolvable() -> None:
    plugin = build_fit()
    pod = make_pod("p", cpu="3", memory="1Gi")
    status = plugin.filter(prefiltered(plugin, pod), pod, node_info(make_node("n", cpu="2")))
    assert status is not None
    assert (status.code, status.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient cpu"],
    )


def test_reasons_in_go_order_and_one_unresolvable_makes_all_unresolvable() -> None:
    # pods: 1 allowed, 1 present; cpu 2 > 1 free but <= 2 allocatable; memory 5Gi > 4Gi.
    plugin = build_fit()
    info = node_info(
        make_node("n", cpu="2", memory="4Gi", pods=1, ephemeral_storage="1Gi"),
        make_pod("a", cpu="1", node_name="n"),
    )
    pod = make_pod("p", cpu="2", memory="5Gi", requests={"ephemeral-storage": "1Gi"})
    status = plugin.filter(prefiltered(plugin, pod), pod, info)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ["Too many pods", "Insufficient cpu", "Insufficient memory"]


def test_pod_requesting_nothing_only_checks_pod_count() -> None:
    plugin = build_fit()
    pod = make_pod("p")
    full = node_info(make_node("n", pods=1), make_pod("a", node_name="n"))
    status = plugin.filter(prefiltered(plugin, pod), pod, full)
    assert status is not None
    # "Too many pods" is never marked unresolvable.
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, ["Too many pods"])
    zero_pods = node_info(make_node("z", pods=0))
    status = plugin.filter(prefiltered(plugin, pod), pod, zero_pods)
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert plugin.filter(prefiltered(plugin, pod), pod, node_info(make_node("e", cpu="0"))) is None


def test_extended_resource_the_node_lacks() -> None:
    plugin = build_fit()
    pod = make_pod("p", cpu="1", requests={GPU: "1"})
    status = plugin.filter(prefiltered(plugin, pod), pod, node_info(make_node("n")))
    assert status is not None
    assert (status.code, status.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [f"Insufficient {GPU}"],
    )
    with_gpu = node_info(make_node("g", extended={GPU: "1"}))
    assert plugin.filter(prefiltered(plugin, pod), pod, with_gpu) is None


def test_extended_resource_in_use_is_resolvable() -> None:
    plugin = build_fit()
    info = node_info(
        make_node("g", extended={GPU: "2"}),
        make_pod("a", requests={GPU: "2"}, node_name="g"),
    )
    pod = make_pod("p", requests={GPU: "1"})
    status = plugin.filter(prefiltered(plugin, pod), pod, info)
    assert status is not None
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, [f"Insufficient {GPU}"])


def test_ignored_resources_and_groups_skip_only_extended_resources() -> None:
    pod = make_pod("p", requests={GPU: "1", "hugepages-2Mi": "2Mi"})
    info = node_info(make_node("n"))
    by_name = build_fit({"ignoredResources": [GPU]})
    by_group = build_fit({"ignoredResourceGroups": ["example.com"]})
    for plugin in (by_name, by_group):
        status = plugin.filter(prefiltered(plugin, pod), pod, info)
        assert status is not None
        # hugepages are not extended resources: never ignored.
        assert status.reasons == ["Insufficient hugepages-2Mi"]
        mask = plugin.filter_batch(CycleState(), pod, NodeTable([info]))
        assert mask is not None and mask.tolist() == [False]
    only_gpu = make_pod("g", requests={GPU: "1"})
    assert by_group.filter(prefiltered(by_group, only_gpu), only_gpu, info) is None
    other_group = build_fit({"ignoredResourceGroups": ["example"]})
    assert other_group.filter(prefiltered(other_group, only_gpu), only_gpu, info) is not None


def test_init_containers_take_the_max_and_sidecars_add_up() -> None:
    plugin = build_fit()
    node = node_info(make_node("n", cpu="2"))
    init = make_pod(
        "init",
        cpu="1",
        init_containers=[{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
    )
    assert init.requests.milli_cpu == 3000  # max(1, 3)
    status = plugin.filter(prefiltered(plugin, init), init, node)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    sidecar = make_pod(
        "sidecar",
        cpu="1",
        init_containers=[
            {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
        ],
    )
    assert sidecar.requests.milli_cpu == 2000  # 1 + 1, exactly the node's allocatable
    assert plugin.filter(prefiltered(plugin, sidecar), sidecar, node) is None


def test_filter_without_prefilter_state_uses_the_pods_requests() -> None:
    plugin = build_fit()
    pod = make_pod("p", cpu="3")
    status = plugin.filter(CycleState(), pod, node_info(make_node("n", cpu="2")))
    assert status is not None and status.reasons == ["Insufficient cpu"]


def _fits_by_room(request: Resource, allocatable: Resource, used: Resource, pods: int) -> bool:
    """The RequestFitFilter contract read literally: room for one more pod and for every
    positive amount of the rule."""
    if pods + 1 > allocatable.allowed_pod_number:
        return False
    checks = [
        (request.milli_cpu, allocatable.milli_cpu, used.milli_cpu),
        (request.memory, allocatable.memory, used.memory),
        (request.ephemeral_storage, allocatable.ephemeral_storage, used.ephemeral_storage),
        *(
            (q, allocatable.scalar.get(name, 0), used.scalar.get(name, 0))
            for name, q in request.scalar.items()
        ),
    ]
    return all(amount <= 0 or used_ + amount <= alloc for amount, alloc, used_ in checks)


def test_fit_request_is_the_room_rule_filter_counts_applies() -> None:
    """Preemption's column dry run decides Filter from `fit_request` alone: on random nodes,
    pods and ignore settings it must agree with `filter_counts` every time."""
    rng = random.Random(7)
    resources = [GPU, "other.io/fpga", "hugepages-2Mi"]
    for args in ({}, {"ignoredResources": [GPU]}, {"ignoredResourceGroups": ["other.io"]}):
        plugin = build_fit(args)
        for _ in range(300):
            requests = {
                name: str(rng.choice([0, 1, 2]))
                for name in rng.sample(resources, rng.randint(0, len(resources)))
            }
            if rng.random() < 0.8:
                requests["cpu"] = f"{rng.choice([0, 100, 900, 2000])}m"
            if rng.random() < 0.5:
                requests["memory"] = f"{rng.choice([0, 1, 3])}Gi"
            if rng.random() < 0.3:
                requests["ephemeral-storage"] = f"{rng.choice([0, 1, 5])}Gi"
            pod = make_pod("p", requests=requests)
            state = prefiltered(plugin, pod)
            alloc = Resource.from_list(
                {
                    "cpu": "2",
                    "memory": "4Gi",
                    "ephemeral-storage": "4Gi",
                    "pods": rng.choice([1, 3, 110]),
                    **{name: rng.choice([0, 1, 3]) for name in resources if rng.random() < 0.6},
                }
            )
            used = Resource.from_list(
                {
                    "cpu": f"{rng.choice([0, 1000, 1900, 2500])}m",
                    "memory": f"{rng.choice([0, 2, 4])}Gi",
                    "ephemeral-storage": f"{rng.choice([0, 3])}Gi",
                    **{name: rng.choice([0, 1, 2]) for name in resources if rng.random() < 0.5},
                }
            )
            count = rng.choice([0, 2, 50])
            passes = plugin.filter_counts(state, pod, alloc, used, count) is None
            assert passes == _fits_by_room(plugin.fit_request(state, pod), alloc, used, count)
