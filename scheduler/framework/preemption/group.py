"""Preemption for a whole pod group (kube-scheduler's PodGroupEvaluator; docs/gang.md,
"Preemption").

A group that could not reach its quorum asks once, for all its pending members: every unit of
lower priority anywhere in the cluster (a pod, or a group evicted whole) is removed from the
snapshot, the members are placed on what is left, and if that reaches the quorum the units
are given back one at a time, most important first (those whose eviction would violate a
PodDisruptionBudget before the others), each kept only if every member still fits where it
was placed. What is not given back is evicted; each member is nominated to its node. A group
that cannot fit even with every lower-priority unit gone evicts nothing.

Runs inside the scheduling loop's snapshot simulation, so the removals and additions are
undone when the group cycle ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from scheduler import metrics
from scheduler.api.gang import Gang, GangSource
from scheduler.api.objects import PREEMPT_NEVER, Pod, replace_pod
from scheduler.framework.gang import PodGroupInfo
from scheduler.framework.interface import GroupAssignments, Handle, ProposedAssignment
from scheduler.framework.preemption.executor import GROUP_PREEMPTOR_TYPE, Executor
from scheduler.framework.preemption.victims import (
    ReprieveError,
    VictimUnit,
    pod_terminating_by_preemption,
    reprieve_units,
    victim_units,
)
from scheduler.framework.status import Code, Status
from scheduler.logging import v_enabled

log = structlog.get_logger(__name__)

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NO_VICTIMS = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"


@dataclass(frozen=True, slots=True)
class GroupPreemptor:
    """The group as a preemptor: its pending members and the priority it preempts with."""

    name: str
    members: tuple[Pod, ...]
    priority: int
    never: bool
    gang: Gang | None
    """The PodGroup its victims' events name; None when it is gone (no preemption then)."""


@dataclass(frozen=True, slots=True)
class GroupVictims:
    units: tuple[VictimUnit, ...]
    num_pdb_violations: int
    assignments: tuple[ProposedAssignment, ...]

    @property
    def pods(self) -> list[Pod]:
        return [pod for unit in self.units for pod in unit.pods]


