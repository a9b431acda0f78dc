"""A min-heap of queued pods addressable by pod uid.

heapq does the ordering in C; deletes and in-place updates mark the old entry dead instead of
re-sifting in Python, and dead entries are skipped on pop and compacted when they pile up.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from scheduler.framework.types import QueuedPodInfo

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
SortKeyFn = Callable[[QueuedPodInfo], Any]

KeyFn = Callable[[QueuedPodInfo], Any]

# Entry layout: [sort key, insertion sequence, pod info or None when dead]. The unique sequence
# number breaks ties, so the pod info itself is never compared.
_KEY, _SEQ, _INFO = 0, 1, 2
_COMPACT_SLACK = 64


class PodHeap:
    """Pods ordered by `key`, computed once when a pod is added or updated. Not thread-safe."""

    __slots__ = ("_entries", "_heap", "_key", "_seq")

    def __init__(self, key: KeyFn) -> None:
        self._key = key
        self._heap: list[list[Any]] = []
        self._entries: dict[str, list[Any]] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, uid: str) -> bool:
        return uid in self._entries

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        """Pods in no particular order."""
        return (entry[_INFO] for entry in self._entries.values())

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.get(uid)
        return None if entry is None else entry[_INFO]

    def add_or_update(self, pinfo: QueuedPodInfo) -> None:
        """Inserts the pod, or re-positions it if it is already present (its key may change)."""
        uid = pinfo.pod.uid
        old = self._entries.get(uid)
        if old is not None:
            old[_INFO] = None
        entry = [self._key(pinfo), next(self._seq), pinfo]
        self._entries[uid] = entry
        heapq.heappush(self._heap, entry)
        if old is not None:
            self._maybe_compact()

    def delete(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.pop(uid, None)
        if entry is None:
            return None
        pinfo: QueuedPodInfo = entry[_INFO]
        entry[_INFO] = None
        self._maybe_compact()
        return pinfo

    def peek(self) -> QueuedPodInfo | None:
        heap = self._heap
        while heap and heap[0][_INFO] is None:
            heapq.heappop(heap)
        return heap[0][_INFO] if heap else None

    def pop(self) -> QueuedPodInfo | None:
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            pinfo: QueuedPodInfo | None = entry[_INFO]
            if pinfo is not None:
                del self._entries[pinfo.pod.uid]
                return pinfo
        return None

    def _maybe_compact(self) -> None:
        if len(self._heap) > 2 * len(self._entries) + _COMPACT_SLACK:
            self._heap = [e for e in self._heap if e[_INFO] is not None]
            heapq.heapify(self._heap)


def _priority_sort_key(pinfo: QueuedPodInfo) -> tuple[int, float]:
    return (-pinfo.pod.priority, pinfo.timestamp)


def active_sort_key(less: LessFn | None, sort_key: SortKeyFn | None) -> SortKeyFn:
    """The activeQ heap's key: the QueueSort plugin's sort_key, else its less() as a key,
    else PrioritySort's order."""
    if sort_key is not None:
        return sort_key
    if less is None:
        return _priority_sort_key
    less_fn = less

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        if less_fn(a, b):
            return -1
        return 1 if less_fn(b, a) else 0

    return functools.cmp_to_key(cmp)
