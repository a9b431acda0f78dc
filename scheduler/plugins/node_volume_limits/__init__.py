"""NodeVolumeLimits: the CSI volumes attached to a node must stay within the limits its
CSINode publishes per driver; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    FilterPlugin,
    PluginSpec,
    PreFilterPlugin,
    SignPlugin,
)
from scheduler.plugins.node_volume_limits.plugin import NAME, NodeVolumeLimits

SPEC = PluginSpec(
    lambda _args, handle: NodeVolumeLimits(handle),
    implements=(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
