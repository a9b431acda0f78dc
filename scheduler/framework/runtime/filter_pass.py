"""One pod's Filter over every node of a snapshot: the object that owns the batch columns, the
per-node fallback, the nominated-pods two-pass and the diagnosis when the pod fits nowhere.

Plugins with a column form (`filter_batch`) run once over the NodeTable; their AND is `mask`.
A row the mask rejects is out without a per-node call. The rows it keeps still need a per-node
check when a plugin has no column form, or when pods of equal or higher priority are nominated
to the node (the design doc's two passes); `check` does both and remembers the two-pass
statuses so the diagnosis does not run them again. When nothing fits, `rejections` gives each
node's first rejecting plugin exactly as running the plugins node by node would: the columns
say which plugin rejects first, and a plugin with `filter_batch_statuses` words all its rows in
one call.
"""

from __future__ import annotations

import time
from typing import cast

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BatchFilterPlugin, FilterPlugin
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.runtime.calls import FILTER, call_filter
from scheduler.framework.runtime.filter_points import FilterPoints
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo


class FilterPass:
    """Filter of one pod over `table`, from one cycle's state (after PreFilter)."""

    def __init__(self, fwk: FilterPoints, state: CycleState, pod: Pod, table: NodeTable) -> None:
        self._fwk = fwk
        self._state = state
        self._pod = pod
        self._table = table
        self.mask: BoolColumn = np.ones(table.n, np.bool_)
        #: Every Filter plugin that runs, in order, with its column (None: per node only).
        self._columns: list[tuple[FilterPlugin, BoolColumn | None]] = []
        self._per_node: list[FilterPlugin] = []
        skip = state.skip_filter_plugins
        record = state.record_plugin_metrics
        for pl in fwk.filter_plugins:
            if pl.name in skip:
                continue
            column = None
            if fwk.batch_filter[pl.name]:
                t0 = time.perf_counter() if record else 0.0
                column = cast(BatchFilterPlugin, pl).filter_batch(state, pod, table)
                if record:
                    fwk._observe_plugin(FILTER, pl.name, None, t0)
            if column is None:
                self._per_node.append(pl)
            else:
                self.mask &= column
            self._columns.append((pl, column))
        #: Rows with pods nominated to them that count against the pod, and those pods.
        self._nominated_rows = self._rows_with_nominated_pods()
        self._nominated_statuses: dict[int, Status | None] = {}

    @property
    def needs_node_checks(self) -> bool:
        """False when the mask alone decides every row (no per-node plugin, no nominations)."""
        return bool(self._per_node or self._nominated_rows)

    def check(self, row: int, info: NodeInfo) -> Status | None:
        """Whether the node at `row` passes every Filter plugin; an Error status stops the pass.

        A row the mask rejects fails without its reason: rejected without nominated pods, the
        two-pass check's second pass rejects it too, and only the diagnosis needs the reason.
        """
        if not self.mask[row]:
            return Status(Code.UNSCHEDULABLE)
        nominated = self._nominated_rows.get(row)
        if nominated is not None:
            status = self._fwk.run_filter_plugins_with_nominated_pods(
                self._state, self._pod, info, nominated
            )
            self._nominated_statuses[row] = status
            return status
        for pl in self._per_node:
            status = call_filter(pl, self._state, self._pod, info)
            if status is not None:
                return status
        return None

    def rejections(self, rows: npt.NDArray[np.intp]) -> list[Status | None]:
        """What running every Filter plugin node by node returns for each of `rows`, for the
        diagnosis of a pod that fits nowhere (None for a row that passes)."""
        nominated = self._nominated_rows
        if not nominated:
            return self._first_rejections(rows)
        plain = rows[[row not in nominated for row in rows.tolist()]]
        by_row = dict(zip(plain.tolist(), self._first_rejections(plain), strict=True))
        infos = self._table.infos
        result: list[Status | None] = []
        for row in rows.tolist():
            if row in by_row:
                result.append(by_row[row])
            elif row in self._nominated_statuses:
                result.append(self._nominated_statuses[row])
            else:
                result.append(
                    self._fwk.run_filter_plugins_with_nominated_pods(
                        self._state, self._pod, infos[row], nominated[row]
                    )
                )
        return result

    def _rows_with_nominated_pods(self) -> dict[int, list[Pod]]:
        nominator = self._fwk._nominator
        if nominator is None:
            return {}
        index = self._table.index
        nodes_fn = getattr(nominator, "nominated_node_names", None)
        names = nodes_fn() if callable(nodes_fn) else list(index)
        rows: dict[int, list[Pod]] = {}
        for name in names:
            row = index.get(name)
            if row is None:
                continue
            pods = self._fwk.nominated_pods_to_add(self._pod, name)
            if pods:
                rows[row] = pods
        return rows

    def _first_rejection(self, row: int, info: NodeInfo) -> Status | None:
        """The node's first rejection, calling only the plugins whose column does not already
        say it passes."""
        for pl, column in self._columns:
            if column is not None and column[row]:
                continue
            status = call_filter(pl, self._state, self._pod, info)
            if status is not None:
                return status
        return None

    def _first_rejections(self, rows: npt.NDArray[np.intp]) -> list[Status | None]:
        """`_first_rejection` for many rows: rows whose first failing column is a plugin with
        `filter_batch_statuses` get their statuses in one call; the rest go node by node."""
        result: list[Status | None] = [None] * len(rows)
        undecided = np.arange(len(rows))
        by_node: list[int] = []
        state, pod, table = self._state, self._pod, self._table
        for pl, column in self._columns:
            if not len(undecided):
                break
            if column is None:  # may reject any of them: only per node, in plugin order
                by_node.extend(undecided.tolist())
                break
            failing = ~column[rows[undecided]]
            if not failing.any():
                continue
            positions = undecided[failing]
            undecided = undecided[~failing]
            batch = getattr(pl, "filter_batch_statuses", None)
            statuses = batch(state, pod, table, rows[positions]) if callable(batch) else None
            if statuses is None:
                by_node.extend(positions.tolist())
                continue
            for position, status in zip(positions.tolist(), statuses, strict=True):
                if status is None:  # the column and the reasons disagree: ask the node
                    by_node.append(position)
                else:
                    status.plugin = pl.name
                    result[position] = status
        infos = table.infos
        for position in by_node:
            row = int(rows[position])
            result[position] = self._first_rejection(row, infos[row])
        return result
