"""Counts per topology domain (the values of one node label), built from NodeTable columns.

kube-scheduler keeps `map[topologyPair]int64`; here each topology key has a count array over
the key's values, so a whole Filter or Score column is one gather (`counts[ids]`) and a node is
one dict lookup. PreFilterExtensions may add a value no row has (a pod on a node added after the
table was built): it gets a new slot.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.framework import BoolColumn, IntColumn, NodeTable


class DomainCounts:
    """One topology key's counts (or summed weights) per domain; `total` over all domains."""

    __slots__ = ("counts", "ids", "index", "key", "total")

    def __init__(self, key: str, ids: IntColumn, index: Mapping[str, int]) -> None:
        self.key = key
        self.ids = ids  # per table row: the domain's slot, -1 without the label (shared)
        # value -> slot, shared with the table and never modified (a hostname key has a value
        # per node: building it per cycle, and keeping it with every state a binding holds,
        # cost more than the counts); a value the table does not have gets a grown copy.
        self.index = index
        self.counts: IntColumn = np.zeros(len(index), np.int64)
        self.total = 0

    @classmethod
    def over(cls, table: NodeTable, key: str) -> DomainCounts:
        ids, _ = table.topology_domains(key)
        return cls(key, ids, table.domain_slots(key))

    def add_rows(self, rows: npt.NDArray[np.intp], amounts: IntColumn) -> bool:
        """Adds `amounts[i]` to the domain of row `rows[i]`; rows without the label are left
        out. True when some row had the label and a non-zero amount (kube-scheduler then has
        an entry for the pair, even where the amounts cancel)."""
        slots = self.ids[rows]
        keep = (slots >= 0) & (amounts != 0)
        if not keep.any():
            return False
        kept = amounts[keep]
        # bincount sums in float64: exact here, as counts times weights stay far below 2**53.
        summed = np.bincount(slots[keep], weights=kept, minlength=len(self.counts))
        self.counts += summed.astype(np.int64)
        self.total += int(kept.sum())
        return True

    def add_column(self, per_row: IntColumn) -> bool:
        """Adds a per-row column (one value per table row)."""
        rows = np.flatnonzero(per_row).astype(np.intp)
        return self.add_rows(rows, per_row[rows]) if len(rows) else False

    def add_value(self, value: str, amount: int) -> None:
        """Adds to the domain `value` (PreFilterExtensions: one pod added or removed)."""
        slot = self.index.get(value)
        if slot is None:
            grown = dict(self.index)
            slot = grown[value] = len(self.counts)
            self.index = grown
            self.counts = np.append(self.counts, 0)
        self.counts[slot] += amount
        self.total += amount

    def at(self, value: str | None) -> int:
        """The count of domain `value`; 0 for no value or an unknown one."""
        if value is None:
            return 0
        slot = self.index.get(value)
        return int(self.counts[slot]) if slot is not None else 0

    def column(self) -> IntColumn:
        """Per table row, its domain's count (0 without the label)."""
        if not len(self.counts):
            return np.zeros(len(self.ids), np.int64)
        gathered: IntColumn = np.where(self.ids >= 0, self.counts[np.maximum(self.ids, 0)], 0)
        return gathered

    def positive(self) -> BoolColumn:
        """Rows whose domain has a positive count."""
        mask: BoolColumn = self.column() > 0
        return mask

    def clone(self) -> DomainCounts:
        copy = DomainCounts.__new__(DomainCounts)
        copy.key = self.key
        copy.ids = self.ids
        copy.index = self.index
        copy.counts = self.counts.copy()
        copy.total = self.total
        return copy
