"""The DefaultBinder plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import BindPlugin, PluginSpec
from scheduler.plugins.default_binder.plugin import NAME, DefaultBinder

SPEC = PluginSpec(lambda _args, handle: DefaultBinder(handle), implements=(BindPlugin,))

__all__ = ["NAME", "SPEC"]
