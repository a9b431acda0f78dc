"""One pod through the scheduler, as kube-scheduler's schedule_one.go: the scheduling cycle, the
binding cycle and failure handling.

The scheduling cycle runs on the loop's thread on an up-to-date snapshot: the algorithm picks a
node (or PostFilter, i.e. preemption, runs when none fits), the pod is assumed, Reserve and
Permit run, and binding is handed to a worker so the next cycle starts at once. The binding
cycle (WaitOnPermit, PreBind, Bind, PostBind) runs on that worker. Any failure unreserves and
forgets the assumed pod and hands it to `handle_scheduling_failure`: requeued with the plugins
that rejected it, a FailedScheduling event and a PodScheduled=False status patch.

`ScheduleOne` routes a popped pod: a member of a pod group to the group cycle (schedule_group),
any other pod through `PodCycle`, whose steps the group cycle runs for each member.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import structlog

from scheduler import metrics
from scheduler.algorithm import NoNodesAvailableError, ScheduleResult, SchedulingError
from scheduler.api.conditions import condition_update
from scheduler.api.objects import Pod, replace_pod
from scheduler.backend.api_dispatcher import POD_BINDING, POD_STATUS_PATCH
from scheduler.backend.cache import CacheError
from scheduler.cycle_services import CycleServices
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import EVENT_ASSIGNED_POD_DELETE
from scheduler.framework.gang import PodGroupInfo
from scheduler.framework.interface import ApiActions
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    CLEAR_NOMINATED_NODE,
    Diagnosis,
    FitError,
    NominatingInfo,
    NominatingMode,
    QueuedPodInfo,
)
from scheduler.logging import debug_enabled, v_enabled

log = structlog.get_logger(__name__)

BINDING = "binding"
PLUGIN_METRICS_SAMPLE_PERCENT = 10

_SKIP = Status(Code.SKIP)


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a pod was not placed in a scheduling cycle, for handle_scheduling_failure."""

    status: Status
    fit: FitError | None = None
    nominating: NominatingInfo | None = CLEAR_NOMINATED_NODE
    update_nomination: bool = True

    def message(self) -> str:
        return self.fit.message() if self.fit is not None else self.status.message()


#: The group cycle (schedule_group.GroupCycle), which the Scheduler hands to ScheduleOne: a
#: popped pod that is a member of a pod group is scheduled with its pending siblings, all or none.
GroupCycleFn = Callable[[Framework, PodGroupInfo, QueuedPodInfo], None]


class ScheduleOne:
    """Takes one popped pod to its profile, then to the group cycle when it is a member of a
    pod group, else through its own scheduling cycle (`PodCycle`)."""

    def __init__(
        self,
        services: CycleServices,
        profiles: Mapping[str, Framework],
        steps: PodCycle,
        group_cycle: GroupCycleFn | None = None,
    ) -> None:
        self.s = services
        self.profiles = profiles
        self.steps = steps
        self.group_cycle = group_cycle

    def schedule(self, pinfo: QueuedPodInfo) -> None:
        pod = pinfo.pod
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None:
            log.error("profile not found for scheduler name", pod=pod.key, name=pod.scheduler_name)
            self.s.queue.done(pod.uid)
            return
        if self.steps.skip_pod_schedule(pod):
            self.s.queue.done(pod.uid)
            return
        if fwk.pod_group_plugins and self.group_cycle is not None:
            group = fwk.pod_group(pod)
            if group is not None:
                self.group_cycle(fwk, group, pinfo)
                return
        self.steps.run(fwk, pinfo)