class GroupEvaluator:
    """One per preemption plugin; runs on the scheduling loop's thread only."""

    def __init__(self, handle: Handle, executor: Executor) -> None:
        self._handle = handle
        self._executor = executor

    def preemptor(self, group: PodGroupInfo, members: list[Pod]) -> GroupPreemptor:
        """A v1beta1 group preempts with its own priority (0 when unset) and policy, as
        kube-scheduler; a scheduler-plugins group with its lowest member's priority, so no
        member preempts a pod it could not preempt alone. preemptionPolicy Never on the group
        or on any member keeps the group from preempting."""
        gangs = self._handle.watched_gangs()
        gang = gangs.gang(group.key) if gangs is not None else None
        never = any(m.preemption_policy == PREEMPT_NEVER for m in members)
        if gang is not None and gang.source == GangSource.KUBERNETES:
            priority = gang.priority if gang.priority is not None else 0
            never = never or gang.preemption_policy == PREEMPT_NEVER
        else:
            priority = min(m.priority for m in members)
        return GroupPreemptor(group.name, tuple(members), priority, never, gang)

    def preempt(
        self,
        group: PodGroupInfo,
        members: list[Pod],
        schedule_group: Callable[[], GroupAssignments],
    ) -> tuple[dict[str, str] | None, Status]:
        preemptor = self.preemptor(group, members)
        if preemptor.never:
            return None, Status(Code.UNSCHEDULABLE, NOT_ELIGIBLE_NEVER)
        if preemptor.gang is None:  # deleted while its members were being tried
            return None, Status(Code.UNSCHEDULABLE, f"PodGroup {group.name} not found")
        if self._ongoing(preemptor):
            return {m.uid: m.nominated_node_name for m in members}, Status(Code.SUCCESS, ONGOING)
        start = time.perf_counter()
        found, status = self._select(preemptor, schedule_group)
        metrics.preemption_evaluation_duration.labels(
            GROUP_PREEMPTOR_TYPE, status.code.label()
        ).observe(time.perf_counter() - start)
        if found is None:
            return None, status
        nominations = {a.pod.uid: a.node_name for a in found.assignments}
        victims = found.pods
        if v_enabled(2):
            log.info(
                "preemption victims for pod group are determined",
                group=group.name,
                victims=[v.key for v in victims],
                nominations={a.pod.key: a.node_name for a in found.assignments},
            )
        error = self._executor.preempt_for_group(
            preemptor.gang, [a.pod for a in found.assignments], victims, found.num_pdb_violations
        )
        if error is not None:
            return None, error
        return nominations, Status(
            Code.SUCCESS, f"found a placement for podgroup, preempting {len(victims)} victims"
        )

    def _ongoing(self, preemptor: GroupPreemptor) -> bool:
        """Victims of an earlier preemption for this group are still leaving a member's
        nominated node: wait for them rather than evict more."""
        snapshot = self._handle.snapshot()
        for node_name in {m.nominated_node_name for m in preemptor.members} - {""}:
            info = snapshot.get(node_name)
            if info is None:
                continue
            for pod in info.pods:
                if pod.priority < preemptor.priority and (
                    pod_terminating_by_preemption(pod) or self._executor.evicted_recently(pod)
                ):
                    return True
        return False

    def _select(
        self, preemptor: GroupPreemptor, schedule_group: Callable[[], GroupAssignments]
    ) -> tuple[GroupVictims | None, Status]:
        handle = self._handle
        snapshot = handle.snapshot()
        present = [pod for info in snapshot.list() for pod in info.pods]
        in_snapshot = {pod.uid for pod in present}
        units = []
        for unit in victim_units(present, handle.watched_gangs(), handle.gang_members):
            if unit.priority >= preemptor.priority:
                continue
            pods = tuple(p for p in unit.pods if p.uid in in_snapshot)
            units.append(VictimUnit(pods, unit.priority, unit.kind))
        if not units:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        for unit in units:
            for pod in unit.pods:
                snapshot.remove_pod(pod, pod.node_name)
        placed = schedule_group()
        if placed.status is not None:
            return None, placed.status
        assignments = [a for a in placed.assignments if a.node_name]
        try:
            chosen, num_violating = reprieve_units(
                units, handle.pdbs(), lambda u: self._reprieve(u, assignments), time.time()
            )
        except ReprieveError as err:
            return None, err.status
        found = GroupVictims(tuple(chosen), num_violating, tuple(assignments))
        return found, Status(Code.SUCCESS)

    def _reprieve(self, unit: VictimUnit, assignments: list[ProposedAssignment]) -> bool:
        """Gives `unit` back; True if every member still fits where it was placed (members
        checked in order, each earlier one added to its node first), else takes it away
        again."""
        handle = self._handle
        snapshot = handle.snapshot()
        for pod in unit.pods:
            info = snapshot.add_pod(pod, pod.node_name)
            for a in assignments:
                _check(handle.run_pre_filter_extension_add_pod(a.state, a.pod, pod, info))
        added: list[ProposedAssignment] = []
        fits = True
        try:
            for a in assignments:
                target = snapshot.get(a.node_name)
                if (
                    target is None
                    or handle.run_filter_plugins_with_nominated_pods(a.state, a.pod, target)
                    is not None
                ):
                    fits = False
                    break
                snapshot.add_pod(replace_pod(a.pod, node_name=a.node_name), a.node_name)
                added.append(a)
        finally:
            for a in reversed(added):
                snapshot.remove_pod(a.pod, a.node_name)
        if not fits:
            for pod in unit.pods:
                info = snapshot.remove_pod(pod, pod.node_name)
                for a in assignments:
                    _check(handle.run_pre_filter_extension_remove_pod(a.state, a.pod, pod, info))
        return fits


def _check(status: Status | None) -> None:
    if status is not None:
        raise ReprieveError(status)
