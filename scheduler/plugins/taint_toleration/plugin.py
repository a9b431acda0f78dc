"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints lower the score."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    PREFER_NO_SCHEDULE,
    BoolColumn,
    Code,
    CycleState,
    Node,
    NodeInfo,
    NodeTable,
    Pod,
    QueueingHint,
    ScoreColumn,
    Status,
    Taint,
    Toleration,
)
from scheduler.plugins.helper.scores import default_normalize_score
from scheduler.plugins.helper.taints import TolerationsFilter, find_untolerated_taint

NAME = "TaintToleration"
ERR_REASON = "node(s) had untolerated taint(s)"
_PRE_SCORE_KEY = "PreScore" + NAME


def _intolerable_prefer_no_schedule(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> int:
    count = 0
    for taint in taints:
        if taint.effect == PREFER_NO_SCHEDULE and not any(t.tolerates(taint) for t in tolerations):
            count += 1
    return count


class TaintToleration(TolerationsFilter):
    name = NAME

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
