"""The TaintToleration plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import (
    BatchFilterPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    PluginSpec,
    PreScorePlugin,
    SignPlugin,
)
from scheduler.plugins.taint_toleration.plugin import NAME, TaintToleration

SPEC = PluginSpec(
    lambda _args, _handle: TaintToleration(),
    implements=(BatchFilterPlugin, PreScorePlugin, BatchScorePlugin, EnqueueExtensions, SignPlugin),
)

__all__ = ["NAME", "SPEC"]
