"""The binding cycle, run on a worker thread per pod: WaitOnPermit, PreBind, Bind, PostBind.

Any failure unreserves and forgets the assumed pod, tells the queue an assigned pod went away
(its resources are free again) and hands the pod to the scheduler's failure handler.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import structlog

from scheduler import metrics
from scheduler.api_dispatcher import POD_BINDING
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import EVENT_ASSIGNED_POD_DELETE
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status
from scheduler.framework.types import CLEAR_NOMINATED_NODE, Diagnosis, FitError, QueuedPodInfo

if TYPE_CHECKING:
    from scheduler.schedule_one import ScheduleResult
    from scheduler.scheduler import Scheduler

log = structlog.get_logger(__name__)

BINDING = "binding"


def attempts_label(attempts: int) -> str:
    return "15+" if attempts >= 15 else str(attempts)


class BindingCycle:
    def __init__(self, scheduler: Scheduler) -> None:
        self.sched = scheduler
        self._running = metrics.goroutines.labels(BINDING)

    def run(
        self,
        fwk: Framework,
        state: CycleState,
        result: ScheduleResult,
        assumed: QueuedPodInfo,
        start: float,
    ) -> None:
        self._running.inc()
        try:
            status, fit = self._bind(fwk, state, result, assumed, start)
            if status is not None:
                self._handle_error(fwk, state, result, assumed, status, fit, start)
        except Exception as err:
            log.exception("unexpected error in binding cycle", pod=assumed.pod.key)
            self._handle_error(fwk, state, result, assumed, Status.as_error(err), None, start)
        finally:
            self._running.dec()

    def _bind(
        self,
        fwk: Framework,
        state: CycleState,
        result: ScheduleResult,
        assumed: QueuedPodInfo,
        start: float,
    ) -> tuple[Status | None, FitError | None]:
        pod = assumed.pod
        host = result.suggested_host
        status = fwk.wait_on_permit(pod)
        if status is not None:
            fit = None
            if status.is_rejected():
                diagnosis = Diagnosis()
                diagnosis.node_to_status.set(host, status)
                if status.plugin:
                    diagnosis.unschedulable_plugins.add(status.plugin)
                fit = FitError(pod, 1, diagnosis)
            return status, fit
        # From here on a failure is an error to retry with backoff, not "unschedulable".
        self.sched.queue.done(pod.uid)
        status = fwk.run_pre_bind_plugins(state, pod, host)
        if status is not None:
            return status, None
        # Holding the pod's write slot orders the binding after any status patch of an earlier
        # attempt still running, and drops one still pending: it can never land afterwards.
        with self.sched.dispatcher.exclusive(POD_BINDING, pod.uid):
            status = fwk.run_bind_plugins(state, pod, host)
        if status is not None:
            log.info("failed to bind pod", pod=pod.key, node=host, error=status.message())
            return status, None
        self.sched.cache.finish_binding(pod)
        self.sched.recorder.eventf(
            pod,
            None,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {pod.namespace}/{pod.name} to {host}",
        )
        log.info(
            "successfully bound pod to node",
            pod=pod.key,
            node=host,
            evaluated_nodes=result.evaluated_nodes,
            feasible_nodes=result.feasible_nodes,
        )
        elapsed = time.perf_counter() - start
        metrics.schedule_attempts.labels(metrics.SCHEDULED, fwk.profile_name).inc()
        metrics.scheduling_attempt_duration.labels(metrics.SCHEDULED, fwk.profile_name).observe(
            elapsed
        )
        metrics.pod_scheduling_attempts.observe(assumed.attempts)
        if assumed.initial_attempt_timestamp is not None:
            metrics.pod_scheduling_sli_duration.labels(attempts_label(assumed.attempts)).observe(
                self.sched.clock.now() - assumed.initial_attempt_timestamp
            )
        fwk.run_post_bind_plugins(state, pod, host)
        return None, None

    def _handle_error(
        self,
        fwk: Framework,
        state: CycleState,
        result: ScheduleResult,
        assumed: QueuedPodInfo,
        status: Status,
        fit: FitError | None,
        start: float,
    ) -> None:
        pod = assumed.pod
        fwk.run_reserve_plugins_unreserve(state, pod, result.suggested_host)
        forgotten = True
        try:
            self.sched.cache.forget_pod(pod)
        except Exception as err:
            forgotten = False
            log.error("ForgetPod failed", pod=pod.key, error=str(err))
        if forgotten and not status.is_rejected():
            self.sched.queue.move_all_to_active_or_backoff_queue(
                EVENT_ASSIGNED_POD_DELETE, pod, None
            )
        self.sched.handle_scheduling_failure(fwk, assumed, status, fit, CLEAR_NOMINATED_NODE, start)
        if forgotten and status.is_rejected():
            # After requeueing, so the freed resources do not move the pod itself.
            uid = pod.uid
            self.sched.queue.move_all_to_active_or_backoff_queue(
                EVENT_ASSIGNED_POD_DELETE, pod, None, lambda p: p.uid != uid
            )
