"""The ImageLocality plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import BatchScorePlugin, PluginSpec, SignPlugin
from scheduler.plugins.image_locality.plugin import NAME, ImageLocality

SPEC = PluginSpec(
    lambda _args, handle: ImageLocality(handle), implements=(BatchScorePlugin, SignPlugin)
)

__all__ = ["NAME", "SPEC"]
