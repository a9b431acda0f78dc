"""What every part of the runtime shares: the built profile, the profile's name, and the
framework metrics (cached children, since labels() is costly on hot paths)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from scheduler import metrics
from scheduler.deferred_metrics import DeferredMetrics
from scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PodNominator,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from scheduler.framework.runtime.calls import FILTER, code_label
from scheduler.framework.runtime.counting_filter import filter_form
from scheduler.framework.runtime.profile import ProfilePlugins
from scheduler.framework.status import Status


class FrameworkBase:
    """The state the extension-point runners read; `Framework` fills it in."""

    profile_name: str
    _nominator: PodNominator | None

    def __init__(self, profile_name: str) -> None:
        self.profile_name = profile_name
        self._nominator = None
        self._ext_point_timers: dict[tuple[str, str], Any] = {}
        self._plugin_timers: dict[tuple[str, str, str], Any] = {}
        #: Plugin durations observed by the thread inside `plugin_observations_deferred`.
        self._deferred_plugin_metrics = DeferredMetrics()
        self._deferring_thread: int | None = None

    def _set_profile(self, profile: ProfilePlugins) -> None:
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = profile.pre_enqueue
        self.queue_sort_plugins: list[QueueSortPlugin] = profile.queue_sort
        self.pre_filter_plugins: list[PreFilterPlugin] = profile.pre_filter
        self.filter_plugins: list[FilterPlugin] = profile.filter
        self.post_filter_plugins: list[PostFilterPlugin] = profile.post_filter
        self.pre_score_plugins: list[PreScorePlugin] = profile.pre_score
        self.score_plugins: list[ScorePlugin] = profile.score
        self.reserve_plugins: list[ReservePlugin] = profile.reserve
        self.permit_plugins: list[PermitPlugin] = profile.permit
        self.pre_bind_plugins: list[PreBindPlugin] = profile.pre_bind
        self.bind_plugins: list[BindPlugin] = profile.bind
        self.post_bind_plugins: list[PostBindPlugin] = profile.post_bind
        self.score_weights = profile.score_weights
        # Preemption dry runs call the PreFilter extensions for every pod they move.
        self._pre_filter_extensions: list[tuple[PreFilterPlugin, PreFilterExtensions]] = [
            (pl, ext) for pl in self.pre_filter_plugins if (ext := pl.pre_filter_extensions())
        ]
        #: Filter plugins with a column-at-a-time form (BatchFilterPlugin).
        self.batch_filter = {
            pl.name: callable(getattr(pl, "filter_batch", None)) for pl in self.filter_plugins
        }
        #: Each Filter plugin's counting form (CountingFilter), worked out once.
        self.filter_forms = {pl.name: filter_form(pl) for pl in self.filter_plugins}
        self._batch_score = {
            pl.name: callable(getattr(pl, "score_batch", None)) for pl in self.score_plugins
        }

    def _observe(self, point: str, status: Status | None, start: float) -> None:
        key = (point, code_label(status))
        child = self._ext_point_timers.get(key)
        if child is None:
            child = metrics.framework_extension_point_duration.labels(
                point, key[1], self.profile_name
            )
            self._ext_point_timers[key] = child
        child.observe(time.perf_counter() - start)

    def _observe_plugin(self, point: str, plugin: str, status: Status | None, start: float) -> None:
        elapsed = time.perf_counter() - start
        key = (plugin, point, code_label(status))
        child = self._plugin_timers.get(key)
        if child is None:
            child = metrics.plugin_execution_duration.labels(*key)
            self._plugin_timers[key] = child
        if self._deferring_thread == threading.get_ident():
            self._deferred_plugin_metrics.observe(child, elapsed)
        else:
            child.observe(elapsed)

    @contextmanager
    def plugin_observations_deferred(self) -> Iterator[None]:
        """The calling thread's plugin durations inside are written when it leaves (a sampled
        preemption attempt observes every Filter call of its dry run); other threads' (the
        binding workers') are written at once. The exported values are the same."""
        if self._deferring_thread is not None:  # nested, or another thread defers already
            yield
            return
        self._deferring_thread = threading.get_ident()
        try:
            with self._deferred_plugin_metrics.deferred():
                yield
        finally:
            self._deferring_thread = None

    def observe_filter_duration(self, status: Status | None, start: float) -> None:
        """Filter latency covers all nodes of a cycle, so the caller reports it."""
        self._observe(FILTER, status, start)
