"""The DynamicResources plugin: NAME and SPEC for the registry; the code is in plugin.py
(points), claims.py, binding.py (PreBind), hints.py, the allocator/ package and cel.py. With
kube-pysched's PyschedDynamicResources switch off, SPEC builds the stand-in of
switched_off.py instead (the args are decoded the same way either way)."""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    BatchScorePlugin,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    Plugin,
    PluginSpec,
    PostFilterPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    ReservePlugin,
    SignPlugin,
)
from scheduler.plugins.dynamic_resources.args import decode_args
from scheduler.plugins.dynamic_resources.plugin import NAME, DynamicResources
from scheduler.plugins.dynamic_resources.switched_off import SWITCH, DynamicResourcesSwitchedOff


def _build(args: Any, handle: Handle) -> Plugin:
    """The plugin, or its stand-in when the switch is off (docs/dra.md)."""
    if handle.features.enabled(SWITCH):
        return DynamicResources(args, handle)
    return DynamicResourcesSwitchedOff(args, handle)


#: `implements` is the real plugin's (the stand-in implements PreFilter, PostFilter,
#: EnqueueExtensions and SignPlugin of it).
SPEC = PluginSpec(
    _build,
    decode_args,
    implements=(
        PreEnqueuePlugin,
        PreFilterPlugin,
        FilterPlugin,
        PostFilterPlugin,
        BatchScorePlugin,
        ReservePlugin,
        PreBindPreFlightPlugin,
        EnqueueExtensions,
        SignPlugin,
    ),
)

__all__ = ["NAME", "SPEC", "SWITCH"]
