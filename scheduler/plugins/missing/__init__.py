"""Guards standing in for kube-scheduler's default plugins this build does not have yet (see
guards.py): GUARDS pairs each missing plugin's name with the guard's SPEC."""

from __future__ import annotations

from scheduler.framework.registry import PluginSpec
from scheduler.plugins.missing.guards import (
    STORAGE_SOURCES,
    MissingPluginGuard,
    Need,
    accept_any_args,
    resource_claims,
    volumes_needing,
)


def _spec(name: str, need: Need) -> PluginSpec:
    return PluginSpec(lambda _args, handle: MissingPluginGuard(name, need, handle), accept_any_args)


GUARDS: tuple[tuple[str, PluginSpec], ...] = (
    *((name, _spec(name, volumes_needing(sources))) for name, sources in STORAGE_SOURCES.items()),
    ("DynamicResources", _spec("DynamicResources", resource_claims)),
)

__all__ = ["GUARDS"]
