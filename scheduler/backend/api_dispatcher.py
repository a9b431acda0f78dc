"""Runs the scheduler's writes to pods (status patches) and PodGroups (their condition) off the
scheduling loop, in order per object.

As in kube-scheduler's API dispatcher, each object (a pod's uid) has at most one call pending and
at most one running: a newer call of the same type replaces a pending one (the newest
PodScheduled condition is the only one worth sending), a more relevant call replaces a less
relevant one, and a less relevant call than the pending one is dropped. A call for an object
whose previous call still runs waits for it.

The binding takes the pod's slot with `exclusive` around the Bind plugins (on its binding
worker, so binds are not limited by this pool): a pending status patch of an earlier failed
attempt is dropped and one already running is waited for, so no stale ``PodScheduled=False``
can land after the binding. Errors are logged and counted, never raised into the loop.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

import structlog

from scheduler import metrics
from scheduler.logging import debug_enabled

log = structlog.get_logger(__name__)

Call = Callable[[], None]


@runtime_checkable
class MergeableCall(Protocol):
    """A call that folds a pending older call of the same type into itself (kube-scheduler's
    APICall.Merge), instead of simply replacing it."""

    def __call__(self) -> None: ...

    def merged_onto(self, older: Call) -> Call: ...


POD_STATUS_PATCH = "pod_status_patch"
POD_BINDING = "pod_binding"
#: A v1beta1 PodGroup's PodGroupInitiallyScheduled condition (kube-pysched's call type: kube-
#: scheduler patches it synchronously in its pod group cycle). Keyed by the PodGroup, never
#: sharing a key with a pod's calls.
POD_GROUP_STATUS_PATCH = "pod_group_status_patch"

#: kube-scheduler's APICallRelevances: a more relevant call supersedes a less relevant one.
RELEVANCE = {POD_STATUS_PATCH: 1, POD_BINDING: 2, POD_GROUP_STATUS_PATCH: 1}


class ApiDispatcher:
    def __init__(self, workers: int = 4) -> None:
        self._lock = threading.Lock()
        #: Signalled when a key becomes ready (wakes a worker) or on close.
        self._work_ready = threading.Condition(self._lock)
        #: Signalled when a key's call ends (wakes `exclusive` waiters and `wait_idle`).
        self._slot_free = threading.Condition(self._lock)
        #: Object keys whose pending call may start now (none of their calls is running).
        self._ready: deque[str] = deque()
        #: The one pending call per object key: (call type, call).
        self._pending: dict[str, tuple[str, Call]] = {}
        #: Object keys with a call running or held by `exclusive`.
        self._busy: set[str] = set()
        #: Object keys an `exclusive` caller waits for.
        self._waiting: dict[str, int] = {}
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"api-dispatcher-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, call_type: str, key: str, call: Call) -> None:
        """Queues `call` for object `key`, merged with the object's pending call by relevance."""
        with self._lock:
            if self._closed:
                return
            queued = self._pending.get(key)
            if queued is not None:
                queued_type = queued[0]
                if RELEVANCE[call_type] < RELEVANCE[queued_type]:
                    self._skipped(call_type, key, "a more relevant call is already pending")
                    return
                metrics.pending_async_api_calls.labels(queued_type).dec()
                if queued_type == call_type and isinstance(call, MergeableCall):
                    call = call.merged_onto(queued[1])
            elif key not in self._busy:
                self._ready.append(key)
            self._pending[key] = (call_type, call)
            metrics.pending_async_api_calls.labels(call_type).inc()
            self._work_ready.notify()

    @contextmanager
    def exclusive(self, call_type: str, key: str) -> Iterator[None]:
        """Holds object `key`'s slot while the caller makes its own call of `call_type`.

        A pending call of lower relevance is dropped (the caller's call supersedes it); a
        running call is waited for; no queued call for `key` starts until the block ends.
        """
        with self._lock:
            queued = self._pending.get(key)
            if queued is not None and RELEVANCE[queued[0]] < RELEVANCE[call_type]:
                self._drop_pending(key)
                self._skipped(queued[0], key, f"superseded by {call_type}")
            self._waiting[key] = self._waiting.get(key, 0) + 1
            try:
                self._slot_free.wait_for(lambda: key not in self._busy)
            finally:
                self._waiting[key] -= 1
                if not self._waiting[key]:
                    del self._waiting[key]
            self._busy.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._release(key)

    def is_waiting(self, key: str) -> bool:
        """True while an `exclusive` caller waits for `key`'s running call (tests, debugging)."""
        with self._lock:
            return key in self._waiting

    def _drop_pending(self, key: str) -> None:
        call_type, _ = self._pending.pop(key)
        metrics.pending_async_api_calls.labels(call_type).dec()
        if key not in self._busy:
            self._ready.remove(key)

    def _release(self, key: str) -> None:
        self._busy.discard(key)
        if key in self._pending:
            self._ready.append(key)
            self._work_ready.notify()
        self._slot_free.notify_all()

    @staticmethod
    def _skipped(call_type: str, key: str, why: str) -> None:
        if debug_enabled():
            log.debug("API call skipped", call_type=call_type, object=key, reason=why)

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._ready and not self._closed:
                    self._work_ready.wait()
                if not self._ready:
                    return
                key = self._ready.popleft()
                call_type, call = self._pending.pop(key)
                self._busy.add(key)
            metrics.pending_async_api_calls.labels(call_type).dec()
            start = time.perf_counter()
            result = "success"
            try:
                call()
            except Exception as err:
                result = "error"
                log.error("API call failed", call_type=call_type, object=key, error=str(err))
            finally:
                elapsed = time.perf_counter() - start
                metrics.async_api_call_execution.labels(call_type, result).inc()
                metrics.async_api_call_duration.labels(call_type, result).observe(elapsed)
                with self._lock:
                    self._release(key)

    def wait_idle(self, timeout: float) -> bool:
        """Blocks until nothing is queued or running (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._pending or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._slot_free.wait(remaining)
            return True

    def close(self, timeout: float = 5.0) -> None:
        """Finishes queued calls (up to `timeout`) and stops the workers."""
        deadline = time.monotonic() + timeout
        self.wait_idle(timeout)
        with self._lock:
            self._closed = True
            self._work_ready.notify_all()
        for thread in self._threads:
            thread.join(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
