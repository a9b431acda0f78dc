"""The Coscheduling plugin (scheduler-plugins): NAME and SPEC for the registry; the code is in
plugin.py, the group logic it shares with other gang plugins in helper/gang.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    PermitPlugin,
    PluginSpec,
    PodGroupPlugin,
    PostFilterPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    QueueSortPlugin,
    ReservePlugin,
)
from scheduler.plugins.coscheduling.args import decode_args
from scheduler.plugins.coscheduling.plugin import NAME, Coscheduling

SPEC = PluginSpec(
    Coscheduling,
    decode_args,
    implements=(
        PreEnqueuePlugin,
        QueueSortPlugin,
        PreFilterPlugin,
        PostFilterPlugin,
        ReservePlugin,
        PermitPlugin,
        PodGroupPlugin,
        EnqueueExtensions,
    ),
)

__all__ = ["NAME", "SPEC"]
