"""Opportunistic batching (KEP-5598, gate OpportunisticBatching), as kube-scheduler's
framework/runtime/batch.go.

Pods created together (a Deployment's replicas) are usually identical for Filter and Score:
same signature (`sign_pod`). After a cycle has filtered and scored its nodes, the other scored
nodes, best first, are kept; the next pod of the same signature is given the best of them as a
hint, checked like a nominated node (Filter on that node alone), and skips filtering and
scoring the cluster when it fits. The state is flushed whenever it may no longer be right: a
different signature, a skipped or failed cycle in between, a nominated pod, an error, or an age
of more than 500 ms.

The node the previous pod went to changed; if it still fits, only it is rescored (PreScore with
the candidates, its raw scores, NormalizeScore again over all candidates) so that it competes
with the kept nodes for the hint. Other kept nodes keep their scores, which is what makes the
hint equal to a full cycle's choice when pods are scheduled one after another.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import structlog

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Plugin, ScoreColumn, SignPlugin, SnapshotLister
from scheduler.framework.node_table import NodeTable
from scheduler.framework.runtime.score_points import RawScores
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo
from scheduler.logging import debug_enabled

log = structlog.get_logger(__name__)

MAX_BATCH_AGE = 0.5  # seconds (maxBatchAge)

# batch_cache_flushed_total reasons
FLUSH_POD_FAILED = "pod_failed"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_POD_NOMINATED = "pod_nominated"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"
FLUSH_FILTER_ERROR = "filter_error"
FLUSH_PRESCORE_ERROR = "prescore_error"
FLUSH_RESCORE_ERROR = "rescore_error"
FLUSH_NORMALIZE_ERROR = "normalize_error"


def signing_plugins(candidates: Iterable[Sequence[Plugin]]) -> list[SignPlugin] | None:
    """The distinct PreFilter, Filter, PreScore and Score plugins, if all of them can sign
    (computeBatchablePlugins); None if one cannot: the profile then signs no pod, so a plugin
    that knows nothing of signatures is never batched wrongly."""
    seen: dict[str, SignPlugin] = {}
    for plugins in candidates:
        for pl in plugins:
            if pl.name in seen:
                continue
            if not isinstance(pl, SignPlugin):
                log.info(
                    "disabling signatures for profile because plugins do not support it",
                    plugin=pl.name,
                )
                return None
            seen[pl.name] = pl
    return list(seen.values())


class BatchHandle(Protocol):
    """What batching needs of its profile's framework (upstream's batchHandle)."""

    profile_name: str

    def snapshot(self) -> SnapshotLister: ...

    def run_filter_plugins(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_score_plugins(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> Status | None: ...

    def run_raw_score_plugins(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
        nodes: list[NodeInfo],
    ) -> tuple[RawScores | None, Status | None]: ...

    def normalize_scores(
        self, state: CycleState, pod: Pod, raw: RawScores, n: int
    ) -> tuple[ScoreColumn | None, Status | None]: ...


class SortedScoredNodes:
    """Scored nodes, popped best first (framework.SortedScoredNodes).

    Nodes are NodeTable rows, so nothing on the hot path is per-node Python. A pop is one
    argmax over the nodes not popped yet rather than a sort: a batch is usually replaced after
    one or two pops (the rescored node comes back), so sorting everything would be wasted.
    Upstream's heap gives equal scores in an arbitrary order; here equal scores come out in
    random order, as the choice among equal best nodes is random. The raw scores stay for a
    rescore's NormalizeScore."""

    __slots__ = ("_keys", "_left", "raw", "rows", "table")

    def __init__(
        self,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
        raw: RawScores,
        totals: ScoreColumn,
        rng: np.random.Generator,
    ) -> None:
        self.table = table
        self.rows = rows
        self.raw = raw
        # The total, ties broken by a random low-order part; _POPPED marks popped nodes.
        self._keys = (totals.astype(np.int64) << _TIE_BITS) | rng.integers(
            0, 1 << _TIE_BITS, len(rows)
        )
        self._left = len(rows)

    def pop(self) -> str:
        i = int(self._keys.argmax())
        self._keys[i] = _POPPED
        self._left -= 1
        return self.table.names[int(self.rows[i])]

    def __len__(self) -> int:
        return self._left

    def remaining(self) -> tuple[npt.NDArray[np.intp], RawScores]:
        """The rows (of `table`) not popped yet, in no particular order, with their raw
        scores."""
        rest = np.flatnonzero(self._keys != _POPPED)
        return self.rows[rest], {plugin: column[rest] for plugin, column in self.raw.items()}


