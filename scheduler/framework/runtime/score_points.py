"""PreScore and Score (with NormalizeScore and the weights), batch over NodeTable rows where the
plugin has a column form."""

from __future__ import annotations

import time
from typing import cast

import numpy as np
import numpy.typing as npt
import structlog

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BatchScorePlugin,
    ScoreColumn,
)
from scheduler.framework.node_table import NodeTable
from scheduler.framework.runtime.base import FrameworkBase
from scheduler.framework.runtime.calls import (
    PRE_SCORE,
    SCORE,
    plugin_error,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo

log = structlog.get_logger(__name__)

#: Score plugin name -> its scores of the nodes, before NormalizeScore.
RawScores = dict[str, ScoreColumn]


class ScorePoints(FrameworkBase):
    def run_pre_score_plugins(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> Status | None:
        start = time.perf_counter()
        status: Status | None = None
        skip: set[str] = set()
        try:
            for pl in self.pre_score_plugins:
                try:
                    s = pl.pre_score(state, pod, nodes)
                except Exception as err:
                    s = Status.as_error(err)
                if s is not None and s.code == Code.SKIP:
                    skip.add(pl.name)
                    continue
                if s is not None and s.code != Code.SUCCESS:
                    status = plugin_error("PreScore", pl.name, s)
                    return status
            state.skip_score_plugins = skip
            return None
        finally:
            self._observe(PRE_SCORE, status, start)

    def run_score_plugins(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
        nodes: list[NodeInfo],
        raw: RawScores | None = None,
        normalized: RawScores | None = None,
    ) -> tuple[ScoreColumn | None, Status | None]:
        """Weighted total score per feasible node (same order as `rows`/`nodes`). With `raw`,
        each plugin's scores before NormalizeScore are also put there (batching keeps them to
        re-normalize when it rescores a node); with `normalized`, each plugin's scores after
        NormalizeScore, before its weight (the explanation's score table)."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            scores, status = self.run_raw_score_plugins(state, pod, table, rows, nodes)
            if scores is None:
                return None, status
            if raw is not None:
                raw.update((name, column.copy()) for name, column in scores.items())
            totals, status = self._normalize(state, pod, scores, len(nodes))
            if normalized is not None:
                normalized.update(scores)
            return totals, status
        finally:
            self._observe(SCORE, status, start)

    def run_raw_score_plugins(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
        nodes: list[NodeInfo],
    ) -> tuple[RawScores | None, Status | None]:
        """Each non-skipped Score plugin's scores of the nodes, before NormalizeScore."""
        raw: RawScores = {}
        record = state.record_plugin_metrics
        for pl in self.score_plugins:
            if pl.name in state.skip_score_plugins:
                continue
            t0 = time.perf_counter() if record else 0.0
            scores = None
            if self._batch_score[pl.name]:
                scores = cast(BatchScorePlugin, pl).score_batch(state, pod, table, rows)
            if scores is None:
                scores = np.empty(len(nodes), np.int64)
                for i, info in enumerate(nodes):
                    try:
                        value = pl.score(state, pod, info)
                    except Exception as err:
                        value = Status.as_error(err)
                    if isinstance(value, Status):
                        return None, Status(
                            Code.ERROR,
                            f"running Score plugins: plugin {pl.name!r} failed with: "
                            f"{value.message()}",
                            plugin=pl.name,
                        )
                    scores[i] = value
            if record:
                self._observe_plugin(SCORE, pl.name, None, t0)
            raw[pl.name] = scores
        return raw, None

    def normalize_scores(
        self, state: CycleState, pod: Pod, raw: RawScores, n: int
    ) -> tuple[ScoreColumn | None, Status | None]:
        """NormalizeScore and the weights over `n` nodes' raw scores (left unchanged); a plugin
        without raw scores counts 0, as kube-scheduler's NormalizeScores."""
        return self._normalize(state, pod, {k: v.copy() for k, v in raw.items()}, n)

    def _normalize(
        self, state: CycleState, pod: Pod, raw: RawScores, n: int
    ) -> tuple[ScoreColumn | None, Status | None]:
        """Normalizes `raw` in place and sums it with the weights."""
        totals: ScoreColumn = np.zeros(n, np.int64)
        for pl in self.score_plugins:
            if pl.name in state.skip_score_plugins:
                continue
            scores = raw.get(pl.name)
            if scores is None:
                scores = np.zeros(n, np.int64)
            ext = pl.score_extensions()
            if ext is not None:
                s = ext.normalize_score(state, pod, scores)
                if s is not None and s.code != Code.SUCCESS:
                    return None, Status(
                        Code.ERROR,
                        f"running Normalize on Score plugins: plugin {pl.name!r} failed with: "
                        f"{s.message()}",
                        plugin=pl.name,
                    )
            if len(scores) and (scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE):
                bad = int(scores.max() if scores.max() > MAX_NODE_SCORE else scores.min())
                return None, Status(
                    Code.ERROR,
                    f"applying score defaultWeights on Score plugins: plugin {pl.name!r} returns "
                    f"an invalid score {bad}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                    plugin=pl.name,
                )
            totals += scores * self.score_weights[pl.name]
        return totals, None
