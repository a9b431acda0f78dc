"""A v1beta1 gang (GangScheduling, the group cycle) whose members each claim a GPU through a
generated claim: placed whole, each member on its own device (a member's allocation is in
flight from Reserve, so the next member's PreFilter counts it), or not at all, with nothing
left in flight, no claim written and kube-scheduler v1.37.2's messages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.api.gang import gang_from_kube_pod_group, parse_kube_pod_group
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.features import FeatureGates
from scheduler.framework.dra import StaticDRA
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.plugins import gang_scheduling
from scheduler.plugins.registry import DRA_SWITCH, in_tree_registry
from scheduler.testing import make_node
from scheduler.testing.builders import pod_json
from scheduler.testing.harness import PROFILE, Harness, poll, registry
from tests.api.kube_pod_groups import kube_pod_group_json
from tests.plugins.dynamic_resources.plugin_kit import NS, claim, gpu_class, gpu_slice

NAME = "DynamicResources"
MEMBERS = 3


def _member(i: int) -> Pod:
    """Member i of gang "g", its claim "g-<i>-gpu" generated from a template."""
    name = f"g-{i}"
    body: dict[str, Any] = pod_json(
        name, NS, uid=name, cpu="100m", pod_group_name="g", scheduler_name=PROFILE
    )
    body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    body["status"] = {
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]
    }
    return parse_pod(body)


def _harness(gpus: int) -> Harness:
    gates = FeatureGates({"GenericWorkload": True, DRA_SWITCH: True})
    enabled = tuple(PluginRef(n) for n in ("Sort", "GangScheduling", "CpuFit", "Binder", NAME))
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    plugins = registry().merge(
        {gang_scheduling.NAME: gang_scheduling.SPEC, NAME: in_tree_registry()[NAME]}
    )
    claims = [claim(f"g-{i}-gpu", owner=f"g-{i}") for i in range(MEMBERS)]
    devices = [f"gpu-{d}" for d in range(gpus)]
    dra = StaticDRA(claims, [gpu_slice("n", *devices)], [gpu_class()])
    h = Harness(spec, plugins=plugins, features=gates, dra=dra)
    h.add_node(make_node("n", cpu="8"))
    raw = kube_pod_group_json("g", min_count=MEMBERS)
    raw["metadata"]["namespace"] = NS
    h.gangs.add(gang_from_kube_pod_group(parse_kube_pod_group(raw)))
    for i in range(MEMBERS):
        h.add_pod(_member(i))
    return h


@pytest.fixture
def enough() -> Iterator[Harness]:
    h = _harness(MEMBERS)
    yield h
    h.close()


@pytest.fixture
def short() -> Iterator[Harness]:
    h = _harness(MEMBERS - 1)
    yield h
    h.close()


def test_a_gang_claiming_a_gpu_each_is_placed_whole_on_distinct_devices(
    enough: Harness,
) -> None:
    h = enough
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == MEMBERS)
    reserves = [w for w in h.api.resource_claim_writes if w[0] == "reserve"]
    devices = {
        key: allocation["devices"]["results"][0]["device"] for _, key, (allocation, _) in reserves
    }
    assert sorted(devices) == [f"{NS}/g-{i}-gpu" for i in range(MEMBERS)]
    assert sorted(devices.values()) == [f"gpu-{d}" for d in range(MEMBERS)]
    consumers = {key: consumer["uid"] for _, key, (_, consumer) in reserves}
    assert consumers == {f"{NS}/g-{i}-gpu": f"g-{i}" for i in range(MEMBERS)}
    poll(lambda: h.dra.claims.in_flight_count() == 0, "every allocation written")


def test_a_gang_with_fewer_gpus_than_members_places_none_and_holds_nothing(
    short: Harness,
) -> None:
    h = short
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == MEMBERS)
    assert h.api.binds == {}
    assert h.api.resource_claim_writes == []
    # The reverted members' allocations left flight: a later cycle starts from every GPU.
    assert h.dra.claims.in_flight_count() == 0
    assert h.dra.claims.gather_allocated_state().devices == set()
    assert h.cache.assumed_pod_count() == 0
    group = f"minCount ({MEMBERS}) cannot be satisfied: {MEMBERS - 1} scheduled, 0 remaining"
    messages = sorted(m for _, reason, m in h.recorder.events if reason == "FailedScheduling")
    assert messages == sorted(
        ["0/1 nodes are available: 1 cannot allocate all claims."]
        + [f"pod group is unschedulable, {group}"] * (MEMBERS - 1)
    )
