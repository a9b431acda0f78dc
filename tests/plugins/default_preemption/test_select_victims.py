"""DefaultPreemption's policy on real plugins: victims per node, eligibility, candidate count."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler.api.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.plugins.default_preemption.plugin import NO_VICTIMS
from scheduler.testing import make_node, make_pdb, make_pod
from scheduler.testing.harness import Harness
from tests.plugins.default_preemption.preemption_world import (
    plugin,
    preemption_harness,
    prefiltered_state,
)

PREEMPTED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "kube-pysched: preempting to accommodate a higher priority pod",
}


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = preemption_harness()
    yield harness
    harness.close()


def running(h: Harness, name: str, node: str, priority: int, cpu: str, **kw: object) -> Pod:
    pod = make_pod(
        name,
        node_name=node,
        priority=priority,
        cpu=cpu,
        start_time=kw.pop("start", "2026-01-01T00:00:00Z"),
        **kw,  # type: ignore[arg-type]
    )
    h.add_assigned_pod(pod)
    return pod


def select(h: Harness, preemptor: Pod, node: str) -> tuple[list[str], int, Status | None]:
    state = prefiltered_state(h, preemptor)
    info = h.snapshot.get(node)
    assert info is not None
    victims, violations, status = plugin(h).select_victims_on_node(
        state, preemptor, info.snapshot(), list(h.pdbs)
    )
    return [v.name for v in victims], violations, status


def test_design_doc_example_evicts_only_the_priority_2_pod(h: Harness) -> None:
    """Capacity 10; running {p0: 3, p1: 1, p2: 5, p3: 1}; a priority-10 pod needs 5."""
    h.add_node(make_node("n", cpu="10"))
    for priority, cpu in ((0, "3"), (1, "1"), (2, "5"), (3, "1")):
        running(h, f"p{priority}", "n", priority, cpu)
    victims, violations, status = select(h, make_pod("pending", priority=10, cpu="5"), "n")
    assert status is None
    assert victims == ["p2"]
    assert violations == 0


def test_pdb_protected_victims_are_reprieved_first(h: Harness) -> None:
    h.add_node(make_node("n", cpu="4"))
    running(h, "important", "n", 5, "2")
    running(h, "protected", "n", 1, "2", labels={"app": "db"})
    preemptor = make_pod("pending", priority=10, cpu="2")
    assert select(h, preemptor, "n") == (["protected"], 0, None)  # without a PDB: least important
    h.pdbs.append(make_pdb("db", match_labels={"app": "db"}, disruptions_allowed=0))
    assert select(h, preemptor, "n") == (["important"], 0, None)


def test_unavoidable_pdb_violations_are_counted(h: Harness) -> None:
    h.add_node(make_node("n", cpu="2"))
    running(h, "db-0", "n", 1, "1", labels={"app": "db"})
    running(h, "db-1", "n", 1, "1", labels={"app": "db"}, start="2026-01-01T00:00:09Z")
    h.pdbs.append(make_pdb("db", match_labels={"app": "db"}, disruptions_allowed=1))
    victims, violations, status = select(h, make_pod("pending", priority=10, cpu="2"), "n")
    assert status is None
    assert victims == ["db-0", "db-1"]  # most important (started first) first
    assert violations == 1


def test_node_without_lower_priority_pods_is_not_a_candidate(h: Harness) -> None:
    h.add_node(make_node("n", cpu="2"))
    running(h, "peer", "n", 10, "2")
    victims, _, status = select(h, make_pod("pending", priority=10, cpu="1"), "n")
    assert victims == []
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == [NO_VICTIMS]


def test_node_that_stays_too_small_reports_the_filter_reason(h: Harness) -> None:
    h.add_node(make_node("n", cpu="4"))
    running(h, "low", "n", 0, "1")
    running(h, "high", "n", 20, "2")
    victims, _, status = select(h, make_pod("pending", priority=10, cpu="3"), "n")
    assert victims == []
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["Insufficient cpu"]


def test_higher_priority_nominated_pods_keep_the_room_they_were_promised(h: Harness) -> None:
    h.add_node(make_node("n", cpu="4"))
    running(h, "low", "n", 0, "4")
    preemptor = make_pod("pending", priority=10, cpu="2")
    assert select(h, preemptor, "n")[0] == ["low"]
    promised = make_pod("promised", priority=20, cpu="3", nominated_node_name="n")
    h.add_pod(promised)
    h.queue.add_nominated_pod(promised, "n")
    victims, _, status = select(h, preemptor, "n")
    assert victims == []
    assert status is not None and status.reasons == ["Insufficient cpu"]
    lower = make_pod("pending-low", priority=30, cpu="2")
    assert select(h, lower, "n")[0] == ["low"]  # a higher preemptor ignores the nomination


def test_preemption_policy_never_is_not_eligible(h: Harness) -> None:
    pod = make_pod("p", priority=10, preemption_policy="Never")
    assert plugin(h).pod_eligible_to_preempt_others(pod, Status(Code.UNSCHEDULABLE)) == (
        False,
        "not eligible due to preemptionPolicy=Never.",
    )


def test_not_eligible_while_own_victims_terminate_on_the_nominated_node(h: Harness) -> None:
    h.add_node(make_node("n", cpu="2"))
    running(
        h,
        "victim",
        "n",
        0,
        "2",
        deletion_timestamp="2026-01-01T00:01:00Z",
        conditions=[PREEMPTED],
    )
    h.cache.update_snapshot(h.snapshot)
    pod = make_pod("p", priority=10, cpu="2", nominated_node_name="n")
    unschedulable = Status(Code.UNSCHEDULABLE)
    assert plugin(h).pod_eligible_to_preempt_others(pod, unschedulable) == (
        False,
        "not eligible due to a terminating pod on the nominated node.",
    )
    unresolvable = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    assert plugin(h).pod_eligible_to_preempt_others(pod, unresolvable) == (True, "")
    other = make_pod("q", priority=10, cpu="2")
    assert plugin(h).pod_eligible_to_preempt_others(other, unschedulable) == (True, "")


@pytest.mark.parametrize(
    ("percentage", "absolute", "nodes", "expected"),
    [
        (10, 100, 50, 50),  # fewer nodes than the absolute minimum: all of them
        (10, 100, 1000, 100),
        (10, 100, 5000, 500),
        (40, 5, 10, 5),
        (0, 3, 10, 3),
        (100, 0, 7, 7),
    ],
)
def test_number_of_candidates(percentage: int, absolute: int, nodes: int, expected: int) -> None:
    h = preemption_harness(
        minCandidateNodesPercentage=percentage, minCandidateNodesAbsolute=absolute
    )
    try:
        assert plugin(h).calculate_num_candidates(nodes) == expected
        offset, count = plugin(h).get_offset_and_num_candidates(nodes)
        assert 0 <= offset < nodes and count == expected
    finally:
        h.close()


def test_the_cycles_node_and_state_are_left_as_they_were(h: Harness) -> None:
    """The evaluator hands over the cycle's own NodeInfo and CycleState (no copy per node):
    the policy copies them before removing and re-adding victims."""
    h.add_node(make_node("n", cpu="4"))
    running(h, "low", "n", 1, "3")
    preemptor = make_pod("pending", priority=10, cpu="2")
    state = prefiltered_state(h, preemptor)
    info = h.snapshot.get("n")
    assert info is not None
    pods, generation = list(info.pods), info.generation
    victims, _, status = plugin(h).select_victims_on_node(state, preemptor, info, [])
    assert status is None and [v.name for v in victims] == ["low"]
    assert info.pods == pods and info.generation == generation
