"""The NodeAffinity plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    PluginSpec,
    PreFilterPlugin,
    PreScorePlugin,
    SignPlugin,
)
from scheduler.plugins.node_affinity.args import decode_args
from scheduler.plugins.node_affinity.plugin import NAME, NodeAffinity

SPEC = PluginSpec(
    lambda args, _handle: NodeAffinity(args),
    decode_args,
    implements=(
        PreFilterPlugin,
        BatchFilterPlugin,
        PreScorePlugin,
        BatchScorePlugin,
        EnqueueExtensions,
        SignPlugin,
    ),
)

__all__ = ["NAME", "SPEC"]
