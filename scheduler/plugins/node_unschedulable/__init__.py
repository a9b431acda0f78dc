"""The NodeUnschedulable plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import BatchFilterPlugin, EnqueueExtensions, PluginSpec, SignPlugin
from scheduler.plugins.node_unschedulable.plugin import NAME, NodeUnschedulable

SPEC = PluginSpec(
    lambda _args, _handle: NodeUnschedulable(),
    implements=(BatchFilterPlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
