"""Pods nominated to nodes: preemptors waiting for their victims to leave.

Filter runs treat a nominated pod as if it were already on its node, so a lower-priority pod
cannot take the room a preemption freed. The nominator holds each nominated pod as the queue
holds it: the queue tells it of every newer version it takes in (`refresh`, and the updates),
as kube-scheduler's queue answers a read with its own version of each nominated pod. Readers
get one read-only `Nominations` per change, so a cycle's read costs nothing while the
nominations stand still.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from scheduler.api.objects import Pod
from scheduler.framework.nominations import NO_NOMINATIONS, Nominations
from scheduler.framework.types import NominatingInfo, NominatingMode


class Nominator:
    """Thread-safe. Satisfies framework.interface.PodNominator."""

    __slots__ = ("_lock", "_node_of", "_pods_on", "_priorities", "_view")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # A node's list is replaced, never changed, once a reader may hold it (`_view`).
        self._pods_on: dict[str, list[Pod]] = {}
        self._node_of: dict[str, str] = {}
        #: How many nominated pods have each priority (the lowest is asked every cycle).
        self._priorities: dict[int, int] = {}
        #: The nominations as last read; None once they changed.
        self._view: Nominations | None = NO_NOMINATIONS

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
        other preemptors take the room the pod's own victims were freeing. A cleared nomination
        reaches the informer as an update, which drops it."""
        with self._lock:
            if nominating_info is None and not pod.nominated_node_name:
                nominating_info = self._unseen_locked(pod.uid)
            self._add_locked(pod, nominating_info)

    def refresh(self, pod: Pod) -> None:
        """The queue holds `pod` as this object now: a nomination of it (wherever it is)
        reads this version from here on."""
        with self._lock:
            node = self._node_of.get(pod.uid)
            if node is None:
                return
            pods = self._pods_on[node]
            at = next(i for i, held in enumerate(pods) if held.uid == pod.uid)
            if pods[at] is pod:
                return
            self._count_priority(pods[at], -1)
            self._count_priority(pod, 1)
            self._pods_on[node] = [*pods[:at], pod, *pods[at + 1 :]]
            self._view = None

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        with self._lock:
            self._delete_locked(pod.uid)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        if node_name not in self._pods_on:  # the common case, without taking the lock
            return []
        with self._lock:
            return list(self._pods_on.get(node_name, ()))

    def nominations(self) -> Nominations:
        """Every nomination at one instant (read-only; the same object until one changes)."""
        with self._lock:
            view = self._view
            if view is None:
                lowest = min(self._priorities, default=0)
                view = Nominations(dict(self._pods_on), dict(self._node_of), lowest)
                self._view = view
            return view

    def nominated_pods_by_node(self) -> Mapping[str, Sequence[Pod]]:
        """nominated_pods_for_node for every node with nominations, read at one instant
        (read-only)."""
        return self.nominations().by_node

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
            # nothing changes, so the readers' view stays valid.
            return
        self._delete_locked(pod.uid)
        if not node:
            return
        self._node_of[pod.uid] = node
        self._pods_on[node] = [*self._pods_on.get(node, ()), pod]
        self._count_priority(pod, 1)
        self._view = None

    def _delete_locked(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._pods_on[node]
        kept = [pod for pod in pods if pod.uid != uid]
        self._count_priority(next(pod for pod in pods if pod.uid == uid), -1)
        if kept:
            self._pods_on[node] = kept
        else:
            del self._pods_on[node]
        self._view = None

    def _count_priority(self, pod: Pod, change: int) -> None:
        count = self._priorities.get(pod.priority, 0) + change
        if count:
            self._priorities[pod.priority] = count
        else:
            del self._priorities[pod.priority]
