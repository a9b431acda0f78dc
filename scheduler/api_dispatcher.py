"""Runs the scheduler's API calls (status patches, deletions) off the scheduling loop.

Calls for the same object and call type are coalesced: while a call waits, a newer one replaces
it (the newest PodScheduled condition is the only one worth sending), as kube-scheduler's API
dispatcher does. Errors are logged and counted, never raised into the loop.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import structlog

from scheduler import metrics

log = structlog.get_logger(__name__)

Call = Callable[[], None]


class ApiDispatcher:
    def __init__(self, workers: int = 4) -> None:
        self._lock = threading.Condition()
        self._order: deque[tuple[str, str]] = deque()
        self._pending: dict[tuple[str, str], Call] = {}
        self._in_flight = 0
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"api-dispatcher-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, call_type: str, key: str, call: Call) -> None:
        """Queues `call`; replaces a not-yet-started call with the same type and key."""
        with self._lock:
            if self._closed:
                return
            slot = (call_type, key)
            if slot not in self._pending:
                self._order.append(slot)
                metrics.pending_async_api_calls.labels(call_type).inc()
            self._pending[slot] = call
            self._lock.notify()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._order and not self._closed:
                    self._lock.wait()
                if not self._order:
                    return
                slot = self._order.popleft()
                call = self._pending.pop(slot)
                self._in_flight += 1
            call_type, key = slot
            metrics.pending_async_api_calls.labels(call_type).dec()
            start = time.perf_counter()
            result = "success"
            try:
                call()
            except Exception as err:
                result = "error"
                log.warning("API call failed", call_type=call_type, object=key, error=str(err))
            finally:
                elapsed = time.perf_counter() - start
                metrics.async_api_call_execution.labels(call_type, result).inc()
                metrics.async_api_call_duration.labels(call_type, result).observe(elapsed)
                with self._lock:
                    self._in_flight -= 1
                    self._lock.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Blocks until nothing is queued or running (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._order or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
            return True

    def close(self, timeout: float = 5.0) -> None:
        """Finishes queued calls (up to `timeout`) and stops the workers."""
        self.wait_idle(timeout)
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout=1.0)
