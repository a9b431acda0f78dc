"""NodeName: a pod with spec.nodeName set may only go to that node."""

from __future__ import annotations

import numpy as np

from scheduler.framework import (
    EVENT_NODE_ADD,
    BoolColumn,
    ClusterEventWithHint,
    Code,
    CycleState,
    NodeInfo,
    NodeTable,
    Pod,
    PreFilterResult,
    SignFragment,
    Status,
    signers,
)

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME
    #: Filter reads only the Node (preemption counts pods without copying it: CountingFilter).
    filter_reads_node_only = True

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility depends on spec.nodeName only."""
        return [SignFragment(signers.NODE_NAME, pod.node_name)], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(EVENT_NODE_ADD)]

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if pod.node_name:
            return PreFilterResult(frozenset((pod.node_name,))), None
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.node_name or pod.node_name == node_info.name:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        if not pod.node_name:
            return np.ones(table.n, np.bool_)
        mask: BoolColumn = np.zeros(table.n, np.bool_)
        row = table.index.get(pod.node_name)
        if row is not None:
            mask[row] = True
        return mask
