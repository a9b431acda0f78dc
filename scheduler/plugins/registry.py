"""The in-tree plugins under their kube-scheduler names, plus out-of-tree entry points."""

from __future__ import annotations

from scheduler.framework.registry import Registry, load_entry_point_plugins
from scheduler.plugins import (
    default_binder,
    default_preemption,
    node_affinity,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    priority_sort,
    scheduling_gates,
    taint_toleration,
)

_IN_TREE = (
    priority_sort,
    scheduling_gates,
    node_name,
    node_unschedulable,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
    node_resources_balanced_allocation,
    default_preemption,
    default_binder,
)


def in_tree_registry() -> Registry:
    """Every built-in plugin under the name kube-scheduler gives it, so configs carry over."""
    return Registry({module.NAME: module.SPEC for module in _IN_TREE})


def full_registry() -> Registry:
    """In-tree plugins and those installed under the `kube_pysched.plugins` entry point group."""
    return in_tree_registry().merge(load_entry_point_plugins())
