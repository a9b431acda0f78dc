"""A Namespace as the scheduler needs it: its name and labels, for pod (anti-)affinity terms'
namespaceSelector. Nothing else of the object is kept."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def parse_namespace(obj: Mapping[str, Any]) -> Namespace:
    """Builds a Namespace from its API JSON, keeping only what a namespaceSelector reads."""
    meta = obj.get("metadata") or {}
    return Namespace(
        name=meta.get("name", ""),
        labels=dict(meta.get("labels") or {}),
    )
