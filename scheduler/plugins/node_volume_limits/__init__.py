"""NodeVolumeLimits: the CSI volumes attached to a node must stay within the limits its
CSINode publishes per driver; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import PluginSpec
from scheduler.plugins.node_volume_limits.plugin import NAME, NodeVolumeLimits

SPEC = PluginSpec(lambda _args, handle: NodeVolumeLimits(handle))

__all__ = ["NAME", "SPEC"]
