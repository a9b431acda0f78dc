"""The in-tree registry: kube-scheduler names, buildable specs, and entry-point merging."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.defaults import GATED_MULTI_POINT, KUBE_SCHEDULER_MULTI_POINT
from scheduler.framework.interface import (
    BatchFilterPlugin,
    BatchFilterStatusesPlugin,
    BatchScorePlugin,
    BindPlugin,
    EnqueueExtensions,
    PostFilterPlugin,
    PreEnqueuePlugin,
    PreScorePlugin,
    QueueSortPlugin,
)
from scheduler.framework.registry import PluginSpec, Registry, RegistryError
from scheduler.plugins import registry
from scheduler.testing import build_plugin

KUBE_SCHEDULER_NAMES = {
    "PrioritySort",
    "SchedulingGates",
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "DefaultPreemption",
    "DefaultBinder",
    "ImageLocality",
    "NodeDeclaredFeatures",
    "InterPodAffinity",
    "PodTopologySpread",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "DynamicResources",
}
# Registered in-tree, not part of any default profile (scheduler-plugins' names).
OPT_IN = {
    "Coscheduling",
}
#: kube-scheduler's default plugins only with a feature gate on.
GATED = {"GangScheduling"}


def test_in_tree_registry_names() -> None:
    assert set(registry.in_tree_registry()) == KUBE_SCHEDULER_NAMES | OPT_IN | GATED


def test_every_gated_default_plugin_is_registered() -> None:
    assert {name for _, name, _ in GATED_MULTI_POINT} == GATED


def test_every_default_plugin_of_kube_scheduler_is_registered() -> None:
    assert {name for name, _ in KUBE_SCHEDULER_MULTI_POINT} == KUBE_SCHEDULER_NAMES


@pytest.mark.parametrize("name", sorted(KUBE_SCHEDULER_NAMES | GATED))
def test_every_spec_builds_a_plugin_named_as_registered(name: str) -> None:
    plugin = build_plugin(registry.in_tree_registry()[name])
    assert plugin.name == name


@pytest.mark.parametrize(
    ("name", "protocol"),
    [
        ("PrioritySort", QueueSortPlugin),
        ("SchedulingGates", PreEnqueuePlugin),
        ("SchedulingGates", EnqueueExtensions),
        ("NodeName", BatchFilterPlugin),
        ("NodeUnschedulable", BatchFilterPlugin),
        ("TaintToleration", BatchFilterPlugin),
        ("TaintToleration", BatchScorePlugin),
        ("NodeAffinity", BatchFilterPlugin),
        ("NodeAffinity", BatchScorePlugin),
        ("NodePorts", BatchFilterPlugin),
        ("DefaultPreemption", PostFilterPlugin),
        ("DefaultPreemption", PreEnqueuePlugin),
        ("DefaultPreemption", EnqueueExtensions),
        ("DefaultBinder", BindPlugin),
        ("InterPodAffinity", BatchFilterStatusesPlugin),
        ("InterPodAffinity", BatchScorePlugin),
        ("InterPodAffinity", PreScorePlugin),
        ("InterPodAffinity", EnqueueExtensions),
    ],
)
def test_plugins_implement_their_extension_points(name: str, protocol: Any) -> None:
    assert isinstance(build_plugin(registry.in_tree_registry()[name]), protocol)


def test_only_node_affinity_of_mine_takes_args() -> None:
    reg = registry.in_tree_registry()
    assert reg["NodeAffinity"].decode_args is not None
    for name in ("PrioritySort", "SchedulingGates", "NodeName", "NodeUnschedulable"):
        assert reg[name].decode_args is None


def test_full_registry_adds_entry_points_and_refuses_shadowing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extra = PluginSpec(lambda _args, _handle: object())  # type: ignore[arg-type,return-value]
    monkeypatch.setattr(registry, "load_entry_point_plugins", lambda: Registry({"Extra": extra}))
    full = registry.full_registry()
    assert set(full) == KUBE_SCHEDULER_NAMES | OPT_IN | GATED | {"Extra"}
    monkeypatch.setattr(registry, "load_entry_point_plugins", lambda: Registry({"NodeName": extra}))
    with pytest.raises(RegistryError, match="NodeName"):
        registry.full_registry()
