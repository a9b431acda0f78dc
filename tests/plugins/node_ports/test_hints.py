"""NodePorts: PreFilter, conflicts, events and hints."""

from __future__ import annotations

from scheduler.framework.events import QueueingHint
from scheduler.plugins import (
    node_ports,
)
from scheduler.testing import build_plugin, make_pod

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def test_ports_hint_queues_only_when_a_conflicting_port_is_freed() -> None:
    plugin = build_plugin(node_ports.SPEC)
    pod = make_pod("p", host_ports=[8080])
    same = make_pod("a", host_ports=[8080], node_name="n")
    other = make_pod("b", host_ports=[9090], node_name="n")
    assert plugin.is_schedulable_after_pod_deleted(pod, same, None) == Q
    assert plugin.is_schedulable_after_pod_deleted(pod, other, None) == SKIP
