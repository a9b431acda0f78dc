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
from collections.abc import Callable
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
from scheduler.framework.status_column import StatusColumn, StatusColumnBuilder
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
        self._nominated_rows = fwk.nominated_pods_to_add_by_row(state, pod, table.index)
        self._nominated_statuses: dict[int, Status | None] = {}
        #: The two-pass check's first pass over every nominated row, built on first use.
        self._first_pass: _FirstPass | None = None

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
            passes = self._counted_first_pass().passes
            if passes is not None:
                # Passing the first pass, it passes the second (the mask kept it and nothing
                # runs per node); a rejection's reason, if needed, comes from `rejections`.
                return None if passes[row] else Status(Code.UNSCHEDULABLE)
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

    def rejections(self, rows: npt.NDArray[np.intp]) -> StatusColumn:
        """What running every Filter plugin node by node returns for each of `rows`, for the
        diagnosis of a pod that fits nowhere (None for a row that passes)."""
        nominated = self._nominated_rows
        if not nominated:
            return self._first_rejections(rows)
        is_nominated = np.zeros(self._table.n, np.bool_)
        is_nominated[list(nominated)] = True
        at_nominated = is_nominated[rows]
        out = StatusColumnBuilder(len(rows))
        plain = np.flatnonzero(~at_nominated)
        out.put(plain, self._first_rejections(rows[plain]))
        checked = self._nominated_statuses
        unchecked: list[int] = []
        positions = np.flatnonzero(at_nominated)
        for position, row in zip(positions.tolist(), rows[positions].tolist(), strict=True):
            if row in checked:
                out.put_one(position, checked[row])
            else:
                unchecked.append(position)
        if unchecked:
            at = np.array(unchecked, np.intp)
            out.put(at, self._rejections_with_nominated(rows[at]))
        return out.build()

    def _counted_first_pass(self) -> _FirstPass:
        """The first pass of the two-pass check over every nominated row at once, when the
        cycle's Filter has a counting form: the counting plugins' columns on the table with
        each row's nominated pods counted, the other plugins' columns as they are (they read
        only the Node). Built once per pass; empty when the counting form does not apply."""
        if self._first_pass is None:
            self._first_pass = _FirstPass()
            fwk, state, pod = self._fwk, self._state, self._pod
            counting = fwk.counting_filter(state, pod) if self._nominated_rows else None
            if counting is None:
                return self._first_pass
            counted = counting.counting_plugins
            table = self._table.with_pods_counted(
                fwk.nominated_requests_to_add_by_row(state, pod, self._table.index)
            )
            columns: list[tuple[FilterPlugin, BoolColumn | None]] = []
            for pl, own in self._columns:
                column = own
                if pl.name in counted:
                    batch = cast(BatchFilterPlugin, pl) if fwk.batch_filter[pl.name] else None
                    column = None if batch is None else batch.filter_batch(state, pod, table)
                columns.append((pl, column))
            self._first_pass = _FirstPass(columns, table)
        return self._first_pass

    def _rejections_with_nominated(self, rows: npt.NDArray[np.intp]) -> StatusColumn:
        """The two-pass check of rows with nominated pods: from the first pass over all of
        them where it applies, its rejections worded by `_first_rejections`. A row that
        passes the first pass passes the second too (fewer pods, smaller requests), so its
        answer is None."""
        nominated = self._nominated_rows
        fwk, state, pod, infos = self._fwk, self._state, self._pod, self._table.infos

        def two_pass(row: int) -> Status | None:
            return fwk.run_filter_plugins_with_nominated_pods(
                state, pod, infos[row], nominated[row]
            )

        first = self._counted_first_pass() if len(rows) else _FirstPass()
        if first.table is None:
            return StatusColumn.of([two_pass(row) for row in rows.tolist()])
        return self._first_rejections(rows, first.columns, first.table, two_pass)

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

    def _first_rejections(
        self,
        rows: npt.NDArray[np.intp],
        columns: list[tuple[FilterPlugin, BoolColumn | None]] | None = None,
        table: NodeTable | None = None,
        by_node_status: Callable[[int], Status | None] | None = None,
    ) -> StatusColumn:
        """`_first_rejection` for many rows: rows whose first failing column is a plugin with
        `filter_batch_statuses` get their statuses in one call; the rest go node by node
        (`by_node_status`, else `_first_rejection`). `columns` and `table` default to this
        pass's own."""
        out = StatusColumnBuilder(len(rows))
        undecided = np.arange(len(rows))
        by_node: list[int] = []
        state, pod = self._state, self._pod
        table = self._table if table is None else table
        for pl, column in self._columns if columns is None else columns:
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
            worded = batch(state, pod, table, rows[positions]) if callable(batch) else None
            if worded is None:
                by_node.extend(positions.tolist())
                continue
            for status in worded.statuses:
                if status is not None:
                    status.plugin = pl.name
            out.put(positions, worded)
            # Rows the column rejects but the reasons pass: ask those nodes.
            by_node.extend(positions[worded.rows_without_status()].tolist())
        infos = table.infos
        for position in by_node:
            row = int(rows[position])
            status = (
                self._first_rejection(row, infos[row])
                if by_node_status is None
                else by_node_status(row)
            )
            out.put_one(position, status)
        return out.build()


class _FirstPass:
    """The nominated-pods first pass of one FilterPass (`_counted_first_pass`): the columns
    and the table they were computed on (None: not in counting form), and their AND
    (None when some plugin has no column, so a row's verdict needs a per-node call)."""

    __slots__ = ("columns", "passes", "table")

    def __init__(
        self,
        columns: list[tuple[FilterPlugin, BoolColumn | None]] | None = None,
        table: NodeTable | None = None,
    ) -> None:
        self.columns = columns
        self.table = table
        self.passes: BoolColumn | None = None
        if columns is None or table is None:
            return
        present = [column for _, column in columns if column is not None]
        if len(present) == len(columns):
            self.passes = np.ones(table.n, np.bool_)
            for column in present:
                self.passes &= column
