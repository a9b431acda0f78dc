"""NodeName: a pod with spec.nodeName set may only go to that node; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    BatchFilterPlugin,
    EnqueueExtensions,
    PluginSpec,
    PreFilterPlugin,
    SignPlugin,
)
from scheduler.plugins.node_name.plugin import NAME, NodeName

SPEC = PluginSpec(
    lambda _args, _handle: NodeName(),
    implements=(PreFilterPlugin, BatchFilterPlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
