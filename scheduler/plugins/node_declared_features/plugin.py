"""NodeDeclaredFeatures: a pod that needs node features (inferred from its spec) only goes to
nodes that declare them in `status.declaredFeatures` (kube-scheduler v1.37, GA)."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.framework import (
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
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)

NAME = "NodeDeclaredFeatures"
ERR_REASON = "node(s) didn't match Pod's required features"


def node_satisfies(required: frozenset[str], node: Node | None) -> bool:
    """Every required feature is declared by the node."""
    if not required:
        return True
    return node is not None and required.issubset(node.declared_features)


class NodeDeclaredFeatures:
    """The pod's requirements are inferred once, when it is parsed (`required_node_features`),
    so PreFilter writes no cycle state: Filter reads them from the pod."""

    name = NAME
    #: Filter reads only the Node (preemption counts pods without copying it: CountingFilter).
    filter_reads_node_only = True

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility depends on the features the pod requires of its node."""
        return [SignFragment(signers.FEATURES, sorted(pod.required_node_features))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
                ),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.TARGET_POD, ActionType.UPDATE),
                self.is_schedulable_after_target_pod_update,
            ),
        ]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A new node, or one whose declared features changed (any change, as upstream)."""
        if (
            isinstance(old, Node)
            and isinstance(new, Node)
            and old.declared_features == new.declared_features
        ):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def is_schedulable_after_target_pod_update(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only an update that changes what the pod requires can change the verdict."""
        if (
            isinstance(old, Pod)
            and isinstance(new, Pod)
            and old.required_node_features == new.required_node_features
        ):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.required_node_features:
            return None, Status(Code.SKIP)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_satisfies(pod.required_node_features, node_info.node):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        """Nodes mostly share a few declared-feature lists: each distinct list is checked once."""
        required = pod.required_node_features
        if not required:
            return np.ones(table.n, np.bool_)
        verdicts: dict[tuple[str, ...], bool] = {}
        mask: BoolColumn = np.zeros(table.n, np.bool_)
        for row, info in enumerate(table.infos):
            node = info.node
            if node is None:
                continue
            fits = verdicts.get(node.declared_features)
            if fits is None:
                fits = required.issubset(node.declared_features)
                verdicts[node.declared_features] = fits
            mask[row] = fits
        return mask
