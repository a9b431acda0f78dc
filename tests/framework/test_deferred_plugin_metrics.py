"""A sampled PostFilter (a preemption's dry run observes every Filter call) writes its plugin
durations once when it ends: none lost, none written early, other threads' written at once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from scheduler import metrics
from scheduler.framework.runtime.base import FrameworkBase
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeToStatus
from tests.plugins.default_preemption.test_counting_dry_run import (
    _harness,
    _prefiltered,
    _random_cluster_and_preemptor,
    plugin,
)


def _observations() -> Counter[tuple[str, str, str]]:
    """How many plugin durations each (plugin, extension point, status) child holds."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for family in metrics.plugin_execution_duration.collect():
        for sample in family.samples:
            if sample.name.endswith("_count"):
                labels = sample.labels
                key = (labels["plugin"], labels["extension_point"], labels["status"])
                counts[key] = int(sample.value)
    return counts


def _delta(after: Counter[Any], before: Counter[Any]) -> Counter[Any]:
    after = Counter(after)
    after.subtract(before)
    return +after


def test_a_sampled_post_filter_writes_every_observation_once_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = _harness()
    try:
        preemptor = _random_cluster_and_preemptor(h, 3)
        h.pods[preemptor.key] = preemptor
        pl = plugin(h)
        made: Counter[str] = Counter()
        observe = FrameworkBase._observe_plugin

        def counted(fwk: FrameworkBase, point: str, name: str, *rest: Any) -> None:
            made[point] += 1
            observe(fwk, point, name, *rest)

        monkeypatch.setattr(FrameworkBase, "_observe_plugin", counted)
        written_inside: list[Counter[Any]] = []
        select = pl.select_victims_on_nodes

        def watched(*args: Any) -> Any:
            before = _observations()
            found = select(*args)
            written_inside.append(_delta(_observations(), before))
            return found

        monkeypatch.setattr(pl, "select_victims_on_nodes", watched)
        state = _prefiltered(h, preemptor)
        state.record_plugin_metrics = True
        node_to_status = NodeToStatus()
        for info in h.snapshot.list():
            node_to_status.set(info.name, Status(Code.UNSCHEDULABLE, "Insufficient cpu"))
        before = _observations()
        _, status = h.fwk.run_post_filter_plugins(state, preemptor, node_to_status)
        written = _delta(_observations(), before)
        assert not status.is_error(), status
    finally:
        h.close()
    assert written_inside and all(not delta for delta in written_inside)  # none early
    assert made["Filter"] > 0
    assert sum(n for (_, point, _), n in written.items() if point == "Filter") == made["Filter"]


def test_another_threads_observations_are_written_at_once() -> None:
    h = _harness()
    try:
        fwk = h.fwk
        seen: list[Counter[Any]] = []

        def binding_worker() -> None:
            before = _observations()
            fwk._observe_plugin("Bind", "DefaultBinder", None, time.perf_counter())
            seen.append(_delta(_observations(), before))

        with fwk.plugin_observations_deferred():
            before = _observations()
            fwk._observe_plugin("Filter", "NodeResourcesFit", None, time.perf_counter())
            assert not _delta(_observations(), before)  # this thread's: held
            worker = threading.Thread(target=binding_worker)
            worker.start()
            worker.join()
        assert seen == [Counter({("DefaultBinder", "Bind", "Success"): 1})]
    finally:
        h.close()
