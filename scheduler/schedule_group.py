"""The group cycle (docs/gang.md): a popped pod that is a member of a pod group is scheduled
together with every pending sibling, in one step of the loop, all or none.

As kube-scheduler v1.37's pod-group cycle (schedule_one_podgroup.go): each member in queue order
runs the algorithm on a fresh snapshot and is assumed and reserved, so later members see the
earlier ones' placements. Then, if the group's bound + assumed members reach minMember, each
placed member goes through Permit and its binding cycle as a single pod does, and members that
did not fit fail alone with their own message. Otherwise every placement is reverted (Unreserve,
forget; in reverse order) before the loop takes another pod, and every member fails with the
group's message (for a v1beta1 PodGroup, kube-scheduler's per-member messages; its
PodGroupInitiallyScheduled condition is then written too). The loop is the only thread that
assumes pods, so between two loop steps a group holds either its quorum or nothing it assumed:
two groups cannot deadlock each holding part of what they need.

No member runs PostFilter (preemption) on its own: a member must never preempt for a group
that cannot fit whole. Instead a group that ends below its quorum asks the profile's
PodGroupPostFilter plugins (DefaultPreemption) once, for all its members, inside a snapshot
simulation: room is made for the whole group or for none of it (docs/gang.md, "Preemption").
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import structlog

from scheduler import metrics
from scheduler.algorithm import NoNodesAvailableError, ScheduleResult, SchedulingError
from scheduler.api.gang import (
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    GangRef,
    pod_group_condition_patch,
)
from scheduler.api.objects import Pod, replace_pod
from scheduler.backend.api_dispatcher import POD_GROUP_STATUS_PATCH
from scheduler.cycle_services import CycleServices
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.gang import GangMembers, PodGroupInfo
from scheduler.framework.interface import GroupAssignments, ProposedAssignment
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
from scheduler.logging import v_enabled
from scheduler.schedule_one import Failure

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Placement:
    """A member assumed and reserved in this group cycle, not yet through Permit."""

    pinfo: QueuedPodInfo
    assumed: QueuedPodInfo
    state: CycleState
    result: ScheduleResult
    start: float


@dataclass(frozen=True, slots=True)
class Unplaced:
    pinfo: QueuedPodInfo
    failure: Failure
    start: float


def group_message(
    group: PodGroupInfo, members: GangMembers, reverted: int, unplaced: list[Unplaced]
) -> str:
    """The PodScheduled=False message and FailedScheduling event of every member of a group
    that did not reach its quorum (docs/gang.md, "Messages"). It says how many members would
    fit and, apart, how many the group holds once this attempt's `reverted` placements are
    undone (bound, or assumed by an earlier attempt and still binding): a reader must not go
    looking for nodes held by members that were only tried."""
    held = members.placed - reverted
    bound = len(members.bound)
    holds = "none is held" if held <= 0 else f"{held} held ({bound} bound, {held - bound} binding)"
    fit = f"{members.placed} of {group.min_member} members would fit"
    text = f"PodGroup {group.name}: {fit}, {holds}"
    if unplaced:
        return f"{text}; {len(unplaced)} could not be placed: {unplaced[0].failure.message()}"
    return f"{text}; no other member is pending"


@dataclass(frozen=True, slots=True)
class GroupMessages:
    """What a group attempt that ended below quorum tells: the group's own message (the log
    line, a v1beta1 PodGroup's condition) and each member's PodScheduled=False message and
    FailedScheduling event (the group's unless `members` has one for the pod's uid)."""

    group: str
    members: dict[str, str] = field(default_factory=dict)

    def member(self, uid: str) -> str:
        return self.members.get(uid, self.group)


def group_messages(
    group: PodGroupInfo,
    counted: GangMembers,
    tried: list[QueuedPodInfo],
    placed: list[Placement],
    unplaced: list[Unplaced],
    preemption: str = "",
) -> GroupMessages:
    """The messages of a group attempt below quorum, per source (docs/gang.md, "Messages"):
    kube-scheduler's for a Kubernetes v1beta1 PodGroup, kube-pysched's own (`group_message`,
    the same for every member) for a scheduler-plugins PodGroup. `preemption` is what group
    preemption said ("preemption: ..."), appended to the group's message as each scheduler
    does (kube-scheduler: ", pod group preemption: ...")."""
    if group.kubernetes_api:
        suffix = f", pod group {preemption}" if preemption else ""
        return _kube_scheduler_messages(group, counted, tried, placed, unplaced, suffix)
    text = group_message(group, counted, len(placed), unplaced)
    return GroupMessages(f"{text}; {preemption}" if preemption else text)


def _kube_scheduler_messages(
    group: PodGroupInfo,
    counted: GangMembers,
    tried: list[QueuedPodInfo],
    placed: list[Placement],
    unplaced: list[Unplaced],
    suffix: str = "",
) -> GroupMessages:
    """kube-scheduler v1.37's texts. Its pod group cycle counts scheduled (bound + assumed) and
    remaining members as it goes, in queue order, and stops at the first member after which
    minCount can no longer be reached: the group's message then says so with those counts
    (GangScheduling's PlacementFeasible). A member it placed before stopping gets
    `pod group is unschedulable, <group's message>`, one that found no node keeps its own
    failure, one after the stop (never tried there) gets the group's message. kube-pysched
    tries every member, then replays that count to find where kube-scheduler stops."""
    min_count = group.min_member
    placed_uids = {p.pinfo.pod.uid for p in placed}
    own = {u.pinfo.pod.uid: u.failure.message() for u in unplaced}
    scheduled = counted.placed - len(placed)
    remaining = len(tried)
    evaluated: list[QueuedPodInfo] = []
    if scheduled + remaining >= min_count:
        for pinfo in tried:
            evaluated.append(pinfo)
            remaining -= 1
            scheduled += pinfo.pod.uid in placed_uids
            if scheduled + remaining < min_count:
                break
    text = (
        f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
    )
    # Preemption's outcome is appended to the group's status after the members it tried got
    # theirs from it; a member it did not try keeps the text without it.
    members = {pinfo.pod.uid: text for pinfo in tried}
    for pinfo in evaluated:
        uid = pinfo.pod.uid
        members[uid] = (
            f"pod group is unschedulable, {text}{suffix}"
            if uid in placed_uids
            else own.get(uid, text)
        )
    return GroupMessages(f"{text}{suffix}", members)


class CycleSteps(Protocol):
    """The steps of one pod's scheduling cycle that the group cycle runs for each member
    (schedule_one.PodCycle's)."""

    def new_cycle_state(self) -> CycleState: ...

    def skip_pod_schedule(self, pod: Pod) -> bool: ...

    def find_node(
        self,
        fwk: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        start: float,
        cycle: int,
        *,
        post_filter: bool = True,
    ) -> ScheduleResult | Failure: ...

    def assume_and_reserve(
        self, fwk: Framework, state: CycleState, pinfo: QueuedPodInfo, result: ScheduleResult
    ) -> QueuedPodInfo | Failure: ...

    def permit_and_bind(
        self,
        fwk: Framework,
        state: CycleState,
        pinfo: QueuedPodInfo,
        assumed: QueuedPodInfo,
        result: ScheduleResult,
        start: float,
    ) -> None: ...

    def fail(
        self, fwk: Framework, pinfo: QueuedPodInfo, failure: Failure, start: float
    ) -> None: ...

    def unreserve_and_forget(
        self, fwk: Framework, state: CycleState, pod: Pod, host: str
    ) -> None: ...

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
    ) -> None: ...


class GroupCycle:
    """Handed to ScheduleOne by the Scheduler; runs the single-pod cycle's steps for each
    member."""

    def __init__(self, services: CycleServices, steps: CycleSteps) -> None:
        self.s = services
        self.steps = steps
        self._lock = threading.Lock()
        #: Groups whose last cycle ended below the quorum (kube_pysched_gang_groups_waiting).
        self._waiting: dict[GangRef, Framework] = {}
        metrics.gang_groups_waiting.set_function(self.groups_waiting)

    def groups_waiting(self) -> int:
        """Groups whose last cycle failed and that still have pending members; groups whose
        pending members are gone (deleted, or bound by another way) are forgotten here.
        Called on the metrics thread."""
        with self._lock:
            waiting = list(self._waiting.items())
        gone = [
            ref
            for ref, fwk in waiting
            if not any(not p.node_name for p in fwk.gangs().members(ref))
        ]
        with self._lock:
            for ref in gone:
                self._waiting.pop(ref, None)
        return len(waiting) - len(gone)

    def _record(self, fwk: Framework, group: PodGroupInfo, waiting: bool) -> None:
        with self._lock:
            if waiting:
                self._waiting[group.key] = fwk
            else:
                self._waiting.pop(group.key, None)

    def __call__(self, fwk: Framework, group: PodGroupInfo, first: QueuedPodInfo) -> None:
        queue = self.s.queue
        start = time.perf_counter()
        cycle = queue.scheduling_cycle  # first's; each member taken below adds one
        skip = first.pod.uid
        pending = [
            p.uid for p in fwk.gangs().members(group.key) if not p.node_name and p.uid != skip
        ]
        members = [first, *queue.take_pod_group(pending)] if pending else [first]
        if v_enabled(3):
            log.info(
                "attempting to schedule pod group",
                group=group.name,
                members=len(members),
                min_member=group.min_member,
            )
        result = metrics.ERROR
        try:
            result = self._run(fwk, group, members, cycle)
        finally:
            elapsed = time.perf_counter() - start
            metrics.gang_attempts.labels(result).inc()
            metrics.gang_attempt_duration.labels(result).observe(elapsed)
            if group.kubernetes_api:
                profile = fwk.profile_name
                metrics.podgroup_schedule_attempts.labels(result, profile).inc()
                metrics.podgroup_scheduling_attempt_duration.labels(result, profile).observe(
                    elapsed
                )

    def _set_condition(
        self, fwk: Framework, group: PodGroupInfo, result: str, message: str
    ) -> None:
        """A v1beta1 PodGroup's PodGroupInitiallyScheduled after an attempt, as kube-scheduler
        sets it (True/Scheduled, False/Unschedulable, False/SchedulerError): patched through
        the API dispatcher, off the loop; not sent when it would change nothing or would turn
        a True condition False. A failed patch is logged and counted by the dispatcher."""
        if not group.kubernetes_api:
            return
        gang = fwk.gangs().gang(group.key)
        if gang is None:
            return
        if result == metrics.SCHEDULED:
            status, reason, message = "True", REASON_SCHEDULED, ""
        elif result == metrics.UNSCHEDULABLE:
            status, reason = "False", REASON_UNSCHEDULABLE
        else:
            status, reason = "False", REASON_SCHEDULER_ERROR
        s = self.s
        patch = pod_group_condition_patch(gang, status, reason, message, s.clock.now())
        if patch is None:
            return
        key = group.key
        s.dispatcher.submit(
            POD_GROUP_STATUS_PATCH,
            f"podgroup:{key.source.value}/{key.key}",
            partial(s.api.patch_pod_group_status, key.namespace, key.name, patch),
        )

    def _run(
        self, fwk: Framework, group: PodGroupInfo, members: list[QueuedPodInfo], cycle: int
    ) -> str:
        steps = self.steps
        placed: list[Placement] = []
        unplaced: list[Unplaced] = []
        tried: list[QueuedPodInfo] = []
        reached = -1
        algorithm_start = time.perf_counter()
        try:
            for i, pinfo in enumerate(members):
                reached = i
                if i and steps.skip_pod_schedule(pinfo.pod):
                    self.s.queue.done(pinfo.pod.uid)
                    continue
                tried.append(pinfo)
                start = time.perf_counter()
                state = steps.new_cycle_state()
                found = steps.find_node(fwk, state, pinfo, start, cycle + i, post_filter=False)
                if isinstance(found, Failure):
                    unplaced.append(Unplaced(pinfo, found, start))
                    continue
                assumed = steps.assume_and_reserve(fwk, state, pinfo, found)
                if isinstance(assumed, Failure):
                    unplaced.append(Unplaced(pinfo, assumed, start))
                    continue
                placed.append(Placement(pinfo, assumed, state, found, start))
            counted = fwk.gang_members(group.key)
        except Exception as err:
            log.exception("unexpected error in group cycle", group=group.name)
            self._revert(fwk, placed)
            status = Status.as_error(err)
            for pinfo in [*tried, *members[reached + 1 :]]:
                steps.handle_scheduling_failure(
                    fwk, pinfo, status, None, CLEAR_NOMINATED_NODE, time.perf_counter()
                )
            self._set_condition(fwk, group, metrics.ERROR, status.message())
            return metrics.ERROR
        metrics.gang_members_per_attempt.observe(len(tried))
        if group.kubernetes_api:
            metrics.podgroup_scheduling_algorithm_duration.observe(
                time.perf_counter() - algorithm_start
            )

        if counted.placed >= group.min_member:
            fwk.group_placed(group)
            self._record(fwk, group, waiting=False)
            first = min(
                (
                    m.initial_attempt_timestamp
                    for m in tried
                    if m.initial_attempt_timestamp is not None
                ),
                default=None,
            )
            if first is not None:
                metrics.gang_wait.observe(max(self.s.clock.now() - first, 0.0))
            for p in placed:
                steps.permit_and_bind(fwk, p.state, p.pinfo, p.assumed, p.result, p.start)
            for u in unplaced:
                steps.fail(fwk, u.pinfo, u.failure, u.start)
            self._set_condition(fwk, group, metrics.SCHEDULED, "")
            return metrics.SCHEDULED

        # Below quorum: nothing placed here may outlive this step.
        self._revert(fwk, placed)
        errors = any(not u.failure.status.is_rejected() for u in unplaced)
        nominations: dict[str, str] = {}
        preemption = ""
        clear_all = errors
        if not errors and fwk.pod_group_post_filter_plugins:
            made, pf_status = self._preempt(fwk, group, tried, cycle)
            nominations = made or {}
            preemption = pf_status.message()
            clear_all = pf_status.code == Code.ERROR
        if not nominations:
            fwk.group_failed(group)
        self._record(fwk, group, waiting=True)
        messages = group_messages(group, counted, tried, placed, unplaced, preemption)
        message = messages.group
        if v_enabled(2):
            log.info("unable to schedule pod group; waiting", group=group.name, err=message)
        status = Status(Code.UNSCHEDULABLE, message, plugin=group.plugin)
        own_fits = {u.pinfo.pod.uid: u.failure.fit for u in unplaced}
        reverted = {p.pinfo.pod.uid for p in placed}
        for pinfo, start in [
            *((p.pinfo, p.start) for p in placed),
            *((u.pinfo, u.start) for u in unplaced),
        ]:
            uid = pinfo.pod.uid
            fit = _group_fit(pinfo, group, len(self.s.snapshot), own_fits.get(uid))
            nominating = _nominating(uid, nominations, clear_all or uid in reverted)
            steps.handle_scheduling_failure(
                fwk, pinfo, status, fit, nominating, start, message=messages.member(uid)
            )
        result = metrics.ERROR if errors else metrics.UNSCHEDULABLE
        self._set_condition(fwk, group, result, message)
        return result

    def _preempt(
        self, fwk: Framework, group: PodGroupInfo, tried: list[QueuedPodInfo], cycle: int
    ) -> tuple[dict[str, str] | None, Status]:
        """Asks the profile's PodGroupPostFilter plugins to make room for the whole group, on
        the snapshot without this attempt's placements, inside a simulation that undoes what
        they change. The first that succeeds decides."""
        steps = self.steps
        snapshot = self.s.snapshot
        self.s.cache.update_snapshot(snapshot)
        already = fwk.gang_members(group.key).placed

        def schedule_group() -> GroupAssignments:
            """The members placed one after another on the simulated snapshot, each seeing the
            earlier ones; removed again before returning."""
            assignments: list[ProposedAssignment] = []
            try:
                for i, pinfo in enumerate(tried):
                    state = steps.new_cycle_state()
                    try:
                        result = self.s.algorithm.schedule_pod(fwk, state, pinfo, cycle + i)
                    except (FitError, NoNodesAvailableError):
                        continue
                    except SchedulingError as err:
                        return GroupAssignments(tuple(assignments), err.status)
                    host = result.suggested_host
                    snapshot.add_pod(replace_pod(pinfo.pod, node_name=host), host)
                    assignments.append(ProposedAssignment(pinfo.pod, host, state))
            finally:
                for a in reversed(assignments):
                    snapshot.remove_pod(a.pod, a.node_name)
            fits = already + len(assignments)
            if fits >= group.min_member:
                return GroupAssignments(tuple(assignments), None)
            return GroupAssignments(
                tuple(assignments),
                Status(
                    Code.UNSCHEDULABLE,
                    f"PodGroup {group.name}: {fits} of {group.min_member} members would fit "
                    "even with every lower-priority pod evicted",
                ),
            )

        members = [p.pod for p in tried]
        status = Status(Code.UNSCHEDULABLE)
        try:
            with snapshot.simulation():
                for plugin in fwk.pod_group_post_filter_plugins:
                    found, status = plugin.post_filter_pod_group(group, members, schedule_group)
                    if status.is_success():
                        return found, status
        except Exception as err:
            log.exception("group preemption failed", group=group.name)
            return None, Status.as_error(err)
        finally:
            if fwk.batch is not None:
                fwk.batch.discard()
        return None, status

    def _revert(self, fwk: Framework, placed: list[Placement]) -> None:
        """Unreserves and forgets the placements, the last first."""
        for p in reversed(placed):
            self.steps.unreserve_and_forget(fwk, p.state, p.assumed.pod, p.result.suggested_host)
        if placed and fwk.batch is not None:
            fwk.batch.discard()


def _nominating(uid: str, nominations: dict[str, str], clear: bool) -> NominatingInfo | None:
    """A member's nomination after its group failed, as kube-scheduler's pod group cycle
    gives it: the node group preemption nominated it to; else cleared for a member placed in
    this attempt (then reverted) or when the attempt or preemption failed with an error; else
    none, so a member that found no node keeps the nomination it has (its victims may still be
    leaving: clearing it would let a lower-priority pod take the room they free)."""
    if nominations.get(uid):
        return NominatingInfo(nominations[uid], NominatingMode.OVERRIDE)
    return CLEAR_NOMINATED_NODE if clear else None


def _group_fit(
    pinfo: QueuedPodInfo, group: PodGroupInfo, num_nodes: int, own: FitError | None
) -> FitError:
    """The member's failure as the queue sees it: the group's plugin among its rejectors (its
    events requeue the member), and the plugins that rejected the member itself."""
    diagnosis = Diagnosis()
    if own is not None:
        diagnosis.unschedulable_plugins = set(own.diagnosis.unschedulable_plugins)
        diagnosis.pending_plugins = set(own.diagnosis.pending_plugins)
    diagnosis.unschedulable_plugins.add(group.plugin)
    return FitError(pinfo.pod, num_nodes, diagnosis)
