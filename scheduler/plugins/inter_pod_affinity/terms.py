"""The incoming pod's affinity terms with their namespaceSelector resolved, and term matching
with kube-scheduler's handling of unknown namespaces.

kube-scheduler merges an incoming term's namespaceSelector into its namespace list once per
cycle (mergeAffinityTermNamespacesIfNotEmpty): a non-empty selector becomes the names of the
namespaces it selects now, an empty one keeps matching every namespace. A resolved term is
frozen and hashable, so it names its predicate exactly as NodeTable.pod_counts requires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from scheduler.framework import LabelSelector, Namespace, Pod, PodAffinityTerm

#: What Go's nil label set is to a selector: an unknown namespace has no labels.
NO_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class ResolvedTerm:
    """An incoming pod's term after the merge: namespaces listed or selected, or every one."""

    selector: LabelSelector | None
    namespaces: frozenset[str]
    all_namespaces: bool
    topology_key: str

    def matches(self, pod: Pod) -> bool:
        if not (self.all_namespaces or pod.namespace in self.namespaces):
            return False
        return self.selector is not None and self.selector.matches(pod.labels)


def resolve(term: PodAffinityTerm, namespaces: Iterable[Namespace]) -> ResolvedTerm:
    """The term with its namespaceSelector merged into its namespaces (a nil selector adds
    none; an empty one matches every namespace, known or not)."""
    ns_selector = term.namespace_selector
    if ns_selector is None:
        return ResolvedTerm(term.selector, term.namespaces, False, term.topology_key)
    if ns_selector.is_empty():
        return ResolvedTerm(term.selector, term.namespaces, True, term.topology_key)
    selected = {ns.name for ns in namespaces if ns_selector.matches(ns.labels)}
    return ResolvedTerm(term.selector, term.namespaces | selected, False, term.topology_key)


def resolve_all(
    terms: Iterable[PodAffinityTerm], list_namespaces: Callable[[], list[Namespace]]
) -> tuple[ResolvedTerm, ...]:
    """Resolves every term; the namespaces are listed once, and only if a selector needs them."""
    known: list[Namespace] | None = None
    resolved = []
    for term in terms:
        selector = term.namespace_selector
        if selector is not None and not selector.is_empty() and known is None:
            known = list_namespaces()
        resolved.append(resolve(term, known or ()))
    return tuple(resolved)


def matches_all(terms: tuple[ResolvedTerm, ...], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms: false for no terms."""
    return bool(terms) and all(term.matches(pod) for term in terms)


def term_selects(
    term: PodAffinityTerm, pod: Pod, ns_labels: Mapping[str, str] | None = None
) -> bool:
    """AffinityTerm.Matches of an unresolved term (an existing pod's, or a pending pod's in a
    QueueingHint), with the pod's namespace labels; unknown labels are Go's nil set."""
    return term.matches(
        pod.namespace, pod.labels, ns_labels if ns_labels is not None else NO_LABELS
    )


def selects_all(terms: tuple[PodAffinityTerm, ...], pod: Pod) -> bool:
    return bool(terms) and all(term_selects(term, pod) for term in terms)


def selects_any(terms: tuple[PodAffinityTerm, ...], pod: Pod) -> bool:
    return any(term_selects(term, pod) for term in terms)
