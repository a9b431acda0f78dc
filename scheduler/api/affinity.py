"""Pod (anti-)affinity terms, compiled once when a pod is parsed.

The scheduler's AffinityTerm: the term's namespaces resolved against its owner (no namespaces
and no namespaceSelector means the owner's namespace) and both selectors compiled, `None` where
the API has nil (matches nothing). Terms are frozen and compare by value, so the same term on
many pods (every replica of a Deployment) is one key for the per-node counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.api.labels import LabelSelector


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str] | None
    ) -> bool:
        """AffinityTerm.Matches: the pod's namespace is listed or its labels (`ns_labels`, None
        when the namespace is unknown) satisfy the namespaceSelector, and the selector matches."""
        if namespace in self.namespaces or (
            self.namespace_selector is not None
            and ns_labels is not None
            and self.namespace_selector.matches(ns_labels)
        ):
            return self.selector is not None and self.selector.matches(labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """A pod's podAffinity and podAntiAffinity (requiredDuringScheduling... and preferred...)."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_required: tuple[PodAffinityTerm, ...] = ()
    anti_preferred: tuple[WeightedPodAffinityTerm, ...] = ()


def parse_pod_affinity(namespace: str, affinity: Mapping[str, Any]) -> PodAffinity | None:
    """spec.affinity's pod parts; None when the pod has no pod (anti-)affinity term at all.
    Raises SelectorError for a selector Kubernetes would reject."""
    pos = affinity.get("podAffinity") or {}
    anti = affinity.get("podAntiAffinity") or {}
    parsed = PodAffinity(
        required=_terms(namespace, pos.get("requiredDuringSchedulingIgnoredDuringExecution")),
        preferred=_weighted(namespace, pos.get("preferredDuringSchedulingIgnoredDuringExecution")),
        anti_required=_terms(namespace, anti.get("requiredDuringSchedulingIgnoredDuringExecution")),
        anti_preferred=_weighted(
            namespace, anti.get("preferredDuringSchedulingIgnoredDuringExecution")
        ),
    )
    if not (parsed.required or parsed.preferred or parsed.anti_required or parsed.anti_preferred):
        return None
    return parsed


def _term(namespace: str, raw: Mapping[str, Any]) -> PodAffinityTerm:
    listed = raw.get("namespaces") or []
    ns_selector_raw = raw.get("namespaceSelector")
    namespaces = (
        frozenset([namespace]) if not listed and ns_selector_raw is None else frozenset(listed)
    )
    return PodAffinityTerm(
        selector=LabelSelector.parse(raw.get("labelSelector")),
        namespaces=namespaces,
        namespace_selector=LabelSelector.parse(ns_selector_raw),
        topology_key=raw.get("topologyKey") or "",
    )


def _terms(namespace: str, raw: list[Mapping[str, Any]] | None) -> tuple[PodAffinityTerm, ...]:
    return tuple(_term(namespace, t) for t in raw or ())


def _weighted(
    namespace: str, raw: list[Mapping[str, Any]] | None
) -> tuple[WeightedPodAffinityTerm, ...]:
    return tuple(
        WeightedPodAffinityTerm(
            int(w.get("weight", 0)), _term(namespace, w.get("podAffinityTerm") or {})
        )
        for w in raw or ()
    )
