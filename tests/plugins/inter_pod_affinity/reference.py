"""A direct transcription of kube-scheduler's map-based algorithm (loops over every pod of every
node, topologyPair maps), to check the numpy forms against on random clusters."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api.affinity import PodAffinityTerm
from scheduler.api.namespace import Namespace
from scheduler.api.objects import Pod
from scheduler.backend.cache import Snapshot
from scheduler.plugins.inter_pod_affinity.terms import ResolvedTerm, resolve

Pair = tuple[str, str]


def _go_matches(term: PodAffinityTerm, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
    """AffinityTerm.Matches with Go's nil label set as {}."""
    return term.matches(pod.namespace, pod.labels, ns_labels or {})


def _bump(counts: dict[Pair, int], labels: Mapping[str, str], key: str, by: int) -> None:
    if key in labels:
        pair = (key, labels[key])
        counts[pair] = counts.get(pair, 0) + by


def filter_reasons(snap: Snapshot, pod: Pod, namespaces: list[Namespace]) -> dict[str, str] | None:
    """Per node the rejection reason ("" fits); None where PreFilter would Skip."""
    ns_labels = next((n.labels for n in namespaces if n.name == pod.namespace), None)
    aff = pod.pod_affinity
    req: list[ResolvedTerm] = [resolve(t, namespaces) for t in (aff.required if aff else ())]
    anti: list[ResolvedTerm] = [resolve(t, namespaces) for t in (aff.anti_required if aff else ())]
    existing: dict[Pair, int] = {}
    affinity_counts: dict[Pair, int] = {}
    anti_counts: dict[Pair, int] = {}
    for info in snap.list():
        labels = info.node.labels if info.node else {}
        for other in info.pods:
            for term in other.required_anti_affinity_terms:
                if _go_matches(term, pod, ns_labels):
                    _bump(existing, labels, term.topology_key, 1)
            if req and all(t.matches(other) for t in req):
                for t in req:
                    _bump(affinity_counts, labels, t.topology_key, 1)
            for t in anti:
                if t.matches(other):
                    _bump(anti_counts, labels, t.topology_key, 1)
    if not existing and not req and not anti:
        return None
    self_match = bool(req) and all(t.matches(pod) for t in req)
    found: dict[str, str] = {}
    for info in snap.list():
        labels = info.node.labels if info.node else {}
        found[info.name] = ""
        if req:
            exist, has_all = True, True
            for t in req:
                if t.topology_key not in labels:
                    has_all = False
                    break
                if affinity_counts.get((t.topology_key, labels[t.topology_key]), 0) <= 0:
                    exist = False
            if not has_all or (not exist and not (not affinity_counts and self_match)):
                found[info.name] = "affinity"
                continue
        if any(
            t.topology_key in labels
            and anti_counts.get((t.topology_key, labels[t.topology_key]), 0) > 0
            for t in anti
        ):
            found[info.name] = "anti"
            continue
        if any(existing.get(pair, 0) > 0 for pair in labels.items()):
            found[info.name] = "existing"
    return found


def raw_scores(
    snap: Snapshot, pod: Pod, namespaces: list[Namespace], hard_weight: int
) -> dict[str, int] | None:
    """Raw Score per node; None where PreScore would Skip (ignorePreferred... false)."""
    ns_labels = next((n.labels for n in namespaces if n.name == pod.namespace), None)
    aff = pod.pod_affinity
    preferred = [(w.weight, resolve(w.term, namespaces)) for w in (aff.preferred if aff else ())]
    anti = [(-w.weight, resolve(w.term, namespaces)) for w in (aff.anti_preferred if aff else ())]
    topo: dict[str, dict[str, int]] = {}

    def add(labels: Mapping[str, str], key: str, by: int) -> None:
        if key in labels:
            by_value = topo.setdefault(key, {})
            by_value[labels[key]] = by_value.get(labels[key], 0) + by

    for info in snap.list():
        labels = info.node.labels if info.node else {}
        if not labels:
            continue
        for other in info.pods:
            for weight, t in (*preferred, *anti):
                if t.matches(other):
                    add(labels, t.topology_key, weight)
            theirs = other.pod_affinity
            if theirs is None:
                continue
            if hard_weight > 0:
                for term in theirs.required:
                    if _go_matches(term, pod, ns_labels):
                        add(labels, term.topology_key, hard_weight)
            for w in theirs.preferred:
                if _go_matches(w.term, pod, ns_labels):
                    add(labels, w.term.topology_key, w.weight)
            for w in theirs.anti_preferred:
                if _go_matches(w.term, pod, ns_labels):
                    add(labels, w.term.topology_key, -w.weight)
    if not topo:
        return None
    scores: dict[str, int] = {}
    for info in snap.list():
        labels = info.node.labels if info.node else {}
        scores[info.name] = sum(
            by_value.get(labels[key], 0) for key, by_value in topo.items() if key in labels
        )
    return scores
