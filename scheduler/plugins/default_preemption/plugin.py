"""DefaultPreemption: when a pod fits nowhere, evict lower-priority pods to make room.

The PostFilter hands the search to the framework's preemption Evaluator and supplies the
policy: who may preempt, which pods on a node are the fewest to evict (all lower-priority pods
removed, then as many as possible reprieved, most important first, PDB-protected pods first),
and how many candidate nodes to try. With asynchronous preemption its PreEnqueue keeps a
preemptor out of the queue while its API calls are still running.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from scheduler.framework import (
    EVENT_ASSIGNED_POD_DELETE,
    PREEMPT_NEVER,
    ClusterEventWithHint,
    Code,
    CountingCheck,
    CycleState,
    Evaluator,
    Executor,
    GroupAssignments,
    GroupEvaluator,
    Handle,
    NodeInfo,
    NodeToStatus,
    Pod,
    PodDisruptionBudget,
    PodGroupInfo,
    PostFilterResult,
    QueueingHint,
    ReprieveError,
    Status,
    VictimUnit,
    gang_ref,
    importance_key,
    metrics,
    pod_terminating_by_preemption,
    reprieve_units,
    reprieve_walk,
    split_by_pdb_violation,
    victim_units,
)
from scheduler.plugins.default_preemption.args import PreemptionArgs
from scheduler.plugins.default_preemption.columns import select_by_columns, without

NAME = "DefaultPreemption"
ASYNC_GATE = "SchedulerAsyncPreemption"
NO_VICTIMS = "No preemption victims found for incoming pod"
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"


class DefaultPreemption:
    name = NAME

    def __init__(self, args: PreemptionArgs, handle: Handle, rng: random.Random | None = None):
        self.args = args
        self._handle = handle
        self._rng = rng or random.Random(handle.seed)
        self.async_enabled = handle.features.enabled(ASYNC_GATE)
        self.executor = Executor(handle, NAME, async_enabled=self.async_enabled)
        self.evaluator = Evaluator(handle, self, self.executor)
        self.group_evaluator = GroupEvaluator(handle, self.executor)

    # --- extension points -------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        try:
            result, status = self.evaluator.preempt(state, pod, node_to_status)
        finally:
            metrics.preemption_attempts.inc()
        return result, _prefixed(status)

    def post_filter_pod_group(
        self,
        group: PodGroupInfo,
        members: list[Pod],
        schedule_group: Callable[[], GroupAssignments],
    ) -> tuple[dict[str, str] | None, Status]:
        """Room for a whole group that could not reach its quorum (GroupEvaluator)."""
        try:
            nominations, status = self.group_evaluator.preempt(group, members, schedule_group)
        finally:
            metrics.preemption_attempts.inc()
        return nominations, _prefixed(status)

    def close(self) -> None:
        """Stops taking preemption jobs; running ones finish their API calls."""
        self.executor.close()

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if self.async_enabled and self.executor.is_pod_running_preemption(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_PREEMPTION)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Lets a gated preemptor be looked at again when pods leave; the other plugins' hints
        decide whether it is requeued, so this plugin's own hint always skips."""
        if not self.async_enabled:
            return []
        return [ClusterEventWithHint(EVENT_ASSIGNED_POD_DELETE, _skip)]

    # --- policy (used by the Evaluator) -----------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        wanted = num_nodes * self.args.min_candidate_nodes_percentage // 100
        wanted = max(wanted, self.args.min_candidate_nodes_absolute)
        return min(wanted, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self._rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def pod_eligible_to_preempt_others(
        self, pod: Pod, nominated_node_status: Status
    ) -> tuple[bool, str]:
        """Not for preemptionPolicy Never, nor while victims of an earlier preemption by this
        pod are still terminating on its nominated node."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = pod.nominated_node_name
        if not nominated:
            return True, ""
        if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        info = self._handle.snapshot().get(nominated)
        if info is not None:
            for other in info.pods:
                if other.priority < pod.priority and (
                    pod_terminating_by_preemption(other) or self.executor.evicted_recently(other)
                ):
                    return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        pdbs: list[PodDisruptionBudget],
    ) -> tuple[list[Pod], int, Status | None]:
        """The fewest lower-priority pods to evict from `node_info`; works on copies of it
        and of `state`, made only once the node has potential victims."""
        handle = self._handle
        gangs = handle.watched_gangs()
        if gangs is not None and any(gang_ref(p) is not None for p in node_info.pods):
            units = [
                u
                for u in victim_units(node_info.pods, gangs, handle.gang_members)
                if u.priority < pod.priority
            ]
        else:
            potential = [p for p in node_info.pods if p.priority < pod.priority]
            counting = handle.counting_filter(state, pod) if potential else None
            if counting is not None:
                return _select_by_counting(counting, state, pod, node_info, potential, pdbs)
            units = [VictimUnit((p,), p.priority) for p in potential]
        if not units:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        return self._select_units_on_node(state, pod, node_info, pdbs, units)

    def select_victims_on_nodes(
        self,
        state: CycleState,
        pod: Pod,
        nodes: list[NodeInfo],
        pdbs: list[PodDisruptionBudget],
    ) -> list[tuple[list[Pod], int, Status | None]]:
        """`select_victims_on_node` for each of `nodes`, in order. Where the cycle's Filter is
        a room check (columns.py), the nodes with potential victims are decided together with
        column operations; the rest, and nodes where the pod fits nowhere even with them
        gone, node by node."""
        counting = self._handle.counting_filter(state, pod)
        rules = counting.fit_requests(state, pod) if counting is not None else None
        if counting is None or rules is None or state.record_plugin_metrics:
            # A sampled cycle observes every plugin call: node by node.
            return [self.select_victims_on_node(state, pod, info, pdbs) for info in nodes]
        gangs = self._handle.watched_gangs()
        columnar: list[tuple[int, NodeInfo, list[Pod]]] = []
        for index, info in enumerate(nodes):
            if gangs is not None and any(gang_ref(p) is not None for p in info.pods):
                continue
            potential = [p for p in info.pods if p.priority < pod.priority]
            if potential:
                columnar.append((index, info, potential))
        found = select_by_columns(
            counting, rules, state, pod, columnar, pdbs, self._handle.snapshot().table
        )
        return [
            found[index] if index in found else self.select_victims_on_node(state, pod, info, pdbs)
            for index, info in enumerate(nodes)
        ]

    def _select_units_on_node(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        pdbs: list[PodDisruptionBudget],
        units: list[VictimUnit],
    ) -> tuple[list[Pod], int, Status | None]:
        """select_victims_on_node on copies of the node and the state: every unit removed,
        then given back most important first (reprieve_units). A unit is a pod, or - where
        pods of groups run on the node (workload-aware, as kube-scheduler with GenericWorkload)
        - a group evicted whole, which brings its pods on other nodes too: those are removed
        for the pod's PreFilter state (spreading, affinity) while only this node's Filter
        decides."""
        handle = self._handle
        state, node_info = state.clone(), node_info.snapshot()
        snapshot = handle.snapshot()
        here = node_info.name

        def change(unit: VictimUnit, sign: int) -> None:
            for victim in unit.pods:
                info = node_info if victim.node_name == here else snapshot.get(victim.node_name)
                if info is None:
                    continue
                if victim.node_name == here:
                    if sign > 0:
                        info.add_pod(victim)
                    else:
                        info.remove_pod(victim)
                run = (
                    handle.run_pre_filter_extension_add_pod
                    if sign > 0
                    else handle.run_pre_filter_extension_remove_pod
                )
                if (status := run(state, pod, victim, info)) is not None:
                    raise ReprieveError(status)

        def reprieve(unit: VictimUnit) -> bool:
            change(unit, 1)
            if handle.run_filter_plugins_with_nominated_pods(state, pod, node_info) is None:
                return True
            change(unit, -1)
            return False

        try:
            for unit in units:
                change(unit, -1)
            status = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if status is not None:
                return [], 0, status
            chosen, num_violating = reprieve_units(units, pdbs, reprieve, time.time())
        except ReprieveError as err:
            return [], 0, err.status
        return [p for unit in chosen for p in unit.pods], num_violating, None


def _prefixed(status: Status) -> Status:
    """The status with its message (if any) marked as preemption's, as kube-scheduler shows
    it after the scheduling failure's."""
    message = status.message()
    if not message:
        return status
    return Status(status.code, f"preemption: {message}", error=status.error)


def _select_by_counting(
    counting: CountingCheck,
    state: CycleState,
    pod: Pod,
    node_info: NodeInfo,
    potential: list[Pod],
    pdbs: list[PodDisruptionBudget],
) -> tuple[list[Pod], int, Status | None]:
    """`select_victims_on_node` when only the node's pod count and requests decide Filter
    (CountingFilter): the same removals, checks and reprieves in the same order, on two
    numbers instead of a copied NodeInfo and CycleState."""
    requested, count = without(node_info, potential)
    nominated = counting.nominated_pods(pod, node_info.name)
    status = counting.with_nominated(state, pod, node_info, requested, count, nominated)
    if status is not None:
        return [], 0, status

    def add(victim: Pod) -> None:
        nonlocal count
        requested.add(victim.requests)
        count += 1

    def remove(victim: Pod) -> None:
        nonlocal count
        requested.add(victim.requests, -1)
        count -= 1

    # The node-only plugins passed just above: each reprieve asks only the counting ones.
    victims, num_violating = _reprieve_walk(
        potential,
        pdbs,
        add,
        remove,
        lambda: (
            counting.with_nominated(
                state, pod, node_info, requested, count, nominated, counts_only=True
            )
            is None
        ),
    )
    return victims, num_violating, None


def _reprieve_walk(
    potential: list[Pod],
    pdbs: list[PodDisruptionBudget],
    add: Callable[[Pod], None],
    remove: Callable[[Pod], None],
    fits: Callable[[], bool],
) -> tuple[list[Pod], int]:
    """The counting path's reprieve walk (reprieve_walk over pods), once every potential victim
    is removed and the pod fits: each added back and kept if the pod still fits, else removed
    again and made a victim."""
    now = time.time()
    potential.sort(key=importance_key(now))
    violating, non_violating = split_by_pdb_violation(potential, pdbs)

    def reprieve(victim: Pod) -> bool:
        add(victim)
        if fits():
            return True
        remove(victim)
        return False

    victims, num_violating = reprieve_walk(((v, 1) for v in violating), non_violating, reprieve)
    if violating and non_violating:
        victims.sort(key=importance_key(now))
    return victims, num_violating


def _skip(_pod: Pod, _old: Any, _new: Any) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP
