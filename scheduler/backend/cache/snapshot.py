"""The immutable-for-one-cycle view of the cache that filter and score plugins read."""

from __future__ import annotations

from scheduler.framework.node_table import NodeTable
from scheduler.framework.types import NodeInfo


class Snapshot:
    """NodeInfo copies by name and in node-tree order, plus the NodeTable over that order.

    Only the scheduling loop reads and updates it (via Cache.update_snapshot), so it needs no
    lock of its own.
    """

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.table = NodeTable([])
        self.generation = 0

    def rebuild(self, ordered: list[NodeInfo]) -> None:
        self.node_info_list = ordered
        self.table = NodeTable(ordered, previous=self.table)

    def replace(self, info: NodeInfo) -> None:
        row = self.table.index[info.name]
        self.table.update_row(row, info)  # also replaces node_info_list[row]: same list

    # --- SnapshotLister --------------------------------------------------------------------

    def list(self) -> list[NodeInfo]:
        return self.node_info_list

    def get(self, node_name: str) -> NodeInfo | None:
        return self.node_info_map.get(node_name)

    def __len__(self) -> int:
        return len(self.node_info_list)
