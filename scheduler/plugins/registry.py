"""The in-tree plugins under their kube-scheduler names, plus out-of-tree entry points (the one
plugin-side module that reaches past the plugin API: it loads the entry points)."""

from __future__ import annotations

from scheduler.framework import PluginSpec, Registry
from scheduler.framework.registry import load_entry_point_plugins
from scheduler.plugins import (
    coscheduling,
    default_binder,
    default_preemption,
    dynamic_resources,
    gang_scheduling,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_unschedulable,
    node_volume_limits,
    noderesources,
    pod_topology_spread,
    priority_sort,
    scheduling_gates,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

_IN_TREE: tuple[tuple[str, PluginSpec], ...] = (
    (priority_sort.NAME, priority_sort.SPEC),
    (scheduling_gates.NAME, scheduling_gates.SPEC),
    (node_name.NAME, node_name.SPEC),
    (node_unschedulable.NAME, node_unschedulable.SPEC),
    (taint_toleration.NAME, taint_toleration.SPEC),
    (node_affinity.NAME, node_affinity.SPEC),
    (node_ports.NAME, node_ports.SPEC),
    (noderesources.FIT_NAME, noderesources.FIT_SPEC),
    (noderesources.BALANCED_ALLOCATION_NAME, noderesources.BALANCED_ALLOCATION_SPEC),
    (default_preemption.NAME, default_preemption.SPEC),
    (default_binder.NAME, default_binder.SPEC),
    (image_locality.NAME, image_locality.SPEC),
    (node_declared_features.NAME, node_declared_features.SPEC),
    (inter_pod_affinity.NAME, inter_pod_affinity.SPEC),
    (pod_topology_spread.NAME, pod_topology_spread.SPEC),
    (volume_restrictions.NAME, volume_restrictions.SPEC),
    (node_volume_limits.NAME, node_volume_limits.SPEC),
    (volume_binding.NAME, volume_binding.SPEC),
    (volume_zone.NAME, volume_zone.SPEC),
    # Or its stand-in with PyschedDynamicResources=false (scheduler/plugins/dynamic_resources).
    (dynamic_resources.NAME, dynamic_resources.SPEC),
    # scheduler-plugins' (not a default plugin: a profile enables it, queueSort included).
    (coscheduling.NAME, coscheduling.SPEC),
    # kube-scheduler's, for Kubernetes' v1beta1 PodGroups (default with GenericWorkload on).
    (gang_scheduling.NAME, gang_scheduling.SPEC),
)


#: kube-pysched's switch between DynamicResources (on, the default) and its stand-in (off).
DRA_SWITCH = dynamic_resources.SWITCH


def in_tree_registry() -> Registry:
    """Every built-in plugin under the name kube-scheduler gives it, so configs carry over."""
    return Registry(dict(_IN_TREE))


def full_registry() -> Registry:
    """In-tree plugins and those installed under the `kube_pysched.plugins` entry point group
    (an installed plugin may not take an in-tree plugin's name)."""
    return in_tree_registry().merge(load_entry_point_plugins())