class PodCycle:
    """One pod's scheduling cycle here, its binding cycle on a binding worker; the group cycle
    runs its steps for each member (schedule_group.CycleSteps)."""

    def __init__(self, services: CycleServices) -> None:
        self.s = services
        self._binding_running = metrics.goroutines.labels(BINDING)
        self._rng = random.Random()

    def run(self, fwk: Framework, pinfo: QueuedPodInfo) -> None:
        pod = pinfo.pod
        if debug_enabled():
            log.debug("attempting to schedule pod", pod=pod.key)
        start = time.perf_counter()
        state = self.new_cycle_state()
        try:
            self._scheduling_cycle(fwk, state, pinfo, start)
        except Exception as err:  # never let one pod kill the loop
            log.exception("unexpected error in scheduling cycle", pod=pod.key)
            self.handle_scheduling_failure(
                fwk, pinfo, Status.as_error(err), None, CLEAR_NOMINATED_NODE, start
            )

    def new_cycle_state(self) -> CycleState:
        state = CycleState()
        state.record_plugin_metrics = self._rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        return state

    def skip_pod_schedule(self, pod: Pod) -> bool:
        if pod.deletion_timestamp is not None:
            self.s.recorder.eventf(
                pod,
                None,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {pod.namespace}/{pod.name}",
            )
            return True
        return self.s.cache.is_assumed_pod(pod)

    # --- scheduling cycle -------------------------------------------------------------------

    def _scheduling_cycle(
        self, fwk: Framework, state: CycleState, pinfo: QueuedPodInfo, start: float
    ) -> None:
        result = self.find_node(fwk, state, pinfo, start, self.s.queue.scheduling_cycle)
        if isinstance(result, Failure):
            self.fail(fwk, pinfo, result, start)
            return
        assumed = self.assume_and_reserve(fwk, state, pinfo, result)
        if isinstance(assumed, Failure):
            self.fail(fwk, pinfo, assumed, start)
            return
        self.permit_and_bind(fwk, state, pinfo, assumed, result, start)

    def find_node(
        self,
        fwk: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        start: float,
        cycle: int,
        *,
        post_filter: bool = True,
    ) -> ScheduleResult | Failure:
        """The algorithm on a fresh snapshot: the chosen node, or why there is none (after
        PostFilter, i.e. preemption, unless `post_filter` is off)."""
        self.s.cache.update_snapshot(self.s.snapshot)
        pod = pinfo.pod
        explain = self.s.explain
        trace = None if explain is None else explain.begin(pod, fwk.profile_name, time.time())
        try:
            result = self.s.algorithm.schedule_pod(fwk, state, pinfo, cycle, trace)
        except NoNodesAvailableError as err:
            _observe_algorithm(start)
            return Failure(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err)))
        except FitError as fit:
            if trace is not None:  # before PostFilter, which may read the statuses by name
                trace.unschedulable(fit.diagnosis.node_to_status, self.s.snapshot.table)
            nominating: NominatingInfo | None = CLEAR_NOMINATED_NODE
            update_nomination = True
            if post_filter and fwk.has_post_filter_plugins():
                pf_result, pf_status = fwk.run_post_filter_plugins(
                    state, pod, fit.diagnosis.node_to_status
                )
                fit.diagnosis.post_filter_msg = pf_status.message()
                if pf_status.code == Code.ERROR:
                    log.error("PostFilter failed", pod=pod.key, status=pf_status.message())
                nominating = pf_result.nominating_info if pf_result else None
                update_nomination = not (pf_result and pf_result.plugin_owns_nomination)
                if trace is not None:
                    trace.post_filter(pf_status, pf_result)
            _observe_algorithm(start)
            return Failure(Status(Code.UNSCHEDULABLE), fit, nominating, update_nomination)
        except SchedulingError as err:
            _observe_algorithm(start)
            log.error("error selecting node for pod", pod=pod.key, error=str(err))
            return Failure(err.status)
        _observe_algorithm(start)
        return result

    def assume_and_reserve(
        self, fwk: Framework, state: CycleState, pinfo: QueuedPodInfo, result: ScheduleResult
    ) -> QueuedPodInfo | Failure:
        """Assumes the pod on the chosen node and runs Reserve: the assumed pod's queue entry,
        or the failure (a Reserve rejection is undone here: unreserved and forgotten)."""
        host = result.suggested_host
        assumed_pod = replace_pod(pinfo.pod, node_name=host)
        try:
            self.s.cache.assume_pod(assumed_pod)
        except CacheError as err:
            return Failure(Status.as_error(err))
        self.s.queue.delete_nominated_pod_if_exists(assumed_pod)

        status = fwk.run_reserve_plugins_reserve(state, assumed_pod, host)
        if status is not None:
            self.unreserve_and_forget(fwk, state, assumed_pod, host)
            return Failure(status, _fit_on_one_node(pinfo.pod, host, status))
        return replace(pinfo, pod=assumed_pod)

    def permit_and_bind(
        self,
        fwk: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        assumed: QueuedPodInfo,
        result: ScheduleResult,
        start: float,
    ) -> None:
        """Permit for an assumed, reserved pod, then its binding cycle on a worker."""
        assumed_pod = assumed.pod
        host = result.suggested_host
        waits, status = fwk.run_permit_plugins(state, assumed_pod, host)
        trace = None if self.s.explain is None else self.s.explain.current(assumed_pod.uid)
        if trace is not None:
            trace.permitted(waits if status is not None and status.code == Code.WAIT else None)
        if status is not None and status.code == Code.WAIT:
            fwk.add_waiting_pod(assumed_pod, waits)
        elif status is not None:
            self._reject_on_node(fwk, state, pinfo, assumed_pod, status, start)
            return

        if debug_enabled():
            log.debug("pod assumed, binding asynchronously", pod=assumed_pod.key, node=host)
        pre_flight = (
            fwk.run_pre_bind_pre_flights(state, assumed_pod, host)
            if fwk.pre_bind_plugins
            else _SKIP
        )
        args = (fwk, state, result, assumed, start, pre_flight)
        if pre_flight is None:
            # PreBind may wait long (VolumeBinding: up to bindTimeoutSeconds), so this binding
            # cycle gets a thread of its own, as upstream's goroutine, not a pool worker.
            self.s.spawn(lambda: self._binding_cycle(*args), f"prebind {assumed_pod.key}")
        else:
            self.s.binding_pool.submit(self._binding_cycle, *args)

    def fail(self, fwk: Framework, pinfo: QueuedPodInfo, failure: Failure, start: float) -> None:
        self.handle_scheduling_failure(
            fwk,
            pinfo,
            failure.status,
            failure.fit,
            failure.nominating,
            start,
            update_nomination=failure.update_nomination,
        )

    def _reject_on_node(
        self,
        fwk: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        assumed_pod: Pod,
        status: Status,
        start: float,
    ) -> None:
        """Reserve or Permit failed on the chosen node: undo the assumption and fail the pod
        as if that node alone had been filtered."""
        host = assumed_pod.node_name
        self.unreserve_and_forget(fwk, state, assumed_pod, host)
        fit = _fit_on_one_node(pinfo.pod, host, status)
        self.handle_scheduling_failure(fwk, pinfo, status, fit, CLEAR_NOMINATED_NODE, start)

    def unreserve_and_forget(self, fwk: Framework, state: CycleState, pod: Pod, host: str) -> None:
        fwk.run_reserve_plugins_unreserve(state, pod, host)
        try:
            self.s.cache.forget_pod(pod)
        except CacheError as err:
            log.error("ForgetPod failed", pod=pod.key, error=str(err))

    # --- binding cycle ----------------------------------------------------------------------

    def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        result: ScheduleResult,
        assumed: QueuedPodInfo,
        start: float,
        pre_flight: Status | None = None,
    ) -> None:
        self._binding_running.inc()
        try:
            status, fit = self._bind(fwk, state, result, assumed, start, pre_flight)
            if status is not None:
                self._handle_binding_failure(fwk, state, result, assumed, status, fit, start)
        except Exception as err:
            log.exception("unexpected error in binding cycle", pod=assumed.pod.key)
            self._handle_binding_failure(
                fwk, state, result, assumed, Status.as_error(err), None, start
            )
        finally:
            self._binding_running.dec()

    def _bind(
        self,
        fwk: Framework,
        state: CycleState,
        result: ScheduleResult,
        assumed: QueuedPodInfo,
        start: float,
        pre_flight: Status | None,
    ) -> tuple[Status | None, FitError | None]:
        pod = assumed.pod
        host = result.suggested_host
        status = fwk.wait_on_permit(pod)
        if status is not None:
            fit = _fit_on_one_node(pod, host, status) if status.is_rejected() else None
            return status, fit
        # From here on a failure is an error to retry with backoff, not "unschedulable".
        self.s.queue.done(pod.uid)
        if pre_flight is not None and pre_flight.code == Code.ERROR:
            return pre_flight, None
        if pre_flight is None:
            status = fwk.run_pre_bind_plugins(state, pod, host)
            if status is not None:
                return status, None
        # Holding the pod's write slot orders the binding after any status patch of an earlier
        # attempt still running, and drops one still pending: it can never land afterwards.
        with self.s.dispatcher.exclusive(POD_BINDING, pod.uid):
            status = fwk.run_bind_plugins(state, pod, host)
        if status is not None:
            if v_enabled(1):  # kube-scheduler's V(1)
                log.info("failed to bind pod", pod=pod.key, node=host, error=status.message())
            return status, None
        self.s.cache.finish_binding(pod)
        trace = None if self.s.explain is None else self.s.explain.current(pod.uid)
        if trace is not None:
            trace.outcome = "Scheduled"
            trace.compact()
        self.s.recorder.eventf(
            pod,
            None,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {pod.namespace}/{pod.name} to {host}",
        )
        if v_enabled(2):  # kube-scheduler's V(2)
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
                self.s.clock.now() - assumed.initial_attempt_timestamp
            )
        if assumed.was_flushed_from_unschedulable:
            if debug_enabled():  # V(4)
                log.debug(
                    "pod scheduled after flush from unschedulable pods",
                    pod=pod.key,
                    unschedulable_plugins=sorted(assumed.unschedulable_plugins),
                    pending_plugins=sorted(assumed.pending_plugins),
                )
            metrics.pod_scheduled_after_flush.inc()
        fwk.run_post_bind_plugins(state, pod, host)
        return None, None

    def _handle_binding_failure(
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
        trace = None if self.s.explain is None else self.s.explain.current(pod.uid)
        if trace is not None:
            trace.binding_error = status.message()
            trace.compact()
        fwk.run_reserve_plugins_unreserve(state, pod, result.suggested_host)
        forgotten = True
        try:
            self.s.cache.forget_pod(pod)
        except Exception as err:
            forgotten = False
            log.error("ForgetPod failed", pod=pod.key, error=str(err))
        queue = self.s.queue
        if forgotten and not status.is_rejected():
            queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, pod, None)
        self.handle_scheduling_failure(fwk, assumed, status, fit, CLEAR_NOMINATED_NODE, start)
        if forgotten and status.is_rejected():
            # After requeueing, so the freed resources do not move the pod itself.
            uid = pod.uid
            queue.move_all_to_active_or_backoff_queue(
                EVENT_ASSIGNED_POD_DELETE, pod, None, lambda p: p.uid != uid
            )

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
        message: str | None = None,
    ) -> None:
        """Requeues the pod with its rejectors, records the event and the PodScheduled condition,
        and applies `nominating` unless a plugin owns the nomination (asynchronous preemption).
        `message` replaces the one `fit` / `status` give (a failed group's)."""
        rejected = status.is_rejected()
        reason = "Unschedulable" if rejected else "SchedulerError"
        result_label = metrics.UNSCHEDULABLE if rejected else metrics.ERROR
        elapsed = time.perf_counter() - start
        metrics.schedule_attempts.labels(result_label, fwk.profile_name).inc()
        metrics.scheduling_attempt_duration.labels(result_label, fwk.profile_name).observe(elapsed)

        pinfo = replace(pinfo, unschedulable_plugins=set(), pending_plugins=set())
        pod = pinfo.pod
        if message is None:
            message = fit.message() if fit is not None else status.message()
        trace = None if self.s.explain is None else self.s.explain.current(pod.uid)
        if trace is not None:
            trace.outcome = reason
            trace.message = message
        if fit is not None:
            pinfo.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            pinfo.pending_plugins = set(fit.diagnosis.pending_plugins)
            if v_enabled(2):
                log.info("unable to schedule pod; no fit; waiting", pod=pod.key, err=message)
        elif rejected:
            if v_enabled(2):
                log.info("unable to schedule pod; waiting", pod=pod.key, err=message)
        else:
            log.error("error scheduling pod; retrying", pod=pod.key, err=message)

        queue = self.s.queue
        cached = self.s.pod_lookup(pod.key)
        requeue = False
        if cached is None:
            log.info("pod doesn't exist in informer cache", pod=pod.key)
            queue.done(pod.uid)
        elif cached.node_name:
            log.info("pod has been assigned to node; not requeueing", pod=pod.key)
            queue.done(pod.uid)
        elif cached.uid != pod.uid:
            if v_enabled(2):
                log.info("pod was recreated while handling scheduling failure", pod=pod.key)
            queue.done(pod.uid)
            return
        else:
            pod = cached
            requeue = True

        if not update_nomination:
            nominating = None
        # The recorder cuts the note to the Events API's limit.
        self.s.recorder.eventf(pod, None, "Warning", "FailedScheduling", "Scheduling", message)
        # The status patch is queued before the pod can be popped again, so the dispatcher sees
        # it before any later binding of the pod, which then drops or waits for it. A pod the
        # informer already shows bound gets no PodScheduled=False at all.
        if cached is None or not cached.node_name:
            self._patch_pod_scheduled_false(pod, reason, message, nominating)
        if requeue:
            pinfo.pod = pod
            queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)
        if update_nomination and requeue:
            # Only a pod still pending keeps a nomination its status does not show yet.
            queue.nominator.renominate_after_failure(pod, nominating)
        elif update_nomination:
            queue.add_nominated_pod(pod, nominating)

    def _patch_pod_scheduled_false(
        self, pod: Pod, reason: str, message: str, nominating: NominatingInfo | None
    ) -> None:
        patch = pod_scheduled_condition_patch(pod, reason, message, nominating, self.s.clock.now())
        if patch is not None:
            self.s.dispatcher.submit(
                POD_STATUS_PATCH, pod.uid, PodStatusPatch(self.s.api, pod, patch)
            )


