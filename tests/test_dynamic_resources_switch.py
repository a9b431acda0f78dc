"""DynamicResources in the in-process scheduler: with the PyschedDynamicResources switch on (the
default) the real plugin allocates a device, PreBind writes the claim and the pod is bound, and
the next pod sees the device taken; with the switch off its stand-in keeps the pod Pending."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler.features import FeatureGates
from scheduler.framework.dra import StaticDRA
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.plugins.registry import DRA_SWITCH, in_tree_registry
from scheduler.testing import make_node
from scheduler.testing.harness import PROFILE, Harness, registry
from tests.plugins.dynamic_resources.plugin_kit import claim, gpu_class, gpu_slice, pod

NAME = "DynamicResources"


def _harness(switch: bool) -> Harness:
    plugins = registry().merge({NAME: in_tree_registry()[NAME]})
    enabled = tuple(PluginRef(n) for n in ("Sort", "CpuFit", "Binder", NAME))
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    dra = StaticDRA([claim("c1"), claim("c2")], [gpu_slice("n1", "gpu-0")], [gpu_class()])
    h = Harness(spec, plugins=plugins, features=FeatureGates({DRA_SWITCH: switch}), dra=dra)
    h.add_node(make_node("n1", cpu="8"))
    return h


@pytest.fixture
def on() -> Iterator[Harness]:
    h = _harness(True)
    yield h
    h.close()


@pytest.fixture
def off() -> Iterator[Harness]:
    h = _harness(False)
    yield h
    h.close()


def test_switch_on_allocates_writes_the_claim_and_binds(on: Harness) -> None:
    on.add_pod(pod("a", claims={"gpu": "c1"}, scheduler_name=PROFILE))
    on.schedule_next()
    on.api.wait_for(lambda: "ns/a" in on.api.binds)
    ((kind, key, (allocation, consumer)),) = on.api.resource_claim_writes
    assert (kind, key, consumer["uid"]) == ("reserve", "ns/c1", "a")
    assert allocation["devices"]["results"][0]["device"] == "gpu-0"
    # The written claim is assumed: the next pod finds the only device taken.
    on.add_pod(pod("b", claims={"gpu": "c2"}, scheduler_name=PROFILE))
    on.schedule_next()
    on.api.wait_for(lambda: len(on.api.status_patches) == 1)
    failed = [e for e in on.recorder.events if e[0] == "ns/b"]
    assert failed == [
        ("ns/b", "FailedScheduling", "0/1 nodes are available: 1 cannot allocate all claims.")
    ]
    assert "ns/b" not in on.api.binds


def test_switch_off_keeps_the_pod_pending(off: Harness) -> None:
    off.add_pod(pod("a", claims={"gpu": "c1"}, scheduler_name=PROFILE))
    off.schedule_next()
    off.api.wait_for(lambda: len(off.api.status_patches) == 1)
    assert off.api.binds == {}
    assert off.api.resource_claim_writes == []
    ((_, reason, message),) = off.recorder.events
    assert reason == "FailedScheduling"
    assert "--feature-gates=PyschedDynamicResources=false" in message
