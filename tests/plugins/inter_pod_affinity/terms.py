"""Pod (anti-)affinity stanzas for the InterPodAffinity tests, in the API's JSON shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.api.namespace import Namespace
from scheduler.api.objects import Node, Pod
from scheduler.backend.cache import Snapshot
from scheduler.plugins.inter_pod_affinity import SPEC
from scheduler.testing import FakeHandle, build_plugin, make_snapshot

HOST = "kubernetes.io/hostname"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def term(key: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """A PodAffinityTerm selecting `labels` (matchLabels) over topology `key`."""
    raw: dict[str, Any] = {"topologyKey": key, **extra}
    if labels is not None:
        raw["labelSelector"] = {"matchLabels": labels}
    return raw


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    """A labelSelector with one matchExpression."""
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return {"matchExpressions": [found]}


def weighted(weight: int, raw_term: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": raw_term}


def affinity(
    required: list[dict[str, Any]] | None = None,
    preferred: list[dict[str, Any]] | None = None,
    anti_required: list[dict[str, Any]] | None = None,
    anti_preferred: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """spec.affinity with the given podAffinity/podAntiAffinity lists."""
    pos: dict[str, Any] = {}
    anti: dict[str, Any] = {}
    if required:
        pos[REQUIRED] = required
    if preferred:
        pos[PREFERRED] = preferred
    if anti_required:
        anti[REQUIRED] = anti_required
    if anti_preferred:
        anti[PREFERRED] = anti_preferred
    found: dict[str, Any] = {}
    if pos:
        found["podAffinity"] = pos
    if anti:
        found["podAntiAffinity"] = anti
    return found


def plugin_on(
    nodes: list[Node],
    pods: Sequence[Pod] = (),
    args: dict[str, Any] | None = None,
    namespaces: dict[str, dict[str, str]] | None = None,
) -> tuple[Any, Snapshot, FakeHandle]:
    """The plugin over a snapshot of `nodes` with `pods` running, and its handle."""
    snap = make_snapshot(nodes, pods)
    handle = FakeHandle(
        snap=snap,
        namespace_list=[Namespace(name, labels) for name, labels in (namespaces or {}).items()],
    )
    return build_plugin(SPEC, args, handle), snap, handle
