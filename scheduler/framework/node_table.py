"""Per-node numbers as numpy columns, in snapshot order, for vectorised Filter and Score.

A row per node; `update_row` rewrites one row when a node changes, so keeping the table in step
with the snapshot costs O(changed nodes). Plugins with a `filter_batch`/`score_batch` read these
columns instead of looping over NodeInfo objects in Python.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from scheduler.api.labels import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    IN,
    LT,
    NOT_IN,
    Requirement,
    parse_go_int,
)
from scheduler.api.objects import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE
from scheduler.framework.types import NodeInfo

IntColumn = npt.NDArray[np.int64]
BoolColumn = npt.NDArray[np.bool_]


class NodeTable:
    """Columns over the snapshot's nodes; row i is `infos[i]`."""

    def __init__(self, infos: list[NodeInfo]) -> None:
        n = len(infos)
        self.n = n
        self.infos = infos
        self.names = [info.name for info in infos]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.alloc_cpu: IntColumn = np.zeros(n, np.int64)
        self.alloc_mem: IntColumn = np.zeros(n, np.int64)
        self.alloc_eph: IntColumn = np.zeros(n, np.int64)
        self.alloc_pods: IntColumn = np.zeros(n, np.int64)
        self.req_cpu: IntColumn = np.zeros(n, np.int64)
        self.req_mem: IntColumn = np.zeros(n, np.int64)
        self.req_eph: IntColumn = np.zeros(n, np.int64)
        self.pod_count: IntColumn = np.zeros(n, np.int64)
        self.nz_cpu: IntColumn = np.zeros(n, np.int64)
        self.nz_mem: IntColumn = np.zeros(n, np.int64)
        self.unschedulable: BoolColumn = np.zeros(n, np.bool_)
        self.hard_taints: BoolColumn = np.zeros(n, np.bool_)
        self.soft_taints: BoolColumn = np.zeros(n, np.bool_)
        self.has_ports: BoolColumn = np.zeros(n, np.bool_)
        self._scalar: dict[str, tuple[IntColumn, IntColumn]] = {}
        self._labels: _LabelIndex | None = None
        for i, info in enumerate(infos):
            self._write_row(i, info)

    def update_row(self, i: int, info: NodeInfo) -> None:
        """Rewrites row i after its NodeInfo changed."""
        old = self.infos[i]
        self.infos[i] = info
        if self._labels is not None and (
            old.node is not info.node
            and (old.node is None or info.node is None or old.node.labels != info.node.labels)
        ):
            self._labels = None
        self._write_row(i, info)
        for name, (alloc, req) in self._scalar.items():
            alloc[i] = info.allocatable.scalar.get(name, 0)
            req[i] = info.requested.scalar.get(name, 0)

    def _write_row(self, i: int, info: NodeInfo) -> None:
        alloc, req = info.allocatable, info.requested
        self.alloc_cpu[i] = alloc.milli_cpu
        self.alloc_mem[i] = alloc.memory
        self.alloc_eph[i] = alloc.ephemeral_storage
        self.alloc_pods[i] = alloc.allowed_pod_number
        self.req_cpu[i] = req.milli_cpu
        self.req_mem[i] = req.memory
        self.req_eph[i] = req.ephemeral_storage
        self.pod_count[i] = len(info.pods)
        self.nz_cpu[i] = info.non_zero_requested.milli_cpu
        self.nz_mem[i] = info.non_zero_requested.memory
        self.has_ports[i] = len(info.used_ports) > 0
        node = info.node
        if node is None:
            self.unschedulable[i] = True
            self.hard_taints[i] = False
            self.soft_taints[i] = False
            return
        self.unschedulable[i] = node.unschedulable
        hard = soft = False
        for taint in node.taints:
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE):
                hard = True
            elif taint.effect == PREFER_NO_SCHEDULE:
                soft = True
        self.hard_taints[i] = hard
        self.soft_taints[i] = soft

    def scalar(self, name: str) -> tuple[IntColumn, IntColumn]:
        """(allocatable, requested) columns of an extended resource, built on first use."""
        cols = self._scalar.get(name)
        if cols is None:
            alloc = np.fromiter(
                (info.allocatable.scalar.get(name, 0) for info in self.infos), np.int64, self.n
            )
            req = np.fromiter(
                (info.requested.scalar.get(name, 0) for info in self.infos), np.int64, self.n
            )
            cols = (alloc, req)
            self._scalar[name] = cols
        return cols

    def requirement_mask(self, req: Requirement) -> BoolColumn:
        """Rows whose node labels satisfy one label requirement."""
        if self._labels is None:
            self._labels = _LabelIndex(self)
        return self._labels.mask(req)

    def rows(self, names: Iterable[str]) -> list[int]:
        return [self.index[name] for name in names if name in self.index]


class _LabelIndex:
    """label key -> value -> rows, so node selectors evaluate as a few boolean ORs/ANDs."""

    def __init__(self, table: NodeTable) -> None:
        self.n = table.n
        self._rows: dict[str, dict[str, list[int]]] = {}
        for i, info in enumerate(table.infos):
            if info.node is None:
                continue
            for key, val in info.node.labels.items():
                self._rows.setdefault(key, {}).setdefault(val, []).append(i)
        self._cache: dict[Requirement, BoolColumn] = {}

    def _mask_of(self, key: str, values: Iterable[str] | None) -> BoolColumn:
        mask = np.zeros(self.n, np.bool_)
        by_value = self._rows.get(key)
        if not by_value:
            return mask
        selected = by_value.values() if values is None else (by_value.get(v, []) for v in values)
        for rows in selected:
            mask[rows] = True
        return mask

    def mask(self, req: Requirement) -> BoolColumn:
        cached = self._cache.get(req)
        if cached is not None:
            return cached
        op = req.operator
        if op == IN:
            result = self._mask_of(req.key, req.values)
        elif op == NOT_IN:
            result = ~self._mask_of(req.key, req.values)
        elif op == EXISTS:
            result = self._mask_of(req.key, None)
        elif op == DOES_NOT_EXIST:
            result = ~self._mask_of(req.key, None)
        elif op in (GT, LT):
            result = np.zeros(self.n, np.bool_)
            for val, rows in self._rows.get(req.key, {}).items():
                number = parse_go_int(val)
                if number is None:
                    continue
                if (number > req.number) if op == GT else (number < req.number):
                    result[rows] = True
        else:
            result = np.zeros(self.n, np.bool_)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[req] = result
        return result
