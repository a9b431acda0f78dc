"""backoffQ: pods waiting out an exponential backoff before they may be retried.

Two heaps, as in kube-scheduler (KEP-5142): pods rejected by plugins, and pods that failed with
an error (no rejector plugins). Only the first may be popped early when activeQ is empty; with
SchedulerPopFromBackoffQ it is ordered by one-second expiry windows and, inside a window, like
activeQ, so the early pop takes the pod activeQ would have preferred.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from scheduler.backend.queue.heap import PodHeap
from scheduler.clock import Clock
from scheduler.framework.types import QueuedPodInfo

# Width of a backoffQ ordering window; also the backoff flush period kube-scheduler aligns to.
ORDERING_WINDOW = 1.0
# Beyond this many doublings the initial backoff certainly exceeds any max backoff.
_MAX_SHIFT = 62


def is_error_backoff(pinfo: QueuedPodInfo) -> bool:
    """A pod with no rejector plugins failed with an error, not by a plugin's verdict."""
    return not pinfo.unschedulable_plugins and not pinfo.pending_plugins


class BackoffQueue:
    """Not thread-safe: the scheduling queue calls it under its own lock."""

    __slots__ = ("_backoff", "_clock", "_errors", "_initial", "_max", "_windowed")

    def __init__(
        self,
        clock: Clock,
        initial_backoff: float,
        max_backoff: float,
        active_key: Callable[[QueuedPodInfo], Any],
        pop_from_backoff_q: bool,
    ) -> None:
        self._clock = clock
        self._initial = initial_backoff
        self._max = max_backoff
        self._windowed = pop_from_backoff_q
        if pop_from_backoff_q:
            self._backoff = PodHeap(lambda p: (self.backoff_time(p), active_key(p)))
        else:
            self._backoff = PodHeap(self.backoff_time)
        self._errors = PodHeap(self.backoff_time)

    # --- backoff arithmetic -----------------------------------------------------------------

    def align(self, t: float) -> float:
        """The start of t's ordering window (t itself when windows are off)."""
        return math.floor(t) if self._windowed else t

    def backoff_duration(self, count: int) -> float:
        """initial * 2^(count-1), capped at max; 0 for a pod never attempted."""
        if count <= 0:
            return 0.0
        shift = count - 1
        if shift >= _MAX_SHIFT or self._initial * (1 << shift) > self._max:
            return self._max
        return self._initial * (1 << shift)

    def backoff_time(self, pinfo: QueuedPodInfo) -> float:
        """When the pod's backoff ends (0.0: no backoff); computed once per failed attempt."""
        if self._max == 0:
            return 0.0
        count = pinfo.consecutive_errors_count or pinfo.unschedulable_count
        if count == 0:
            return 0.0
        if pinfo.backoff_expiration == 0.0:
            pinfo.backoff_expiration = self.align(pinfo.timestamp + self.backoff_duration(count))
        return pinfo.backoff_expiration

    def is_backing_off(self, pinfo: QueuedPodInfo, window: float | None = None) -> bool:
        """True until the pod's backoff ends; a pod expiring in the current window still waits.
        `window`: the current window when the caller already knows it (align(now))."""
        if window is None:
            window = self.align(self._clock.now())
        return self.backoff_time(pinfo) >= window

    # --- queue operations -------------------------------------------------------------------

    def add(self, pinfo: QueuedPodInfo) -> None:
        uid = pinfo.pod.uid
        if is_error_backoff(pinfo):
            self._backoff.delete(uid)
            self._errors.add_or_update(pinfo)
        else:
            self._errors.delete(uid)
            self._backoff.add_or_update(pinfo)

    def update(self, pinfo: QueuedPodInfo) -> bool:
        """Re-positions a pod whose object changed; False if it is not here."""
        uid = pinfo.pod.uid
        for heap in (self._backoff, self._errors):
            if uid in heap:
                heap.add_or_update(pinfo)
                return True
        return False

    def delete(self, uid: str) -> QueuedPodInfo | None:
        pinfo = self._backoff.delete(uid)
        return pinfo if pinfo is not None else self._errors.delete(uid)

    def get(self, uid: str) -> QueuedPodInfo | None:
        pinfo = self._backoff.get(uid)
        return pinfo if pinfo is not None else self._errors.get(uid)

    def __contains__(self, uid: str) -> bool:
        return uid in self._backoff or uid in self._errors

    def __len__(self) -> int:
        return len(self._backoff) + len(self._errors)

    def len_poppable(self) -> int:
        """Pods that may be popped before their backoff ends (never error-backoff pods)."""
        return len(self._backoff)

    def pop_early(self) -> QueuedPodInfo | None:
        """The head of the plugin-rejection heap, backoff completed or not."""
        return self._backoff.pop()

    def pop_all_completed(self) -> list[QueuedPodInfo]:
        done: list[QueuedPodInfo] = []
        for heap in (self._backoff, self._errors):
            while True:
                head = heap.peek()
                if head is None or self.is_backing_off(head):
                    break
                heap.pop()
                done.append(head)
        return done

    def pods(self) -> list[QueuedPodInfo]:
        return [*self._backoff, *self._errors]
