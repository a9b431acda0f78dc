"""The scheduler's lifecycle and loop: pop a pod, schedule it (schedule_one), repeat.

The scheduling and binding cycles and failure handling are in `schedule_one`; the node-selection
algorithm in `algorithm`. This module owns the threads: the loop, the binding workers and the
API dispatcher, and stops them in order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import structlog

from scheduler.algorithm import SchedulingAlgorithm
from scheduler.backend.api_dispatcher import ApiDispatcher
from scheduler.backend.cache import Cache, Snapshot
from scheduler.clock import Clock
from scheduler.cycle_services import CycleServices, PodLookup
from scheduler.explain.record import ExplainStore
from scheduler.framework.interface import ApiActions, EventRecorder
from scheduler.framework.runtime import Framework
from scheduler.schedule_group import GroupCycle
from scheduler.schedule_one import PodCycle, ScheduleOne

if TYPE_CHECKING:
    from scheduler.backend.queue import SchedulingQueue

log = structlog.get_logger(__name__)

#: Binding cycles in flight. kube-scheduler runs each binding cycle in a goroutine of its own, so
#: its bindings wait in the API server's queues rather than in the scheduler. With 16 (the
#: `parallelism` default this pool had) the API server ran out of work in capacity windows and
#: the control plane spent far more per pod in smaller batches: 233-329 against 482-505 pods/s
#: at 5000 nodes in the benchmark's capacity mode.
BINDING_WORKERS = 64


class Scheduler:
    """Owns the loop; the cache, queue, profiles and API access are injected."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        profiles: Mapping[str, Framework],
        snapshot: Snapshot,
        api: ApiActions,
        recorder: EventRecorder,
        pod_lookup: PodLookup,
        clock: Clock,
        percentage_of_nodes_to_score: int = 0,
        binding_workers: int = BINDING_WORKERS,
        api_workers: int = 4,
        explain: ExplainStore | None = None,
    ) -> None:
        self.queue = queue
        self.profiles = profiles
        self.dispatcher = ApiDispatcher(api_workers)
        self._binding_pool = ThreadPoolExecutor(binding_workers, thread_name_prefix="binding")
        services = CycleServices(
            cache=cache,
            queue=queue,
            snapshot=snapshot,
            algorithm=SchedulingAlgorithm(snapshot, percentage_of_nodes_to_score),
            dispatcher=self.dispatcher,
            api=api,
            recorder=recorder,
            pod_lookup=pod_lookup,
            clock=clock,
            binding_pool=self._binding_pool,
            explain=explain,
        )
        steps = PodCycle(services)
        self.schedule_one_pod = ScheduleOne(
            services, profiles, steps, group_cycle=GroupCycle(services, steps)
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Starts the queue's flush threads and the scheduling loop thread."""
        self.queue.run()
        self._thread = threading.Thread(target=self.run, name="scheduling-loop", daemon=True)
        self._thread.start()

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.schedule_one():
                    return
            except Exception:  # a bug in failure handling must not stop all scheduling
                log.exception("scheduling cycle failed; the loop goes on")

    def schedule_one(self) -> bool:
        """Schedules the next pod; False once the queue is closed."""
        pinfo = self.queue.pop()
        if pinfo is None:
            return False
        self.schedule_one_pod.schedule(pinfo)
        return True

    def halt(self) -> None:
        """Stops popping pods at once, from any thread (the loop ends after the cycle under
        way); `stop` then finishes the shutdown."""
        self._stop.set()
        self.queue.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stops the loop, lets running bindings finish, closes the plugins, drains the API
        dispatcher; all within `timeout` (a binding stuck on an unreachable API server is left
        to the process's exit, and bindings not started yet are cancelled)."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout)
        self._binding_pool.shutdown(wait=False, cancel_futures=True)
        # The executor has no bounded wait: its worker threads are joined with the deadline.
        for thread in list(self._binding_pool._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        for fwk in self.profiles.values():
            fwk.close()
        self.dispatcher.close(max(0.0, deadline - time.monotonic()))
