"""Filter statuses of many node rows, each wording kept once.

A pod that fits nowhere is rejected on most nodes for one of a few reasons; keeping each
distinct Status once with each row's index into them lets the diagnosis be built, counted and
merged with array operations instead of a Python step per node (the failed retries of a
preemption burst build one for every node, every attempt).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.framework.status import Status

IndexColumn = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class StatusColumn:
    """`statuses[of_row[i]]` is row i's Status (None: the row passes)."""

    statuses: list[Status | None]
    of_row: IndexColumn

    @classmethod
    def of(cls, per_row: list[Status | None]) -> StatusColumn:
        """One entry per row, grouped by identity."""
        slot: dict[int, int] = {}
        statuses: list[Status | None] = []
        of_row = np.empty(len(per_row), np.intp)
        for i, status in enumerate(per_row):
            key = id(status)
            at = slot.get(key)
            if at is None:
                at = slot[key] = len(statuses)
                statuses.append(status)
            of_row[i] = at
        return cls(statuses, of_row)

    def __len__(self) -> int:
        return len(self.of_row)

    def to_list(self) -> list[Status | None]:
        """One entry per row."""
        return list(map(self.statuses.__getitem__, self.of_row.tolist()))

    def rows_without_status(self) -> IndexColumn:
        """Positions of the rows that pass (their Status is None)."""
        empty = [i for i, status in enumerate(self.statuses) if status is None]
        if not empty:
            return np.empty(0, np.intp)
        return np.flatnonzero(np.isin(self.of_row, empty))

    def counts(self) -> list[int]:
        """How many rows have each of `statuses`."""
        return np.bincount(self.of_row, minlength=len(self.statuses)).tolist()  # type: ignore[no-any-return]

    def present(self) -> list[tuple[Status, int]]:
        """Each Status some row has, with how many rows have it (rows that pass left out)."""
        pairs = zip(self.statuses, self.counts(), strict=True)
        return [(s, n) for s, n in pairs if n and s is not None]


class StatusColumnBuilder:
    """Fills a StatusColumn of `n` rows part by part; rows never set pass (None)."""

    __slots__ = ("_of_row", "_statuses")

    def __init__(self, n: int) -> None:
        self._statuses: list[Status | None] = [None]
        self._of_row: IndexColumn = np.zeros(n, np.intp)

    def put(self, positions: IndexColumn, column: StatusColumn) -> None:
        """Rows at `positions` get `column`'s statuses, in order."""
        self._of_row[positions] = column.of_row + len(self._statuses)
        self._statuses.extend(column.statuses)

    def put_one(self, position: int, status: Status | None) -> None:
        if status is None:
            self._of_row[position] = 0
            return
        self._of_row[position] = len(self._statuses)
        self._statuses.append(status)

    def build(self) -> StatusColumn:
        return StatusColumn(self._statuses, self._of_row)
