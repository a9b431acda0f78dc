"""DoNotSchedule: the per-domain counts PreFilter takes (kube-scheduler's preFilterState with
its critical paths), the skew check of Filter per node and per column, and the updates
PreFilterExtensions make for preemption's dry runs and nominated pods."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scheduler.framework import BoolColumn, Code, IntColumn, Node, NodeTable, Pod, Status
from scheduler.plugins.pod_topology_spread.constraints import SpreadConstraint
from scheduler.plugins.pod_topology_spread.nodes import TableView, has_all_keys, included

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
_MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The two domains with the fewest matching pods, kept as kube-scheduler keeps them: its
    updates after add/remove are approximate (a domain not tracked is never promoted), and
    Filter reads the first entry, so the same bookkeeping gives the same verdicts."""

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths: list[list[str | int]] = [["", _MAX_INT32], ["", _MAX_INT32]]

    def clone(self) -> CriticalPaths:
        copy = CriticalPaths()
        copy.paths = [list(self.paths[0]), list(self.paths[1])]
        return copy

    @property
    def min_match(self) -> int:
        return int(self.paths[0][1])

    def update(self, value: str, num: int) -> None:
        p = self.paths
        i = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if i >= 0:
            p[i][1] = num
            if int(p[0][1]) > int(p[1][1]):
                p[0], p[1] = p[1], p[0]
        elif num < int(p[0][1]):
            p[1] = p[0]
            p[0] = [value, num]
        elif num < int(p[1][1]):
            p[1] = [value, num]


@dataclass
class ConstraintState:
    """One constraint's matching pods per domain (TpValueToMatchNum) and critical paths;
    `domain_ids`/`values` (the table's) and `by_id` let the column form index by row."""

    constraint: SpreadConstraint
    match_num: dict[str, int]
    paths: CriticalPaths
    domain_ids: IntColumn
    values: tuple[str, ...]
    by_id: IntColumn | None  # per value id; None once an update made it stale

    def clone(self) -> ConstraintState:
        return ConstraintState(
            self.constraint,
            dict(self.match_num),
            self.paths.clone(),
            self.domain_ids,
            self.values,
            None,
        )

    def min_match(self) -> int:
        """minMatchNum: 0 while fewer domains than minDomains exist."""
        if len(self.match_num) < self.constraint.min_domains:
            return 0
        return self.paths.min_match

    def counts_by_id(self) -> IntColumn:
        if self.by_id is None:
            self.by_id = np.fromiter(
                (self.match_num.get(v, 0) for v in self.values), np.int64, len(self.values)
            )
        return self.by_id


@dataclass
class PreFilterState:
    constraints: list[ConstraintState] = field(default_factory=list)

    def clone(self) -> PreFilterState:
        return PreFilterState([c.clone() for c in self.constraints])


def compute_pre_filter_state(
    pod: Pod, constraints: list[SpreadConstraint], table: NodeTable
) -> PreFilterState:
    """calPreFilterState over the table: per constraint, the matching pods of every node that
    carries all topology keys and passes the constraint's inclusion policies, summed by domain
    with one bincount."""
    view = TableView(table, pod)
    with_keys = view.with_all_keys(constraints)
    states = []
    for c in constraints:
        ids, values = view.domains(c.topology_key)
        eligible = with_keys & view.included(c)
        domain_of = ids[eligible]
        per_domain = np.bincount(
            domain_of, weights=view.counts(c)[eligible], minlength=len(values)
        ).astype(np.int64)
        seen = np.bincount(domain_of, minlength=len(values)) > 0
        match_num = {values[i]: int(per_domain[i]) for i in np.flatnonzero(seen).tolist()}
        paths = CriticalPaths()
        for value, num in match_num.items():
            paths.update(value, num)
        states.append(ConstraintState(c, match_num, paths, ids, values, per_domain))
    return PreFilterState(states)


def filter_node(state: PreFilterState, pod: Pod, node: Node) -> Status | None:
    for cs in state.constraints:
        c = cs.constraint
        value = node.labels.get(c.topology_key)
        if value is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
        self_match = 1 if c.selects(pod.labels) else 0
        if cs.match_num.get(value, 0) + self_match - cs.min_match() > c.max_skew:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return None


def filter_column(state: PreFilterState, pod: Pod, table: NodeTable) -> BoolColumn:
    """`filter_node` for every row: a row passes when it has every key and no skew is
    exceeded."""
    mask: BoolColumn = np.ones(table.n, np.bool_)
    for cs in state.constraints:
        c = cs.constraint
        ids = cs.domain_ids
        has = ids >= 0
        counts = cs.counts_by_id()
        match = np.where(has, counts[np.where(has, ids, 0)] if len(counts) else 0, 0)
        self_match = 1 if c.selects(pod.labels) else 0
        mask &= has & (match + self_match - cs.min_match() <= c.max_skew)
    return mask


def update_with_pod(
    state: PreFilterState, updated: Pod, preemptor: Pod, node: Node | None, delta: int
) -> None:
    """updateWithPod: a pod added to (or removed from) a node changes its domains' counts
    when it is in the preemptor's namespace, the node counts for the constraint and the
    constraint selects the pod."""
    if updated.namespace != preemptor.namespace or node is None:
        return
    constraints = [cs.constraint for cs in state.constraints]
    if not has_all_keys(node.labels, constraints):
        return
    for cs in state.constraints:
        c = cs.constraint
        if not c.selects(updated.labels) or not included(c, preemptor, node):
            continue
        value = node.labels[c.topology_key]
        num = cs.match_num.get(value, 0) + delta
        cs.match_num[value] = num
        cs.paths.update(value, num)
        cs.by_id = None
