"""The scheduling algorithm for one pod (kube-scheduler's schedulePod): PreFilter, Filter, Score,
pick a node.

Filter runs column-at-a-time where plugins allow (`filter_batch`), then per node only for
plugins without a batch form, for nodes with nominated pods (the two-pass check) and, when the
pod fits nowhere, to collect each node's rejection reasons. The result equals running every
plugin on every node in round-robin order from `next_start_node_index`, stopping at
`num_feasible_nodes_to_find`, as kube-scheduler does.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod
from scheduler.backend.cache.snapshot import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_table import BoolColumn
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, FitError, NodeInfo, QueuedPodInfo

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class NoNodesAvailableError(Exception):
    """The cluster has no nodes at all."""

    def __str__(self) -> str:
        return "no nodes available to schedule pods"


class SchedulingError(Exception):
    """A plugin error (not a rejection) during the algorithm; the pod backs off and retries."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """kube-scheduler's adaptive percentageOfNodesToScore."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingAlgorithm:
    """Holds what persists between cycles: the snapshot and the round-robin start index."""

    def __init__(
        self, snapshot: Snapshot, percentage_of_nodes_to_score: int = 0, seed: int | None = None
    ) -> None:
        self.snapshot = snapshot
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self._rng = random.Random(seed)
        # Table rows of the feasible nodes when the vectorised filter found them, so scoring
        # does not look every node up by name again.
        self._feasible_rows: npt.NDArray[np.intp] | None = None

    def schedule_pod(
        self, fwk: Framework, state: CycleState, pinfo: QueuedPodInfo
    ) -> ScheduleResult:
        """The node for the pod, or FitError / NoNodesAvailableError / SchedulingError."""
        num_nodes = len(self.snapshot)
        if num_nodes == 0:
            raise NoNodesAvailableError()
        pod = pinfo.pod
        self._feasible_rows = None
        feasible, diagnosis = self.find_nodes_that_fit_pod(fwk, state, pod)
        if not feasible:
            raise FitError(pod, num_nodes, diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, 1 + len(diagnosis.node_to_status), 1)
        host = self.prioritize_and_select(fwk, state, pod, feasible)
        return ScheduleResult(host, len(feasible) + len(diagnosis.node_to_status), len(feasible))

    # --- filtering --------------------------------------------------------------------------

    def find_nodes_that_fit_pod(
        self, fwk: Framework, state: CycleState, pod: Pod
    ) -> tuple[list[NodeInfo], Diagnosis]:
        diagnosis = Diagnosis()
        all_nodes = self.snapshot.node_info_list
        pre_result, status, plugins = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(plugins)
        if status is not None and status.code != Code.SUCCESS:
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.node_to_status.absent_status = status
            diagnosis.pre_filter_msg = status.message()
            _add_plugin_status(diagnosis, status)
            return [], diagnosis

        if pod.nominated_node_name:
            info = self.snapshot.get(pod.nominated_node_name)
            if info is not None:
                feasible = self._filter_node_list(fwk, state, pod, diagnosis, [info], track=False)
                if feasible:
                    return feasible, diagnosis

        if pre_result is not None and not pre_result.all_nodes():
            assert pre_result.node_names is not None
            nodes = [
                info
                for name in pre_result.node_names
                if (info := self.snapshot.get(name)) is not None
            ]
            diagnosis.node_to_status.absent_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]",
            )
            feasible = self._filter_node_list(fwk, state, pod, diagnosis, nodes, track=True)
        else:
            feasible = self._filter_all_nodes(fwk, state, pod, diagnosis)
        return feasible, diagnosis

    def _num_to_find(self, fwk: Framework, num_nodes: int) -> int:
        if not fwk.has_score_plugins():
            return 1
        percentage = fwk.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        return num_feasible_nodes_to_find(percentage, num_nodes)

    def _filter_all_nodes(
        self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        """Every node in the snapshot, vectorised where the plugins allow."""
        table = self.snapshot.table
        infos = self.snapshot.node_info_list
        n = table.n
        num_to_find = self._num_to_find(fwk, n)
        start = self.next_start_node_index % n
        if not fwk.has_filter_plugins():
            chosen = [infos[(start + i) % n] for i in range(num_to_find)]
            self.next_start_node_index = (start + num_to_find) % n
            return chosen

        began = time.perf_counter()
        status: Status | None = None
        try:
            mask, per_node, columns = fwk.filter_batch_masks(state, pod, table)
            nominated_rows = self._rows_with_nominated_pods(fwk, pod)
            nominated_statuses: dict[int, Status | None] = {}
            feasible: list[NodeInfo] = []
            if not per_node and not nominated_rows:
                # Feasible rows in round-robin order from `start`, without building the order.
                hits = np.flatnonzero(mask)
                split = int(np.searchsorted(hits, start))
                candidates = np.concatenate((hits[split:], hits[:split]))
                chosen_rows = candidates[:num_to_find]
                feasible = [infos[r] for r in chosen_rows.tolist()]
                self._feasible_rows = chosen_rows
                if len(feasible) < num_to_find:
                    processed = n
                else:
                    processed = (int(chosen_rows[-1]) - start) % n + 1
            else:
                processed = n
                order = _round_robin(n, start)
                for position, row in enumerate(order.tolist()):
                    info = infos[row]
                    if not mask[row]:
                        # Rejected without nominated pods, so the two-pass check's second pass
                        # rejects it too; its exact reason is only needed by the diagnosis.
                        ok = False
                    elif row in nominated_rows:
                        s = fwk.run_filter_plugins_with_nominated_pods(state, pod, info)
                        if s is not None and s.code == Code.ERROR:
                            status = s
                            raise SchedulingError(s)
                        nominated_statuses[row] = s
                        ok = s is None
                    elif per_node:
                        s = fwk.run_filter_plugins_subset(per_node, state, pod, info)
                        if s is not None and s.code == Code.ERROR:
                            status = s
                            raise SchedulingError(s)
                        ok = s is None
                    else:
                        ok = True
                    if ok:
                        feasible.append(info)
                        if len(feasible) == num_to_find:
                            processed = position + 1
                            break
            self.next_start_node_index = (start + processed) % n
            if not feasible:
                order = _round_robin(n, start)
                self._diagnose_all(
                    fwk, state, pod, diagnosis, order, columns, nominated_rows, nominated_statuses
                )
            return feasible
        finally:
            fwk.observe_filter_duration(status, began)

    def _rows_with_nominated_pods(self, fwk: Framework, pod: Pod) -> set[int]:
        nominator = fwk.nominator
        index = self.snapshot.table.index
        rows: set[int] = set()
        nodes_fn = getattr(nominator, "nominated_node_names", None)
        names = nodes_fn() if callable(nodes_fn) else list(index)
        for name in names:
            row = index.get(name)
            if row is not None and fwk.nominated_pods_to_add(pod, name):
                rows.add(row)
        return rows

    def _diagnose_all(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        order: npt.NDArray[np.intp],
        columns: list[tuple[Any, BoolColumn | None]],
        nominated_rows: set[int],
        nominated_statuses: dict[int, Status | None],
    ) -> None:
        """The pod fits nowhere: record each node's exact rejection, as the per-node path would.

        Nodes with nominated pods take the two-pass path (once: the filter pass's statuses are
        reused); elsewhere the batch columns say which plugin rejects first, and that plugin
        gives the reasons of all its rows at once where it can (`first_rejections`)."""
        infos = self.snapshot.node_info_list
        plain = (
            order[[row not in nominated_rows for row in order.tolist()]]
            if nominated_rows
            else order
        )
        plain_statuses = fwk.first_rejections(columns, state, pod, self.snapshot.table, plain)
        by_row = dict(zip(plain.tolist(), plain_statuses, strict=True))
        for row in order.tolist():
            info = infos[row]
            if row in by_row:
                s = by_row[row]
            elif row in nominated_statuses:
                s = nominated_statuses[row]
            else:
                s = fwk.run_filter_plugins_with_nominated_pods(state, pod, info)
            if s is None:
                continue  # can only happen if the cluster changed under us; ignore
            if s.code == Code.ERROR:
                raise SchedulingError(s)
            diagnosis.node_to_status.set(info.name, s)
            _add_plugin_status(diagnosis, s)

    def _filter_node_list(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: list[NodeInfo],
        track: bool,
    ) -> list[NodeInfo]:
        """Per-node filtering of an explicit node list (nominated node, PreFilter narrowing)."""
        if not nodes:
            return []
        began = time.perf_counter()
        status: Status | None = None
        try:
            n = len(nodes)
            num_to_find = self._num_to_find(fwk, n)
            start = self.next_start_node_index % n
            feasible: list[NodeInfo] = []
            processed = n
            for i in range(n):
                info = nodes[(start + i) % n]
                s = fwk.run_filter_plugins_with_nominated_pods(state, pod, info)
                if s is None:
                    feasible.append(info)
                    if len(feasible) == num_to_find:
                        processed = i + 1
                        break
                    continue
                if s.code == Code.ERROR:
                    status = s
                    raise SchedulingError(s)
                diagnosis.node_to_status.set(info.name, s)
                _add_plugin_status(diagnosis, s)
            if track:
                total = len(self.snapshot)
                self.next_start_node_index = (self.next_start_node_index + processed) % total
            return feasible
        finally:
            fwk.observe_filter_duration(status, began)

    # --- scoring ----------------------------------------------------------------------------

    def prioritize_and_select(
        self, fwk: Framework, state: CycleState, pod: Pod, feasible: list[NodeInfo]
    ) -> str:
        if not fwk.has_score_plugins():
            return feasible[self._rng.randrange(len(feasible))].name
        status = fwk.run_pre_score_plugins(state, pod, feasible)
        if status is not None:
            raise SchedulingError(status)
        rows = self._feasible_rows
        if rows is None or len(rows) != len(feasible):
            index = self.snapshot.table.index
            rows = np.fromiter((index[info.name] for info in feasible), np.intp, len(feasible))
        totals, status = fwk.run_score_plugins(state, pod, self.snapshot.table, rows, feasible)
        if status is not None or totals is None:
            raise SchedulingError(status or Status(Code.ERROR, "score plugins returned nothing"))
        best = np.flatnonzero(totals == totals.max())
        pick = int(best[0]) if len(best) == 1 else int(best[self._rng.randrange(len(best))])
        return feasible[pick].name


def _round_robin(n: int, start: int) -> npt.NDArray[np.intp]:
    """Row numbers 0..n-1 rotated to begin at `start`."""
    rows: npt.NDArray[np.intp] = (np.arange(n, dtype=np.intp) + start) % n
    return rows


def _add_plugin_status(diagnosis: Diagnosis, status: Status) -> None:
    if not status.plugin:
        return
    if status.is_rejected():
        diagnosis.unschedulable_plugins.add(status.plugin)
    if status.code == Code.PENDING:
        diagnosis.pending_plugins.add(status.plugin)
