"""PreEnqueue: a pod enters activeQ (or backoffQ, when it may be popped from there) only if
every PreEnqueue plugin of its profile lets it; the first rejection gates it, and the gating
plugin is asked first next time (its events are the ones that can open the gate)."""

from __future__ import annotations

from collections.abc import Mapping
from time import perf_counter

import structlog

from scheduler.backend.queue.queue_metrics import QueueMetrics
from scheduler.framework.events import ClusterEvent
from scheduler.framework.interface import PreEnqueuePlugin
from scheduler.framework.status import Code, Status
from scheduler.framework.types import QueuedPodInfo
from scheduler.logging import debug_enabled

log = structlog.get_logger(__name__)


class PreEnqueueRunner:
    def __init__(
        self,
        plugins: Mapping[str, tuple[PreEnqueuePlugin, ...]],
        plugin_events: Mapping[str, tuple[ClusterEvent, ...]],
        queue_metrics: QueueMetrics,
    ) -> None:
        self._plugins = plugins
        self._plugin_events = plugin_events
        self._metrics = queue_metrics
        #: A profile's plugins with a gating plugin first, per (profile, gating plugin).
        self._gate_first: dict[tuple[str, str], tuple[PreEnqueuePlugin, ...]] = {}

    def run(self, pinfo: QueuedPodInfo) -> None:
        """Runs the profile's PreEnqueue plugins (the last gating plugin first); the first
        rejection gates the pod."""
        pod = pinfo.pod
        profile = pod.scheduler_name
        plugins = self._plugins.get(profile, ())
        if not plugins:
            pinfo.gating_plugin = ""
            pinfo.gating_plugin_events = ()
            return
        start = perf_counter()
        code = Code.SUCCESS
        gating = pinfo.gating_plugin
        ordered = plugins
        if gating and plugins[0].name != gating:
            ordered = self._gating_first(profile, gating, plugins)
        for plugin in ordered:
            try:
                status = plugin.pre_enqueue(pod)
            except Exception as err:
                status = Status.as_error(err, plugin.name)
            if status is not None and status.code != Code.SUCCESS:
                self._gate(plugin.name, pinfo, status)
                code = status.code
                break
        else:
            pinfo.gating_plugin = ""
            pinfo.gating_plugin_events = ()
        self._metrics.pre_enqueue_duration(code, profile, perf_counter() - start)

    def _gating_first(
        self, profile: str, gating: str, plugins: tuple[PreEnqueuePlugin, ...]
    ) -> tuple[PreEnqueuePlugin, ...]:
        key = (profile, gating)
        ordered = self._gate_first.get(key)
        if ordered is None:
            ordered = tuple(sorted(plugins, key=lambda pl: pl.name != gating))
            self._gate_first[key] = ordered
        return ordered

    def _gate(self, name: str, pinfo: QueuedPodInfo, status: Status) -> None:
        """Records plugin `name`'s rejection on the pod as its gate."""
        pod = pinfo.pod
        if name not in pinfo.unschedulable_plugins and name not in pinfo.pending_plugins:
            self._metrics.unschedulable_reason(name, pod.scheduler_name).inc()
        pinfo.unschedulable_plugins.add(name)
        if pinfo.gating_plugin != name:
            pinfo.gating_plugin = name
            pinfo.gating_plugin_events = self._plugin_events.get(name, ())
        if status.code == Code.ERROR:
            log.error("PreEnqueue plugin failed", pod=pod.key, plugin=name, err=status.message())
        elif debug_enabled():
            log.debug("PreEnqueue plugin rejected pod", pod=pod.key, plugin=name)
