"""DefaultPreemption beside DynamicResources, as in kube-scheduler v1.37.2: a pod holding the
only suitable device is never preempted for it. DynamicResources rejects a node whose devices
are taken as UnschedulableAndUnresolvable (preemption does not try it), and it has no PreFilter
extensions, so the dry run without the holder still counts the holder's device as allocated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.dra import StaticDRA
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.status import Code
from scheduler.plugins.default_preemption.plugin import DefaultPreemption
from scheduler.plugins.registry import DRA_SWITCH, in_tree_registry
from scheduler.testing import make_node
from scheduler.testing.builders import pod_json
from scheduler.testing.harness import PROFILE, Harness
from tests.plugins.dynamic_resources.plugin_kit import (
    NS,
    allocation,
    claim,
    gpu_class,
    gpu_slice,
)

PLUGINS = (
    "PrioritySort",
    "NodeResourcesFit",
    "DynamicResources",
    "DefaultPreemption",
    "DefaultBinder",
)


def _pod(name: str, claim_name: str, *, priority: int, cpu: str, node: str = "") -> Pod:
    body: dict[str, Any] = pod_json(
        name, NS, uid=name, priority=priority, cpu=cpu, node_name=node, scheduler_name=PROFILE
    )
    body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    if node:
        body["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    return parse_pod(body)


def _harness(node_cpu: str) -> Harness:
    """Node n (one GPU, held by the running low-priority pod through claim c-low); the
    preemptor's claim c-high is unallocated."""
    enabled = tuple(PluginRef(n, 1 if n == "NodeResourcesFit" else None) for n in PLUGINS)
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    held = claim(
        "c-low",
        allocation=allocation("n", "gpu-0"),
        reserved_for=[{"resource": "pods", "name": "low", "uid": "low"}],
    )
    dra = StaticDRA([held, claim("c-high")], [gpu_slice("n", "gpu-0")], [gpu_class()])
    h = Harness(
        spec, plugins=in_tree_registry(), features=FeatureGates({DRA_SWITCH: True}), dra=dra
    )
    h.add_node(make_node("n", cpu=node_cpu))
    h.add_assigned_pod(_pod("low", "c-low", priority=100, cpu="1500m", node="n"))
    return h


@pytest.fixture
def roomy() -> Iterator[Harness]:
    h = _harness("8")
    yield h
    h.close()


@pytest.fixture
def tight() -> Iterator[Harness]:
    h = _harness("2")
    yield h
    h.close()


def _failed_message(h: Harness, key: str) -> str:
    h.api.wait_for(lambda: any(k == key for k, _ in h.api.status_patches))
    ((_, reason, message),) = [e for e in h.recorder.events if e[0] == key]
    assert reason == "FailedScheduling"
    return message


def test_the_holder_of_the_only_device_is_not_preempted(roomy: Harness) -> None:
    roomy.add_pod(_pod("high", "c-high", priority=1000, cpu="1500m"))
    roomy.schedule_next()
    assert _failed_message(roomy, f"{NS}/high") == (
        "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are "
        "available: 1 Preemption is not helpful for scheduling."
    )
    assert roomy.api.deletes == []
    assert roomy.api.binds == {}


def test_a_node_short_of_cpu_too_has_no_victims_because_the_device_stays_taken(
    tight: Harness,
) -> None:
    tight.add_pod(_pod("high", "c-high", priority=1000, cpu="1500m"))
    tight.schedule_next()
    assert _failed_message(tight, f"{NS}/high") == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 cannot allocate all claims."
    )
    assert tight.api.deletes == []
    assert tight.api.binds == {}


def test_the_dry_run_without_the_holder_still_counts_its_device(tight: Harness) -> None:
    preemptor = _pod("high", "c-high", priority=1000, cpu="1500m")
    tight.cache.update_snapshot(tight.snapshot)
    state = CycleState()
    _, status, _ = tight.fwk.run_pre_filter_plugins(state, preemptor, tight.snapshot.list())
    assert status is None
    info = tight.snapshot.get("n")
    assert info is not None
    preemption = tight.fwk.plugins["DefaultPreemption"]
    assert isinstance(preemption, DefaultPreemption)
    victims, violations, status = preemption.select_victims_on_node(
        state, preemptor, info.snapshot(), []
    )
    assert (victims, violations) == ([], 0)
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "cannot allocate all claims"
