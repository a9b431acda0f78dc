"""Guards standing in for kube-scheduler's default plugins this build does not have yet (see
guards.py): GUARDS pairs each missing plugin's name with the guard's SPEC."""

from __future__ import annotations

from scheduler.framework.registry import PluginSpec
from scheduler.plugins.missing.guards import (
    MissingPluginGuard,
    Need,
    accept_any_args,
    resource_claims,
)


def _spec(name: str, need: Need) -> PluginSpec:
    return PluginSpec(lambda _args, handle: MissingPluginGuard(name, need, handle), accept_any_args)


GUARDS: tuple[tuple[str, PluginSpec], ...] = (
    ("DynamicResources", _spec("DynamicResources", resource_claims)),
)

__all__ = ["GUARDS"]
