"""NodePool: Filter keeps pods off nodes in forbidden pools; Score prefers pools in order.

A node's pool is the value of its `labelKey` label. A cluster with reserved, on-demand and
spot capacity can keep a profile's pods off spot nodes entirely and fill reserved nodes before
on-demand ones, whatever the resource scores say (give the plugin a weight above theirs).
"""

from __future__ import annotations

from typing import Any

from pysched_node_pool.args import NodePoolArgs
from scheduler.framework import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Node,
    NodeInfo,
    Pod,
    QueueingHint,
    Status,
)

NAME = "NodePool"
# One wording for every rejected node, so the scheduler's message counts them:
# "0/5 nodes are available: 2 node(s) are in a forbidden pool, 3 ...".
ERR_FORBIDDEN = "node(s) are in a forbidden pool"


class NodePool:
    name = NAME

    def __init__(self, args: NodePoolArgs) -> None:
        self.args = args
        count = len(args.preferred_pools)
        # reserved, on-demand -> 100, 50: evenly spaced, best first.
        self._scores = {
            pool: MAX_NODE_SCORE * (count - i) // count
            for i, pool in enumerate(args.preferred_pools)
        }

    def pool_of(self, node: Node | None) -> str | None:
        return node.labels.get(self.args.label_key) if node is not None else None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if self.pool_of(node_info.node) in self.args.forbidden_pools:
            # Unresolvable: evicting pods from the node cannot change its pool.
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_FORBIDDEN)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        pool = self.pool_of(node_info.node)
        return self._scores.get(pool, 0) if pool is not None else 0

    def score_extensions(self) -> None:
        return None  # scores are already in [0, 100]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod this plugin rejected can only fit after a node is added or relabelled."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self._node_changed,
            )
        ]

    def _node_changed(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Requeue only when the new or relabelled node is outside the forbidden pools."""
        if isinstance(new, Node) and self.pool_of(new) in self.args.forbidden_pools:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
