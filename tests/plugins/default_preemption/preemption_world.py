"""A real framework with the in-tree plugins a preemption needs, wired as the app wires it."""

from __future__ import annotations

from typing import Any

from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.plugins.default_preemption.plugin import DefaultPreemption
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing.harness import PROFILE, Harness

PLUGINS = ("PrioritySort", "NodeResourcesFit", "NodePorts", "DefaultPreemption", "DefaultBinder")


def preemption_harness(*, async_preemption: bool = True, **plugin_args: Any) -> Harness:
    enabled = tuple(PluginRef(name, 1 if name == "NodeResourcesFit" else None) for name in PLUGINS)
    spec = ProfileSpec(
        PROFILE,
        plugins={"multiPoint": PluginSetSpec(enabled=enabled)},
        plugin_args={"DefaultPreemption": plugin_args or None},
    )
    features = FeatureGates({"SchedulerAsyncPreemption": async_preemption})
    return Harness(spec, plugins=in_tree_registry(), features=features)


def plugin(h: Harness) -> DefaultPreemption:
    found = h.fwk.plugins["DefaultPreemption"]
    assert isinstance(found, DefaultPreemption)
    return found


def prefiltered_state(h: Harness, pod: Any) -> CycleState:
    """A cycle state after PreFilter on an up-to-date snapshot, as PostFilter receives it."""
    h.cache.update_snapshot(h.snapshot)
    state = CycleState()
    _, status, _ = h.fwk.run_pre_filter_plugins(state, pod, h.snapshot.list())
    assert status is None
    return state
