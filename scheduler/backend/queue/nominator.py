"""Pods nominated to nodes: preemptors waiting for their victims to leave.

Filter runs treat a nominated pod as if it were already on its node, so a lower-priority pod
cannot take the room a preemption freed. The nominator only remembers which pod goes where;
`lookup` (the queue) supplies the pods as the queue currently knows them, one call per node.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.api.objects import Pod
from scheduler.framework.types import NominatingInfo, NominatingMode

#: The current version of each pod of a list (None: the queue does not hold it), in order.
PodLookup = Callable[[list[Pod]], list[Pod | None]]


class Nominator:
    """Thread-safe. Satisfies framework.interface.PodNominator."""

    __slots__ = ("_lock", "_lookup", "_node_of", "_pods_on", "_snapshot", "_version")

    def __init__(self, lookup: PodLookup | None = None) -> None:
        self._lock = threading.Lock()
        self._lookup = lookup
        self._pods_on: dict[str, list[Pod]] = {}
        self._node_of: dict[str, str] = {}
        # Bumped by every change of the nominations; `_snapshot` is valid for one version.
        self._version = 0
        self._snapshot: _Snapshot | None = None

    def add_nominated_pod(
        self, pod: Pod, nominating_info: NominatingInfo | str | None = None
    ) -> None:
        """Nominates the pod to the node NominatingInfo overrides with, else to its
        status.nominatedNodeName; a plain string is an override."""
        with self._lock:
            self._add_locked(pod, nominating_info)

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        """Keeps a nomination the scheduler made even if the update does not carry it yet."""
        with self._lock:
            info = None
            if not old.nominated_node_name and not new.nominated_node_name:
                info = self._unseen_locked(old.uid)
            self._delete_locked(old.uid)
            self._add_locked(new, info)

    def renominate_after_failure(self, pod: Pod, nominating_info: NominatingInfo | None) -> None:
        """add_nominated_pod for a pod still pending after a failed attempt. Without nominating
        info the nomination follows status.nominatedNodeName, as kube-scheduler's; but one the
        scheduler made that the pod's (informer) copy does not show yet is kept, as an update
        keeps it: asynchronous preemption writes it from its thread, and under load the write
        or its watch event can trail the pod's next attempt by seconds, and dropping it let
        other preemptors take the room the pod's own victims were freeing (docs/benchmarks.md,
        session 25). A cleared nomination reaches the informer as an update, which drops it."""
        with self._lock:
            if nominating_info is None and not pod.nominated_node_name:
                nominating_info = self._unseen_locked(pod.uid)
            self._add_locked(pod, nominating_info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        with self._lock:
            self._delete_locked(pod.uid)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        if node_name not in self._pods_on:  # the common case, without taking the lock
            return []
        with self._lock:
            pods = list(self._pods_on.get(node_name, ()))
        return self._current_versions(pods)

    def nominated_pods_by_node(self) -> Mapping[str, Sequence[Pod]]:
        """nominated_pods_for_node for every node with nominations, read at one instant: one
        lock for the nominations and one lookup for all their pods (a Filter pass asks for
        every node; per node that was two locks each).

        Read-only: while neither the nominations nor the queue's version of a nominated pod
        change, every caller gets the same mapping (a preempting burst asks each cycle, over
        a thousand nominations that rarely changed since the cycle before)."""
        with self._lock:
            if not self._pods_on:
                return {}
            snapshot = self._snapshot
            if snapshot is None or snapshot.version != self._version:
                by_node = {node: list(pods) for node, pods in self._pods_on.items()}
                flat = [pod for pods in by_node.values() for pod in pods]
                snapshot = _Snapshot(self._version, by_node, flat)
                self._snapshot = snapshot
        current = self._current_versions(snapshot.pods)
        if all(now is pod for now, pod in zip(current, snapshot.pods, strict=True)):
            return snapshot.by_node
        versions = iter(current)
        return {node: [next(versions) for _ in pods] for node, pods in snapshot.by_node.items()}

    def _current_versions(self, pods: list[Pod]) -> list[Pod]:
        """Each pod as the queue holds it now (as given where it holds none)."""
        lookup = self._lookup
        if lookup is None or not pods:
            return pods
        return [
            pod if current is None else current
            for pod, current in zip(pods, lookup(pods), strict=True)
        ]

    def nominated_node_names(self) -> set[str]:
        with self._lock:
            return set(self._pods_on)

    def nominated_node_for(self, uid: str) -> str | None:
        with self._lock:
            return self._node_of.get(uid)

    def _unseen_locked(self, uid: str) -> NominatingInfo | None:
        """The nomination held for `uid` as an override (for a pod whose status shows none)."""
        node = self._node_of.get(uid)
        return None if node is None else NominatingInfo(node, NominatingMode.OVERRIDE)

    def _add_locked(self, pod: Pod, info: NominatingInfo | str | None) -> None:
        if isinstance(info, str):
            node = info
        elif info is not None and info.mode == NominatingMode.OVERRIDE:
            node = info.nominated_node_name
        else:
            node = pod.nominated_node_name
        if (
            node
            and self._node_of.get(pod.uid) == node
            and any(held is pod for held in self._pods_on[node])
        ):
            # Nominated there already as this very object (a failed retry renominates it):
            # nothing changes, so the readers' snapshot stays valid.
            return
        self._delete_locked(pod.uid)
        if not node:
            return
        self._node_of[pod.uid] = node
        self._pods_on.setdefault(node, []).append(pod)
        self._version += 1

    def _delete_locked(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        self._version += 1
        pods = self._pods_on[node]
        for i, pod in enumerate(pods):
            if pod.uid == uid:
                del pods[i]
                break
        if not pods:
            del self._pods_on[node]


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The nominations at one version: by node, and the same pods in one flat list."""

    version: int
    by_node: dict[str, list[Pod]]
    pods: list[Pod]
