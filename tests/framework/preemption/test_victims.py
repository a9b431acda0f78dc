"""Victim order, PDB accounting and the node choice rules, on hand-built pods."""

from __future__ import annotations

import random
from collections.abc import Callable

from scheduler.api.objects import Pod
from scheduler.framework.preemption.executor import disruption_target_patch
from scheduler.framework.preemption.victims import (
    Candidate,
    importance_key,
    pick_one_node,
    pod_terminating_by_preemption,
    split_by_pdb_violation,
)
from scheduler.testing import make_pdb, make_pod

NOW = 1_800_000_000.0
PREEMPTED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "kube-pysched: preempting to accommodate a higher priority pod",
}


def pod(name: str, priority: int = 0, start: str | None = None, **kw: object) -> Pod:
    return make_pod(name, priority=priority, start_time=start, node_name="n", **kw)  # type: ignore[arg-type]


def names(pods: list[Pod] | tuple[Pod, ...]) -> list[str]:
    return [p.name for p in pods]


# --- importance ----------------------------------------------------------------------------


def test_more_important_means_higher_priority_then_started_earlier() -> None:
    pods = [
        pod("late-low", 1, "2026-01-01T00:00:10Z"),
        pod("early-low", 1, "2026-01-01T00:00:01Z"),
        pod("high", 5, "2026-01-01T00:00:20Z"),
        pod("not-started", 1),
    ]
    assert names(sorted(pods, key=importance_key(NOW))) == [
        "high",
        "early-low",
        "late-low",
        "not-started",  # no startTime: counts as starting now, the latest of all
    ]


def test_terminating_by_preemption_needs_deletion_and_the_scheduler_condition() -> None:
    deleting = "2026-01-01T00:01:00Z"
    assert pod_terminating_by_preemption(
        pod("v", deletion_timestamp=deleting, conditions=[PREEMPTED])
    )
    assert not pod_terminating_by_preemption(pod("v", conditions=[PREEMPTED]))
    assert not pod_terminating_by_preemption(pod("v", deletion_timestamp=deleting))
    evicted = {**PREEMPTED, "reason": "EvictionByEvictionAPI"}
    assert not pod_terminating_by_preemption(
        pod("v", deletion_timestamp=deleting, conditions=[evicted])
    )


# --- PodDisruptionBudgets --------------------------------------------------------------------


def test_budget_is_spent_in_victim_order() -> None:
    pdb = make_pdb("db", match_labels={"app": "db"}, disruptions_allowed=1)
    first, second = pod("db-0", labels={"app": "db"}), pod("db-1", labels={"app": "db"})
    other = pod("web", labels={"app": "web"})
    violating, ok = split_by_pdb_violation([first, second, other], [pdb])
    assert names(violating) == ["db-1"]
    assert names(ok) == ["db-0", "web"]


def test_already_disrupted_pods_do_not_spend_the_budget_again() -> None:
    pdb = make_pdb("db", match_labels={"app": "db"}, disruptions_allowed=0, disrupted_pods=["db-0"])
    violating, ok = split_by_pdb_violation(
        [pod("db-0", labels={"app": "db"}), pod("db-1", labels={"app": "db"})], [pdb]
    )
    assert names(violating) == ["db-1"]
    assert names(ok) == ["db-0"]


def test_budgets_of_other_namespaces_empty_or_missing_selectors_never_match() -> None:
    labelled = pod("db-0", labels={"app": "db"})
    pdbs = [
        make_pdb("elsewhere", "other", match_labels={"app": "db"}),
        make_pdb("everything", match_labels={}),
        make_pdb("nothing"),
    ]
    assert split_by_pdb_violation([labelled], pdbs) == ([], [labelled])
    unlabelled = pod("bare")
    assert split_by_pdb_violation([unlabelled], [make_pdb("db", match_labels={})]) == (
        [],
        [unlabelled],
    )


# --- node choice ------------------------------------------------------------------------------


def cand(node: str, *victims: Pod, violations: int = 0) -> Candidate:
    return Candidate(node, tuple(sorted(victims, key=importance_key(NOW))), violations)


def test_fewest_pdb_violations_wins_first() -> None:
    chosen = pick_one_node(
        [cand("a", pod("x", 1), violations=1), cand("b", pod("y", 9), pod("z", 9))], NOW
    )
    assert chosen is not None and chosen.node_name == "b"


def test_then_the_lowest_highest_victim_priority() -> None:
    chosen = pick_one_node([cand("a", pod("x", 5)), cand("b", pod("y", 4), pod("z", 4))], NOW)
    assert chosen is not None and chosen.node_name == "b"


