"""NodePorts: a pod's hostPorts must be free on the node; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    BatchFilterPlugin,
    EnqueueExtensions,
    PluginSpec,
    PreFilterPlugin,
    SignPlugin,
)
from scheduler.plugins.node_ports.plugin import NAME, NodePorts

SPEC = PluginSpec(
    lambda _args, _handle: NodePorts(),
    implements=(PreFilterPlugin, BatchFilterPlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
