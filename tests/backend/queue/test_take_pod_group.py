"""take_pod_group: a group's pending members out of activeQ, backoffQ and the unschedulable
pool in one step, each marked in flight as pop() marks a pod."""

from __future__ import annotations

from scheduler.clock import FakeClock
from scheduler.framework.events import EVENT_NODE_ADD, ClusterEventWithHint, QueueingHint
from scheduler.testing import make_node, make_pod
from tests.backend.queue.helpers import GatePlugin, SwitchPlugin, always, fail, make_queue

QUEUE = always(QueueingHint.QUEUE)


def test_members_are_taken_from_every_queue_in_queue_order() -> None:
    clock = FakeClock()
    q = make_queue(clock, {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, QUEUE)]})
    pods = [make_pod(f"p{i}", uid=f"u{i}", priority=i) for i in range(4)]
    for pod in pods:
        q.add(pod)
    # p3 (highest priority) is popped and fails: unschedulable pool; p2 fails with an error:
    # backoffQ; p1 and p0 stay in activeQ.
    first = q.pop(timeout=0)
    assert first is not None and first.pod.uid == "u3"
    fail(q, first, "Fit")
    second = q.pop(timeout=0)
    assert second is not None and second.pod.uid == "u2"
    fail(q, second)
    assert [q.where(p.uid) for p in pods] == ["active", "active", "backoff", "unschedulable"]
    cycle = q.scheduling_cycle
    taken = q.take_pod_group(["u0", "u1", "u2", "u3", "unknown"])
    assert [p.pod.uid for p in taken] == ["u3", "u2", "u1", "u0"]
    assert [p.attempts for p in taken] == [2, 2, 1, 1]
    assert q.scheduling_cycle == cycle + 4
    assert {p.uid for p in q.in_flight_pods()} == {"u0", "u1", "u2", "u3"}
    assert q.active_len() == q.backoff_len() == q.unschedulable_len() == 0
    # An event during the group's cycle is recorded for each member.
    q.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, make_node("n"))
    for pinfo in taken[:2]:
        fail(q, pinfo, "Fit")
    q.done("u1")
    q.done("u0")
    assert q.where("u3") == "backoff" and q.where("u2") == "backoff"
    assert q.in_flight_pods() == []


def test_in_flight_members_are_left_out() -> None:
    q = make_queue(FakeClock())
    q.add(make_pod("p", uid="u"))
    assert q.pop(timeout=0) is not None
    assert q.take_pod_group(["u"]) == []


def test_a_gated_member_runs_pre_enqueue_again() -> None:
    switch = SwitchPlugin()
    gate = GatePlugin()
    q = make_queue(FakeClock(), pre_enqueue=[gate, switch])
    held = make_pod("held", uid="held")
    gated = make_pod("gated", uid="gated", scheduling_gates=["example.com/gate"])
    q.add(held)
    q.add(gated)
    assert q.gated_len() == 2
    assert q.take_pod_group(["held", "gated"]) == []  # both still held
    assert q.gated_len() == 2
    switch.reject = False  # e.g. the group now has its minMember pods
    taken = q.take_pod_group(["held", "gated"])
    assert [p.pod.uid for p in taken] == ["held"]
    assert q.where("gated") == "gated"
    assert q.gated_len() == 1 and q.unschedulable_len() == 1
