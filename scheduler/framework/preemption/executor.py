"""Carries out a chosen preemption: the API calls, inline or on a background thread.

With SchedulerAsyncPreemption the scheduling cycle only nominates the preemptor and hands the
calls to a worker thread: the preemptor's status.nominatedNodeName is written, lower-priority
pods nominated to the node lose their nomination, each victim gets the DisruptionTarget
condition and is deleted (all but the last in parallel). Until the thread has asked for the
last victim's deletion, `is_pod_running_preemption` is true and the plugin's PreEnqueue keeps
the preemptor out of the queue. If a call fails, the nomination is reverted and the preemptor
is activated so it is retried at once.

Each victim is evicted once, whoever chose it: a preemption claims its victims in the
scheduling cycle that decides on them (`claim_victims`, the process-wide `Evictions`), and
another preemptor that chooses a claimed pod before its eviction shows in the informer (the
window an asynchronous preemption's calls leave open) sends nothing for it, as for a victim
already terminating. kube-scheduler skips only victims whose deletion its informer has seen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler import metrics
from scheduler.api.conditions import condition_update
from scheduler.api.errors import ApiError
from scheduler.api.gang import Gang
from scheduler.api.objects import Pod
from scheduler.framework.interface import Handle
from scheduler.framework.preemption.victims import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
    Candidate,
)
from scheduler.framework.status import Status
from scheduler.logging import v_enabled

log = structlog.get_logger(__name__)

OPERATION = "preemption"
PREEMPTOR_TYPE = "pod"
GROUP_PREEMPTOR_TYPE = "podgroup"
# Where a pod group's victims' Preempted events say it goes: kube-scheduler's candidate for a
# group is the whole cluster, named so.
GROUP_DOMAIN = "cluster"
# kube-scheduler runs each asynchronous preemption in a goroutine of its own and evicts its
# victims with 16 workers each, so nothing waits for a free worker. Threads are dearer, but these
# only wait on API calls: the pools are sized for the bursts a scheduling loop can produce
# (about 50 preemptions a second at 1000 nodes, each a quarter second of round trips). Sized by
# the CPU count, as ThreadPoolExecutor's default is, the jobs queued: at 1000 nodes a preemptor's
# victims were evicted up to 29 s after its cycle chose them.
PREEMPTION_JOBS = 64
VICTIM_PARALLELISM = 64


class VictimGone(Exception):
    """The victim no longer exists (or was replaced): nothing left to preempt."""


@dataclass(frozen=True, slots=True)
class _LastVictim:
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Preemptor:
    """Whom a victim's DisruptionTarget condition and Preempted event name, as kube-scheduler
    v1.37's ExecutorPreemptor: a pod (`Preempted by pod <uid> on node <its node>`, the pod as
    related object) or a pod group (`Preempted by podgroup <PodGroup uid> on node cluster`,
    the PodGroup as related object), so a victim of a group names the group, not a member."""

    type: str
    """PREEMPTOR_TYPE or GROUP_PREEMPTOR_TYPE: the word the messages use."""
    uid: str
    scheduler_name: str
    related: Pod | Gang
    node_name: str
    key: str
    """namespace/name of the pod or the group, for logs."""

    @classmethod
    def of_pod(cls, pod: Pod, node_name: str) -> Preemptor:
        return cls(PREEMPTOR_TYPE, pod.uid, pod.scheduler_name, pod, node_name, pod.key)

    @classmethod
    def of_group(cls, gang: Gang, members: list[Pod]) -> Preemptor:
        """All members have one scheduler (a group is scheduled by one profile)."""
        return cls(
            GROUP_PREEMPTOR_TYPE,
            gang.uid,
            members[0].scheduler_name,
            gang,
            GROUP_DOMAIN,
            gang.key,
        )


def disruption_target_patch(
    victim: Pod, scheduler_name: str, now: float, preemptor_type: str = PREEMPTOR_TYPE
) -> dict[str, Any] | None:
    """The status patch adding the DisruptionTarget condition, or None if the pod has it."""
    message = f"{scheduler_name}: preempting to accommodate a higher priority {preemptor_type}"
    condition = condition_update(
        victim, DISRUPTION_TARGET, "True", REASON_PREEMPTION_BY_SCHEDULER, message, now
    )
    return None if condition is None else {"status": {"conditions": [condition]}}


class Executor:
    """Thread-safe; one per preemption plugin instance."""

    def __init__(self, handle: Handle, plugin_name: str, *, async_enabled: bool) -> None:
        self._handle = handle
        self._plugin_name = plugin_name
        self.async_enabled = async_enabled
        self._lock = threading.Lock()
        self._closed = False
        self._preempting: set[str] = set()
        self._last_victim: dict[str, _LastVictim] = {}
        self._jobs = (
            ThreadPoolExecutor(PREEMPTION_JOBS, thread_name_prefix="preemption")
            if async_enabled
            else None
        )
        self._victim_calls = ThreadPoolExecutor(
            VICTIM_PARALLELISM, thread_name_prefix="preemption-victim"
        )
        self.now: Callable[[], float] = time.time
        # Victims whose deletion this scheduler asked for, until the informer has caught up.
        self._evictions = handle.evictions

    # --- entry point ------------------------------------------------------------------------

    def evicted_recently(self, pod: Pod) -> bool:
        """A preemption of this scheduler is evicting the pod or asked for its deletion (the
        informer may not show it yet)."""
        return self._evictions.requested(pod.uid)

    def claim_victims(self, victims: Iterable[Pod]) -> list[Pod]:
        """The victims this preemption is to evict, claimed for it: neither terminating
        already nor claimed or evicted by another preemption (of any profile) a moment ago.
        The claims end when the preemption's calls do (`_release`)."""
        live = [v for v in victims if v.deletion_timestamp is None]
        fresh = self._evictions.claim(v.uid for v in live)
        return [v for v in live if v.uid in fresh]

    def _release(self, victims: Iterable[Pod]) -> None:
        self._evictions.release(v.uid for v in victims)

    def observe(self, candidate: Candidate) -> None:
        metrics.preemption_victims.observe(len(candidate.victims))
        if candidate.num_pdb_violations:
            metrics.preemption_pdb_violations.labels(PREEMPTOR_TYPE).inc(
                candidate.num_pdb_violations
            )

    def start_async(self, candidate: Candidate, preemptor: Pod, victims: list[Pod]) -> None:
        """Marks the preemptor as preempting and hands the calls to a worker thread; once the
        executor is closed (the scheduler is stopping) nothing is started."""
        self._submit(
            [preemptor],
            PREEMPTOR_TYPE,
            lambda: self._async_calls(candidate, preemptor, victims),
            victims,
            node=candidate.node_name,
            victims=len(candidate.victims),
            victims_to_delete=len(victims),
        )

    def _submit(
        self,
        preemptors: list[Pod],
        preemptor_type: str,
        calls: Callable[[], BaseException | None],
        claimed: list[Pod],
        **context: Any,
    ) -> None:
        """Marks the preemptors as preempting (PreEnqueue holds them) and runs `calls` on a
        worker thread (_run_job), which releases the `claimed` victims when it ends; once the
        executor is closed nothing is started (and the claims are released here)."""
        assert self._jobs is not None
        with self._lock:
            if self._closed:
                if v_enabled(2):
                    log.info("scheduler is stopping; preemption not started", pod=preemptors[0].key)
                self._release(claimed)
                return
            self._preempting.update(p.uid for p in preemptors)
            self._jobs.submit(self._run_job, preemptors, preemptor_type, calls, claimed, context)

    def run_inline(self, candidate: Candidate, preemptor: Pod) -> Status | None:
        """The same calls in the scheduling cycle; an error Status if one fails."""
        start = time.perf_counter()
        result = metrics.GOROUTINE_SUCCESS
        victims = self.claim_victims(candidate.victims)
        try:
            error = self._preempt_all(Preemptor.of_pod(preemptor, candidate.node_name), victims)
            if error is not None:
                result = metrics.GOROUTINE_ERROR
                return Status.as_error(error, self._plugin_name)
            self._clear_lower_priority_nominations(candidate, preemptor)
            return None
        finally:
            self._release(victims)
            metrics.preemption_execution_duration.labels(PREEMPTOR_TYPE, result).observe(
                time.perf_counter() - start
            )

    def is_pod_running_preemption(self, uid: str) -> bool:
        """True until the last victim's deletion has at least started.

        Read without the lock: PreEnqueue asks this for every waiting preemptor on each victim
        deletion, and a set membership and a dict lookup are each atomic under the GIL. The
        two reads may straddle the job's end (in the set, then no last victim): that answers
        True, as a locked read an instant earlier would, and the next event asks again."""
        if uid not in self._preempting:
            return False
        last = self._last_victim.get(uid)
        if last is None:
            return True
        victim = self._handle.get_pod(f"{last.namespace}/{last.name}")
        return victim is not None and victim.deletion_timestamp is None

    def close(self) -> None:
        """Drops preemptions not started yet; started ones finish their victims' calls (one
        after another, as the victim pool takes no new calls)."""
        with self._lock:
            self._closed = True
            if self._jobs is not None:
                self._jobs.shutdown(wait=False, cancel_futures=True)
            self._victim_calls.shutdown(wait=False)

    def preempt_for_group(
        self, gang: Gang, members: list[Pod], victims: list[Pod], num_pdb_violations: int
    ) -> Status | None:
        """Evicts a group's victims (GroupEvaluator), each event and condition naming the
        group (Preemptor.of_group); the members are nominated by the caller. With
        asynchronous preemption the calls run on a worker and every member is held by
        PreEnqueue until the last victim's deletion has started. An error Status if an
        inline call fails. Its victims are counted in workload_preemption_victims, not in
        the single pod's preemption_victims (as kube-scheduler's executor does)."""
        metrics.workload_preemption_victims.observe(len(victims))
        if num_pdb_violations:
            metrics.preemption_pdb_violations.labels(GROUP_PREEMPTOR_TYPE).inc(num_pdb_violations)
        if not members:
            return None
        victims = self.claim_victims(victims)
        if not victims:
            return None
        preemptor = Preemptor.of_group(gang, members)
        if self.async_enabled:
            self._submit(
                members,
                GROUP_PREEMPTOR_TYPE,
                lambda: self._group_calls(preemptor, members, victims),
                victims,
                victims_to_delete=len(victims),
            )
            return None
        start = time.perf_counter()
        try:
            error = self._preempt_all(preemptor, victims)
        finally:
            self._release(victims)
        result = metrics.GOROUTINE_ERROR if error is not None else metrics.GOROUTINE_SUCCESS
        metrics.preemption_execution_duration.labels(GROUP_PREEMPTOR_TYPE, result).observe(
            time.perf_counter() - start
        )
        return Status.as_error(error, self._plugin_name) if error is not None else None

    def _group_calls(
        self, preemptor: Preemptor, members: list[Pod], victims: list[Pod]
    ) -> BaseException | None:
        """As _async_calls without the nomination: all victims but the last, then the last,
        watched by every member's PreEnqueue."""
        error = self._preempt_all(preemptor, victims[:-1])
        if error is not None:
            return error
        last = victims[-1]
        with self._lock:
            for member in members:
                self._last_victim[member.uid] = _LastVictim(last.namespace, last.name)
        return self._preempt_one(preemptor, last)

    # --- asynchronous -----------------------------------------------------------------------

    def _run_job(
        self,
        preemptors: list[Pod],
        preemptor_type: str,
        calls: Callable[[], BaseException | None],
        claimed: list[Pod],
        context: dict[str, Any],
    ) -> None:
        """A preemption's API calls on a worker thread. If one fails the preemptors'
        nominations are reverted and they are activated, so they are retried at once; if the
        job crashes they are activated. Either way PreEnqueue stops holding them."""
        start = time.perf_counter()
        metrics.goroutines.labels(OPERATION).inc()
        result = metrics.GOROUTINE_SUCCESS
        activate = False
        lead = preemptors[0].key
        try:
            if v_enabled(2):  # kube-scheduler's V(2), as the other per-victim lines here
                log.info("start the preemption asynchronously", pod=lead, **context)
            error = calls()
            if error is not None:
                result = metrics.GOROUTINE_ERROR
                activate = True
                log.error(
                    "async preemption failed; reverting the nomination",
                    pod=lead,
                    error=str(error),
                    **context,
                )
                for preemptor in preemptors:
                    self._revert_nomination(preemptor)
        except Exception:  # a bug here must not leave the preemptors gated forever
            result = metrics.GOROUTINE_ERROR
            activate = True
            log.exception("async preemption crashed", pod=lead)
        finally:
            self._release(claimed)
            with self._lock:
                for preemptor in preemptors:
                    self._preempting.discard(preemptor.uid)
                    self._last_victim.pop(preemptor.uid, None)
            if activate:
                self._handle.activate(preemptors)
            elapsed = time.perf_counter() - start
            metrics.goroutines.labels(OPERATION).dec()
            metrics.preemption_goroutines_duration.labels(result).observe(elapsed)
            metrics.preemption_goroutines_execution.labels(result).inc()
            metrics.preemption_execution_duration.labels(preemptor_type, result).observe(elapsed)
            if v_enabled(2):
                log.info("async preemption finished", pod=lead, result=result)

    def _async_calls(
        self, candidate: Candidate, preemptor: Pod, victims: list[Pod]
    ) -> BaseException | None:
        """The calls in order; the first failure that makes the preemption fail, else None."""
        try:
            self._handle.api.patch_pod_status(
                preemptor, {"status": {"nominatedNodeName": candidate.node_name}}
            )
        except ApiError as err:
            if err.not_found:
                return None  # the preemptor is gone; nothing to make room for
            return err
        except Exception as err:
            return err
        self._clear_lower_priority_nominations(candidate, preemptor)
        if not victims:
            return None
        named = Preemptor.of_pod(preemptor, candidate.node_name)
        error = self._preempt_all(named, victims[:-1])
        if error is not None:
            return error
        last = victims[-1]
        with self._lock:
            self._last_victim[preemptor.uid] = _LastVictim(last.namespace, last.name)
        return self._preempt_one(named, last)

    def _revert_nomination(self, preemptor: Pod) -> None:
        self._handle.nominator.delete_nominated_pod_if_exists(preemptor)
        try:
            self._handle.api.patch_pod_status(preemptor, {"status": {"nominatedNodeName": None}})
        except Exception as err:
            if not (isinstance(err, ApiError) and err.not_found):  # a gone pod needs no revert
                log.error("could not revert nominatedNodeName", pod=preemptor.key, error=str(err))

    # --- shared -----------------------------------------------------------------------------

    def _preempt_all(self, preemptor: Preemptor, victims: list[Pod]) -> BaseException | None:
        """Evicts `victims` in parallel."""
        with self._lock:
            parallel = len(victims) > 1 and not self._closed
            if parallel:
                futures = [
                    self._victim_calls.submit(self._preempt_one, preemptor, victim)
                    for victim in victims
                ]
        if parallel:
            results = [f.result() for f in futures]
        else:
            results = [self._preempt_one(preemptor, victim) for victim in victims]
        errors = [err for err in results if err is not None]
        return errors[0] if errors else None

    def _preempt_one(self, preemptor: Preemptor, victim: Pod) -> BaseException | None:
        """Evicts one victim; None when it is preempted or already gone."""
        try:
            self._evict(preemptor, victim)
        except VictimGone:
            if v_enabled(2):
                log.info("victim pod is already deleted", pod=preemptor.key, victim=victim.key)
        except Exception as err:
            log.error(
                "could not preempt victim", pod=preemptor.key, victim=victim.key, error=str(err)
            )
            return err
        return None

    def _evict(self, preemptor: Preemptor, victim: Pod) -> None:
        message = f"Preempted by {preemptor.type} {preemptor.uid} on node {preemptor.node_name}"
        waiting = self._handle.get_waiting_pod(victim.uid)
        if waiting is not None and waiting.preempt(self._plugin_name, "preempted"):
            if v_enabled(2):
                log.info("preemptor preempted a waiting pod", pod=preemptor.key, victim=victim.key)
            message += " (in kube-scheduler memory)."
        else:
            api = self._handle.api
            patch = disruption_target_patch(
                victim, preemptor.scheduler_name, self.now(), preemptor.type
            )
            try:
                if patch is not None:
                    api.patch_pod_status(victim, patch)
                api.delete_pod(victim)
            except ApiError as err:
                if err.not_found or err.conflict:
                    raise VictimGone() from err
                raise
            self._evictions.remember(victim.uid)
            if v_enabled(2):
                log.info("preemptor pod preempted victim pod", pod=preemptor.key, victim=victim.key)
        self._handle.event_recorder.eventf(
            victim, preemptor.related, "Normal", "Preempted", "Preempting", message
        )

    def _clear_lower_priority_nominations(self, candidate: Candidate, preemptor: Pod) -> None:
        """Lower-priority pods nominated to the node may no longer fit there: let them retry."""
        nominated = self._handle.nominator.nominated_pods_for_node(candidate.node_name)
        for pod in nominated:
            if pod.priority >= preemptor.priority or pod.uid == preemptor.uid:
                continue
            self._handle.nominator.delete_nominated_pod_if_exists(pod)
            if not pod.nominated_node_name:
                continue
            try:
                self._handle.api.patch_pod_status(pod, {"status": {"nominatedNodeName": None}})
            except Exception as err:  # not critical: the pod retries on its own
                log.error(
                    "cannot clear nominatedNodeName of a lower-priority pod",
                    pod=pod.key,
                    node=candidate.node_name,
                    error=str(err),
                )
