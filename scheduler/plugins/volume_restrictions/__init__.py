"""VolumeRestrictions: in-tree disks a pod shares with pods on the node, and ReadWriteOncePod
claims already in use; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    FilterPlugin,
    PluginSpec,
    PreFilterPlugin,
    SignPlugin,
)
from scheduler.plugins.volume_restrictions.plugin import NAME, VolumeRestrictions

SPEC = PluginSpec(
    lambda _args, handle: VolumeRestrictions(handle),
    implements=(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
