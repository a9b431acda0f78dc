"""The NodeDeclaredFeatures plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    BatchFilterPlugin,
    EnqueueExtensions,
    PluginSpec,
    PreFilterPlugin,
    SignPlugin,
)
from scheduler.plugins.node_declared_features.plugin import NAME, NodeDeclaredFeatures

SPEC = PluginSpec(
    lambda _args, _handle: NodeDeclaredFeatures(),
    implements=(PreFilterPlugin, BatchFilterPlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
