"""Pods being scheduled right now and the cluster events that arrived meanwhile.

An event that arrives while a pod is in its scheduling cycle could be the one that makes it
schedulable; if the cycle then fails, the queue replays these events through the pod's
QueueingHints instead of parking it in the unschedulable pool and losing the event.

scheduler_inflight_events counts what is tracked, as kube-scheduler's activeQueue does: the
`PodPopped` child the pods in flight, one child per event label the events kept. Children are
cached (per label) and each event holds its own, so the hot path is one inc/dec each.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from typing import Any

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.framework.events import ClusterEvent


@dataclass(frozen=True, slots=True)
class InFlightEvent:
    event: ClusterEvent
    old_obj: Any
    new_obj: Any
    seq: int
    gauge: Any  # this event's scheduler_inflight_events child


_event_gauges: dict[str, Any] = {}


def _event_gauge(label: str) -> Any:
    gauge = _event_gauges.get(label)
    if gauge is None:
        gauge = _event_gauges[label] = metrics.inflight_events.labels(label)
    return gauge


_pods_gauge = metrics.inflight_events.labels(metrics.POD_POPPED_IN_FLIGHT_EVENT)


class InFlightTracker:
    """Pods and events share one sequence, so a pod sees exactly the events recorded after it
    was popped. Events older than the oldest in-flight pod are dropped. Not thread-safe."""

    __slots__ = ("_events", "_pods", "_seq")

    def __init__(self) -> None:
        # uid -> (sequence number at pop, pod). Insertion order == pop order, so the first
        # entry is always the oldest in-flight pod.
        self._pods: dict[str, tuple[int, Pod]] = {}
        self._events: deque[InFlightEvent] = deque()
        self._seq = itertools.count()

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def add_pod(self, pod: Pod) -> bool:
        """Marks the pod in flight; False if it already was (a bookkeeping bug upstream)."""
        if pod.uid in self._pods:
            return False
        self._pods[pod.uid] = (next(self._seq), pod)
        _pods_gauge.inc()
        return True

    def add_event_if_any_in_flight(self, event: ClusterEvent, old_obj: Any, new_obj: Any) -> bool:
        if not self._pods:
            return False
        gauge = _event_gauge(event.label)
        self._events.append(InFlightEvent(event, old_obj, new_obj, next(self._seq), gauge))
        gauge.inc()
        return True

    def add_events_if_pod_in_flight(
        self, old_pod: Pod | None, new_pod: Pod, events: list[ClusterEvent]
    ) -> bool:
        if new_pod.uid not in self._pods:
            return False
        for event in events:
            gauge = _event_gauge(event.label)
            self._events.append(InFlightEvent(event, old_pod, new_pod, next(self._seq), gauge))
            gauge.inc()
        return True

    def events_for(self, uid: str) -> list[InFlightEvent] | None:
        """Events recorded since the pod was popped; None if it is not in flight."""
        entry = self._pods.get(uid)
        if entry is None:
            return None
        since = entry[0]
        return [e for e in self._events if e.seq > since]

    def done(self, uid: str) -> None:
        if self._pods.pop(uid, None) is None:
            return
        _pods_gauge.dec()
        events = self._events
        if not self._pods:
            self._drop_events()
            return
        oldest = next(iter(self._pods.values()))[0]
        while events and events[0].seq < oldest:
            events.popleft().gauge.dec()

    def _drop_events(self) -> None:
        for event in self._events:
            event.gauge.dec()
        self._events.clear()

    def pods(self) -> list[Pod]:
        return [pod for _, pod in self._pods.values()]

    def event_count(self) -> int:
        return len(self._events)

    def clear(self) -> None:
        _pods_gauge.dec(len(self._pods))
        self._pods.clear()
        self._drop_events()
