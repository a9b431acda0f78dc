"""The immutable-for-one-cycle view of the cache that filter and score plugins read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from scheduler.api.objects import Pod
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
        #: Inside `simulation()`: the NodeInfos replaced by copies, by node name.
        self._originals: dict[str, NodeInfo] | None = None

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

    # --- simulation (group preemption) -------------------------------------------------------

    @contextmanager
    def simulation(self) -> Iterator[None]:
        """Pods added or removed inside are there only until it ends: a changed node is a copy
        swapped in, and the original is put back (kube-scheduler's group preemption works on its
        mutable snapshot and restores it the same way). The cache's NodeInfos are never
        touched."""
        if self._originals is not None:
            raise RuntimeError("snapshot simulations do not nest")
        self._originals = {}
        try:
            yield
        finally:
            originals, self._originals = self._originals, None
            for name, info in originals.items():
                self._swap(name, info)

    def add_pod(self, pod: Pod, node_name: str) -> NodeInfo:
        """Adds `pod` to the node in the simulation (inside `simulation()` only)."""
        info = self._changing(node_name)
        info.add_pod(pod)
        self._swap(node_name, info)
        return info

    def remove_pod(self, pod: Pod, node_name: str) -> NodeInfo:
        """Removes `pod` from the node in the simulation (inside `simulation()` only)."""
        info = self._changing(node_name)
        info.remove_pod(pod)
        self._swap(node_name, info)
        return info

    def _changing(self, node_name: str) -> NodeInfo:
        """A copy of the node's NodeInfo to change and swap in: the table's indices apply the
        difference between the old and the new object, so the old one is left as it was."""
        originals = self._originals
        if originals is None:
            raise RuntimeError("the snapshot changes only inside simulation()")
        current = self.node_info_map[node_name]
        originals.setdefault(node_name, current)
        return current.snapshot()

    def _swap(self, node_name: str, info: NodeInfo) -> None:
        self.node_info_map[node_name] = info
        self.table.update_row(self.table.index[node_name], info)
