"""Finds where a pod could run if lower-priority pods were evicted, and picks one node.

Generic over the preemption policy (`PreemptionPolicy`): the DefaultPreemption plugin supplies
victim selection and eligibility, this module the candidate search kube-scheduler's Evaluator
performs: only nodes Filter rejected as Unschedulable (never UnschedulableAndUnresolvable) are
tried, starting at a random offset, until enough candidates are found; candidates that violate
no PodDisruptionBudget come first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import structlog

from scheduler import metrics
from scheduler.api.objects import Pod, PodDisruptionBudget, replace_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Handle
from scheduler.framework.preemption.executor import PREEMPTOR_TYPE, Executor
from scheduler.framework.preemption.victims import Candidate, pick_one_node
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    CLEAR_NOMINATED_NODE,
    Diagnosis,
    FitError,
    NodeInfo,
    NodeToStatus,
    NominatingInfo,
    NominatingMode,
    PostFilterResult,
)
from scheduler.logging import v_enabled

log = structlog.get_logger(__name__)

NOT_HELPFUL = "Preemption is not helpful for scheduling"
#: The fewest nodes a dry run hands the policy at once (when few candidates are still wanted).
_MIN_CHUNK = 16


class PreemptionPolicy(Protocol):
    """What a preemption plugin decides; the evaluator does the rest."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(
        self, pod: Pod, nominated_node_status: Status
    ) -> tuple[bool, str]: ...

    def select_victims_on_nodes(
        self,
        state: CycleState,
        pod: Pod,
        nodes: list[NodeInfo],
        pdbs: list[PodDisruptionBudget],
    ) -> list[tuple[list[Pod], int, Status | None]]:
        """For each of `nodes`, in order: (victims most important first, PDB violations, None)
        or a rejecting Status. A policy may decide the nodes together.

        `state` and the nodes are the cycle's own: copy them before changing anything. (Copying
        only for nodes that hold potential victims is what keeps a dry run over thousands of
        nodes cheap: most nodes of a pod that fits nowhere have none.)"""
        ...


@dataclass(frozen=True, slots=True)
class DryRunResult:
    candidates: list[Candidate]
    node_to_status: NodeToStatus
    errors: list[Status]


