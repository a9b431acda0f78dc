"""Which resources a scorer looks at and how much each counts (config.ResourceSpec)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.resources import CPU, MEMORY


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource name and its weight in the weighted average of per-resource scores."""

    name: str
    weight: int = 1


# kube-scheduler's defaultResourceSpec: used when args name no resources.
DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))
