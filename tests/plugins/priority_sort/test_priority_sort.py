"""PrioritySort: queue order."""

from __future__ import annotations

import random

from scheduler.framework.types import QueuedPodInfo
from scheduler.plugins import (
    priority_sort,
)
from scheduler.testing import build_plugin, make_pod


def test_priority_sort_orders_by_priority_then_enqueue_time() -> None:
    plugin = build_plugin(priority_sort.SPEC)
    high_late = QueuedPodInfo(make_pod("a", priority=10), timestamp=5.0)
    high_early = QueuedPodInfo(make_pod("b", priority=10), timestamp=1.0)
    low_early = QueuedPodInfo(make_pod("c", priority=1), timestamp=0.0)
    assert plugin.less(high_late, low_early)
    assert not plugin.less(low_early, high_late)
    assert plugin.less(high_early, high_late)
    assert not plugin.less(high_late, high_late)


def test_priority_sort_key_agrees_with_less() -> None:
    rng = random.Random(7)
    plugin = build_plugin(priority_sort.SPEC)
    infos = [
        QueuedPodInfo(
            make_pod(f"p{i}", priority=rng.choice([None, -5, 0, 3, 1000])),
            timestamp=float(rng.randrange(4)),
        )
        for i in range(40)
    ]
    for a in infos:
        for b in infos:
            assert plugin.less(a, b) == (plugin.sort_key(a) < plugin.sort_key(b))
