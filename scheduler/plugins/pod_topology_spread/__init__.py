"""The PodTopologySpread plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    BatchFilterStatusesPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    PluginSpec,
    PreFilterPlugin,
    PreScorePlugin,
    SignPlugin,
)
from scheduler.plugins.pod_topology_spread.args import decode_args
from scheduler.plugins.pod_topology_spread.plugin import NAME, PodTopologySpread

SPEC = PluginSpec(
    PodTopologySpread,
    decode_args,
    implements=(
        PreFilterPlugin,
        BatchFilterStatusesPlugin,
        PreScorePlugin,
        BatchScorePlugin,
        EnqueueExtensions,
        SignPlugin,
    ),
)

__all__ = ["NAME", "SPEC"]
