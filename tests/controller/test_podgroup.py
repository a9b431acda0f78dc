"""The PodGroup status rules (controller.podgroup) as pure functions: every phase step of
scheduler-plugins' controller, the counts, scheduleStartTime, occupiedBy, the 48 h timeout and
the release decision."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from controller.podgroup import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    SCHEDULING,
    UNKNOWN,
    Group,
    Member,
    Status,
    counts,
    format_time,
    next_status,
    occupied_by,
    parse_time,
    releasable,
    release_message,
    transition_message,
)

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
CREATED = NOW - timedelta(minutes=5)


def group(phase: str = "", min_member: int = 3, **status: object) -> Group:
    return Group(
        namespace="ns",
        name="g",
        min_member=min_member,
        uid="u",
        resource_version="1",
        created=CREATED,
        status=replace(Status(phase=phase), **status),  # type: ignore[arg-type]
    )


def pods(*phases: str, bound: bool = True) -> list[Member]:
    return [
        Member(name=f"p{i}", uid=f"u{i}", phase=phase, node_name="n1" if bound else "")
        for i, phase in enumerate(phases)
    ]


def step(g: Group, members: list[Member]) -> Status:
    return next_status(g, members, NOW).status


# --- phases --------------------------------------------------------------------------------


def test_a_new_group_becomes_pending_with_its_counts() -> None:
    outcome = next_status(group(), pods("Running"), NOW)
    assert outcome.status.phase == PENDING
    assert outcome.transition and outcome.changed
    assert (outcome.status.scheduled, outcome.status.running) == (1, 1)
    assert outcome.status.schedule_start_time == ""


def test_pending_waits_for_min_member_pods() -> None:
    status = step(group(PENDING), pods("Pending", "Pending", bound=False))
    assert status.phase == PENDING
    assert status.scheduled == 0


def test_pending_moves_to_scheduling_with_min_member_pods_and_stamps_the_start() -> None:
    status = step(group(PENDING), pods("Pending", "Pending", "Pending", bound=False))
    assert status.phase == SCHEDULING
    assert status.schedule_start_time == format_time(NOW) == "2026-05-01T12:00:00Z"


def test_pending_moves_only_one_step_even_when_all_members_run() -> None:
    """Upstream's one step per reconcile: the status write triggers the next one."""
    status = step(group(PENDING), pods("Running", "Running", "Running"))
    assert status.phase == SCHEDULING
    assert status.running == 3


def test_scheduling_start_time_is_kept_once_set() -> None:
    earlier = "2026-05-01T11:00:00Z"
    status = step(group(SCHEDULING, schedule_start_time=earlier), pods("Pending", "Running"))
    assert status.phase == PENDING  # fewer than minMember members
    again = step(group(PENDING, schedule_start_time=earlier), pods("Pending", "Running", "Pending"))
    assert again.phase == SCHEDULING
    assert again.schedule_start_time == earlier


def test_scheduling_until_min_member_run() -> None:
    status = step(group(SCHEDULING), pods("Running", "Running", "Pending"))
    assert status.phase == SCHEDULING
    assert (status.scheduled, status.running) == (3, 2)


def test_running_once_running_plus_succeeded_reach_min_member() -> None:
    status = step(group(SCHEDULING), pods("Running", "Succeeded", "Running"))
    assert status.phase == RUNNING
    assert (status.running, status.succeeded) == (2, 1)


def test_running_group_that_loses_members_goes_back_to_pending() -> None:
    status = step(group(RUNNING), pods("Running", "Running"))
    assert status.phase == PENDING


def test_running_group_below_quorum_goes_back_to_scheduling() -> None:
    members = pods("Running", "Running") + pods("Pending", bound=False)
    status = step(group(RUNNING), members)
    assert status.phase == SCHEDULING
    assert status.scheduled == 2


def test_a_failure_fails_the_group_once_enough_members_ran() -> None:
    status = step(group(RUNNING), pods("Running", "Failed", "Succeeded"))
    assert status.phase == FAILED
    assert (status.running, status.succeeded, status.failed) == (1, 1, 1)


def test_a_failure_below_quorum_does_not_fail_the_group() -> None:
    members = pods("Failed", "Running") + pods("Pending", bound=False)
    status = step(group(SCHEDULING), members)
    assert status.phase == SCHEDULING
    assert status.failed == 1


def test_finished_when_min_member_succeeded_and_it_wins_over_failed() -> None:
    assert step(group(RUNNING), pods("Succeeded", "Succeeded", "Succeeded")).phase == FINISHED
    mixed = pods("Succeeded", "Succeeded", "Succeeded", "Failed")
    assert step(group(RUNNING), mixed).phase == FINISHED


def test_unknown_is_reconciled_like_scheduling() -> None:
    assert step(group(UNKNOWN), pods("Running", "Running", "Running")).phase == RUNNING


@pytest.mark.parametrize("phase", [FINISHED, FAILED])
def test_final_phases_never_change(phase: str) -> None:
    g = group(phase, running=3)
    outcome = next_status(g, pods("Pending"), NOW)
    assert outcome.status == g.status
    assert not outcome.changed and not outcome.transition


