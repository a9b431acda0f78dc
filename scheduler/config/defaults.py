"""kube-scheduler's default plugins and its rules for merging a profile's plugins into them."""

from __future__ import annotations

from scheduler.config.types import PLUGIN_POINTS, PluginEntry, PluginSet
from scheduler.features import FeatureGates

# getDefaultPlugins() of kube-scheduler v1.37 (apis/config/v1/default_plugins.go), in order,
# with the plugins its default feature gates add.
KUBE_SCHEDULER_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    # Inserted before DefaultPreemption by applyFeatureGates: DynamicResourceAllocation is GA.
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    # Appended by applyFeatureGates: the NodeDeclaredFeatures gate is GA and locked on in v1.37.
    ("NodeDeclaredFeatures", None),
)


#: Appended to MultiPoint by applyFeatureGates when the gate is on (kube-scheduler v1.37's
#: applyGangScheduling: last, after NodeDeclaredFeatures).
GATED_MULTI_POINT: tuple[tuple[str, str, int | None], ...] = (
    ("GenericWorkload", "GangScheduling", None),
)


def default_plugins(features: FeatureGates | None = None) -> dict[str, PluginSet]:
    """kube-scheduler's MultiPoint defaults, all of them, and those its feature gates add
    (`features`; None: the default gates)."""
    gates = features or FeatureGates()
    enabled = [PluginEntry(n, w) for n, w in KUBE_SCHEDULER_MULTI_POINT]
    enabled += [PluginEntry(n, w) for gate, n, w in GATED_MULTI_POINT if gates.enabled(gate)]
    return {"multiPoint": PluginSet(enabled=enabled)}


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: user entries replace defaults in place; '*' disables every default."""
    disabled = [PluginEntry(p.name) for p in custom.disabled] + [
        PluginEntry(p.name) for p in default.disabled
    ]
    disabled_names = {p.name for p in disabled}
    custom_by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginEntry] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            chosen = plugin
            if plugin.name in custom_by_name:
                index, chosen = custom_by_name[plugin.name]
                replaced.add(index)
            enabled.append(chosen)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=enabled, disabled=disabled)


def merge_plugins(
    default: dict[str, PluginSet], custom: dict[str, PluginSet] | None
) -> dict[str, PluginSet]:
    if custom is None:
        return default
    merged: dict[str, PluginSet] = {}
    for point in PLUGIN_POINTS:
        result = merge_plugin_set(default.get(point, PluginSet()), custom.get(point, PluginSet()))
        if result.enabled or result.disabled:
            merged[point] = result
    return merged