_TIE_BITS = 20
_POPPED = np.iinfo(np.int64).min


class OpportunisticBatch:
    """One profile's batch state: the kept nodes and what the last cycle did."""

    def __init__(self, fwk: BatchHandle, clock: Clock, seed: int | None = None) -> None:
        self._fwk = fwk
        self._clock = clock
        self._rng = np.random.default_rng(seed)
        self._signature: bytes | None = None
        self._sorted: SortedScoredNodes | None = None
        self._created = 0.0
        self._last_cycle = 0
        self._last_chosen = ""
        self._last_succeeded = False
        #: Pods scheduled on their hint (upstream's batchedPods, for tests).
        self.batched_pods = 0
        profile = fwk.profile_name
        self._hint_timer = metrics.get_node_hint_duration.labels("hint", profile)
        self._no_hint_timer = metrics.get_node_hint_duration.labels("no_hint", profile)
        self._children: dict[tuple[object, str], Any] = {}

    def _child(self, family: Any, label: str = "") -> Any:
        """The profile's child of a batch metric family (with `label` after the profile when
        given), made on first use as upstream's WithLabelValues and kept: labels() is costly
        on a path every cycle takes."""
        key = (family, label)
        child = self._children.get(key)
        if child is None:
            labels = (self._fwk.profile_name, label) if label else (self._fwk.profile_name,)
            child = self._children[key] = family.labels(*labels)
        return child

    @property
    def rng(self) -> np.random.Generator:
        return self._rng

    def get_node_hint(
        self, pod: Pod, signature: bytes | None, state: CycleState, cycle: int
    ) -> str:
        """The best kept node for this pod, or "" when the state cannot be used (flushed)."""
        start = time.perf_counter()
        hint = ""
        try:
            if self._compatible(pod, signature, cycle) and self._refresh(pod, state, cycle):
                assert self._sorted is not None
                hint = self._sorted.pop()
        finally:
            if hint:
                self._hint_timer.observe(time.perf_counter() - start)
            else:
                self._child(metrics.batch_attempts, metrics.BATCH_NO_HINT).inc()
                self._no_hint_timer.observe(time.perf_counter() - start)
        return hint

    def store_schedule_results(
        self,
        signature: bytes | None,
        hinted: str,
        chosen: str,
        others: SortedScoredNodes | int | None,
        cycle: int,
    ) -> None:
        """Records the cycle's outcome and keeps `others` (the scored nodes not chosen; only
        their number when the pod has no signature, as they are not worth sorting then)."""
        start = time.perf_counter()
        try:
            self._last_cycle = cycle
            self._last_chosen = chosen
            self._last_succeeded = True
            if hinted and hinted == chosen:
                # The kept nodes are still right: the hinted one was popped.
                self._child(metrics.batch_attempts, metrics.BATCH_HINT_USED).inc()
                self.batched_pods += 1
                return
            if hinted:
                self._child(metrics.batch_attempts, metrics.BATCH_HINT_NOT_USED).inc()
            count = others if isinstance(others, int) else len(others) if others else 0
            if signature is not None and isinstance(others, SortedScoredNodes) and count:
                self._signature = signature
                self._sorted = others
                self._created = self._clock.monotonic()
                return
            self._flush(cycle, FLUSH_POD_NOT_BATCHABLE if count else FLUSH_EMPTY_LIST)
            self._sorted = None
        finally:
            self._child(metrics.store_schedule_results_duration).observe(
                time.perf_counter() - start
            )

    def discard(self) -> None:
        """Drops the kept nodes: the placements they were scored against were reverted (a
        group cycle that did not reach its quorum)."""
        self._sorted = None

    def _flush(self, cycle: int, reason: str) -> None:
        self._child(metrics.batch_cache_flushed, reason).inc()
        if debug_enabled():  # a flush may happen every cycle: no line built for nothing
            log.debug(
                "batch state unusable", profile=self._fwk.profile_name, cycle=cycle, reason=reason
            )

    def _compatible(self, pod: Pod, signature: bytes | None, cycle: int) -> bool:
        """Whether the kept state applies to this pod (batchStateCompatible)."""
        if self._sorted is None or not len(self._sorted):
            return False
        if cycle != self._last_cycle + 1:
            # Another pod (maybe of another profile) was scheduled in between.
            self._flush(cycle, FLUSH_POD_SKIPPED)
            return False
        if not self._last_succeeded:
            self._flush(cycle, FLUSH_POD_FAILED)
            return False
        if pod.nominated_node_name:
            self._flush(cycle, FLUSH_POD_NOMINATED)
            return False
        if signature is None or signature != self._signature:
            self._flush(cycle, FLUSH_POD_INCOMPATIBLE)
            return False
        if self._clock.monotonic() > self._created + MAX_BATCH_AGE:
            self._flush(cycle, FLUSH_EXPIRED)
            return False
        return True

    def _refresh(self, pod: Pod, state: CycleState, cycle: int) -> bool:
        """Rescores the last chosen node if the pod still fits there (refreshHintCandidates);
        False when the state had to be flushed."""
        info = self._fwk.snapshot().get(self._last_chosen)
        if info is None:
            self._flush(cycle, FLUSH_NODE_MISSING)
            return False
        status = self._fwk.run_filter_plugins(state, pod, info)
        if status is None:
            return self._rescore(pod, state, cycle, info)
        if not status.is_rejected():
            self._flush(cycle, FLUSH_FILTER_ERROR)
            return False
        return True

    def _rescore(self, pod: Pod, state: CycleState, cycle: int, chosen: NodeInfo) -> bool:
        """Puts the last chosen node back among the kept ones with fresh scores, normalized
        again over all of them (rescoreHintedNode)."""
        start = time.perf_counter()
        self._child(metrics.batch_rescore_attempts).inc()
        try:
            assert self._sorted is not None
            rows, raw = self._sorted.remaining()
            snapshot = self._fwk.snapshot()
            table = snapshot.table
            if table is not self._sorted.table:
                # The nodes changed (added, removed or reordered): find the kept ones again.
                names = [self._sorted.table.names[r] for r in rows.tolist()]
                found = [table.index.get(name) for name in names]
                if None in found:
                    self._flush(cycle, FLUSH_NODE_MISSING)
                    return False
                rows = np.array(found, np.intp)
            infos = table.infos
            nodes = [infos[r] for r in rows.tolist()]
            nodes.append(chosen)
            all_rows = np.append(rows, table.index[chosen.name])
            rescore_state = state.clone()  # the cycle's own state must not see the rescore
            if self._fwk.run_pre_score_plugins(rescore_state, pod, nodes) is not None:
                self._flush(cycle, FLUSH_PRESCORE_ERROR)
                return False
            fresh, status = self._fwk.run_raw_score_plugins(
                rescore_state, pod, table, all_rows[-1:], [chosen]
            )
            if fresh is None or status is not None:
                self._flush(cycle, FLUSH_RESCORE_ERROR)
                return False
            # Kept nodes without a plugin's raw score count 0 for it, as upstream's.
            merged = {
                plugin: np.concatenate(
                    (raw[plugin] if plugin in raw else np.zeros(len(rows), np.int64), column)
                )
                for plugin, column in fresh.items()
            }
            totals, status = self._fwk.normalize_scores(rescore_state, pod, merged, len(nodes))
            if totals is None or status is not None:
                self._flush(cycle, FLUSH_NORMALIZE_ERROR)
                return False
            self._sorted = SortedScoredNodes(table, all_rows, merged, totals, self._rng)
            return True
        finally:
            self._child(metrics.batch_rescore_duration).observe(time.perf_counter() - start)
