"""Pods held at Permit: each waits until every plugin that said Wait allows it, one rejects it,
or a plugin's timeout passes."""

from __future__ import annotations

import functools
import threading

from scheduler.api.objects import Pod
from scheduler.clock import Clock, RealClock, Timer
from scheduler.framework.status import Code, Status

MAX_PERMIT_TIMEOUT = 15 * 60.0


class WaitingPod:
    """A pod in WaitOnPermit; allow/reject may come from any thread (plugins, timers)."""

    def __init__(
        self, pod: Pod, plugin_timeouts: dict[str, float], clock: Clock | None = None
    ) -> None:
        self.pod = pod
        self._lock = threading.Lock()
        self._pending = set(plugin_timeouts)
        self._done = threading.Event()
        self._result: Status | None = None
        self._timers: list[Timer] = []
        clock = clock or RealClock()
        for plugin, timeout in plugin_timeouts.items():
            message = f"rejected due to timeout after waiting {timeout}s at plugin {plugin}"
            self._timers.append(
                clock.call_later(
                    min(timeout, MAX_PERMIT_TIMEOUT),
                    functools.partial(self.reject, plugin, message),
                )
            )

    def pending_plugins(self) -> list[str]:
        with self._lock:
            return sorted(self._pending)

    def finished(self) -> bool:
        """Allowed or rejected (a timeout included): `wait` returns at once."""
        return self._done.is_set()

    def allow(self, plugin: str) -> None:
        with self._lock:
            self._pending.discard(plugin)
            if self._pending or self._done.is_set():
                return
            self._finish(Status())

    def reject(self, plugin: str, message: str) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._finish(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    def preempt(self, plugin: str, message: str) -> bool:
        """Rejects the pod unless it already finished waiting; True when it was rejected."""
        with self._lock:
            if self._done.is_set():
                return False
            self._finish(Status(Code.UNSCHEDULABLE, message, plugin=plugin))
            return True

    def _finish(self, status: Status) -> None:
        for timer in self._timers:
            timer.cancel()
        self._result = status
        self._done.set()

    def wait(self) -> Status:
        self._done.wait()
        assert self._result is not None
        return self._result


class WaitingPods:
    """uid -> WaitingPod, shared by a profile's framework and its plugins; their Permit
    timeouts run on `clock` (a fake one in tests)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, WaitingPod] = {}
        self.clock: Clock = clock or RealClock()

    def add(self, waiting: WaitingPod) -> None:
        with self._lock:
            self._pods[waiting.pod.uid] = waiting

    def remove(self, uid: str) -> None:
        with self._lock:
            self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(uid)

    def all(self) -> list[WaitingPod]:
        with self._lock:
            return list(self._pods.values())
