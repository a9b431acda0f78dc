"""The scheduling loop: pop a pod, run the scheduling cycle, hand binding to a worker thread.

One pod per cycle on an up-to-date snapshot. On success the pod is assumed in the cache and the
next cycle starts at once while a worker binds it; on failure the pod goes back to the queue with
the plugins that rejected it, gets a PodScheduled=False condition and a FailedScheduling event.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import structlog

from scheduler import metrics
from scheduler.api.objects import Pod, replace_pod
from scheduler.api_dispatcher import POD_STATUS_PATCH, ApiDispatcher
from scheduler.backend.cache import Cache, CacheError, Snapshot
from scheduler.binding import BindingCycle
from scheduler.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import EventRecorder
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    CLEAR_NOMINATED_NODE,
    Diagnosis,
    FitError,
    NominatingInfo,
    QueuedPodInfo,
)
from scheduler.logging import debug_enabled
from scheduler.pod_status import pod_scheduled_condition_patch
from scheduler.schedule_one import (
    NoNodesAvailableError,
    ScheduleResult,
    SchedulingAlgorithm,
    SchedulingError,
)

if TYPE_CHECKING:
    from scheduler.backend.queue import SchedulingQueue

log = structlog.get_logger(__name__)

PLUGIN_METRICS_SAMPLE_PERCENT = 10
NOTE_LENGTH_LIMIT = 1024

PodLookup = Callable[[str], "Pod | None"]


class PodStatusWriter:
    """What the scheduler needs to write pod status (the client layer implements it)."""

    def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        raise NotImplementedError


def truncate_message(message: str) -> str:
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


class Scheduler:
    """Owns the loop; the cache, queue, profiles and API access are injected."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        profiles: Mapping[str, Framework],
        snapshot: Snapshot,
        api: Any,
        recorder: EventRecorder,
        pod_lookup: PodLookup,
        clock: Clock,
        percentage_of_nodes_to_score: int = 0,
        binding_workers: int = 16,
        api_workers: int = 4,
    ) -> None:
        self.cache = cache
        self.queue = queue
        self.profiles = profiles
        self.snapshot = snapshot
        self.api = api
        self.recorder = recorder
        self.pod_lookup = pod_lookup
        self.clock = clock
        self.algorithm = SchedulingAlgorithm(snapshot, percentage_of_nodes_to_score)
        self.dispatcher = ApiDispatcher(api_workers)
        self._binding_pool = ThreadPoolExecutor(binding_workers, thread_name_prefix="binding")
        self._binding = BindingCycle(self)
        self._stop = threading.Event()
        self._rng = random.Random()
        self._thread: threading.Thread | None = None

    # --- lifecycle --------------------------------------------------------------------------

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

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout)
        self._binding_pool.shutdown(wait=True, cancel_futures=False)
        for fwk in self.profiles.values():
            fwk.close()
        self.dispatcher.close(timeout)

    # --- one cycle --------------------------------------------------------------------------

    def schedule_one(self) -> bool:
        """Schedules the next pod; False once the queue is closed."""
        pinfo = self.queue.pop()
        if pinfo is None:
            return False
        pod = pinfo.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None:
            log.error("profile not found for scheduler name", pod=pod.key, name=pod.scheduler_name)
            self.queue.done(pod.uid)
            return True
        if self._skip_pod_schedule(fwk, pod):
            self.queue.done(pod.uid)
            return True
        if debug_enabled():
            log.debug("attempting to schedule pod", pod=pod.key)
        start = time.perf_counter()
        state = CycleState()
        state.record_plugin_metrics = self._rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        try:
            self._scheduling_cycle(fwk, state, pinfo, start)
        except Exception as err:  # never let one pod kill the loop
            log.exception("unexpected error in scheduling cycle", pod=pod.key)
            self.handle_scheduling_failure(
                fwk, pinfo, Status.as_error(err), None, CLEAR_NOMINATED_NODE, start
            )
        return True

    def _skip_pod_schedule(self, fwk: Framework, pod: Pod) -> bool:
        if pod.deletion_timestamp is not None:
            self.recorder.eventf(
                pod,
                None,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {pod.namespace}/{pod.name}",
            )
            return True
        return self.cache.is_assumed_pod(pod)

    def _scheduling_cycle(
        self, fwk: Framework, state: CycleState, pinfo: QueuedPodInfo, start: float
    ) -> None:
        self.cache.update_snapshot(self.snapshot)
        pod = pinfo.pod
        try:
            result = self.algorithm.schedule_pod(fwk, state, pinfo)
        except NoNodesAvailableError as err:
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
            self._observe_algorithm(start)
            self.handle_scheduling_failure(fwk, pinfo, status, None, CLEAR_NOMINATED_NODE, start)
            return
        except FitError as fit:
            nominating: NominatingInfo | None = CLEAR_NOMINATED_NODE
            update_nomination = True
            if fwk.has_post_filter_plugins():
                pf_result, pf_status = fwk.run_post_filter_plugins(
                    state, pod, fit.diagnosis.node_to_status
                )
                fit.diagnosis.post_filter_msg = pf_status.message()
                if pf_status.code == Code.ERROR:
                    log.error("PostFilter failed", pod=pod.key, status=pf_status.message())
                nominating = pf_result.nominating_info if pf_result else None
                update_nomination = not (pf_result and pf_result.plugin_owns_nomination)
            self._observe_algorithm(start)
            self.handle_scheduling_failure(
                fwk,
                pinfo,
                Status(Code.UNSCHEDULABLE),
                fit,
                nominating,
                start,
                update_nomination=update_nomination,
            )
            return
        except SchedulingError as err:
            self._observe_algorithm(start)
            log.error("error selecting node for pod", pod=pod.key, error=str(err))
            self.handle_scheduling_failure(
                fwk, pinfo, err.status, None, CLEAR_NOMINATED_NODE, start
            )
            return
        self._observe_algorithm(start)
        self._prepare_binding(fwk, state, pinfo, result, start)

    @staticmethod
    def _observe_algorithm(start: float) -> None:
        metrics.scheduling_algorithm_duration.observe(time.perf_counter() - start)

    def _prepare_binding(
        self,
        fwk: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        result: ScheduleResult,
        start: float,
    ) -> None:
        host = result.suggested_host
        assumed_pod = replace_pod(pinfo.pod, node_name=host)
        assumed = replace(pinfo, pod=assumed_pod)
        try:
            self.cache.assume_pod(assumed_pod)
        except CacheError as err:
            self.handle_scheduling_failure(
                fwk, pinfo, Status.as_error(err), None, CLEAR_NOMINATED_NODE, start
            )
            return
        self.queue.delete_nominated_pod_if_exists(assumed_pod)

        status = fwk.run_reserve_plugins_reserve(state, assumed_pod, host)
        if status is not None:
            self.unreserve_and_forget(fwk, state, assumed_pod, host)
            self._fail_with_node_status(fwk, pinfo, status, host, start)
            return

        waits, status = fwk.run_permit_plugins(state, assumed_pod, host)
        if status is not None and status.code == Code.WAIT:
            fwk.add_waiting_pod(assumed_pod, waits)
        elif status is not None:
            self.unreserve_and_forget(fwk, state, assumed_pod, host)
            self._fail_with_node_status(fwk, pinfo, status, host, start)
            return

        if debug_enabled():
            log.debug("pod assumed, binding asynchronously", pod=assumed_pod.key, node=host)
        self._binding_pool.submit(self._binding.run, fwk, state, result, assumed, start)

    def _fail_with_node_status(
        self, fwk: Framework, pinfo: QueuedPodInfo, status: Status, host: str, start: float
    ) -> None:
        """Reserve/Permit failures: a rejection reads like a FitError on that one node."""
        fit: FitError | None = None
        if status.is_rejected():
            diagnosis = Diagnosis()
            diagnosis.node_to_status.set(host, status)
            if status.plugin:
                diagnosis.unschedulable_plugins.add(status.plugin)
            fit = FitError(pinfo.pod, 1, diagnosis)
        self.handle_scheduling_failure(fwk, pinfo, status, fit, CLEAR_NOMINATED_NODE, start)

    def unreserve_and_forget(self, fwk: Framework, state: CycleState, pod: Pod, host: str) -> None:
        fwk.run_reserve_plugins_unreserve(state, pod, host)
        try:
            self.cache.forget_pod(pod)
        except CacheError as err:
            log.error("ForgetPod failed", pod=pod.key, error=str(err))

    # --- failures ---------------------------------------------------------------------------

    def handle_scheduling_failure(
        self,
        fwk: Framework,
        pinfo: QueuedPodInfo,
        status: Status,
        fit: FitError | None,
        nominating: NominatingInfo | None,
        start: float,
        *,
        update_nomination: bool = True,
    ) -> None:
        """Requeues the pod with its rejectors, records the event and the PodScheduled condition,
        and applies `nominating` unless a plugin owns the nomination (asynchronous preemption)."""
        rejected = status.is_rejected()
        reason = "Unschedulable" if rejected else "SchedulerError"
        result_label = metrics.UNSCHEDULABLE if rejected else metrics.ERROR
        elapsed = time.perf_counter() - start
        metrics.schedule_attempts.labels(result_label, fwk.profile_name).inc()
        metrics.scheduling_attempt_duration.labels(result_label, fwk.profile_name).observe(elapsed)

        pinfo = replace(pinfo, unschedulable_plugins=set(), pending_plugins=set())
        pod = pinfo.pod
        message = fit.message() if fit is not None else status.message()
        if fit is not None:
            pinfo.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            pinfo.pending_plugins = set(fit.diagnosis.pending_plugins)
            log.info("unable to schedule pod; no fit; waiting", pod=pod.key, err=message)
        elif rejected:
            log.info("unable to schedule pod; waiting", pod=pod.key, err=message)
        else:
            log.error("error scheduling pod; retrying", pod=pod.key, err=message)

        cached = self.pod_lookup(pod.key)
        requeue = False
        if cached is None:
            log.info("pod doesn't exist in informer cache", pod=pod.key)
            self.queue.done(pod.uid)
        elif cached.node_name:
            log.info("pod has been assigned to node; not requeueing", pod=pod.key)
            self.queue.done(pod.uid)
        elif cached.uid != pod.uid:
            log.info("pod was recreated while handling scheduling failure", pod=pod.key)
            self.queue.done(pod.uid)
            return
        else:
            pod = cached
            requeue = True

        if not update_nomination:
            nominating = None
        note = truncate_message(message)
        self.recorder.eventf(pod, None, "Warning", "FailedScheduling", "Scheduling", note)
        # The status patch is queued before the pod can be popped again, so the dispatcher sees
        # it before any later binding of the pod, which then drops or waits for it. A pod the
        # informer already shows bound gets no PodScheduled=False at all.
        if cached is None or not cached.node_name:
            patch = pod_scheduled_condition_patch(
                pod, reason, message, nominating, self.clock.now()
            )
            if patch is not None:
                self.dispatcher.submit(
                    POD_STATUS_PATCH, pod.uid, lambda: self.api.patch_pod_status(pod, patch)
                )
        if requeue:
            pinfo.pod = pod
            self.queue.add_unschedulable_if_not_present(pinfo, self.queue.scheduling_cycle)
        if update_nomination:
            self.queue.add_nominated_pod(pod, nominating)
