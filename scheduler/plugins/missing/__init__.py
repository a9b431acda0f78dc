"""Guards standing in for kube-scheduler's default plugins this build does not have yet (see
guards.py): GUARDS pairs each missing plugin's name with the guard's SPEC."""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    EnqueueExtensions,
    Handle,
    PluginSpec,
    PostFilterPlugin,
    PreFilterPlugin,
    SignPlugin,
)
from scheduler.plugins.missing.guards import (
    DynamicResourcesGuard,
    accept_any_args,
    resource_claims,
)


def _dynamic_resources(_args: Any, handle: Handle) -> DynamicResourcesGuard:
    return DynamicResourcesGuard("DynamicResources", resource_claims, handle)


GUARDS: tuple[tuple[str, PluginSpec], ...] = (
    (
        "DynamicResources",
        PluginSpec(
            _dynamic_resources,
            accept_any_args,
            implements=(PreFilterPlugin, PostFilterPlugin, EnqueueExtensions, SignPlugin),
        ),
    ),
)

__all__ = ["GUARDS"]
