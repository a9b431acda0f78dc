"""EventsToRegister and the QueueingHints of kube-scheduler v1.37's InterPodAffinity.

The hints see the pending pod's terms as kube-scheduler's do: unresolved, matched with no
namespace labels (a namespaceSelector matches only as it would match an empty label set).
"""

from __future__ import annotations

from typing import Any

from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    Node,
    Pod,
    QueueingHint,
)
from scheduler.plugins.inter_pod_affinity.terms import selects_all, selects_any


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        # An assigned pod added (affinity), relabelled, or deleted (anti-affinity, symmetry).
        ClusterEventWithHint(
            ClusterEvent(
                EventResource.ASSIGNED_POD,
                ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
            ),
            after_assigned_pod_change,
        ),
        # The pending pod's own labels changed: an existing pod's anti-affinity may stop
        # selecting it.
        ClusterEventWithHint(
            ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_LABEL),
            after_target_pod_label_update,
        ),
        ClusterEventWithHint(
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            after_node_change,
        ),
    ]


def _unscheduled(pod: Pod | None) -> bool:
    return pod is not None and not pod.node_name and not pod.nominated_node_name


def after_assigned_pod_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterAssignedPodChange."""
    original = old if isinstance(old, Pod) else None
    modified = new if isinstance(new, Pod) else None
    if _unscheduled(modified) or _unscheduled(original):
        return QueueingHint.QUEUE_SKIP
    affinity = pod.pod_affinity
    terms = affinity.required if affinity is not None else ()
    anti_terms = affinity.anti_required if affinity is not None else ()
    if modified is not None and original is not None:
        if not selects_all(terms, original) and selects_all(terms, modified):
            return QueueingHint.QUEUE
        if selects_any(anti_terms, original) and not selects_any(anti_terms, modified):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if modified is not None:
        return QueueingHint.QUEUE if selects_all(terms, modified) else QueueingHint.QUEUE_SKIP
    if original is None:
        return QueueingHint.QUEUE
    if selects_any(anti_terms, original):
        return QueueingHint.QUEUE
    if selects_any(original.required_anti_affinity_terms, pod):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def after_target_pod_label_update(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Some existing pod's anti-affinity may have selected the old labels but not the new."""
    return QueueingHint.QUEUE


def after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterNodeChange: a node that brings an affinity term's key, or moves to
    another domain of it; any added node, or one leaving or moving in an anti-affinity
    term's domain."""
    if not isinstance(new, Node):
        return QueueingHint.QUEUE
    original = old if isinstance(old, Node) else None
    affinity = pod.pod_affinity
    if affinity is None:
        return QueueingHint.QUEUE_SKIP
    for term in affinity.required:
        key = term.topology_key
        if original is None:
            if key in new.labels:
                return QueueingHint.QUEUE
            continue
        before, after = original.labels.get(key), new.labels.get(key)
        if after is not None and before != after:
            return QueueingHint.QUEUE
    for term in affinity.anti_required:
        if original is None:
            return QueueingHint.QUEUE
        key = term.topology_key
        before, after = original.labels.get(key), new.labels.get(key)
        if before is not None and before != after:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
