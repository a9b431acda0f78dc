"""QueueingHints: which cluster events may make an unschedulable pod schedulable.

Each plugin registers the events it cares about, optionally with a hint function that looks at
the change and says Queue or QueueSkip for a given pod. A pod is only retried on an event if a
plugin that rejected it registered that event and its hint says Queue.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from time import perf_counter
from typing import Any

import structlog

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.deferred_metrics import DeferredMetrics
from scheduler.framework.events import (
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
)
from scheduler.framework.types import QueuedPodInfo

log = structlog.get_logger(__name__)

HINT_QUEUE = "Queue"
HINT_QUEUE_SKIP = "QueueSkip"
HINT_ERROR = "Error"

# (plugin name, hint function or None for "always Queue")
PluginHint = tuple[str, QueueingHintFn | None]


class Strategy(enum.IntEnum):
    """Where an event sends a pod; larger is more urgent."""

    SKIP = 0  # stays in the unschedulable pool
    AFTER_BACKOFF = 1  # backoffQ if still backing off, else activeQ
    IMMEDIATELY = 2  # activeQ now (a pending plugin's wait is over)


class QueueingHints:
    """Per-profile hint tables with a per-event match cache. Not thread-safe (queue lock)."""

    __slots__ = (
        "_duration_children",
        "_hints",
        "_interest",
        "_match_cache",
        "_registered",
        "_writes",
        "plugin_events",
    )

    def __init__(
        self,
        events_per_profile: Mapping[str, Mapping[str, Sequence[ClusterEventWithHint]]],
        hints_enabled: bool,
        writes: DeferredMetrics | None = None,
    ) -> None:
        self._writes = writes if writes is not None else DeferredMetrics()
        # profile -> [(registered event, plugin, hint fn)]
        self._hints: dict[str, list[tuple[ClusterEvent, str, QueueingHintFn | None]]] = {}
        self._registered: dict[str, frozenset[str]] = {}
        plugin_events: dict[str, list[ClusterEvent]] = {}
        for profile, per_plugin in events_per_profile.items():
            table = []
            for plugin, registrations in per_plugin.items():
                for reg in registrations:
                    fn = reg.hint_fn if hints_enabled else None
                    table.append((reg.event, plugin, fn))
                    plugin_events.setdefault(plugin, []).append(reg.event)
            self._hints[profile] = table
            self._registered[profile] = frozenset(per_plugin)
        self.plugin_events: dict[str, tuple[ClusterEvent, ...]] = {
            name: tuple(events) for name, events in plugin_events.items()
        }
        self._match_cache: dict[tuple[str, ClusterEvent], list[PluginHint]] = {}
        self._interest: dict[ClusterEvent, bool] = {}
        self._duration_children: dict[tuple[str, str, str], Any] = {}

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Whether any profile's plugin registered an event matching this one."""
        cached = self._interest.get(event)
        if cached is None:
            cached = event.is_wildcard() or any(
                reg.matches(event) for table in self._hints.values() for reg, _, _ in table
            )
            self._interest[event] = cached
        return cached

    def has_profile(self, profile: str) -> bool:
        return profile in self._hints

    def registered(self, profile: str) -> frozenset[str]:
        """The profile's plugins that registered any event."""
        return self._registered[profile]

    def matching(self, profile: str, event: ClusterEvent) -> list[PluginHint]:
        """The profile's (plugin, hint) pairs whose registered event covers `event`."""
        key = (profile, event)
        hints = self._match_cache.get(key)
        if hints is None:
            hints = [(plugin, fn) for reg, plugin, fn in self._hints[profile] if reg.matches(event)]
            self._match_cache[key] = hints
        return hints

    def worth_requeuing(
        self, pinfo: QueuedPodInfo, event: ClusterEvent, old_obj: Any, new_obj: Any
    ) -> Strategy:
        """isPodWorthRequeuing: consult the hints of the plugins that rejected the pod."""
        return EventCheck(self, event, old_obj, new_obj)(pinfo)

    def for_event(self, event: ClusterEvent, old_obj: Any, new_obj: Any) -> EventCheck:
        """worth_requeuing for one event, asked for many pods (a move of the pool)."""
        return EventCheck(self, event, old_obj, new_obj)

    def hint_failed(
        self, plugin: str, pod: Pod, event: ClusterEvent, err: Exception, start: float
    ) -> bool:
        """A hint that raised: logged, timed as an Error, and taken as Queue (False)."""
        log.error(
            "QueueingHintFn returns error",
            pod=pod.key,
            plugin=plugin,
            cluster_event=event.label,
            error=repr(err),
        )
        self._writes.observe(
            self.duration_child(plugin, event.label, HINT_ERROR), perf_counter() - start
        )
        return False

    def duration_child(self, plugin: str, event_label: str, result: str) -> Any:
        """scheduler_queueing_hint_execution_duration_seconds' child for these labels."""
        key = (plugin, event_label, result)
        child = self._duration_children.get(key)
        if child is None:
            child = metrics.queueing_hint_execution_duration.labels(*key)
            self._duration_children[key] = child
        return child

    @property
    def writes(self) -> DeferredMetrics:
        return self._writes


