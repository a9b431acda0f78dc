"""A whole preemption in process: the scheduling cycle, the background API calls, the queue.

Real cache, queue, framework and loop with the in-tree plugins; the API is a recording fake.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler import metrics
from scheduler.api.errors import ApiError
from scheduler.api.objects import Pod, replace_pod
from scheduler.plugins.default_preemption.plugin import WAITING_FOR_PREEMPTION
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness, poll
from tests.plugins.default_preemption.preemption_world import plugin, preemption_harness


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = preemption_harness()
    yield harness
    harness.close()


def setup_full_node(h: Harness) -> tuple[Pod, Pod]:
    """Node n (2 cpu) full with a priority-0 pod; a priority-10 pod that needs the room."""
    h.add_node(make_node("n", cpu="2"))
    victim = make_pod(
        "victim", node_name="n", priority=0, cpu="2", start_time="2026-01-01T00:00:00Z"
    )
    h.add_assigned_pod(victim)
    preemptor = make_pod("preemptor", priority=10, cpu="2")
    h.add_pod(preemptor)
    return victim, preemptor


def patches_for(h: Harness, key: str) -> list[dict[str, Any]]:
    with h.api.changed:
        return [dict(p["status"]) for k, p in h.api.status_patches if k == key]


def goroutines(result: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "scheduler_preemption_goroutines_execution_total", {"result": result}
    )
    return value or 0.0


def test_async_preemption_nominates_then_evicts_in_the_background(h: Harness) -> None:
    victim, preemptor = setup_full_node(h)
    successes = goroutines("success")
    h.schedule_next()

    # The scheduling cycle nominated the pod in memory and said so in its event.
    assert [p.name for p in h.queue.nominated_pods_for_node("n")] == ["preemptor"]
    event = next(e for e in h.recorder.events if e[1] == "FailedScheduling")
    assert event[2] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement "
        "for pod on node n, preempting 1 victims"
    )
    poll(lambda: goroutines("success") == successes + 1, "the preemption thread")
    poll(lambda: len(patches_for(h, preemptor.key)) == 2, "the PodScheduled patch")
    assert h.api.deletes == ["default/victim"]
    victim_patch = patches_for(h, victim.key)[0]["conditions"][0]
    assert (victim_patch["type"], victim_patch["reason"]) == (
        "DisruptionTarget",
        "PreemptionByScheduler",
    )
    preemptor_patches = patches_for(h, preemptor.key)
    # The thread writes nominatedNodeName; the failure handler only writes the condition.
    assert {"nominatedNodeName": "n"} in preemptor_patches
    condition_patch = next(p for p in preemptor_patches if "conditions" in p)
    assert "nominatedNodeName" not in condition_patch
    preempted = [e for e in h.recorder.events if e[1] == "Preempted"]
    assert preempted == [
        ("default/victim", "Preempted", f"Preempted by pod {preemptor.uid} on node n")
    ]


def test_preemptor_is_gated_while_its_api_calls_run(h: Harness) -> None:
    _, preemptor = setup_full_node(h)
    release = threading.Event()
    original_delete = h.api.delete_pod

    def slow_delete(pod: Pod, grace_period_seconds: int | None = None) -> None:
        release.wait(10)
        original_delete(pod, grace_period_seconds)

    h.api.delete_pod = slow_delete  # type: ignore[method-assign]
    h.schedule_next()
    status = plugin(h).pre_enqueue(preemptor)
    assert status is not None and status.reasons == [WAITING_FOR_PREEMPTION]
    h.queue.activate([preemptor])
    assert h.queue.where(preemptor.uid) == "gated"
    release.set()
    poll(lambda: not plugin(h).executor.is_pod_running_preemption(preemptor.uid), "the thread")
    assert plugin(h).pre_enqueue(preemptor) is None


def test_failed_eviction_reverts_the_nomination_and_retries_the_pod(h: Harness) -> None:
    _, preemptor = setup_full_node(h)
    h.api.fail_deletes = ApiError(403, "Forbidden", "denied by policy")
    errors = goroutines("error")
    h.schedule_next()
    poll(lambda: goroutines("error") == errors + 1, "the failed preemption")
    nominations = [
        p["nominatedNodeName"] for p in patches_for(h, preemptor.key) if "nominatedNodeName" in p
    ]
    assert nominations == ["n", None]
    assert h.queue.nominated_pods_for_node("n") == []
    # Activated (if still in flight, it is requeued after its backoff, as kube-scheduler does)
    # instead of waiting in the unschedulable pool for an event.
    poll(lambda: h.queue.where(preemptor.uid) in ("active", "backoff"), "the pod requeued")


def test_synchronous_preemption_runs_the_calls_in_the_cycle() -> None:
    h = preemption_harness(async_preemption=False)
    try:
        _, preemptor = setup_full_node(h)
        h.schedule_next()
        assert h.api.deletes == ["default/victim"]  # done before the cycle returned
        assert plugin(h).pre_enqueue(preemptor) is None
        poll(lambda: len(patches_for(h, preemptor.key)) == 1, "the PodScheduled patch")
        assert patches_for(h, preemptor.key)[0]["nominatedNodeName"] == "n"
    finally:
        h.close()


def test_lower_priority_pods_nominated_to_the_node_lose_the_nomination(h: Harness) -> None:
    h.add_node(make_node("n", cpu="4"))
    h.add_assigned_pod(make_pod("victim", node_name="n", priority=0, cpu="4"))
    lower = make_pod("lower", priority=5, cpu="1", nominated_node_name="n")
    h.pods[lower.key] = lower
    h.queue.add_nominated_pod(lower, "n")
    h.add_pod(make_pod("preemptor", priority=10, cpu="4"))
    h.schedule_next()
    poll(lambda: {"nominatedNodeName": None} in patches_for(h, lower.key), "the cleared nomination")
    assert [p.name for p in h.queue.nominated_pods_for_node("n")] == ["preemptor"]


def test_no_victims_anywhere_says_preemption_is_not_helpful(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="2"))
    h.add_assigned_pod(make_pod("peer", node_name="a", priority=10, cpu="2"))
    h.add_assigned_pod(make_pod("higher", node_name="b", priority=20, cpu="2"))
    h.add_pod(make_pod("p", priority=10, cpu="2", preemption_policy="PreemptLowerPriority"))
    h.schedule_next()
    event = next(e for e in h.recorder.events if e[1] == "FailedScheduling")
    assert event[2] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )
    assert h.api.deletes == []


def test_never_policy_pods_do_not_preempt(h: Harness) -> None:
    h.add_node(make_node("n", cpu="2"))
    h.add_assigned_pod(make_pod("victim", node_name="n", priority=0, cpu="2"))
    h.add_pod(make_pod("p", priority=10, cpu="2", preemption_policy="Never"))
    h.schedule_next()
    event = next(e for e in h.recorder.events if e[1] == "FailedScheduling")
    assert event[2].endswith("preemption: not eligible due to preemptionPolicy=Never.")
    assert h.queue.nominated_pods_for_node("n") == []


def test_a_retry_right_after_preempting_does_not_evict_again(h: Harness) -> None:
    """The informer has not shown the victim terminating yet; the scheduler remembers."""
    _, preemptor = setup_full_node(h)
    successes = goroutines("success")
    h.schedule_next()
    poll(lambda: goroutines("success") == successes + 1, "the preemption thread")
    h.queue.activate([preemptor])
    h.schedule_next()
    assert h.api.deletes == ["default/victim"]
    events = [e for e in h.recorder.events if e[1] == "FailedScheduling"]
    assert events[-1][2].endswith(
        "preemption: not eligible due to a terminating pod on the nominated node."
    )


def test_victims_already_terminating_need_no_thread(h: Harness) -> None:
    """As kube-scheduler: nothing to delete, so the failure handler nominates the pod and
    lower-priority nominations on the node stay."""
    h.add_node(make_node("n", cpu="2"))
    leaving = make_pod(
        "leaving", node_name="n", priority=0, cpu="2", deletion_timestamp="2026-01-01T00:01:00Z"
    )
    h.add_assigned_pod(leaving)
    lower = make_pod("lower", priority=5, cpu="1", nominated_node_name="n")
    h.pods[lower.key] = lower
    h.queue.add_nominated_pod(lower, "n")
    preemptor = make_pod("preemptor", priority=10, cpu="2")
    h.add_pod(preemptor)
    started = goroutines("success") + goroutines("error")
    h.schedule_next()
    poll(lambda: len(patches_for(h, preemptor.key)) == 1, "the PodScheduled patch")
    assert patches_for(h, preemptor.key)[0]["nominatedNodeName"] == "n"
    assert goroutines("success") + goroutines("error") == started
    assert h.api.deletes == []
    assert patches_for(h, lower.key) == []


def test_stopping_lets_a_running_preemption_evict_every_victim(h: Harness) -> None:
    """The victim pool is shut down at stop; a preemption already running still deletes all
    its victims (one after another) instead of failing half way."""
    h.add_node(make_node("n", cpu="3"))
    for i in range(3):
        h.add_assigned_pod(
            make_pod(f"v{i}", node_name="n", priority=0, cpu="1", start_time="2026-01-01T00:00:00Z")
        )
    preemptor = make_pod("preemptor", priority=10, cpu="3")
    h.add_pod(preemptor)
    release = threading.Event()
    original_patch = h.api.patch_pod_status

    def slow_nomination(pod: Pod, patch: Any) -> None:
        if pod.key == preemptor.key and "nominatedNodeName" in patch["status"]:
            release.wait(10)
        original_patch(pod, patch)

    h.api.patch_pod_status = slow_nomination  # type: ignore[method-assign]
    successes, errors = goroutines("success"), goroutines("error")
    h.schedule_next()
    plugin(h).close()
    release.set()
    poll(lambda: goroutines("success") + goroutines("error") > successes + errors, "the thread")
    assert goroutines("error") == errors
    assert sorted(h.api.deletes) == ["default/v0", "default/v1", "default/v2"]


def test_no_preemption_starts_once_stopping(h: Harness) -> None:
    _, preemptor = setup_full_node(h)
    plugin(h).close()
    h.schedule_next()
    assert h.api.deletes == []
    assert not plugin(h).executor.is_pod_running_preemption(preemptor.uid)


def test_a_retry_before_the_informer_shows_the_nomination_keeps_it(h: Harness) -> None:
    """The preemption thread writes status.nominatedNodeName; when the pod is retried before
    the informer has delivered that write (here: never), the failed retry must not drop the
    nomination this scheduler made, or other preemptors take the room its victims free."""
    victim, preemptor = setup_full_node(h)
    h.schedule_next()
    poll(lambda: h.api.deletes == ["default/victim"], "the eviction")
    poll(lambda: not plugin(h).executor.is_pod_running_preemption(preemptor.uid), "the thread")
    terminating = replace_pod(victim, deletion_timestamp="2026-01-01T00:01:00Z")
    h.pods[victim.key] = terminating
    h.cache.update_pod(victim, terminating)
    assert not h.pods[preemptor.key].nominated_node_name  # the informer's copy lags

    h.queue.activate([preemptor])
    h.schedule_next()

    event = [e for e in h.recorder.events if e[1] == "FailedScheduling"][-1]
    assert event[2].endswith("not eligible due to a terminating pod on the nominated node.")
    assert [p.name for p in h.queue.nominated_pods_for_node("n")] == ["preemptor"]
    # A pod of the same priority does not get the node the preemptor is waiting for.
    rival = make_pod("rival", priority=10, cpu="2")
    h.add_pod(rival)
    h.schedule_next()
    assert h.api.deletes == ["default/victim"]
    assert [p.name for p in h.queue.nominated_pods_for_node("n")] == ["preemptor"]


def test_a_failed_attempt_of_a_pod_seen_bound_keeps_no_nomination(h: Harness) -> None:
    victim, preemptor = setup_full_node(h)
    h.schedule_next()
    poll(lambda: not plugin(h).executor.is_pod_running_preemption(preemptor.uid), "the thread")
    terminating = replace_pod(victim, deletion_timestamp="2026-01-01T00:01:00Z")
    h.pods[victim.key] = terminating
    h.cache.update_pod(victim, terminating)
    h.queue.activate([preemptor])
    # Bound elsewhere (another scheduler) before this attempt ends: nothing to reserve.
    h.pods[preemptor.key] = replace_pod(preemptor, node_name="elsewhere")

    h.schedule_next()

    assert h.queue.nominated_pods_for_node("n") == []
