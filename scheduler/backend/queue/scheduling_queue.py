"""kube-scheduler's PriorityQueue: activeQ, backoffQ and the unschedulable pool.

A synchronous state machine behind one lock, with time from an injected Clock so every rule can
be unit-tested. The scheduling loop blocks in pop(); informer handlers feed add/update/delete and
cluster events; run() starts the periodic flushes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.backend.queue.backoff import BackoffQueue
from scheduler.backend.queue.flusher import PeriodicFlusher
from scheduler.backend.queue.heap import LessFn, PodHeap, SortKeyFn, active_sort_key
from scheduler.backend.queue.hints import QueueingHints, Strategy
from scheduler.backend.queue.in_flight import InFlightTracker
from scheduler.backend.queue.moves import ACTIVE, BACKOFF, UNSCHEDULABLE, QueueMoves
from scheduler.backend.queue.nominator import Nominator
from scheduler.backend.queue.pre_enqueue import PreEnqueueRunner
from scheduler.backend.queue.queue_metrics import QueueMetrics
from scheduler.backend.queue.unschedulable import UnschedulablePool
from scheduler.clock import Clock
from scheduler.features import FeatureGates
from scheduler.framework.events import (
    BACKOFF_COMPLETE,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    FORCE_ACTIVATE,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    pod_scheduling_properties_change,
)
from scheduler.framework.interface import PreEnqueuePlugin
from scheduler.framework.types import NominatingInfo, QueuedPodInfo
from scheduler.logging import debug_enabled

log = structlog.get_logger(__name__)

PreEnqueueCheck = Callable[[Pod], bool]

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0

_EVENT_ASSIGNED_POD_SCALE_DOWN = ClusterEvent(
    EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN
)


@dataclass
class QueueProfile:
    """What the queue needs from one scheduler profile (schedulerName)."""

    pre_enqueue: Sequence[PreEnqueuePlugin]
    events_to_register: Mapping[str, Sequence[ClusterEventWithHint]]
    # The profile's pod signer (Framework.sign_pod), for opportunistic batching.
    sign_pod: Callable[[Pod], bytes | None] | None = None


class SchedulingQueue:
    """Thread-safe; every public method takes the queue lock."""

    def __init__(
        self,
        *,
        clock: Clock,
        less: LessFn | None = None,
        sort_key: SortKeyFn | None = None,
        profiles: Mapping[str, QueueProfile],
        features: FeatureGates,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable_pods_duration: float = (
            DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION
        ),
        backoff_flush_period: float = 1.0,
        unschedulable_flush_period: float = 30.0,
    ) -> None:
        self._clock = clock
        self._hints_enabled = features.enabled("SchedulerQueueingHints")
        self._pop_from_backoff_q = features.enabled("SchedulerPopFromBackoffQ")
        self._signers: dict[str, Callable[[Pod], bytes | None]] = {}
        if features.enabled("OpportunisticBatching"):
            self._signers = {n: p.sign_pod for n, p in profiles.items() if p.sign_pod is not None}
        self._max_in_unschedulable = pod_max_in_unschedulable_pods_duration
        self._backoff_flush_period = backoff_flush_period
        self._unschedulable_flush_period = unschedulable_flush_period

        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        active_key = active_sort_key(less, sort_key)
        self._active_key = active_key
        self._active = PodHeap(active_key)
        self._backoff = BackoffQueue(
            clock, pod_initial_backoff, pod_max_backoff, active_key, self._pop_from_backoff_q
        )
        self._unschedulable = UnschedulablePool()
        self._in_flight = InFlightTracker()
        self._flush_timestamps: dict[str, float] = {}
        self._cycle = 0
        self._move_request_cycle = -1
        self._closed = False

        self._metrics = QueueMetrics()
        self._hints = QueueingHints(
            {name: p.events_to_register for name, p in profiles.items()},
            self._hints_enabled,
            self._metrics.writes,
        )
        self._pre_enqueue = PreEnqueueRunner(
            {name: tuple(p.pre_enqueue) for name, p in profiles.items()},
            self._hints.plugin_events,
            self._metrics,
        )
        self._moves = QueueMoves(
            clock=clock,
            active=self._active,
            backoff=self._backoff,
            unschedulable=self._unschedulable,
            in_flight=self._in_flight,
            hints=self._hints,
            pre_enqueue=self._pre_enqueue,
            queue_metrics=self._metrics,
            pop_from_backoff_q=self._pop_from_backoff_q,
            hints_enabled=self._hints_enabled,
        )
        self._nominator = Nominator()

        self._flusher: PeriodicFlusher | None = None

        self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    # --- nominator ---------------------------------------------------------------------------

    @property
    def nominator(self) -> Nominator:
        return self._nominator

    def add_nominated_pod(
        self, pod: Pod, nominating_info: NominatingInfo | str | None = None
    ) -> None:
        self._nominator.add_nominated_pod(pod, nominating_info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self._nominator.delete_nominated_pod_if_exists(pod)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self._nominator.nominated_pods_for_node(node_name)

    def nominated_node_names(self) -> set[str]:
        return self._nominator.nominated_node_names()

    def nominated_pods_by_node(self) -> Mapping[str, Sequence[Pod]]:
        return self._nominator.nominated_pods_by_node()

    # --- entry points from informers ---------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new unscheduled pod: activeQ, or the unschedulable pool if a PreEnqueue gates it."""
        with self._lock:
            self._add_locked(pod)
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def _sign(self, pod: Pod) -> bytes | None:
        """The pod's signature when OpportunisticBatching is on (signed once per add or
        update, not per cycle, as kube-scheduler's queue does)."""
        signer = self._signers.get(pod.scheduler_name)
        return signer(pod) if signer is not None else None

    def _add_locked(self, pod: Pod) -> None:
        pinfo = QueuedPodInfo(pod=pod, timestamp=self._clock.now(), pod_signature=self._sign(pod))
        self._nominator.add_nominated_pod(pod, None)
        if self._moves.to_active(pinfo, EVENT_UNSCHEDULED_POD_ADD.label, from_backoff=False):
            self._cond.notify_all()

    def update(self, old: Pod, new: Pod) -> None:
        """An update of an unscheduled pod: refresh it where it waits, maybe requeue it."""
        with self._lock:
            self._update_locked(old, new)
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def _update_locked(self, old: Pod, new: Pod) -> None:
        uid = new.uid
        events = pod_scheduling_properties_change(new, old, is_target_pod=True)
        if uid in self._in_flight:
            # It is being scheduled; the events are replayed if the attempt fails.
            if self._hints_enabled:
                self._in_flight.add_events_if_pod_in_flight(old, new, events)
            return
        pinfo = self._active.get(uid)
        if pinfo is not None:
            pinfo.pod = new
            pinfo.pod_signature = self._sign(new)
            self._active.add_or_update(pinfo)
            self._nominator.update_nominated_pod(old, new)
            return
        pinfo = self._backoff.get(uid)
        if pinfo is not None:
            pinfo.pod = new
            pinfo.pod_signature = self._sign(new)
            self._backoff.update(pinfo)
            self._nominator.update_nominated_pod(old, new)
            return
        pinfo = self._unschedulable.get(uid)
        if pinfo is None:
            self._add_locked(new)
            return
        pinfo.pod = new
        pinfo.pod_signature = self._sign(new)
        self._nominator.update_nominated_pod(old, new)
        if self._moves.after_update(pinfo, old, new, events):
            self._cond.notify_all()

    def delete(self, pod: Pod) -> None:
        """The pod is gone: remove it from every queue and from the nominator."""
        with self._lock:
            self._nominator.delete_nominated_pod_if_exists(pod)
            uid = pod.uid
            self._flush_timestamps.pop(uid, None)
            pinfo = self._active.delete(uid)
            if pinfo is None:
                pinfo = self._backoff.delete(uid)
            if pinfo is None:
                pinfo = self._unschedulable.delete(uid)
            if pinfo is not None:
                self._metrics.forget_unschedulable_reasons(pinfo)
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def activate(self, pods: Iterable[Pod]) -> None:
        """Moves the pods from the unschedulable pool or backoffQ straight to activeQ."""
        with self._lock:
            activated = False
            for pod in pods:
                uid = pod.uid
                from_backoff = False
                pinfo = self._unschedulable.get(uid)
                if pinfo is None:
                    pinfo = self._backoff.delete(uid)
                    from_backoff = pinfo is not None
                if pinfo is None:
                    if self._hints_enabled:
                        self._in_flight.add_events_if_pod_in_flight(
                            None, pod, [EVENT_FORCE_ACTIVATE]
                        )
                    continue
                if self._moves.to_active(pinfo, FORCE_ACTIVATE, from_backoff):
                    activated = True
            if activated:
                self._cond.notify_all()
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    # --- scheduling loop ---------------------------------------------------------------------

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """Blocks until a pod is available; None once the queue is closed (or on timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                while not self._closed and not (
                    self._active or (self._pop_from_backoff_q and self._backoff.len_poppable())
                ):
                    if deadline is None:
                        self._cond.wait()
                        continue
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    self._cond.wait(remaining)
                if self._closed:
                    return None
                pinfo = self._active.pop()
                if pinfo is None:
                    pinfo = self._backoff.pop_early()
                    if pinfo is None:
                        continue
                    self._metrics.incoming(ACTIVE, POP_FROM_BACKOFF_Q)
                started = self._start_attempt(pinfo)
                self._metrics.set_pending(self._active, self._backoff, self._unschedulable)
                if started:
                    return pinfo

    def _start_attempt(self, pinfo: QueuedPodInfo) -> bool:
        """A pod leaves the queue for a scheduling attempt (pop, take_pod_group): one more
        attempt, in flight, a cycle of its own. False (and the pod discarded) if it was in
        flight already."""
        pinfo.attempts += 1
        if not self._in_flight.add_pod(pinfo.pod):
            log.error(
                "the same pod is tracked in multiple places; discarding it", pod=pinfo.pod.key
            )
            return False
        self._cycle += 1
        self._metrics.forget_unschedulable_reasons(pinfo)
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._clock.now()
        return True

    def take_pod_group(self, uids: Iterable[str]) -> list[QueuedPodInfo]:
        """Takes the listed pods (a group's pending members) out of activeQ, backoffQ and the
        unschedulable pool in one step and marks each in flight as `pop` does (one scheduling
        cycle each), so `done` and `add_unschedulable_if_not_present` work per pod unchanged.
        Pods the queue does not hold (in flight, bound, unknown) are left out, and so are gated
        ones: a gated pod's PreEnqueue runs again first, since a hold that depended on its
        siblings (too few of them when it arrived) may be over. In queue order."""
        with self._lock:
            taken: list[QueuedPodInfo] = []
            for uid in uids:
                if uid in self._in_flight:
                    continue
                pinfo = self._active.delete(uid)
                if pinfo is None:
                    pinfo = self._backoff.delete(uid)
                if pinfo is None:
                    pinfo = self._unschedulable.get(uid)
                    if pinfo is None:
                        continue
                    if pinfo.gated:
                        self._pre_enqueue.run(pinfo)
                        if pinfo.gated:
                            self._unschedulable.add_or_update(pinfo)
                            continue
                    self._unschedulable.delete(uid)
                taken.append(pinfo)
            taken.sort(key=self._active_key)
            taken = [pinfo for pinfo in taken if self._start_attempt(pinfo)]
            if taken:
                self._metrics.set_pending(self._active, self._backoff, self._unschedulable)
            return taken

    def done(self, uid: str) -> None:
        """The pod's scheduling attempt is over; forget the events kept for it."""
        with self._lock:
            self._in_flight.done(uid)

    @property
    def scheduling_cycle(self) -> int:
        with self._lock:
            return self._cycle

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, scheduling_cycle: int) -> bool:
        """Requeues a pod whose attempt failed; False (logged) if it is already queued.

        Events seen during the attempt decide whether it waits in the unschedulable pool or
        goes to backoffQ/activeQ right away. Ends the pod's in-flight tracking either way.
        """
        with self._lock:
            try:
                return self._add_unschedulable_locked(pinfo, scheduling_cycle)
            finally:
                self._in_flight.done(pinfo.pod.uid)
                self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def _add_unschedulable_locked(self, pinfo: QueuedPodInfo, scheduling_cycle: int) -> bool:
        pod = pinfo.pod
        uid = pod.uid
        for where, present in (
            ("unschedulable pool", uid in self._unschedulable),
            ("active queue", uid in self._active),
            ("backoff queue", uid in self._backoff),
        ):
            if present:
                log.error(f"pod is already present in the {where}", pod=pod.key)
                return False
        # The failure handler may requeue a newer version of the pod than its nomination holds.
        self._nominator.refresh(pod)
        rejectors = pinfo.unschedulable_plugins | pinfo.pending_plugins
        if rejectors:
            pinfo.unschedulable_count += 1
            pinfo.consecutive_errors_count = 0
        else:
            pinfo.consecutive_errors_count += 1
        pinfo.timestamp = self._clock.now()
        pinfo.backoff_expiration = 0.0
        pinfo.was_flushed_from_unschedulable = False
        self._flush_timestamps.pop(uid, None)
        for plugin in rejectors:
            self._metrics.unschedulable_reason(plugin, pod.scheduler_name).inc()

        if self._hints_enabled:
            strategy = self._moves.strategy_for_in_flight_pod(pinfo)
        elif self._move_request_cycle >= scheduling_cycle or not rejectors:
            strategy = Strategy.AFTER_BACKOFF
        else:
            strategy = Strategy.SKIP
        queue = self._moves.requeue(pinfo, strategy, SCHEDULE_ATTEMPT_FAILURE)
        if debug_enabled():
            log.debug(
                "pod moved to an internal scheduling queue",
                pod=pod.key,
                queue=queue,
                cycle=scheduling_cycle,
                hint=strategy.name,
                unschedulable_plugins=sorted(rejectors),
            )
        if queue == ACTIVE or (queue == BACKOFF and self._pop_from_backoff_q):
            self._cond.notify_all()
        return True

    # --- cluster events ----------------------------------------------------------------------

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old_obj: Any = None,
        new_obj: Any = None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> None:
        """Retries the unschedulable pods this event may help, as their hints decide."""
        with self._lock:
            if not self._hints.is_event_of_interest(event):
                return
            pods = [p for p in self._unschedulable if pre_check is None or pre_check(p.pod)]
            self._move_pods(pods, event, old_obj, new_obj)
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def assigned_pod_added(self, pod: Pod) -> None:
        with self._lock:
            if self._hints_enabled:
                self.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_ADD, None, pod)
                return
            self._move_pods(self._pods_with_affinity(), EVENT_ASSIGNED_POD_ADD, None, pod)
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent) -> None:
        with self._lock:
            if self._hints_enabled or _EVENT_ASSIGNED_POD_SCALE_DOWN.matches(event):
                self.move_all_to_active_or_backoff_queue(event, old, new)
                return
            self._move_pods(self._pods_with_affinity(), event, old, new)
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def _pods_with_affinity(self) -> list[QueuedPodInfo]:
        """Legacy pre-filter for assigned-pod events: only pods with inter-pod (anti-)affinity
        can be helped by another pod appearing. Coarser than matching each term."""
        return [p for p in self._unschedulable if p.pod.pod_affinity]

    def _move_pods(
        self, pods: list[QueuedPodInfo], event: ClusterEvent, old_obj: Any, new_obj: Any
    ) -> None:
        if not self._hints.is_event_of_interest(event):
            return
        # The pods' metric writes are made once per label child when the loop ends.
        with self._metrics.writes.deferred():
            activated = self._moves.for_event(pods, event, old_obj, new_obj)
        if self._hints_enabled:
            self._in_flight.add_event_if_any_in_flight(event, old_obj, new_obj)
        else:
            self._move_request_cycle = self._cycle
        if activated:
            self._cond.notify_all()

    # --- flushes -----------------------------------------------------------------------------

    def flush_backoff_q_completed(self) -> None:
        """Moves pods whose backoff has ended to activeQ."""
        with self._lock:
            activated = False
            for pinfo in self._backoff.pop_all_completed():
                if self._moves.to_active(pinfo, BACKOFF_COMPLETE, from_backoff=True):
                    activated = True
            if activated:
                self._cond.notify_all()
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def flush_unschedulable_pods_leftover(self) -> None:
        """Retries pods that waited longer than pod_max_in_unschedulable_pods_duration."""
        with self._lock:
            now = self._clock.now()
            to_move = []
            for pinfo in self._unschedulable:
                uid = pinfo.pod.uid
                last = max(pinfo.timestamp, self._flush_timestamps.get(uid, 0.0))
                if now - last > self._max_in_unschedulable:
                    pinfo.was_flushed_from_unschedulable = True
                    self._flush_timestamps[uid] = now
                    to_move.append(pinfo)
            if to_move:
                self._move_pods(to_move, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
            self._metrics.set_pending(self._active, self._backoff, self._unschedulable)

    def run(self) -> None:
        """Starts the daemon thread that runs both flushes periodically (real time)."""
        with self._lock:
            if self._flusher is not None or self._closed:
                return
            # With pop-from-backoffQ whole backoffQ ordering windows are flushed: the backoff
            # flush starts at the next second boundary.
            self._flusher = PeriodicFlusher(
                self.flush_backoff_q_completed,
                self._backoff_flush_period,
                self.flush_unschedulable_pods_leftover,
                self._unschedulable_flush_period,
                self._clock if self._pop_from_backoff_q else None,
            )
            self._flusher.start()

    def close(self) -> None:
        """Stops the flushes and wakes every blocked pop(), which then returns None."""
        with self._lock:
            self._closed = True
            self._in_flight.clear()
            self._cond.notify_all()
            flusher = self._flusher
        if flusher is not None:
            flusher.stop()

    # --- lookups -----------------------------------------------------------------------------

    def _find(self, uid: str) -> QueuedPodInfo | None:
        pinfo = self._active.get(uid)
        if pinfo is None:
            pinfo = self._backoff.get(uid)
        if pinfo is None:
            pinfo = self._unschedulable.get(uid)
        return pinfo

    def get_pod_info(self, uid: str) -> QueuedPodInfo | None:
        """The pod's entry in activeQ, backoffQ or the unschedulable pool (not in-flight)."""
        with self._lock:
            return self._find(uid)

    def contains(self, uid: str) -> bool:
        with self._lock:
            return self._find(uid) is not None

    def where(self, uid: str) -> str | None:
        """Which queue holds the pod: active, backoff, unschedulable, gated or None."""
        with self._lock:
            if uid in self._active:
                return ACTIVE
            if uid in self._backoff:
                return BACKOFF
            pinfo = self._unschedulable.get(uid)
            if pinfo is not None:
                return metrics.GATED_Q if pinfo.gated else UNSCHEDULABLE
            return None

    def active_len(self) -> int:
        with self._lock:
            return len(self._active)

    def backoff_len(self) -> int:
        with self._lock:
            return len(self._backoff)

    def unschedulable_len(self) -> int:
        """Pods in the unschedulable pool, gated ones included."""
        with self._lock:
            return len(self._unschedulable)

    def gated_len(self) -> int:
        with self._lock:
            return self._unschedulable.gated_count

    def in_flight_pods(self) -> list[Pod]:
        with self._lock:
            return self._in_flight.pods()

    def in_flight_event_count(self) -> int:
        with self._lock:
            return self._in_flight.event_count()

    def pending_pods(self) -> tuple[list[Pod], str]:
        """Every queued pod (not in-flight) and a summary like kube-scheduler's PendingPods."""
        with self._lock:
            active = [p.pod for p in self._active]
            backoff = [p.pod for p in self._backoff.pods()]
            unschedulable = [p.pod for p in self._unschedulable]
            summary = (
                f"activeQ:{len(active)}; backoffQ:{len(backoff)}; "
                f"unschedulableEntities:{len(unschedulable)}"
            )
            return active + backoff + unschedulable, summary
