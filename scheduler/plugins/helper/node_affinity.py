"""A pod's required node affinity (its nodeSelector and requiredDuringScheduling terms) matched
against nodes, per node and over NodeTable rows, as component-helpers' nodeaffinity package:
NodeAffinity filters with it and PodTopologySpread's nodeAffinityPolicy counts with it."""

from __future__ import annotations

import numpy as np

from scheduler.framework import (
    IN,
    NOT_IN,
    BoolColumn,
    Node,
    NodeSelector,
    NodeSelectorTerm,
    NodeTable,
    Pod,
    Requirement,
)


def matches_pod_required_affinity(pod: Pod, node: Node) -> bool:
    """Whether the node satisfies the pod's nodeSelector and required node affinity
    (GetRequiredNodeAffinity(pod).Match)."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    required = pod.required_node_affinity
    return required is None or required.matches(node.name, labels)


def pod_required_affinity_mask(pod: Pod, table: NodeTable) -> BoolColumn:
    """`matches_pod_required_affinity` for every row at once."""
    mask: BoolColumn = np.ones(table.n, np.bool_)
    for key, value in pod.node_selector.items():
        mask &= table.requirement_mask(Requirement(key, IN, frozenset((value,))))
    if pod.required_node_affinity is not None:
        mask &= selector_mask(pod.required_node_affinity, table)
    return mask


def selector_mask(selector: NodeSelector, table: NodeTable) -> BoolColumn:
    """The rows any of the selector's terms matches."""
    mask: BoolColumn = np.zeros(table.n, np.bool_)
    for term in selector.terms:
        mask |= term_mask(term, table)
    return mask


def term_mask(term: NodeSelectorTerm, table: NodeTable) -> BoolColumn:
    """The rows a term matches: every expression and field requirement; an empty term none."""
    if not term.expressions and not term.fields:
        return np.zeros(table.n, np.bool_)
    mask: BoolColumn = np.ones(table.n, np.bool_)
    for req in term.expressions:
        mask &= table.requirement_mask(req)
    for req in term.fields:
        mask &= _field_mask(req, table)
    return mask


def _field_mask(req: Requirement, table: NodeTable) -> BoolColumn:
    """Rows whose node name satisfies a matchFields requirement (only metadata.name exists)."""
    mask: BoolColumn = np.zeros(table.n, np.bool_)
    if req.key == "metadata.name":
        for name in req.values:
            row = table.index.get(name)
            if row is not None:
                mask[row] = True
    if req.operator == NOT_IN:
        mask = ~mask
    elif req.operator != IN:
        mask[:] = False
    return mask
