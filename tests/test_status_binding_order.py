"""A failed attempt's PodScheduled=False patch never lands after a later binding of the pod.

The reproduction of that race, made deterministic: the API server is slow on the patch
(`hold_patches`), the pod becomes schedulable and is retried at once. Before the fix the binding
went straight to the API server and the held patch landed afterwards, leaving a bound pod
marked unschedulable.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from scheduler.api.objects import replace_pod
from scheduler.framework.events import EVENT_NODE_ADD
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness, poll


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    harness.api.hold_patches = threading.Event()
    yield harness
    assert harness.api.hold_patches is not None
    harness.api.hold_patches.set()
    harness.close()


def test_binding_waits_for_the_failed_attempts_patch_that_is_running(h: Harness) -> None:
    h.add_node(make_node("small", cpu="1"))
    pod = make_pod("p", cpu="2")
    h.add_pod(pod)
    h.schedule_next()
    h.api.wait_for(lambda: h.api.patches_started == ["default/p"])

    big = make_node("big", cpu="4")
    h.add_node(big)
    h.queue.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, big)
    h.clock.step(60)  # past the backoff: the retry is due now
    h.queue.flush_backoff_q_completed()
    h.schedule_next()

    poll(
        lambda: h.scheduler.dispatcher.is_waiting(pod.uid) or "default/p" in h.api.binds,
        "the binding waiting for the running patch, or done",
    )
    assert h.api.binds == {}, "bound while the failed attempt's patch was still on its way"

    assert h.api.hold_patches is not None
    h.api.hold_patches.set()
    h.api.wait_for(lambda: "default/p" in h.api.binds)
    assert h.api.writes == [("patch", "default/p"), ("bind", "default/p")]


def test_binding_drops_the_failed_attempts_patch_still_pending() -> None:
    h = Harness()  # one API worker: the first pod's held patch keeps the second one pending
    hold = h.api.hold_patches = threading.Event()
    try:
        h.add_node(make_node("small", cpu="1"))
        h.add_pod(make_pod("blocker", cpu="100"))
        h.schedule_next()
        h.api.wait_for(lambda: h.api.patches_started == ["default/blocker"])
        h.add_pod(make_pod("p", cpu="2"))
        h.schedule_next()  # fails: its patch waits behind the blocker's

        big = make_node("big", cpu="4")
        h.add_node(big)
        h.queue.move_all_to_active_or_backoff_queue(
            EVENT_NODE_ADD, None, big, lambda pending: pending.name == "p"
        )
        h.clock.step(60)
        h.queue.flush_backoff_q_completed()
        h.schedule_next()

        h.api.wait_for(lambda: "default/p" in h.api.binds)  # not held up by the patches
        hold.set()
        assert h.scheduler.dispatcher.wait_idle(10)
        assert h.api.writes == [("bind", "default/p"), ("patch", "default/blocker")]
    finally:
        hold.set()
        h.close()


def test_a_pod_the_informer_shows_bound_gets_no_unschedulable_patch(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    pod = make_pod("p", cpu="1")
    h.api.fail_binds = True  # e.g. a retried POST whose first try was committed
    h.add_pod(pod)
    h.pods[pod.key] = replace_pod(pod, node_name="a")
    assert h.api.hold_patches is not None
    h.api.hold_patches.set()
    h.schedule_next()
    poll(lambda: any(e[1] == "FailedScheduling" for e in h.recorder.events), "the failure")
    assert h.scheduler.dispatcher.wait_idle(10)
    assert h.api.status_patches == []