class Evaluator:
    def __init__(self, handle: Handle, policy: PreemptionPolicy, executor: Executor) -> None:
        self._handle = handle
        self._policy = policy
        self._executor = executor

    def preempt(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """As Evaluator.Preempt: (None, Error) for transient errors, (None, Unschedulable) to
        keep the nomination, (result, Unschedulable) to clear it, (result, Success) to nominate.
        """
        start = time.perf_counter()
        candidate, result, status = self._evaluate(state, pod, node_to_status)
        metrics.preemption_evaluation_duration.labels(PREEMPTOR_TYPE, status.code.label()).observe(
            time.perf_counter() - start
        )
        if candidate is None:
            return result, status
        if v_enabled(2):  # kube-scheduler's V(2), as every line of this module
            log.info(
                "the target node for the preemption is determined",
                pod=pod.key,
                node=candidate.node_name,
                victims=[v.key for v in candidate.victims],
            )
        message = (
            f"found a potential placement for pod on node {candidate.node_name}, "
            f"preempting {len(candidate.victims)} victims"
        )
        executor = self._executor
        executor.observe(candidate)
        nominating = NominatingInfo(candidate.node_name, NominatingMode.OVERRIDE)
        named = tuple(v.key for v in candidate.victims)
        result = PostFilterResult(nominating, node=candidate.node_name, victims=named)
        success = Status(Code.SUCCESS, message)
        if executor.async_enabled:
            victims = executor.claim_victims(candidate.victims)
            if not victims:
                # Every victim is already leaving: no thread, as kube-scheduler; the failure
                # handler nominates the pod.
                return result, success
            # Nominated before the thread starts, so a failing thread's revert comes after it.
            self._handle.nominator.add_nominated_pod(pod, candidate.node_name)
            executor.start_async(candidate, pod, victims)
            owned = PostFilterResult(None, True, candidate.node_name, named)
            return owned, success
        error = executor.run_inline(candidate, pod)
        if error is not None:
            return None, error
        return result, success

    def _evaluate(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[Candidate | None, PostFilterResult | None, Status]:
        latest = self._handle.get_pod(pod.key)
        if latest is None:
            return None, None, Status(Code.ERROR, f'pod "{pod.name}" not found')
        pod = latest
        if not pod.nominated_node_name:
            # A nomination this scheduler made whose status patch has not come back yet.
            nominated = self._handle.nominator.nominated_node_for(pod.uid)
            if nominated:
                pod = replace_pod(pod, nominated_node_name=nominated)
        nominated_status = node_to_status.get(pod.nominated_node_name)
        eligible, reason = self._policy.pod_eligible_to_preempt_others(pod, nominated_status)
        if not eligible:
            log.debug("pod is not eligible for preemption", pod=pod.key, reason=reason)
            return None, None, Status(Code.UNSCHEDULABLE, reason)

        all_nodes = self._handle.snapshot().list()
        if not all_nodes:
            return None, None, Status(Code.ERROR, "no nodes available")
        dry_run = self.find_candidates(state, pod, node_to_status, all_nodes)
        if dry_run.errors and not dry_run.candidates:
            return None, None, Status(Code.ERROR, dry_run.errors[0].message())
        if not dry_run.candidates:
            statuses = dry_run.node_to_status
            statuses.absent_status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL)
            fit = FitError(pod, len(all_nodes), Diagnosis(node_to_status=statuses))
            if v_enabled(2):
                log.info("no preemption candidate is found", pod=pod.key)
            return (
                None,
                PostFilterResult(CLEAR_NOMINATED_NODE),
                Status(Code.UNSCHEDULABLE, fit.message()),
            )
        best = pick_one_node(dry_run.candidates, time.time())
        if best is None:
            return None, None, Status(Code.UNSCHEDULABLE, "no candidate node for preemption")
        return best, None, Status(Code.SUCCESS)

    def find_candidates(
        self,
        state: CycleState,
        pod: Pod,
        node_to_status: NodeToStatus,
        all_nodes: list[NodeInfo],
    ) -> DryRunResult:
        potential = node_to_status.nodes_with_code(all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            log.debug("preemption will not help schedule pod on any node", pod=pod.key)
            return DryRunResult([], NodeToStatus(), [])
        pdbs = self._handle.pdbs()
        offset, wanted = self._policy.get_offset_and_num_candidates(len(potential))
        return self.dry_run(state, pod, potential, pdbs, offset, wanted)

    def dry_run(
        self,
        state: CycleState,
        pod: Pod,
        potential: list[NodeInfo],
        pdbs: list[PodDisruptionBudget],
        offset: int,
        wanted: int,
    ) -> DryRunResult:
        """Simulates preemption node by node from `offset`, stopping once `wanted` candidates
        exist and at least one of them violates no PDB."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[Status] = []
        count = len(potential)
        offset = offset % count if count else 0
        rotated = potential[offset:] + potential[:offset]
        start = 0
        while start < count:
            # The policy decides a chunk of nodes at once; results for nodes past the stop are
            # not used (no candidate, Status or error), so the outcome is the node-by-node walk's.
            size = max(wanted - len(non_violating) - len(violating), _MIN_CHUNK)
            chunk = rotated[start : start + size]
            start += size
            results = self._policy.select_victims_on_nodes(state, pod, chunk, pdbs)
            for info, (victims, violations, rejected) in zip(chunk, results, strict=True):
                status = rejected
                if status is None and victims:
                    bucket = violating if violations else non_violating
                    if len(bucket) < wanted:
                        bucket.append(Candidate(info.name, tuple(victims), violations))
                    if non_violating and len(non_violating) + len(violating) >= wanted:
                        return DryRunResult(non_violating + violating, statuses, errors)
                    continue
                if status is None:
                    status = Status(
                        Code.ERROR, f'expected at least one victim pod on node "{info.name}"'
                    )
                if status.code == Code.ERROR:
                    errors.append(status)
                statuses.set(info.name, status)
        return DryRunResult(non_violating + violating, statuses, errors)
