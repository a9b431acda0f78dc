"""VolumeZone: a pod's bound PersistentVolumes' zone and region labels must match the node's;
the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    FilterPlugin,
    PluginSpec,
    PreFilterPlugin,
    SignPlugin,
)
from scheduler.plugins.volume_zone.plugin import NAME, VolumeZone

SPEC = PluginSpec(
    lambda _args, handle: VolumeZone(handle),
    implements=(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
