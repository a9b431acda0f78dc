"""The scheduling algorithm for one pod (kube-scheduler's schedulePod): PreFilter, Filter, Score,
pick a node.

Filter over all nodes is a FilterPass (framework/runtime/filter_pass.py): columns where plugins
have a batch form, per node where they do not or where pods are nominated, and each node's
reasons when the pod fits nowhere. This module walks the nodes in round-robin order from
`next_start_node_index` and stops at `num_feasible_nodes_to_find`, as kube-scheduler does, so
the result equals running every plugin on every node in that order.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod
from scheduler.backend.cache.snapshot import Snapshot
from scheduler.explain.record import Attempt
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import ScoreColumn
from scheduler.framework.runtime import FilterPass, Framework
from scheduler.framework.runtime.batch import SortedScoredNodes
from scheduler.framework.runtime.score_points import RawScores
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


@dataclass(slots=True)
class Feasible:
    """The nodes that passed Filter, and their NodeTable rows when the vectorised pass found
    them (so scoring need not look every node up by name again)."""

    nodes: list[NodeInfo]
    rows: npt.NDArray[np.intp] | None = None


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

    def schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        cycle: int = 0,
        trace: Attempt | None = None,
    ) -> ScheduleResult:
        """The node for the pod, or FitError / NoNodesAvailableError / SchedulingError.

        `cycle` is the queue's scheduling cycle count, which opportunistic batching checks to
        know that no other pod was scheduled since it kept its nodes. With `trace`, what the
        cycle found is recorded there for the pod's explanation."""
        num_nodes = len(self.snapshot)
        if trace is not None:
            trace.num_nodes = num_nodes
        if num_nodes == 0:
            raise NoNodesAvailableError()
        pod = pinfo.pod
        batch = fwk.batch
        feasible, diagnosis, hint = self._find_feasible(fwk, state, pod, pinfo, cycle, trace)
        nodes = feasible.nodes
        if not nodes:
            raise FitError(pod, num_nodes, diagnosis)
        if len(nodes) == 1:
            if batch is not None:
                batch.store_schedule_results(pinfo.pod_signature, hint, nodes[0].name, None, cycle)
            result = ScheduleResult(nodes[0].name, 1 + len(diagnosis.node_to_status), 1)
        else:
            if batch is None:
                host = self.prioritize_and_select(fwk, state, pod, feasible, trace)
            else:
                keep = pinfo.pod_signature is not None
                host, others = self._prioritize_sorted(
                    fwk, state, pod, feasible, batch.rng, keep, trace
                )
                batch.store_schedule_results(pinfo.pod_signature, hint, host, others, cycle)
            evaluated = len(nodes) + len(diagnosis.node_to_status)
            result = ScheduleResult(host, evaluated, len(nodes))
        if trace is not None:
            trace.evaluated_nodes = result.evaluated_nodes
            trace.feasible_nodes = result.feasible_nodes
            trace.selected = result.suggested_host
        return result

    # --- filtering --------------------------------------------------------------------------

    def find_nodes_that_fit_pod(
        self, fwk: Framework, state: CycleState, pod: Pod
    ) -> tuple[list[NodeInfo], Diagnosis]:
        """kube-scheduler's findNodesThatFitPod: the feasible nodes and why the others fail."""
        feasible, diagnosis, _ = self._find_feasible(fwk, state, pod)
        return feasible.nodes, diagnosis

    def _find_feasible(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        pinfo: QueuedPodInfo | None = None,
        cycle: int = 0,
        trace: Attempt | None = None,
    ) -> tuple[Feasible, Diagnosis, str]:
        """The feasible nodes, why the others fail, and opportunistic batching's node hint
        ("" without one)."""
        diagnosis = Diagnosis()
        all_nodes = self.snapshot.node_info_list
        pre_result, status, plugins = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(plugins)
        if trace is not None:
            trace.pre_filter_plugins = list(plugins)
        if status is not None and status.code != Code.SUCCESS:
            if trace is not None:
                trace.pre_filter_rejection = status
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.node_to_status.absent_status = status
            diagnosis.pre_filter_msg = status.message()
            _add_plugin_status(diagnosis, status)
            return Feasible([]), diagnosis, ""

        hint = ""
        if fwk.batch is not None and pinfo is not None:
            # Asked even for a nominated pod (which flushes the batch), as upstream does.
            hint = fwk.batch.get_node_hint(pod, pinfo.pod_signature, state, cycle)
        # The nominated node (set by a preemption) or else the hint is tried alone first.
        first = pod.nominated_node_name or hint
        if first:
            info = self.snapshot.get(first)
            if info is not None:
                nominated = self._filter_node_list(fwk, state, pod, diagnosis, [info], track=False)
                if trace is not None:
                    how = "nominated node" if pod.nominated_node_name else "batching hint"
                    trace.tried_first = (how, first, bool(nominated))
                if nominated:
                    return Feasible(nominated), diagnosis, hint

        if pre_result is not None and not pre_result.all_nodes():
            assert pre_result.node_names is not None
            if trace is not None:
                trace.pre_filter_narrowed = len(pre_result.node_names)
            nodes = [
                info
                for name in pre_result.node_names
                if (info := self.snapshot.get(name)) is not None
            ]
            diagnosis.node_to_status.absent_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]",
            )
            listed = self._filter_node_list(fwk, state, pod, diagnosis, nodes, track=True)
            return Feasible(listed), diagnosis, hint
        return self._filter_all_nodes(fwk, state, pod, diagnosis), diagnosis, hint

    def _num_to_find(self, fwk: Framework, num_nodes: int) -> int:
        if not fwk.has_score_plugins():
            return 1
        percentage = fwk.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        return num_feasible_nodes_to_find(percentage, num_nodes)

    def _filter_all_nodes(
        self, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> Feasible:
        """Every node in the snapshot, vectorised where the plugins allow (a FilterPass)."""
        table = self.snapshot.table
        infos = self.snapshot.node_info_list
        n = table.n
        num_to_find = self._num_to_find(fwk, n)
        start = self.next_start_node_index % n
        if not fwk.has_filter_plugins():
            chosen = [infos[(start + i) % n] for i in range(num_to_find)]
            self.next_start_node_index = (start + num_to_find) % n
            return Feasible(chosen)

        began = time.perf_counter()
        status: Status | None = None
        try:
            filter_pass = FilterPass(fwk, state, pod, table)
            if not filter_pass.needs_node_checks:
                # Feasible rows in round-robin order from `start`, without building the order.
                chosen_rows = _round_robin_hits(filter_pass.mask, start)[:num_to_find]
                feasible = Feasible(list(map(infos.__getitem__, chosen_rows.tolist())), chosen_rows)
                if len(feasible.nodes) < num_to_find:
                    processed = n
                else:
                    processed = (int(chosen_rows[-1]) - start) % n + 1
            else:
                feasible = Feasible([])
                processed = n
                # Rows the mask rejects fail `check` without a call: only the others are
                # checked, in the same round-robin order.
                for row in _round_robin_hits(filter_pass.mask, start).tolist():
                    info = infos[row]
                    s = filter_pass.check(row, info)
                    if s is not None and s.code == Code.ERROR:
                        status = s
                        raise SchedulingError(s)
                    if s is None:
                        feasible.nodes.append(info)
                        if len(feasible.nodes) == num_to_find:
                            processed = (row - start) % n + 1
                            break
            self.next_start_node_index = (start + processed) % n
            if not feasible.nodes:
                self._diagnose_all(filter_pass, diagnosis, _round_robin(n, start))
            return feasible
        finally:
            fwk.observe_filter_duration(status, began)

    def _diagnose_all(
        self, filter_pass: FilterPass, diagnosis: Diagnosis, order: npt.NDArray[np.intp]
    ) -> None:
        """The pod fits nowhere: record each node's exact rejection, in round-robin order.
        Rows share Status objects (a plugin's column wording), so each distinct one is looked
        at once: an Error stops the cycle (the first in order), a rejection adds its plugin."""
        column = filter_pass.rejections(order)
        present = column.present()
        if any(s.is_error() for s, _ in present):
            is_error = np.array([s is not None and s.is_error() for s in column.statuses])
            first = int(np.flatnonzero(is_error[column.of_row])[0])
            raise SchedulingError(cast(Status, column.statuses[int(column.of_row[first])]))
        # A row that passes can only appear if the cluster changed under us: left unlisted.
        table = self.snapshot.table
        diagnosis.node_to_status.set_rows(table.names, table.index, order, column, table.infos)
        for s, _ in present:
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
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        feasible: Feasible,
        trace: Attempt | None = None,
    ) -> str:
        nodes = feasible.nodes
        if not fwk.has_score_plugins():
            return nodes[self._rng.randrange(len(nodes))].name
        totals, _ = self._score(fwk, state, pod, feasible, None, trace)
        best = np.flatnonzero(totals == totals.max())
        pick = int(best[0]) if len(best) == 1 else int(best[self._rng.randrange(len(best))])
        return nodes[pick].name

    def _prioritize_sorted(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        feasible: Feasible,
        rng: np.random.Generator,
        keep: bool,
        trace: Attempt | None = None,
    ) -> tuple[str, SortedScoredNodes | int]:
        """The best node and, for batching, the other scored nodes best first (or just their
        number when `keep` is false: a pod without signature is not worth sorting for).
        Equal best scores are picked among at random in both cases."""
        nodes = feasible.nodes
        if not keep:
            return self.prioritize_and_select(fwk, state, pod, feasible, trace), len(nodes) - 1
        raw: RawScores = {}
        if fwk.has_score_plugins():
            totals, rows = self._score(fwk, state, pod, feasible, raw, trace)
        else:
            totals = np.ones(len(nodes), np.int64)  # upstream's TotalScore 1 for every node
            rows = self._rows(feasible)
        ranked = SortedScoredNodes(self.snapshot.table, rows, raw, totals, rng)
        return ranked.pop(), ranked

    def _score(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        feasible: Feasible,
        raw: RawScores | None,
        trace: Attempt | None = None,
    ) -> tuple[ScoreColumn, npt.NDArray[np.intp]]:
        """PreScore and Score over the feasible nodes: their weighted totals, and their rows
        (with `trace`, the best nodes' scores per plugin are recorded there)."""
        nodes = feasible.nodes
        status = fwk.run_pre_score_plugins(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        rows = self._rows(feasible)
        normalized: RawScores | None = None
        if trace is not None:
            normalized = {}
            if raw is None:
                raw = {}
        table = self.snapshot.table
        totals, status = fwk.run_score_plugins(state, pod, table, rows, nodes, raw, normalized)
        if status is not None or totals is None:
            raise SchedulingError(status or Status(Code.ERROR, "score plugins returned nothing"))
        if trace is not None and raw is not None and normalized is not None:
            weights = fwk.score_weights
            trace.scored((table.names, rows, raw, normalized, weights, totals))
        return totals, rows

    def _rows(self, feasible: Feasible) -> npt.NDArray[np.intp]:
        """The feasible nodes' NodeTable rows."""
        if feasible.rows is not None:
            return feasible.rows
        index = self.snapshot.table.index
        nodes = feasible.nodes
        return np.fromiter((index[info.name] for info in nodes), np.intp, len(nodes))


def _round_robin(n: int, start: int) -> npt.NDArray[np.intp]:
    """Row numbers 0..n-1 rotated to begin at `start`."""
    rows: npt.NDArray[np.intp] = (np.arange(n, dtype=np.intp) + start) % n
    return rows


def _round_robin_hits(mask: npt.NDArray[np.bool_], start: int) -> npt.NDArray[np.intp]:
    """The rows `mask` keeps, in round-robin order from `start`."""
    hits = np.flatnonzero(mask)
    split = int(np.searchsorted(hits, start))
    rows: npt.NDArray[np.intp] = np.concatenate((hits[split:], hits[:split]))
    return rows


def _add_plugin_status(diagnosis: Diagnosis, status: Status) -> None:
    if not status.plugin:
        return
    if status.is_rejected():
        diagnosis.unschedulable_plugins.add(status.plugin)
    if status.code == Code.PENDING:
        diagnosis.pending_plugins.add(status.plugin)