def test_an_unchanged_group_is_not_changed() -> None:
    g = group(SCHEDULING, scheduled=3, running=2, schedule_start_time="2026-05-01T11:00:00Z")
    assert not next_status(g, pods("Running", "Running", "Pending"), NOW).changed


def test_min_member_zero_or_one() -> None:
    assert step(group(PENDING, min_member=0), []).phase == SCHEDULING
    assert step(group(SCHEDULING, min_member=1), pods("Running")).phase == RUNNING


# --- scheduler-plugins' 48 h rule --------------------------------------------------------------


def test_scheduling_started_48h_after_creation_with_nothing_running_is_left_alone() -> None:
    late = format_time(CREATED + timedelta(hours=49))
    g = group(SCHEDULING, schedule_start_time=late)
    outcome = next_status(g, pods("Running", "Running", "Running"), NOW)
    assert outcome.timed_out
    assert outcome.status == g.status


def test_the_48h_rule_does_not_apply_once_something_runs() -> None:
    late = format_time(CREATED + timedelta(hours=49))
    g = group(SCHEDULING, schedule_start_time=late, running=1)
    outcome = next_status(g, pods("Running", "Running", "Running"), NOW)
    assert not outcome.timed_out
    assert outcome.status.phase == RUNNING


# --- counts, occupiedBy, wire format -------------------------------------------------------------


def test_counts() -> None:
    members = [*pods("Running", "Succeeded", "Failed", "Pending"), *pods("Pending", bound=False)]
    assert counts(members) == {"scheduled": 4, "running": 1, "succeeded": 1, "failed": 1}


def test_occupied_by_is_the_first_members_owners_sorted() -> None:
    members = [
        Member(name="b", owners=("z",)),
        Member(name="a", owners=("job-2", "job-1")),
    ]
    assert occupied_by("ns", members) == "ns/job-1,ns/job-2"
    assert occupied_by("ns", [Member(name="a")]) == ""
    status = step(group(PENDING, min_member=2), members)
    assert status.occupied_by == "ns/job-1,ns/job-2"


def test_member_from_pod() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "uid": "u1",
            "deletionTimestamp": "2026-05-01T12:00:00Z",
            "ownerReferences": [{"name": "job", "kind": "Job"}],
        },
        "spec": {"nodeName": "n"},
        "status": {"phase": "Running"},
    }
    assert Member.from_pod(pod) == Member("p", "u1", "Running", "n", True, ("job",))
    assert Member.from_pod({"metadata": {"name": "q"}}) == Member("q")


def test_status_round_trip_and_patch_shape() -> None:
    status = Status(SCHEDULING, "ns/job", 1, 2, 3, 4, "2026-05-01T12:00:00Z")
    wire = status.to_dict()
    assert wire == {
        "phase": SCHEDULING,
        "occupiedBy": "ns/job",
        "scheduled": 1,
        "running": 2,
        "succeeded": 3,
        "failed": 4,
        "scheduleStartTime": "2026-05-01T12:00:00Z",
    }
    assert Status.from_dict(wire) == status
    # Zero counts are written (a merge patch must overwrite old values), empty strings are not.
    assert Status().to_dict() == {"scheduled": 0, "running": 0, "succeeded": 0, "failed": 0}


def test_group_from_body() -> None:
    body = {
        "metadata": {
            "namespace": "ns",
            "name": "g",
            "uid": "u",
            "resourceVersion": "7",
            "creationTimestamp": "2026-05-01T11:55:00Z",
        },
        "spec": {"minMember": 3},
        "status": {"phase": RUNNING, "running": 3},
    }
    g = Group.from_body(body)
    assert (g.key, g.min_member, g.created) == (("ns", "g"), 3, CREATED)
    assert g.status == Status(phase=RUNNING, running=3)
    assert g.reference()["metadata"] == {"namespace": "ns", "name": "g", "uid": "u"}
    assert parse_time("garbage") is None


# --- release of a finished group ---------------------------------------------------------------


def test_a_finished_group_releases_its_pending_unbound_members_only() -> None:
    members = [
        Member("done", phase="Succeeded", node_name="n"),
        Member("running", phase="Running", node_name="n"),
        Member("bound-not-started", phase="Pending", node_name="n"),
        Member("waiting-b", phase="Pending"),
        Member("waiting-a", phase="Pending"),
        Member("going", phase="Pending", deleting=True),
    ]
    assert [m.name for m in releasable(FINISHED, members)] == ["waiting-a", "waiting-b"]


@pytest.mark.parametrize("phase", [PENDING, SCHEDULING, RUNNING, FAILED])
def test_only_a_finished_group_releases(phase: str) -> None:
    assert releasable(phase, [Member("waiting", phase="Pending")]) == []


def test_messages() -> None:
    g = group(RUNNING)
    outcome = next_status(g, pods("Succeeded", "Succeeded", "Succeeded"), NOW)
    message = transition_message(g, outcome, 3)
    assert message.startswith("PodGroup ns/g: Running -> Finished; 3 members of minMember 3;")
    assert "succeeded 3" in message
    many = [Member(f"p{i:02}") for i in range(12)]
    text = release_message(many)
    assert text.startswith("Released 12 pending unbound member(s)")
    assert text.endswith("p09 and 2 more")
