"""Topology spread constraints, parsed once with the pod, and the objects whose selectors give
pods without constraints their default spreading (Services, ReplicationControllers,
ReplicaSets, StatefulSets, reduced to namespace, name and selector)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.labels import LabelSelector, SelectorError

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """v1.TopologySpreadConstraint; `selector` None where the API has nil (matches nothing),
    the optional fields None where unset (the plugin applies their defaults)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


def parse_spread_constraint(raw: Mapping[str, Any]) -> TopologySpreadConstraint:
    """One constraint of spec.topologySpreadConstraints; SelectorError for a bad selector."""
    if not isinstance(raw, Mapping):
        raise SelectorError("must be an object")
    min_domains = raw.get("minDomains")
    return TopologySpreadConstraint(
        max_skew=int(raw.get("maxSkew") or 0),
        topology_key=raw.get("topologyKey") or "",
        when_unsatisfiable=raw.get("whenUnsatisfiable") or "",
        selector=LabelSelector.parse(raw.get("labelSelector")),
        min_domains=int(min_domains) if min_domains is not None else None,
        node_affinity_policy=raw.get("nodeAffinityPolicy"),
        node_taints_policy=raw.get("nodeTaintsPolicy"),
        match_label_keys=tuple(raw.get("matchLabelKeys") or ()),
    )


@dataclass(frozen=True, slots=True)
class Service:
    """A Service's spec.selector (a label set; None when unset: it selects no pod)."""

    namespace: str
    name: str
    selector: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class Workload:
    """A ReplicationController (`set_selector`, its label-set selector) or a ReplicaSet or
    StatefulSet (`selector`, None when nil or invalid: it then adds nothing)."""

    kind: str
    namespace: str
    name: str
    set_selector: Mapping[str, str] | None = None
    selector: LabelSelector | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
