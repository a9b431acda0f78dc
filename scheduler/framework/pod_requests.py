"""Some pods' requests as numpy columns, each pod on a row of a node table: what a
PodCountingFilter sums, ready to add to a NodeTable's columns without a Python step per pod.

Every Filter pass of a preempting burst counts the pods nominated to each node (the first pass
of the two-pass check, over every nominated row at once). The nominations rarely change between
cycles, so `Nominations` keeps their columns per view and each cycle only masks out the pods that
do not count against its pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod

IntColumn = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PodRequestColumns:
    """One entry per pod: the row it counts on, its requests (extended resources dense, 0
    where a pod names none)."""

    rows: IntColumn
    cpu: IntColumn
    memory: IntColumn
    storage: IntColumn
    scalar: Mapping[str, IntColumn]

    @staticmethod
    def of(pods_by_row: Mapping[int, Iterable[Pod]]) -> PodRequestColumns:
        """The pods of each row, in the mapping's order (each row's pods in theirs)."""
        rows: list[int] = []
        cpu: list[int] = []
        memory: list[int] = []
        storage: list[int] = []
        scalar: dict[str, dict[int, int]] = {}
        for row, pods in pods_by_row.items():
            for pod in pods:
                req = pod.requests
                for name, quantity in req.scalar.items():
                    scalar.setdefault(name, {})[len(rows)] = quantity
                rows.append(row)
                cpu.append(req.milli_cpu)
                memory.append(req.memory)
                storage.append(req.ephemeral_storage)
        dense: dict[str, IntColumn] = {}
        for name, amounts in scalar.items():
            column = np.zeros(len(rows), np.int64)
            column[list(amounts)] = list(amounts.values())
            dense[name] = column
        return PodRequestColumns(
            np.array(rows, np.int64),
            np.array(cpu, np.int64),
            np.array(memory, np.int64),
            np.array(storage, np.int64),
            dense,
        )

    def where(self, keep: npt.NDArray[np.bool_]) -> PodRequestColumns:
        """The pods `keep` marks."""
        return PodRequestColumns(
            self.rows[keep],
            self.cpu[keep],
            self.memory[keep],
            self.storage[keep],
            {name: column[keep] for name, column in self.scalar.items()},
        )
