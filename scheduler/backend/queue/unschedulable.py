"""The unschedulable pool: pods waiting for a cluster event (or a timeout) to be retried.

Gated pods (rejected by a PreEnqueue plugin) wait here too but are counted apart, because the
scheduler never attempted them.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.framework.types import QueuedPodInfo


class UnschedulablePool:
    """Pods by uid; tracks which are gated so pending-pod counts stay exact. Not thread-safe."""

    __slots__ = ("_gated", "_pods")

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._gated: set[str] = set()

    def add_or_update(self, pinfo: QueuedPodInfo) -> bool:
        """Stores the pod; True if it was not here before."""
        uid = pinfo.pod.uid
        is_new = uid not in self._pods
        self._pods[uid] = pinfo
        if pinfo.gated:
            self._gated.add(uid)
        else:
            self._gated.discard(uid)
        return is_new

    def delete(self, uid: str) -> QueuedPodInfo | None:
        self._gated.discard(uid)
        return self._pods.pop(uid, None)

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._pods.get(uid)

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self._pods.values())

    @property
    def gated_count(self) -> int:
        return len(self._gated)

    @property
    def unschedulable_count(self) -> int:
        return len(self._pods) - len(self._gated)
