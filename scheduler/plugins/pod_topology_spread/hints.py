"""QueueingHints (kube-scheduler v1.37): which pod and node changes may let a pod rejected
for its DoNotSchedule constraints fit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.framework import HONOR, Node, Pod, QueueingHint
from scheduler.plugins.pod_topology_spread.constraints import SpreadConstraint
from scheduler.plugins.pod_topology_spread.nodes import has_all_keys

Constraints = Callable[[Pod], list[SpreadConstraint]]
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def _involved(other: Pod, pod: Pod) -> bool:
    """involvedInTopologySpreading: a bound or nominated pod of the same namespace."""
    if not other.node_name and not other.nominated_node_name:
        return False
    return other.namespace == pod.namespace


def _label_change(old: Pod, new: Pod, constraints: list[SpreadConstraint]) -> QueueingHint:
    """Queue only when the new labels flip whether some constraint selects the pod."""
    if old.labels == new.labels:
        return SKIP
    for c in constraints:
        if c.selects(old.labels) != c.selects(new.labels):
            return QUEUE
    return SKIP


def after_assigned_pod_change(
    constraints_of: Constraints, pod: Pod, old: Any, new: Any
) -> QueueingHint:
    old_pod = old if isinstance(old, Pod) else None
    new_pod = new if isinstance(new, Pod) else None
    if (new_pod is not None and not _involved(new_pod, pod)) or (
        old_pod is not None and not _involved(old_pod, pod)
    ):
        return SKIP
    constraints = constraints_of(pod)
    if new_pod is not None and old_pod is not None:
        return _label_change(old_pod, new_pod, constraints)
    changed = new_pod if new_pod is not None else old_pod
    if changed is None:
        return QUEUE
    return QUEUE if any(c.selects(changed.labels) for c in constraints) else SKIP


def after_target_pod_change(
    constraints_of: Constraints, pod: Pod, old: Any, new: Any
) -> QueueingHint:
    if not isinstance(old, Pod) or not isinstance(new, Pod):
        return QUEUE
    constraints = constraints_of(pod)
    if old.tolerations != new.tolerations and any(
        c.node_taints_policy == HONOR for c in constraints
    ):
        return QUEUE
    return _label_change(old, new, constraints)


def after_node_change(constraints_of: Constraints, pod: Pod, old: Any, new: Any) -> QueueingHint:
    old_node = old if isinstance(old, Node) else None
    new_node = new if isinstance(new, Node) else None
    if old_node is None and new_node is None:
        return QUEUE
    constraints = constraints_of(pod)
    old_match = old_node is not None and has_all_keys(old_node.labels, constraints)
    new_match = new_node is not None and has_all_keys(new_node.labels, constraints)
    if old_node is not None and new_node is not None:
        if old_match != new_match:
            return QUEUE
        keys_changed = any(
            old_node.labels.get(c.topology_key, "") != new_node.labels.get(c.topology_key, "")
            for c in constraints
        )
        if new_match and (keys_changed or old_node.taints != new_node.taints):
            return QUEUE
        return SKIP
    return QUEUE if (new_match if new_node is not None else old_match) else SKIP