class EventCheck:
    """isPodWorthRequeuing for one cluster event: what depends on the event alone (wildcard,
    the hints matching it per profile, their metric children) is looked up once, not for each
    pod of the pool; each hint then costs one call and one deferred metric write."""

    __slots__ = ("_event", "_hints", "_new", "_observe", "_old", "_per_profile", "_wildcard")

    def __init__(self, hints: QueueingHints, event: ClusterEvent, old_obj: Any, new_obj: Any):
        self._hints = hints
        self._event = event
        self._old = old_obj
        self._new = new_obj
        self._wildcard = event.is_wildcard()
        self._observe = hints.writes.observe
        # profile -> (its hints matching the event, the plugins that registered any event)
        self._per_profile: dict[str, tuple[list[_BoundHint], frozenset[str]] | None] = {}

    def _profile(self, profile: str) -> tuple[list[_BoundHint], frozenset[str]] | None:
        hints = self._hints
        if not hints.has_profile(profile):
            entry = None
        else:
            label = self._event.label
            bound = [
                (
                    plugin,
                    fn,
                    hints.duration_child(plugin, label, HINT_QUEUE_SKIP),
                    hints.duration_child(plugin, label, HINT_QUEUE),
                )
                for plugin, fn in hints.matching(profile, self._event)
            ]
            entry = (bound, hints.registered(profile))
        self._per_profile[profile] = entry
        return entry

    def __call__(self, pinfo: QueuedPodInfo) -> Strategy:
        unschedulable = pinfo.unschedulable_plugins
        pending = pinfo.pending_plugins
        if not unschedulable and not pending:
            return Strategy.AFTER_BACKOFF
        pod = pinfo.pod
        if self._wildcard:
            # A wildcard event about one specific pod concerns only that pod.
            new_obj = self._new
            if new_obj is not None and not (isinstance(new_obj, Pod) and new_obj.uid == pod.uid):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        profile = pod.scheduler_name
        try:
            entry = self._per_profile[profile]
        except KeyError:
            entry = self._profile(profile)
        if entry is None:
            log.error("no QueueingHint map for the pod's profile", pod=pod.key, profile=profile)
            return Strategy.AFTER_BACKOFF
        matching, registered = entry
        strategy = Strategy.SKIP
        for plugin, fn, skip_child, queue_child in matching:
            if plugin not in unschedulable and plugin not in pending:
                continue
            if fn is not None:
                start = perf_counter()
                try:
                    skip = fn(pod, self._old, self._new) == QUEUE_SKIP
                except Exception as err:
                    skip = self._hints.hint_failed(plugin, pod, self._event, err, start)
                else:
                    self._observe(skip_child if skip else queue_child, perf_counter() - start)
                if skip:
                    continue
            if plugin in pending:
                return Strategy.IMMEDIATELY
            if not pending:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
        if unschedulable <= registered and pending <= registered:
            return strategy
        # A rejector that registered no events at all is interested in every event, as
        # kube-scheduler registers all events for plugins without EnqueueExtensions.
        for plugin in (*unschedulable, *pending):
            if plugin not in registered:
                if plugin in pending:
                    return Strategy.IMMEDIATELY
                strategy = Strategy.AFTER_BACKOFF
        return strategy


# (plugin, hint fn or None, its duration children for QueueSkip and for Queue)
_BoundHint = tuple[str, QueueingHintFn | None, Any, Any]
QUEUE_SKIP = QueueingHint.QUEUE_SKIP