@dataclass(frozen=True)
class PodStatusPatch:
    """One pod's PodScheduled=False patch, as kube-scheduler's PodStatusPatchCall: a newer one
    replacing a pending older one keeps the older's nominatedNodeName unless it sets its own
    (the condition is the newer's: it was computed against what the API server holds)."""

    api: ApiActions
    pod: Pod
    patch: dict[str, Any]

    def __call__(self) -> None:
        self.api.patch_pod_status(self.pod, self.patch)

    def merged_onto(self, older: Callable[[], None]) -> Callable[[], None]:
        if not isinstance(older, PodStatusPatch):
            return self
        nominated = older.patch["status"].get("nominatedNodeName", _UNSET)
        if nominated is _UNSET or "nominatedNodeName" in self.patch["status"]:
            return self
        status = {**self.patch["status"], "nominatedNodeName": nominated}
        return PodStatusPatch(self.api, self.pod, {"status": status})


_UNSET = object()


def pod_scheduled_condition_patch(
    pod: Pod,
    reason: str,
    message: str,
    nominating: NominatingInfo | None,
    now: float,
) -> dict[str, Any] | None:
    """The strategic merge patch for pods/status kube-scheduler sends after a failed attempt:
    PodScheduled=False, and the nominated node when preemption set or cleared one; None when
    the status already says this."""
    status: dict[str, Any] = {}
    condition = condition_update(pod, "PodScheduled", "False", reason, message, now)
    if condition is not None:
        condition["lastProbeTime"] = None
        status["conditions"] = [condition]
    if (
        nominating is not None
        and nominating.mode == NominatingMode.OVERRIDE
        and pod.nominated_node_name != nominating.nominated_node_name
    ):
        status["nominatedNodeName"] = nominating.nominated_node_name or None
    if not status:
        return None
    return {"status": status}


def _fit_on_one_node(pod: Pod, host: str, status: Status) -> FitError | None:
    """Reserve/Permit rejections read like a FitError on that one node; errors do not."""
    if not status.is_rejected():
        return None
    diagnosis = Diagnosis()
    diagnosis.node_to_status.set(host, status)
    if status.plugin:
        diagnosis.unschedulable_plugins.add(status.plugin)
    return FitError(pod, 1, diagnosis)


def _observe_algorithm(start: float) -> None:
    metrics.scheduling_algorithm_duration.observe(time.perf_counter() - start)


def attempts_label(attempts: int) -> str:
    return "15+" if attempts >= 15 else str(attempts)
