"""Pure preemption rules: victim order, PDB accounting, and the choice between candidate nodes.

These follow kube-scheduler's framework/preemption helpers (pod-level victims only: pod groups
and workload-aware preemption are not implemented here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from scheduler.api.objects import Pod, PodDisruptionBudget

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_INT32_SHIFT = 2**31  # MaxInt32 + 1: makes every priority non-negative before summing


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where evicting `victims` (most important first) makes the preemptor fit."""

    node_name: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int = 0


def start_time(pod: Pod, now: float) -> float:
    """status.startTime; pods that have not started yet count as starting now."""
    return pod.start_time if pod.start_time is not None else now


def importance_key(now: float) -> Callable[[Pod], tuple[int, float]]:
    """Sort key putting the most important pod first: higher priority, then started earlier."""
    return lambda pod: (-pod.priority, start_time(pod, now))


def pod_terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted because a scheduler preempted it (its DisruptionTarget condition says so)."""
    if pod.deletion_timestamp is None:
        return False
    cond = pod.condition(DISRUPTION_TARGET)
    return (
        cond is not None and cond.status == "True" and cond.reason == REASON_PREEMPTION_BY_SCHEDULER
    )


def split_by_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """(violating, non-violating) victims, in the given order.

    Each budget's disruptionsAllowed is spent in `pods` order; a pod already listed in a
    budget's disruptedPods does not spend it again. A pod whose eviction would take any
    matching budget below zero is violating.
    """
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        if _spends_past_budget(pod, pdbs, allowed):
            violating.append(pod)
        else:
            non_violating.append(pod)
    return violating, non_violating


def _spends_past_budget(pod: Pod, pdbs: Sequence[PodDisruptionBudget], allowed: list[int]) -> bool:
    if not pod.labels:
        return False
    for i, pdb in enumerate(pdbs):
        if pdb.namespace != pod.namespace:
            continue
        selector = pdb.selector
        if selector is None or selector.is_empty() or not selector.matches(pod.labels):
            continue
        if pod.name in pdb.disrupted_pods:
            continue
        allowed[i] -= 1
        if allowed[i] < 0:
            return True
    return False


def _earliest_start_of_top_priority(victims: Sequence[Pod], now: float) -> float:
    top = max(p.priority for p in victims)
    return min(start_time(p, now) for p in victims if p.priority == top)


def pick_one_node(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """kube-scheduler's pickOneNodeForPreemption: each rule keeps the best-scoring nodes and the
    next rule only breaks remaining ties; the first remaining candidate wins."""
    if not candidates:
        return None
    rules: tuple[Callable[[Candidate], float], ...] = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + _INT32_SHIFT for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_top_priority(c.victims, now),
    )
    remaining = list(candidates)
    for rule in rules:
        remaining = _best(remaining, rule)
        if len(remaining) == 1:
            break
    return remaining[0]


def _best(candidates: Iterable[Candidate], score: Callable[[Candidate], float]) -> list[Candidate]:
    best: list[Candidate] = []
    top = float("-inf")
    for cand in candidates:
        value = score(cand)
        if value > top:
            top, best = value, [cand]
        elif value == top:
            best.append(cand)
    return best
