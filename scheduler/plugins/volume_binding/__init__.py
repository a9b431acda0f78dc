"""The VolumeBinding plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    FilterPlugin,
    PluginSpec,
    PreBindPreFlightPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.plugins.volume_binding.args import decode_args
from scheduler.plugins.volume_binding.plugin import NAME, VolumeBinding

SPEC = PluginSpec(
    VolumeBinding,
    decode_args,
    implements=(
        PreFilterPlugin,
        FilterPlugin,
        PreScorePlugin,
        ScorePlugin,
        ReservePlugin,
        PreBindPreFlightPlugin,
        EnqueueExtensions,
        SignPlugin,
    ),
)

__all__ = ["NAME", "SPEC"]
