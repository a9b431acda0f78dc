"""PrioritySort: the activeQ order, higher priority first, then earlier enqueue time."""

from __future__ import annotations

from typing import Any

from scheduler.framework import QueuedPodInfo

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, info: QueuedPodInfo) -> Any:
        return (-info.pod.priority, info.timestamp)