def test_then_the_smallest_priority_sum() -> None:
    a = cand("a", pod("x", 5), pod("w", 1))
    b = cand("b", pod("y", 5), pod("z", 2))
    chosen = pick_one_node([b, a], NOW)
    assert chosen is not None and chosen.node_name == "a"


def test_priorities_are_shifted_before_summing_so_fewer_negative_victims_win() -> None:
    a = cand("a", pod("x", -5))
    b = cand("b", pod("y", -5), pod("z", -5))
    chosen = pick_one_node([b, a], NOW)
    assert chosen is not None and chosen.node_name == "a"


def test_then_the_fewest_victims() -> None:
    # With shifted priorities equal sums need a victim at the lowest int32 priority.
    a = cand("a", pod("x", 0), pod("w", -(2**31)))
    b = cand("b", pod("y", 0))
    chosen = pick_one_node([a, b], NOW)
    assert chosen is not None and chosen.node_name == "b"


def test_then_the_latest_start_of_the_highest_priority_victims() -> None:
    early = cand("early", pod("x", 3, "2026-01-01T00:00:01Z"), pod("w", 1, "2026-01-01T09:00:00Z"))
    late = cand("late", pod("y", 3, "2026-01-01T00:00:05Z"), pod("z", 1, "2026-01-01T00:00:00Z"))
    chosen = pick_one_node([early, late], NOW)
    assert chosen is not None and chosen.node_name == "late"


def test_full_tie_takes_the_first_candidate() -> None:
    same = "2026-01-01T00:00:01Z"
    chosen = pick_one_node([cand("a", pod("x", 3, same)), cand("b", pod("y", 3, same))], NOW)
    assert chosen is not None and chosen.node_name == "a"
    assert pick_one_node([], NOW) is None


def _rule_by_rule(candidates: list[Candidate], now: float) -> Candidate:
    """pickOneNodeForPreemption as written upstream: a rule only breaks the previous ones' ties."""

    def started(p: Pod) -> float:
        return p.start_time if p.start_time is not None else now

    def earliest_of_top(c: Candidate) -> float:
        top = max(p.priority for p in c.victims)
        return min(started(p) for p in c.victims if p.priority == top)

    rules: list[Callable[[Candidate], float]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + 2**31 for p in c.victims),
        lambda c: -len(c.victims),
        earliest_of_top,
    ]
    remaining = candidates
    for rule in rules:
        top = max(rule(c) for c in remaining)
        remaining = [c for c in remaining if rule(c) == top]
    return remaining[0]


def test_the_start_rule_reads_the_highest_priority_even_when_not_first() -> None:
    """Rule 2 reads the first victim, rule 5 the highest priority ones wherever they are."""
    t1, t5 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:05Z"
    a = Candidate("a", (pod("x", 0, t5), pod("w", 1, t1)))
    b = Candidate("b", (pod("y", 0, t1), pod("z", 1, t5)))
    assert pick_one_node([a, b], NOW) is b


def test_the_one_pass_choice_is_the_rule_by_rule_choice() -> None:
    """Random candidates with many ties, victims sorted or not (a gang's units are flattened)."""
    rng = random.Random(30)
    starts = [None, "2026-01-01T00:00:01Z", "2026-01-01T00:00:05Z", "2026-01-01T09:00:00Z"]
    for trial in range(400):
        candidates = []
        for i in range(rng.randint(1, 12)):
            victims = [
                pod(f"v{trial}-{i}-{j}", rng.choice([-3, 0, 1, 5]), rng.choice(starts))
                for j in range(rng.randint(1, 4))
            ]
            if rng.random() < 0.7:
                victims.sort(key=importance_key(NOW))
            candidates.append(Candidate(f"n{i}", tuple(victims), rng.choice([0, 0, 1])))
        assert pick_one_node(candidates, NOW) is _rule_by_rule(candidates, NOW)


# --- the DisruptionTarget condition -----------------------------------------------------------


def test_disruption_target_patch_is_skipped_when_the_condition_is_there() -> None:
    fresh = disruption_target_patch(pod("v"), "kube-pysched", NOW)
    assert fresh is not None
    condition = fresh["status"]["conditions"][0]
    assert {k: condition[k] for k in PREEMPTED} == PREEMPTED
    assert "lastTransitionTime" in condition
    assert disruption_target_patch(pod("v", conditions=[PREEMPTED]), "kube-pysched", NOW) is None


# --- the evicted-victims memory ----------------------------------------------------------------
