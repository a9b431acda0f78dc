"""The plugin API (scheduler.framework's __all__) resolves, and names what the runtime uses."""

from __future__ import annotations

import scheduler.framework as api
from scheduler.framework import interface, registry


def test_every_exported_name_resolves() -> None:
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert missing == []


def test_every_extension_point_protocol_is_exported() -> None:
    protocols = {
        name
        for name, value in vars(interface).items()
        if name.endswith(("Plugin", "Extensions")) and isinstance(value, type)
    }
    assert protocols <= set(api.__all__)
    assert api.PluginSpec is registry.PluginSpec
    assert api.ENTRY_POINT_GROUP == "kube_pysched.plugins"
