"""Pure preemption rules: victim order, PDB accounting, and the choice between candidate nodes.

These follow kube-scheduler's framework/preemption helpers. A victim *unit* is what is evicted
as one (workload-aware preemption): a pod, or every placed pod of a group whose members may
only go together (docs/gang.md, "Preemption").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from scheduler.api.gang import DISRUPTION_ALL, Gang, GangRef, GangSource, gang_ref
from scheduler.api.objects import Pod, PodDisruptionBudget
from scheduler.framework.gang import GangLister, GangMembers
from scheduler.framework.status import Status

T = TypeVar("T")

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
    if not pdbs:
        return [], list(pods)
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


#: Importance ranks of units at equal priority (kube-scheduler's victimRank): a group's pod
#: (either disruption mode) outranks a pod of no group.
KIND_POD = 1
KIND_GROUP = 2


@dataclass(frozen=True, slots=True)
class VictimUnit:
    """Pods evicted together, with the priority preemption compares (the group's own for a
    v1beta1 group, as kube-scheduler's GetPodPriority)."""

    pods: tuple[Pod, ...]
    priority: int
    kind: int = KIND_POD

    def earliest_start(self, now: float) -> float:
        return min(start_time(p, now) for p in self.pods)


def unit_importance_key(now: float) -> Callable[[VictimUnit], tuple[int, int, int, float]]:
    """Most important first (kube-scheduler's MoreImportantVictim): higher priority, then a
    group before a lone pod, then more pods, then started earlier."""
    return lambda u: (-u.priority, -u.kind, -len(u.pods), u.earliest_start(now))


def group_priority(gang: Gang, pod: Pod) -> int:
    """The priority a group's pod is preempted at: a v1beta1 group's own (0 when unset, as
    kube-scheduler's PodGroupPriority), else the pod's."""
    if gang.source == GangSource.KUBERNETES:
        return gang.priority if gang.priority is not None else 0
    return pod.priority


def evicted_whole(gang: Gang) -> bool:
    """A group whose placed pods are one victim: a v1beta1 group with disruptionMode All,
    and every scheduler-plugins gang (it has no such field; kube-pysched's rule: a gang
    left below minMember holds its nodes and does nothing, so it goes whole or not at all)."""
    if gang.source == GangSource.KUBERNETES:
        return gang.disruption_mode == DISRUPTION_ALL
    return gang.is_gang


def victim_units(
    pods: Iterable[Pod],
    gangs: GangLister | None,
    placed: Callable[[GangRef], GangMembers],
) -> list[VictimUnit]:
    """`pods` as units: each pod alone, except that a pod of a group evicted whole brings
    every placed pod of its group (`placed`, wherever they run) as one unit, listed once.
    Without `gangs` (no process watches groups) every pod is alone at its own priority."""
    units: list[VictimUnit] = []
    seen: set[object] = set()
    for pod in pods:
        ref = gang_ref(pod) if gangs is not None else None
        gang = gangs.gang(ref) if gangs is not None and ref is not None else None
        if gang is None:
            units.append(VictimUnit((pod,), pod.priority))
            continue
        priority = group_priority(gang, pod)
        if not evicted_whole(gang):
            units.append(VictimUnit((pod,), priority, KIND_GROUP))
            continue
        if gang.ref in seen:
            continue
        seen.add(gang.ref)
        members = placed(gang.ref)
        group_pods = tuple(p for p in (*members.bound, *members.assumed) if p.node_name)
        if not any(p.uid == pod.uid for p in group_pods):
            group_pods = (*group_pods, pod)
        units.append(VictimUnit(group_pods, priority, KIND_GROUP))
    return units


def split_units_by_pdb_violation(
    units: Sequence[VictimUnit], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[tuple[VictimUnit, int]], list[VictimUnit]]:
    """(violating units with how many of their pods violate, non-violating units), in the given
    order; budgets are spent as in split_by_pdb_violation. A unit is violating if any of its
    pods is: it goes whole or stays whole."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[tuple[VictimUnit, int]] = []
    non_violating: list[VictimUnit] = []
    for unit in units:
        count = sum(1 for pod in unit.pods if _spends_past_budget(pod, pdbs, allowed))
        if count:
            violating.append((unit, count))
        else:
            non_violating.append(unit)
    return violating, non_violating


class ReprieveError(Exception):
    """Giving a victim back failed (a PreFilter extension's error): the dry run ends with it."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def reprieve_walk(
    violating: Iterable[tuple[T, int]],
    non_violating: Iterable[T],
    reprieve: Callable[[T], bool],
) -> tuple[list[T], int]:
    """kube-scheduler's reprieve order, once every potential victim is gone and the preemptor
    fits: PDB-violating victims first, then the others, each in the order given (most important
    first). `reprieve` gives one back and says whether it may stay (else it takes it away
    again). Returns the victims that may not stay, in walk order, and the PDB violations among
    them (`violating` pairs each victim with its count). `reprieve` may raise ReprieveError."""
    victims: list[T] = []
    num_violating = 0
    for victim, count in violating:
        if not reprieve(victim):
            victims.append(victim)
            num_violating += count
    for victim in non_violating:
        if not reprieve(victim):
            victims.append(victim)
    return victims, num_violating


def reprieve_units(
    units: list[VictimUnit],
    pdbs: Sequence[PodDisruptionBudget],
    reprieve: Callable[[VictimUnit], bool],
    now: float,
) -> tuple[list[VictimUnit], int]:
    """reprieve_walk over units, most important first; the units that may not stay, most
    important first, and their PDB violations."""
    units.sort(key=unit_importance_key(now))
    violating, non_violating = split_units_by_pdb_violation(units, pdbs)
    chosen, num_violating = reprieve_walk(violating, non_violating, reprieve)
    chosen.sort(key=unit_importance_key(now))
    return chosen, num_violating


def pick_one_node(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """kube-scheduler's pickOneNodeForPreemption: each rule keeps the best-scoring nodes and the
    next rule only breaks remaining ties; the first remaining candidate wins.

    One pass over the candidates' rule scores as tuples: their lexicographic order is the rules'
    precedence, and a strict comparison keeps the first of equals. Rule by rule, five closures
    over 500 candidates cost about a tenth of a 5000-node preemption attempt.
    """
    best: Candidate | None = None
    best_score: tuple[int, int, int, int, float] | None = None
    for cand in candidates:
        score = _preference(cand, now)
        if best_score is None or score > best_score:
            best, best_score = cand, score
    return best


def _preference(cand: Candidate, now: float) -> tuple[int, int, int, int, float]:
    """The rules' scores, higher preferred: fewest PDB violations, lowest highest victim
    priority, smallest sum of (shifted) priorities, fewest victims, latest start of the highest
    priority victims."""
    victims = cand.victims
    first = top = victims[0].priority
    total = 0
    earliest = float("inf")
    for pod in victims:
        priority = pod.priority
        total += priority + _INT32_SHIFT
        started = start_time(pod, now)
        if priority > top:
            top, earliest = priority, started
        elif priority == top and started < earliest:
            earliest = started
    return (-cand.num_pdb_violations, -first, -total, -len(victims), earliest)
