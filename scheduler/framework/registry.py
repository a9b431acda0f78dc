"""Plugin registry: names to factories, merged from in-tree plugins and Python entry points."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from scheduler.framework.interface import Handle, Plugin

ENTRY_POINT_GROUP = "kube_pysched.plugins"


class ArgsError(ValueError):
    """Invalid plugin args; `path` is relative to the args, e.g. "scoringStrategy.type"."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class RegistryError(Exception):
    """A registry that cannot be assembled: duplicate names or a broken entry point."""


@dataclass(frozen=True)
class PluginSpec:
    """How to build one plugin: a factory and, for plugins with args, their decoder.

    `implements` names the extension-point Protocols the plugin claims (FilterPlugin,
    ScorePlugin, ...), as Go's `var _ framework.FilterPlugin = &X{}`: tests check the built
    plugin against them. The runtime never reads it; it goes by the methods a plugin has."""

    factory: Callable[[Any, Handle], Plugin]
    decode_args: Callable[[Mapping[str, Any] | None], Any] | None = None
    implements: tuple[type, ...] = ()


class Registry(Mapping[str, PluginSpec]):
    """An immutable name -> PluginSpec map; merging refuses to shadow a name silently."""

    def __init__(self, specs: Mapping[str, PluginSpec] | None = None) -> None:
        self._specs: dict[str, PluginSpec] = dict(specs or {})

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def merge(self, other: Mapping[str, PluginSpec]) -> Registry:
        clash = sorted(set(self._specs) & set(other))
        if clash:
            raise RegistryError(f"plugin names registered twice: {', '.join(clash)}")
        return Registry({**self._specs, **other})


def load_entry_point_plugins(group: str = ENTRY_POINT_GROUP) -> Registry:
    """Out-of-tree plugins; a broken entry point is an error, never a silently missing plugin."""
    specs: dict[str, PluginSpec] = {}
    for ep in entry_points(group=group):
        try:
            loaded = ep.load()
        except Exception as err:
            raise RegistryError(f"plugin entry point {ep.name!r} ({ep.value}): {err}") from err
        if isinstance(loaded, PluginSpec):
            spec = loaded
        elif callable(loaded):
            spec = PluginSpec(factory=loaded)
        else:
            raise RegistryError(
                f"plugin entry point {ep.name!r} ({ep.value}) is neither a PluginSpec nor a factory"
            )
        if ep.name in specs:
            raise RegistryError(f"plugin entry point {ep.name!r} is registered twice")
        specs[ep.name] = spec
    return Registry(specs)
