"""The DefaultPreemption plugin: NAME and SPEC for the registry; the code is in plugin.py (the
PostFilter that preempts lower-priority pods) and args.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    PluginSpec,
    PodGroupPostFilterPlugin,
    PostFilterPlugin,
    PreEnqueuePlugin,
)
from scheduler.plugins.default_preemption.args import decode_args
from scheduler.plugins.default_preemption.plugin import NAME, DefaultPreemption

SPEC = PluginSpec(
    DefaultPreemption,
    decode_args,
    implements=(PreEnqueuePlugin, PostFilterPlugin, PodGroupPostFilterPlugin, EnqueueExtensions),
)

__all__ = ["NAME", "SPEC"]
