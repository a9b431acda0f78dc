"""NodeResourcesFit: queueing hints."""

from __future__ import annotations

from scheduler.framework.events import QueueingHint
from scheduler.plugins import (
    noderesources,
)
from scheduler.testing import build_plugin, make_node, make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_fit_hint_needs_a_node_big_enough_and_more_room() -> None:
    plugin = build_plugin(noderesources.FIT_SPEC)
    pod = make_pod("p", cpu="3")
    small, big = make_node("n", cpu="2"), make_node("n", cpu="4")
    assert plugin.is_schedulable_after_node_change(pod, None, small) == SKIP
    assert plugin.is_schedulable_after_node_change(pod, None, big) == Q
    assert plugin.is_schedulable_after_node_change(pod, small, big) == Q
    assert plugin.is_schedulable_after_node_change(pod, big, big) == SKIP
    gone = make_pod("gone", cpu="1", node_name="n")
    assert plugin.is_schedulable_after_pod_deleted(pod, gone, None) == Q
    assert plugin.is_schedulable_after_pod_deleted(pod, make_pod("never-bound"), None) == SKIP
