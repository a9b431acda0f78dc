"""ScheduleAnyway: PreScore's per-domain counts and weights (kube-scheduler's preScoreState),
Score per node and per column with the same float arithmetic and rounding, and
NormalizeScore's integer arithmetic."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    MAX_NODE_SCORE,
    BoolColumn,
    IntColumn,
    NodeInfo,
    NodeTable,
    Pod,
    ScoreColumn,
)
from scheduler.plugins.pod_topology_spread.args import LABEL_HOSTNAME
from scheduler.plugins.pod_topology_spread.constraints import SpreadConstraint
from scheduler.plugins.pod_topology_spread.nodes import TableView, count_on

FloatColumn = npt.NDArray[np.float64]


@dataclass
class ScoredConstraint:
    """One constraint's normalizing weight and, except for the hostname key, its matching
    pods per domain (`by_id`, indexed by `domain_ids`; a node lacking the key counts in the
    "" domain, as kube-scheduler reads its missing label as "")."""

    constraint: SpreadConstraint
    weight: float
    domain_ids: IntColumn
    values: tuple[str, ...]
    by_id: IntColumn | None  # None for the hostname key (counted on the node itself)
    _id_of: dict[str, int] | None = None

    def domain_count(self, value: str) -> int:
        assert self.by_id is not None
        if self._id_of is None:
            self._id_of = {v: i for i, v in enumerate(self.values)}
        found = self._id_of.get(value)
        return int(self.by_id[found]) if found is not None else 0


@dataclass
class PreScoreState:
    constraints: list[ScoredConstraint]
    ignored: set[str]  # nodes lacking a required topology key score 0
    ignored_in_order: npt.NDArray[np.bool_]  # the same, per node of PreScore's list
    ignored_rows: BoolColumn  # the same, per NodeTable row

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def go_round(x: float) -> int:
    """Go's math.Round: halves away from zero (Python's round is to even)."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return int(t)


def compute_pre_score_state(
    pod: Pod,
    constraints: list[SpreadConstraint],
    table: NodeTable,
    filtered: list[NodeInfo],
    require_all_topologies: bool,
) -> PreScoreState:
    """initPreScoreState and the counting of PreScore: the domains of the filtered nodes,
    then the matching pods of every node of the cluster that counts for a constraint."""
    view = TableView(table, pod)
    rows = np.fromiter((table.index[info.name] for info in filtered), np.intp, len(filtered))
    eligible_base = view.with_all_keys(constraints) if require_all_topologies else view.present
    keep = eligible_base[rows]
    ignored = {filtered[i].name for i in np.flatnonzero(~keep).tolist()}
    ignored_rows: BoolColumn = np.zeros(table.n, np.bool_)
    ignored_rows[rows[~keep]] = True
    kept_rows = rows[keep]
    scored = []
    for c in constraints:
        if c.topology_key == LABEL_HOSTNAME:
            size = len(filtered) - len(ignored)
            ids, values = view.domains(c.topology_key)
            scored.append(ScoredConstraint(c, topology_normalizing_weight(size), ids, values, None))
            continue
        ids, values = _with_empty_domain(*view.domains(c.topology_key))
        in_filtered = np.zeros(len(values), np.bool_)
        in_filtered[ids[kept_rows]] = True
        eligible = eligible_base & view.included(c) & in_filtered[ids]
        by_id = np.bincount(
            ids[eligible], weights=view.counts(c)[eligible], minlength=len(values)
        ).astype(np.int64)
        weight = topology_normalizing_weight(int(in_filtered.sum()))
        scored.append(ScoredConstraint(c, weight, ids, values, by_id))
    return PreScoreState(scored, ignored, ~keep, ignored_rows)


def _with_empty_domain(
    ids: IntColumn, values: tuple[str, ...]
) -> tuple[IntColumn, tuple[str, ...]]:
    """Rows lacking the key join the "" domain (a node labelled "" is in it too)."""
    if "" in values:
        empty = values.index("")
    else:
        empty = len(values)
        values = (*values, "")
    return np.where(ids >= 0, ids, empty), values


def score_node(state: PreScoreState, pod: Pod, info: NodeInfo) -> int:
    node = info.node
    if node is None or node.name in state.ignored:
        return 0
    score = 0.0
    for sc in state.constraints:
        c = sc.constraint
        value = node.labels.get(c.topology_key)
        if value is None:
            continue
        if sc.by_id is None:
            count = count_on(info.pods, c, pod.namespace)
        else:
            count = sc.domain_count(value)
        score += float(count) * sc.weight + float(c.max_skew - 1)
    return go_round(score)


def score_column(
    state: PreScoreState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp], view: TableView
) -> ScoreColumn:
    """`score_node` for `rows`: the same float operations in the same order, per row."""
    scores: FloatColumn = np.zeros(len(rows), np.float64)
    for sc in state.constraints:
        c = sc.constraint
        labelled, _ = view.domains(c.topology_key)
        has = labelled[rows] >= 0
        counts = view.counts(c)[rows] if sc.by_id is None else sc.by_id[sc.domain_ids[rows]]
        term = counts.astype(np.float64) * sc.weight + float(c.max_skew - 1)
        scores = np.where(has, scores + term, scores)
    truncated = np.trunc(scores)
    rounded = truncated + (np.abs(scores - truncated) >= 0.5) * np.sign(scores)
    result: ScoreColumn = rounded.astype(np.int64)
    result[state.ignored_rows[rows]] = 0
    return result


def normalize(state: PreScoreState, scores: ScoreColumn) -> None:
    """NormalizeScore: ignored nodes get 0; the others MaxNodeScore*(max+min-s)/max."""
    ignored = state.ignored_in_order
    if len(ignored) != len(scores):
        ignored = np.zeros(len(scores), np.bool_)
    valid = scores[~ignored]
    if len(valid) == 0:
        scores[:] = 0
        return
    min_score = int(valid.min())
    max_score = max(0, int(valid.max()))
    if max_score == 0:
        scaled = np.full(len(scores), MAX_NODE_SCORE, np.int64)
    else:
        scaled = MAX_NODE_SCORE * (max_score + min_score - scores) // max_score
    scaled[ignored] = 0
    np.copyto(scores, scaled)
