"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints lower the score."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Node,
    Pod,
    Taint,
    Toleration,
)
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import ScoreColumn
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.signers import SignFragment
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.helper.scores import default_normalize_score

NAME = "TaintToleration"
ERR_REASON = "node(s) had untolerated taint(s)"
_PRE_SCORE_KEY = "PreScore" + NAME


def find_untolerated_taint(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> Taint | None:
    """The first NoSchedule/NoExecute taint that no toleration tolerates."""
    for taint in taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def _intolerable_prefer_no_schedule(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> int:
    count = 0
    for taint in taints:
        if taint.effect == PREFER_NO_SCHEDULE and not any(t.tolerates(taint) for t in tolerations):
            count += 1
    return count


class TaintToleration:
    name = NAME
    #: Filter reads only the Node (preemption counts pods without copying it: CountingFilter).
    filter_reads_node_only = True

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility and score depend on the pod's tolerations only."""
        return [SignFragment(signers.TOLERATIONS, signers.tolerations(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_toleration_change,
            ),
        ]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        was_untolerated = True
        if isinstance(old, Node):
            was_untolerated = find_untolerated_taint(old.taints, pod.tolerations) is not None
        is_untolerated = find_untolerated_taint(new.taints, pod.tolerations) is not None
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Tolerations can only be added to a pod, so any change may admit it somewhere."""
        return QueueingHint.QUEUE

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None or find_untolerated_taint(node.taints, pod.tolerations) is None:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        """Untainted rows pass at once; rows with hard taints are checked once per taint set."""
        mask: BoolColumn = ~table.hard_taints
        tolerations = pod.tolerations
        verdicts: dict[tuple[Taint, ...], bool] = {}  # nodes usually share a few taint sets
        for row in np.flatnonzero(table.hard_taints).tolist():
            node = table.infos[row].node
            if node is None:
                continue
            fits = verdicts.get(node.taints)
            if fits is None:
                fits = find_untolerated_taint(node.taints, tolerations) is None
                verdicts[node.taints] = fits
            if fits:
                mask[row] = True
        return mask

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        prefer = tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
        state.write(_PRE_SCORE_KEY, prefer)
        return None

    def _tolerations(self, state: CycleState, pod: Pod) -> tuple[Toleration, ...]:
        prefer = state.get(_PRE_SCORE_KEY)
        if prefer is None:
            prefer = tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
        return prefer  # type: ignore[no-any-return]

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        node = node_info.node
        if node is None:
            return 0
        return _intolerable_prefer_no_schedule(node.taints, self._tolerations(state, pod))

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        scores: ScoreColumn = np.zeros(len(rows), np.int64)
        soft = table.soft_taints[rows]
        if soft.any():
            tolerations = self._tolerations(state, pod)
            counts: dict[tuple[Taint, ...], int] = {}
            infos = table.infos
            for i in np.flatnonzero(soft).tolist():
                node = infos[int(rows[i])].node
                if node is None:
                    continue
                count = counts.get(node.taints)
                if count is None:
                    count = _intolerable_prefer_no_schedule(node.taints, tolerations)
                    counts[node.taints] = count
                scores[i] = count
        return scores

    def score_extensions(self) -> TaintToleration:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: ScoreColumn) -> Status | None:
        default_normalize_score(scores, reverse=True)
        return None
