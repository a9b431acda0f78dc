"""The PrioritySort plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import PluginSpec, QueueSortPlugin
from scheduler.plugins.priority_sort.plugin import NAME, PrioritySort

SPEC = PluginSpec(lambda _args, _handle: PrioritySort(), implements=(QueueSortPlugin,))

__all__ = ["NAME", "SPEC"]
