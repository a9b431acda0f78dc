"""NodePorts: a pod's hostPorts must be free on the node."""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.framework import (
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    BoolColumn,
    ClusterEventWithHint,
    Code,
    CycleState,
    HostPort,
    HostPortInfo,
    NodeInfo,
    NodeTable,
    Pod,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    Status,
    signers,
)

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def fits_ports(want: tuple[HostPort, ...], in_use: HostPortInfo) -> bool:
    return not any(in_use.check_conflict(p.ip, p.protocol, p.port) for p in want)


class NodePorts:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility depends on the host ports the containers bind."""
        return [SignFragment(signers.HOST_PORTS, signers.host_ports(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(EVENT_ASSIGNED_POD_DELETE, self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(EVENT_NODE_ADD),
        ]

    @staticmethod
    def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        if not old.host_ports:
            return QueueingHint.QUEUE_SKIP
        freed = HostPortInfo()
        for p in old.host_ports:
            freed.add(p.ip, p.protocol, p.port)
        return QueueingHint.QUEUE_SKIP if fits_ports(pod.host_ports, freed) else QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status(Code.SKIP)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if fits_ports(pod.host_ports, node_info.used_ports):
            return None
        return Status(Code.UNSCHEDULABLE, ERR_REASON)

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        """Nodes without used host ports pass at once; the others are checked one by one."""
        mask: BoolColumn = ~table.has_ports
        for row in np.flatnonzero(table.has_ports).tolist():
            if fits_ports(pod.host_ports, table.infos[row].used_ports):
                mask[row] = True
        return mask
