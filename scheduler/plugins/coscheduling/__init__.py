"""The Coscheduling plugin (scheduler-plugins): NAME and SPEC for the registry; the code is in
plugin.py, the group logic it shares with other gang plugins in helper/gang.py."""

from __future__ import annotations

from scheduler.framework import PluginSpec
from scheduler.plugins.coscheduling.args import decode_args
from scheduler.plugins.coscheduling.plugin import NAME, Coscheduling

SPEC = PluginSpec(Coscheduling, decode_args)

__all__ = ["NAME", "SPEC"]
