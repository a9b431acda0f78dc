"""The queue's periodic flushes on a daemon thread, in real time: finished backoffs to activeQ
every second, pods stuck in the unschedulable pool every 30 s (kube-scheduler runs both with
wait.Until)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

import structlog

from scheduler.clock import Clock

log = structlog.get_logger(__name__)


class PeriodicFlusher:
    def __init__(
        self,
        flush_backoff: Callable[[], None],
        backoff_period: float,
        flush_unschedulable: Callable[[], None],
        unschedulable_period: float,
        align_backoff_to: Clock | None,
    ) -> None:
        """`align_backoff_to`: start the backoff flushes at that clock's next second."""
        self._flush_backoff = flush_backoff
        self._backoff_period = backoff_period
        self._flush_unschedulable = flush_unschedulable
        self._unschedulable_period = unschedulable_period
        self._align = align_backoff_to
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="scheduling-queue-flush", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        now = time.monotonic()
        first_backoff = self._backoff_period
        if self._align is not None:
            wall = self._align.now()
            first_backoff = math.floor(wall) + 1.0 - wall
        next_backoff = now + first_backoff
        next_unschedulable = now + self._unschedulable_period
        while True:
            wait = min(next_backoff, next_unschedulable) - time.monotonic()
            if self._stop.wait(max(0.0, wait)):
                return
            now = time.monotonic()
            try:
                if now >= next_backoff:
                    self._flush_backoff()
                    next_backoff += self._backoff_period
                    if next_backoff < now:
                        next_backoff = now + self._backoff_period
                if now >= next_unschedulable:
                    self._flush_unschedulable()
                    next_unschedulable = now + self._unschedulable_period
            except Exception:
                log.exception("scheduling queue flush failed")
