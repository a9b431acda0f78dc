"""NodeAffinity: nodeSelector and required node affinity filter; preferred terms score.

The `addedAffinity` arg applies a scheduler-enforced affinity to every pod of the profile.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    IN,
    ActionType,
    BoolColumn,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Node,
    NodeInfo,
    NodeTable,
    Pod,
    PreferredSchedulingTerm,
    PreFilterResult,
    QueueingHint,
    ScoreColumn,
    SignFragment,
    Status,
    signers,
)
from scheduler.plugins.helper.node_affinity import (
    matches_pod_required_affinity,
    pod_required_affinity_mask,
    selector_mask,
    term_mask,
)
from scheduler.plugins.helper.scores import default_normalize_score
from scheduler.plugins.node_affinity.args import NodeAffinityArgs

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


def _preferred_score(terms: tuple[PreferredSchedulingTerm, ...], node: Node) -> int:
    return sum(t.weight for t in terms if t.term.matches(node.name, node.labels))


class NodeAffinity:
    name = NAME
    #: Filter reads only the Node (preemption counts pods without copying it: CountingFilter).
    filter_reads_node_only = True

    def __init__(self, args: NodeAffinityArgs) -> None:
        self.args = args

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility and score depend on node affinity and the node selector."""
        return [
            SignFragment(signers.NODE_AFFINITY, signers.node_affinity(pod)),
            SignFragment(signers.NODE_SELECTOR, dict(sorted(pod.node_selector.items()))),
        ], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        event = ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        return [ClusterEventWithHint(event, self.is_schedulable_after_node_change)]

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        added = self.args.added_required
        if added is not None and not added.matches(new.name, new.labels):
            return QueueingHint.QUEUE_SKIP
        if not matches_pod_required_affinity(pod, new):
            return QueueingHint.QUEUE_SKIP
        if not isinstance(old, Node):
            return QueueingHint.QUEUE
        return (
            QueueingHint.QUEUE_SKIP
            if matches_pod_required_affinity(pod, old)
            else QueueingHint.QUEUE
        )

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = pod.required_node_affinity
        if required is None and self.args.added_required is None and not pod.node_selector:
            return None, Status(Code.SKIP)
        if required is None or not required.terms:
            return None, None
        node_names: set[str] | None = None
        for term in required.terms:
            term_names: set[str] | None = None
            for req in term.fields:
                if req.key == "metadata.name" and req.operator == IN:
                    values = set(req.values)
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None, None  # this term can match any node
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        if node_names:
            return PreFilterResult(frozenset(node_names)), None
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return None
        added = self.args.added_required
        if added is not None and not added.matches(node.name, node.labels):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        if not matches_pod_required_affinity(pod, node):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        return None

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        mask: BoolColumn = np.ones(table.n, np.bool_)
        if self.args.added_required is not None:
            mask &= selector_mask(self.args.added_required, table)
        return mask & pod_required_affinity_mask(pod, table)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        if not pod.preferred_node_affinity and not self.args.added_preferred:
            return Status(Code.SKIP)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        node = node_info.node
        if node is None:
            return 0
        return _preferred_score(self.args.added_preferred, node) + _preferred_score(
            pod.preferred_node_affinity, node
        )

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        scores: ScoreColumn = np.zeros(len(rows), np.int64)
        for term in (*self.args.added_preferred, *pod.preferred_node_affinity):
            scores += term.weight * term_mask(term.term, table)[rows]
        return scores

    def score_extensions(self) -> NodeAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: ScoreColumn) -> Status | None:
        default_normalize_score(scores, reverse=False)
        return None
