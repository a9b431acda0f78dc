"""The SchedulingGates plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import EnqueueExtensions, PluginSpec, PreEnqueuePlugin
from scheduler.plugins.scheduling_gates.plugin import NAME, SchedulingGates

SPEC = PluginSpec(
    lambda _args, _handle: SchedulingGates(), implements=(PreEnqueuePlugin, EnqueueExtensions)
)

__all__ = ["NAME", "SPEC"]
