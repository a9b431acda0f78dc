"""What the framework runtime needs to build one profile, independent of the config file format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Extension points in the order kube-scheduler's config lists them.
EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
MULTI_POINT = "multiPoint"


@dataclass(frozen=True, slots=True)
class PluginRef:
    name: str
    weight: int = 0


@dataclass(frozen=True, slots=True)
class PluginSetSpec:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """A profile after config defaulting: plugin sets per extension point and raw plugin args."""

    scheduler_name: str
    plugins: Mapping[str, PluginSetSpec] = field(default_factory=dict)
    plugin_args: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None

    def plugin_set(self, point: str) -> PluginSetSpec:
        return self.plugins.get(point, PluginSetSpec())
