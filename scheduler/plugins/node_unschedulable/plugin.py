"""NodeUnschedulable: cordoned nodes only take pods that tolerate the unschedulable taint."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.framework import (
    NO_SCHEDULE,
    BoolColumn,
    Code,
    CycleState,
    Node,
    NodeInfo,
    NodeTable,
    Pod,
    QueueingHint,
    Status,
    Taint,
)
from scheduler.plugins.helper.taints import TolerationsFilter

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)


def tolerates_unschedulable(pod: Pod) -> bool:
    return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations)


class NodeUnschedulable(TolerationsFilter):
    name = NAME

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Node):
            return QueueingHint.QUEUE
        if (old is None and not new.unschedulable) or (
            isinstance(old, Node) and old.unschedulable and not new.unschedulable
        ):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def is_schedulable_after_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if isinstance(new, Pod) and tolerates_unschedulable(new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNKNOWN_CONDITION)
        if not node.unschedulable or tolerates_unschedulable(pod):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        if tolerates_unschedulable(pod):
            return np.ones(table.n, np.bool_)
        result: BoolColumn = ~table.unschedulable
        return result
