"""Which nodes a constraint counts (the node inclusion policies and the topology keys), per
node and as NodeTable columns, and how many matching pods each row holds."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scheduler.framework import HONOR, BoolColumn, IntColumn, Node, NodeTable, Pod
from scheduler.plugins.helper.node_affinity import (
    matches_pod_required_affinity,
    pod_required_affinity_mask,
)
from scheduler.plugins.helper.taints import find_untolerated_taint
from scheduler.plugins.pod_topology_spread.constraints import SpreadConstraint


def has_all_keys(labels: Mapping[str, str], constraints: list[SpreadConstraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints: the node carries every constraint's topology key."""
    return all(c.topology_key in labels for c in constraints)


def included(constraint: SpreadConstraint, pod: Pod, node: Node) -> bool:
    """matchNodeInclusionPolicies: Honor nodeAffinityPolicy counts only nodes the pod's
    required node affinity and nodeSelector match; Honor nodeTaintsPolicy only nodes whose
    NoSchedule/NoExecute taints the pod tolerates."""
    if constraint.node_affinity_policy == HONOR and not matches_pod_required_affinity(pod, node):
        return False
    return not (
        constraint.node_taints_policy == HONOR
        and find_untolerated_taint(node.taints, pod.tolerations) is not None
    )


def count_on(pods: list[Pod], constraint: SpreadConstraint, namespace: str) -> int:
    """countPodsMatchSelector over one node's pods: same namespace, not terminating."""
    if not constraint.counts_pods:
        return 0
    return sum(
        1
        for p in pods
        if p.deletion_timestamp is None
        and p.namespace == namespace
        and constraint.selects(p.labels)
    )


class TableView:
    """One pod's view of a NodeTable: the masks and counts its constraints share, each
    computed once."""

    def __init__(self, table: NodeTable, pod: Pod) -> None:
        self.table = table
        self.pod = pod
        self.present: BoolColumn = table.present
        self._affinity: BoolColumn | None = None
        self._tolerated: BoolColumn | None = None
        self._domains: dict[str, tuple[IntColumn, tuple[str, ...]]] = {}

    def domains(self, key: str) -> tuple[IntColumn, tuple[str, ...]]:
        found = self._domains.get(key)
        if found is None:
            found = self.table.topology_domains(key)
            self._domains[key] = found
        return found

    def with_all_keys(self, constraints: list[SpreadConstraint]) -> BoolColumn:
        mask = self.present.copy()
        for c in constraints:
            mask &= self.domains(c.topology_key)[0] >= 0
        return mask

    def included(self, constraint: SpreadConstraint) -> BoolColumn:
        """`included` for every row."""
        mask: BoolColumn = self.present.copy()
        if constraint.node_affinity_policy == HONOR:
            if self._affinity is None:
                self._affinity = pod_required_affinity_mask(self.pod, self.table)
            mask &= self._affinity
        if constraint.node_taints_policy == HONOR:
            if self._tolerated is None:
                self._tolerated = self._tolerated_mask()
            mask &= self._tolerated
        return mask

    def _tolerated_mask(self) -> BoolColumn:
        table, tolerations = self.table, self.pod.tolerations
        mask: BoolColumn = ~table.hard_taints
        for row in np.flatnonzero(table.hard_taints).tolist():
            node = table.infos[row].node
            if node is not None and find_untolerated_taint(node.taints, tolerations) is None:
                mask[row] = True
        return mask

    def counts(self, constraint: SpreadConstraint) -> IntColumn:
        """count_on for every row, from the table's per-node pod counts."""
        selector, namespace = constraint.selector, self.pod.namespace
        if selector is None or not constraint.counts_pods:
            return np.zeros(self.table.n, np.int64)

        def matches(p: Pod) -> bool:
            return (
                p.deletion_timestamp is None
                and p.namespace == namespace
                and selector.matches(p.labels)
            )

        return self.table.pod_counts(("PodTopologySpread", namespace, selector), matches)
