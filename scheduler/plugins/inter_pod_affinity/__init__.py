"""The InterPodAffinity plugin: NAME and SPEC for the registry; the code is in plugin.py."""

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
from scheduler.plugins.inter_pod_affinity.args import decode_args
from scheduler.plugins.inter_pod_affinity.plugin import NAME, InterPodAffinity

SPEC = PluginSpec(
    InterPodAffinity,
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
