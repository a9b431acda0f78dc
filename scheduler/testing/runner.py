"""Runs one plugin's scheduling-cycle extension points on a snapshot, as the runtime would.

    run = run_plugin(plugin, pod, make_snapshot(nodes))
    assert run.feasible == ["n2"]
    assert run.scores == {"n2": 100}

Order and skips follow the framework runtime: PreFilter (a Skip status skips Filter, a
`PreFilterResult` narrows the nodes Filter sees), Filter per node, then on the nodes that passed
PreScore (a Skip skips Score), Score and NormalizeScore. A plugin that also has a batch form
(`filter_batch`, `score_batch`) is checked against its per-node form, because the scheduler
runs the batch form where one exists: a test of `filter` alone would not test what runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scheduler.api.objects import Pod
from scheduler.backend.cache import Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    BatchFilterPlugin,
    BatchScorePlugin,
    FilterPlugin,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from scheduler.framework.status import Status, is_success
from scheduler.framework.types import NodeInfo, PreFilterResult


@dataclass
class PluginRun:
    """What each extension point returned; a point that did not run leaves its defaults.

    `filter_statuses` has an entry (None = success) for every node Filter ran on;
    `feasible` lists the nodes that passed, in snapshot order. `scores` are after
    NormalizeScore (unweighted), `raw_scores` before it.
    """

    state: CycleState
    pre_filter_result: PreFilterResult | None = None
    pre_filter_status: Status | None = None
    filter_statuses: dict[str, Status | None] = field(default_factory=dict)
    feasible: list[str] = field(default_factory=list)
    pre_score_status: Status | None = None
    score_status: Status | None = None
    raw_scores: dict[str, int] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)

    def rejections(self) -> dict[str, str]:
        """Node -> Filter's message, for the nodes Filter rejected."""
        return {
            name: status.message()
            for name, status in self.filter_statuses.items()
            if status is not None and not status.is_success()
        }


def run_plugin(
    plugin: Plugin, pod: Pod, snapshot: Snapshot, *, state: CycleState | None = None
) -> PluginRun:
    """Runs PreFilter, Filter, PreScore, Score and NormalizeScore of `plugin` for `pod`.

    Extension points the plugin does not implement are passed over (every node passes a
    missing Filter). Raises AssertionError when a batch form disagrees with the per-node form.
    """
    _check_companions(plugin)
    run = PluginRun(state if state is not None else CycleState())
    nodes = snapshot.list()
    skip_filter = False
    if isinstance(plugin, PreFilterPlugin):
        run.pre_filter_result, run.pre_filter_status = plugin.pre_filter(run.state, pod, nodes)
        if run.pre_filter_status is not None and run.pre_filter_status.is_skip():
            skip_filter = True
        elif not is_success(run.pre_filter_status):
            return run
        if run.pre_filter_result is not None and run.pre_filter_result.node_names is not None:
            allowed = run.pre_filter_result.node_names
            nodes = [info for info in nodes if info.name in allowed]
    if isinstance(plugin, FilterPlugin) and not skip_filter:
        for info in nodes:
            run.filter_statuses[info.name] = plugin.filter(run.state, pod, info)
        if isinstance(plugin, BatchFilterPlugin):
            _check_filter_batch(plugin, run, pod, snapshot)
        nodes = [info for info in nodes if is_success(run.filter_statuses[info.name])]
    run.feasible = [info.name for info in nodes]
    if not nodes:
        return run
    if isinstance(plugin, PreScorePlugin):
        run.pre_score_status = plugin.pre_score(run.state, pod, nodes)
        if run.pre_score_status is not None and run.pre_score_status.is_skip():
            return run
        if not is_success(run.pre_score_status):
            return run
    if isinstance(plugin, ScorePlugin):
        _score(plugin, run, pod, snapshot, nodes)
    return run


def _check_companions(plugin: Plugin) -> None:
    """The runtime calls `pre_filter_extensions()`/`score_extensions()` of every PreFilter/Score
    plugin; a plugin without them would fail there, so it fails here first."""
    for method, companion in (
        ("pre_filter", "pre_filter_extensions"),
        ("score", "score_extensions"),
    ):
        if callable(getattr(plugin, method, None)) and not callable(
            getattr(plugin, companion, None)
        ):
            raise AssertionError(f"{plugin.name}: has {method}() but no {companion}()")


def _check_filter_batch(
    plugin: BatchFilterPlugin, run: PluginRun, pod: Pod, snapshot: Snapshot
) -> None:
    column = plugin.filter_batch(run.state, pod, snapshot.table)
    if column is None:
        return
    for name, status in run.filter_statuses.items():
        batch = bool(column[snapshot.table.index[name]])
        if batch != is_success(status):
            raise AssertionError(
                f"{plugin.name}: filter_batch says {batch} for node {name!r}, filter says {status}"
            )


def _score(
    plugin: ScorePlugin, run: PluginRun, pod: Pod, snapshot: Snapshot, nodes: list[NodeInfo]
) -> None:
    raw: list[int] = []
    for info in nodes:
        result = plugin.score(run.state, pod, info)
        if isinstance(result, Status):
            run.score_status = result
            return
        raw.append(result)
    run.raw_scores = {info.name: score for info, score in zip(nodes, raw, strict=True)}
    if isinstance(plugin, BatchScorePlugin):
        rows = np.array([snapshot.table.index[info.name] for info in nodes], np.intp)
        column = plugin.score_batch(run.state, pod, snapshot.table, rows)
        if column is not None and [int(s) for s in column] != raw:
            raise AssertionError(
                f"{plugin.name}: score_batch gives {[int(s) for s in column]}, score gives {raw}"
            )
    scores = np.array(raw, np.int64)
    extensions = plugin.score_extensions()
    if extensions is not None:
        status = extensions.normalize_score(run.state, pod, scores)
        if not is_success(status):
            run.score_status = status
            return
    run.scores = {info.name: int(s) for info, s in zip(nodes, scores, strict=True)}
