"""NodeUnschedulable: cordoned nodes, tolerations, batch form, events and hints."""

from __future__ import annotations

from scheduler.framework.events import QueueingHint
from scheduler.plugins import (
    node_unschedulable,
)
from scheduler.testing import build_plugin, make_node, make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_unschedulable_hint_queues_on_uncordon() -> None:
    plugin = build_plugin(node_unschedulable.SPEC)
    cordoned, open_ = make_node("n", unschedulable=True), make_node("n")
    assert plugin.is_schedulable_after_node_change(make_pod("p"), cordoned, open_) == Q
    assert plugin.is_schedulable_after_node_change(make_pod("p"), open_, open_) == SKIP
