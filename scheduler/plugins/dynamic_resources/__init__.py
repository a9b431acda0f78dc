"""The DynamicResources plugin: NAME and SPEC for the registry; the code is in plugin.py
(points), claims.py, binding.py (PreBind), hints.py, the allocator/ package and cel.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    FilterPlugin,
    PluginSpec,
    PostFilterPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.plugins.dynamic_resources.args import decode_args
from scheduler.plugins.dynamic_resources.plugin import NAME, DynamicResources

SPEC = PluginSpec(
    DynamicResources,
    decode_args,
    implements=(
        PreEnqueuePlugin,
        PreFilterPlugin,
        FilterPlugin,
        PostFilterPlugin,
        ScorePlugin,
        ReservePlugin,
        PreBindPreFlightPlugin,
        EnqueueExtensions,
        SignPlugin,
    ),
)

__all__ = ["NAME", "SPEC"]
