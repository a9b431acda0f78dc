"""Where a pod goes next among activeQ, backoffQ and the unschedulable pool: the moves
themselves, the PreEnqueue gates on the way, and the QueueingHints that decide a move for a
cluster event or for the events seen while the pod was in flight.

No lock of its own: the SchedulingQueue calls it under its lock, and wakes pop() when a move
says a pod became poppable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import structlog

from scheduler.api.objects import Pod
from scheduler.backend.queue.backoff import BackoffQueue
from scheduler.backend.queue.heap import PodHeap
from scheduler.backend.queue.hints import QueueingHints, Strategy
from scheduler.backend.queue.in_flight import InFlightTracker
from scheduler.backend.queue.pre_enqueue import PreEnqueueRunner
from scheduler.backend.queue.queue_metrics import QueueMetrics
from scheduler.backend.queue.unschedulable import UnschedulablePool
from scheduler.clock import Clock
from scheduler.framework.events import EVENT_UNSCHEDULED_POD_UPDATE, ClusterEvent
from scheduler.framework.types import QueuedPodInfo
from scheduler.logging import debug_enabled

log = structlog.get_logger(__name__)

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"

# Pod fields that are status or bookkeeping, ignored when deciding whether an update matters
# (legacy, hints off: isPodUpdated).
_STATUS_FIELDS = frozenset(
    {"resource_version", "phase", "nominated_node_name", "start_time", "conditions"}
)


def _pod_updated(old: Pod, new: Pod) -> bool:
    """Whether anything but status/resourceVersion changed."""
    return any(
        getattr(old, f.name) != getattr(new, f.name)
        for f in dataclasses.fields(Pod)
        if f.name not in _STATUS_FIELDS
    )


class QueueMoves:
    """The moves between the SchedulingQueue's three parts; it owns none of them."""

    def __init__(
        self,
        *,
        clock: Clock,
        active: PodHeap,
        backoff: BackoffQueue,
        unschedulable: UnschedulablePool,
        in_flight: InFlightTracker,
        hints: QueueingHints,
        pre_enqueue: PreEnqueueRunner,
        queue_metrics: QueueMetrics,
        pop_from_backoff_q: bool,
        hints_enabled: bool,
    ) -> None:
        self._clock = clock
        self._active = active
        self._backoff = backoff
        self._unschedulable = unschedulable
        self._in_flight = in_flight
        self._hints = hints
        self._pre_enqueue = pre_enqueue
        self._metrics = queue_metrics
        self._pop_from_backoff_q = pop_from_backoff_q
        self._hints_enabled = hints_enabled

    def after_update(
        self, pinfo: QueuedPodInfo, old: Pod, new: Pod, events: Iterable[ClusterEvent]
    ) -> bool:
        """A pod in the unschedulable pool was updated (`pinfo` holds `new`): requeued when the
        first of `events` whose hints say so; True if it became poppable."""
        if not self._hints_enabled:
            return self._legacy_after_update(pinfo, old, new)
        for event in events:
            strategy = self._hints.worth_requeuing(pinfo, event, old, new)
            queue = self.requeue(pinfo, strategy, event.label)
            if queue != UNSCHEDULABLE:
                log.debug("pod moved because it was updated", pod=new.key, queue=queue)
                return queue == ACTIVE or self._pop_from_backoff_q
        return False

    def _legacy_after_update(self, pinfo: QueuedPodInfo, old: Pod, new: Pod) -> bool:
        """Hints off: any meaningful change retries the pod."""
        if not _pod_updated(old, new):
            self._unschedulable.add_or_update(pinfo)
            return False
        label = EVENT_UNSCHEDULED_POD_UPDATE.label
        if self._backoff.is_backing_off(pinfo):
            return self.to_backoff(pinfo, label) and self._pop_from_backoff_q
        return self.to_active(pinfo, label, from_backoff=False)

    def requeue(
        self, pinfo: QueuedPodInfo, strategy: Strategy, event: str, window: float | None = None
    ) -> str:
        """requeuePodWithQueueingStrategy: the queue the pod ended up in. `window`: the
        backoff window to judge the pod's backoff in (default: now's)."""
        # The queue the strategy names: a pod that lands there is not a new queued entity for
        # scheduler_queue_incoming_entities_total (kube-scheduler's recordIncomingEntitiesMetrics).
        if strategy == Strategy.SKIP:
            if self._unschedulable.add_or_update(pinfo):
                self._metrics.incoming(UNSCHEDULABLE, event, UNSCHEDULABLE)
            return UNSCHEDULABLE
        if strategy == Strategy.AFTER_BACKOFF:
            if self._backoff.is_backing_off(pinfo, window):
                moved = self.to_backoff(pinfo, event, BACKOFF)
                return BACKOFF if moved else UNSCHEDULABLE
            moved = self.to_active(pinfo, event, from_backoff=False, strategy_queue=BACKOFF)
            return ACTIVE if moved else UNSCHEDULABLE
        moved = self.to_active(pinfo, event, from_backoff=False, strategy_queue=ACTIVE)
        return ACTIVE if moved else UNSCHEDULABLE

    def _park_gated(self, pinfo: QueuedPodInfo, event: str, strategy_queue: str | None) -> None:
        if debug_enabled() and pinfo.pod.uid not in self._unschedulable:
            log.debug(
                "pod is gated", pod=pinfo.pod.key, plugin=pinfo.gating_plugin, cluster_event=event
            )
        pinfo.was_flushed_from_unschedulable = False
        if self._unschedulable.add_or_update(pinfo):
            self._metrics.incoming(UNSCHEDULABLE, event, strategy_queue)

    def to_active(
        self,
        pinfo: QueuedPodInfo,
        event: str,
        from_backoff: bool,
        strategy_queue: str | None = None,
    ) -> bool:
        """Into activeQ, or the unschedulable pool if a PreEnqueue plugin gates the pod (False).
        A pod leaving backoffQ passed PreEnqueue when it entered it, with pop-from-backoffQ."""
        if not (self._pop_from_backoff_q and from_backoff):
            self._pre_enqueue.run(pinfo)
        if pinfo.gated:
            self._park_gated(pinfo, event, strategy_queue)
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._clock.now()
        self._unschedulable.delete(pinfo.pod.uid)
        self._active.add_or_update(pinfo)
        self._metrics.incoming(ACTIVE, event, strategy_queue)
        return True

    def to_backoff(
        self, pinfo: QueuedPodInfo, event: str, strategy_queue: str | None = None
    ) -> bool:
        """Into backoffQ, or the unschedulable pool if gated (False)."""
        if self._pop_from_backoff_q:
            # It may be popped from backoffQ directly, so it must pass PreEnqueue first.
            self._pre_enqueue.run(pinfo)
            if pinfo.gated:
                self._park_gated(pinfo, event, strategy_queue)
                return False
        self._unschedulable.delete(pinfo.pod.uid)
        self._backoff.add(pinfo)
        self._metrics.incoming(BACKOFF, event, strategy_queue)
        return True

    def for_event(
        self,
        pods: list[QueuedPodInfo],
        event: ClusterEvent,
        old_obj: Any,
        new_obj: Any,
    ) -> bool:
        """Requeues the pods the event may help, as their gates and hints decide; True if any
        became poppable."""
        wildcard = event.is_wildcard()
        label = event.label
        # Whether the event concerns pods gated by a plugin: the same for every pod it gates.
        gate_opens: dict[str, bool] = {}
        worth_requeuing = self._hints.for_event(event, old_obj, new_obj)
        # One backoff window for the whole move: a pod's backoff is judged at the event.
        window = self._backoff.align(self._clock.now())
        activated = False
        for pinfo in pods:
            gating = pinfo.gating_plugin
            if gating and not wildcard:
                opens = gate_opens.get(gating)
                if opens is None:
                    opens = any(reg.matches(event) for reg in pinfo.gating_plugin_events)
                    gate_opens[gating] = opens
                if not opens:
                    continue
                # A gate still closed keeps the pod here whatever the hints say: kube-scheduler
                # asks them first and parks the pod again, which cost a preemptor waiting for
                # its preemption's calls a hint and a move per deletion. An open gate leaves the
                # pod as it was for the hints to decide.
                events = pinfo.gating_plugin_events
                self._pre_enqueue.run(pinfo)
                if pinfo.gated:
                    continue
                pinfo.gating_plugin, pinfo.gating_plugin_events = gating, events
            strategy = worth_requeuing(pinfo)
            if strategy is Strategy.SKIP:
                continue
            self._unschedulable.delete(pinfo.pod.uid)
            queue = self.requeue(pinfo, strategy, label, window)
            if queue == ACTIVE or (queue == BACKOFF and self._pop_from_backoff_q):
                activated = True
        return activated

    def strategy_for_in_flight_pod(self, pinfo: QueuedPodInfo) -> Strategy:
        """Replays the events recorded during the pod's cycle through its rejectors' hints."""
        if not pinfo.unschedulable_plugins and not pinfo.pending_plugins:
            return Strategy.AFTER_BACKOFF
        events = self._in_flight.events_for(pinfo.pod.uid)
        if events is None:
            log.error("in-flight pod not found in the scheduling queue", pod=pinfo.pod.key)
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for e in events:
            hint = self._hints.worth_requeuing(pinfo, e.event, e.old_obj, e.new_obj)
            if hint == Strategy.IMMEDIATELY:
                return hint
            if hint == Strategy.AFTER_BACKOFF:
                strategy = hint
                if not pinfo.pending_plugins:
                    return strategy
        return strategy
