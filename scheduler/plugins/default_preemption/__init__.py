"""DefaultPreemption: the PostFilter that preempts lower-priority pods (see plugin.py)."""

from __future__ import annotations

from scheduler.framework.registry import PluginSpec
from scheduler.plugins.default_preemption.args import PreemptionArgs, decode_args
from scheduler.plugins.default_preemption.plugin import (
    NAME,
    NO_VICTIMS,
    WAITING_FOR_PREEMPTION,
    DefaultPreemption,
)

SPEC = PluginSpec(DefaultPreemption, decode_args)

__all__ = [
    "NAME",
    "NO_VICTIMS",
    "SPEC",
    "WAITING_FOR_PREEMPTION",
    "DefaultPreemption",
    "PreemptionArgs",
    "decode_args",
]
