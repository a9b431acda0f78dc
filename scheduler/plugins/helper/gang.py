"""The group logic gang plugins share (docs/gang.md: "both are thin"): a group's failure and
backoff bookkeeping, the queue order, the PreEnqueue holds, the minResources check, the quorum
at Permit and the rejection of waiting members. Coscheduling (scheduler-plugins' PodGroups)
and GangScheduling (kube's v1beta1 PodGroups) use it, each with its own GangSource."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    POD_GROUP_LABEL,
    PODS,
    Gang,
    GangRef,
    GangSource,
    Handle,
    NodeTable,
    Pod,
    QueuedPodInfo,
    Resource,
    SnapshotLister,
    Timer,
    WaitingPod,
    gang_ref,
)

#: scheduler-plugins' util.DefaultWaitTime: Permit's wait when nothing else says how long.
DEFAULT_WAIT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Shortfall:
    """One resource the cluster cannot hold for a group's minResources."""

    name: str
    needed: int
    free: int

    def __str__(self) -> str:
        need, free = _amount(self.name, self.needed), _amount(self.name, self.free)
        return f"{self.name}: need {need}, free {free}"


def _amount(name: str, amount: int) -> str:
    if name == CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    return str(amount)


class GangTracker:
    """Per-group state that outlives one pod's cycle: when a group last failed (the queue
    order puts it behind groups that have not) and until when it backs off. Thread-safe:
    Unreserve runs on binding threads and timers, the queue order on any thread."""

    def __init__(
        self, handle: Handle, plugin: str, backoff_seconds: float, source: GangSource
    ) -> None:
        self.handle = handle
        self.plugin = plugin
        self.source = source
        self.backoff_seconds = backoff_seconds
        self._lock = threading.Lock()
        self._failed_at: dict[GangRef, float] = {}
        self._backoff: dict[GangRef, tuple[float, Timer]] = {}

    def ref(self, pod: Pod) -> GangRef | None:
        """The pod's group if it comes from this plugin's API; a pod of the other API's group
        is not this plugin's member (each source has its own plugin)."""
        ref = gang_ref(pod)
        return ref if ref is not None and ref.source == self.source else None

    def is_sibling(self, pod: Pod, other: object) -> bool:
        """`other` is a pod naming `pod`'s group of this plugin's API (the queueing hints of a
        member appearing)."""
        ref = self.ref(pod)
        return ref is not None and isinstance(other, Pod) and gang_ref(other) == ref

    def is_own_group(self, pod: Pod, group: object) -> bool:
        """`group` is `pod`'s group of this plugin's API (the queueing hints of a group
        event)."""
        ref = self.ref(pod)
        return ref is not None and isinstance(group, Gang) and group.ref == ref

    def lookup(self, pod: Pod) -> tuple[GangRef | None, Gang | None]:
        """The pod's group of this plugin's API (ref) and the group itself (None when it does
        not exist, or its API is not served)."""
        ref = self.ref(pod)
        return ref, (self.handle.gangs().gang(ref) if ref is not None else None)

    # --- failures and backoff ---------------------------------------------------------------

    def mark_failed(self, ref: GangRef) -> None:
        """The group's attempt failed now: it sorts by this time from here on, so groups that
        keep failing take turns with the others instead of blocking the head of the queue."""
        now = self.handle.clock.now()
        with self._lock:
            self._failed_at[ref] = now

    def clear_failure(self, ref: GangRef) -> None:
        with self._lock:
            self._failed_at.pop(ref, None)

    def failed_at(self, ref: GangRef) -> float | None:
        return self._failed_at.get(ref)

    def back_off(self, ref: GangRef) -> bool:
        """Holds the group's members for backoff_seconds (not extended while one runs); when it
        ends the pending members are activated, since no cluster event marks that moment.
        False when there is no backoff to start."""
        if self.backoff_seconds <= 0:
            return False
        clock = self.handle.clock
        with self._lock:
            current = self._backoff.get(ref)
            if current is not None and current[0] > clock.now():
                return False
            if current is not None:
                current[1].cancel()
            until = clock.now() + self.backoff_seconds
            self._backoff[ref] = (
                until,
                clock.call_later(self.backoff_seconds, lambda: self._end_backoff(ref)),
            )
        return True

    def _end_backoff(self, ref: GangRef) -> None:
        with self._lock:
            self._backoff.pop(ref, None)
        self.handle.activate(self.pending_members(ref))

    def backoff_remaining(self, ref: GangRef) -> float:
        current = self._backoff.get(ref)
        if current is None:
            return 0.0
        return max(current[0] - self.handle.clock.now(), 0.0)

    def close(self) -> None:
        with self._lock:
            for _, timer in self._backoff.values():
                timer.cancel()
            self._backoff.clear()

    # --- the queue order ------------------------------------------------------------------

    def sort_key(self, info: QueuedPodInfo) -> tuple[int, float, str, str]:
        """Priority, then the group's creation time (its last failure once it failed), then
        the group, then the pod: a group's members sit together in activeQ. A pod outside any
        group sorts by its first attempt, under its own key."""
        pod = info.pod
        ref = self.ref(pod)
        first_seen = (
            info.initial_attempt_timestamp
            if info.initial_attempt_timestamp is not None
            else info.timestamp
        )
        if ref is None:
            return (-pod.priority, first_seen, pod.key, pod.key)
        when = self._failed_at.get(ref)
        if when is None:
            gang = self.handle.gangs().gang(ref)
            when = gang.created if gang is not None else first_seen
        return (-pod.priority, when, ref.key, pod.key)

    # --- members ----------------------------------------------------------------------------

    def pending_members(self, ref: GangRef, but: Pod | None = None) -> list[Pod]:
        """The group's pods not yet bound (as the pod informer has them), `but` excluded."""
        skip = but.uid if but is not None else ""
        return [p for p in self.handle.gangs().members(ref) if not p.node_name and p.uid != skip]

    def hold_reason(self, pod: Pod, ref: GangRef, gang: Gang | None) -> str:
        """Why `pod` may not be tried now ("" when it may): its group or the group's API is
        missing, the group has too few pods, or it backs off after a failure."""
        gangs = self.handle.gangs()
        why = gangs.unavailable(ref.source)
        if why:
            how = (
                "spec.schedulingGroup.podGroupName"
                if ref.source == GangSource.KUBERNETES
                else f"label {POD_GROUP_LABEL}"
            )
            return f"pod {pod.key} names PodGroup {ref.key} ({how}), but {why}"
        if gang is None:
            invalid = gangs.invalid(ref)
            if invalid:
                return f"PodGroup {ref.key} is invalid: {invalid}"
            return f"PodGroup {ref.key} not found"
        members = gangs.members(ref)
        counted = sum(1 for p in members if not p.scheduling_gates and p.uid != pod.uid)
        counted += 0 if pod.scheduling_gates else 1
        if counted < gang.min_member:
            return (
                f"PodGroup {ref.key} has {counted} schedulable pods of minMember "
                f"{gang.min_member}; waiting for more"
            )
        remaining = self.backoff_remaining(ref)
        if remaining > 0:
            return f"PodGroup {ref.key} failed recently; backing off for {remaining:.0f}s more"
        return ""

    def waiting_members(self, ref: GangRef) -> list[WaitingPod]:
        found: list[WaitingPod] = []
        self.handle.iterate_over_waiting_pods(
            lambda w: found.append(w) if gang_ref(w.pod) == ref else None
        )
        return found

    def allow_waiting(self, ref: GangRef) -> None:
        for waiting in self.waiting_members(ref):
            waiting.allow(self.plugin)

    def reject_waiting(self, ref: GangRef, message: str, but: Pod | None = None) -> int:
        """Rejects the group's pods waiting at Permit (their binding cycles unreserve them);
        how many were still waiting."""
        skip = but.uid if but is not None else ""
        rejected = 0
        for waiting in self.waiting_members(ref):
            if waiting.pod.uid != skip and waiting.preempt(self.plugin, message):
                rejected += 1
        return rejected

    # --- minResources -----------------------------------------------------------------------

    def resource_shortfall(self, gang: Gang) -> list[Shortfall]:
        """The resources of minResources the cluster's free capacity cannot hold, the group's
        own placed pods' requests counted as free (scheduler-plugins' CheckClusterResource;
        a node's free amount counts from 0, an overcommitted node takes nothing away)."""
        need = gang.min_resources
        if need is None:
            return []
        snapshot = self.handle.snapshot()
        own = self._own_requests(gang.ref, snapshot)
        table = snapshot.table
        short: list[Shortfall] = []
        for name in gang.min_resource_names:
            needed = need.get(name)
            if needed <= 0:
                continue
            left = _left_column(table, name)
            for row, requests in own.items():
                left[row] += requests.get(name)
            left[~table.present] = 0
            free = int(np.maximum(left, 0).sum())
            if free < needed:
                short.append(Shortfall(name, needed, free))
        return short

    def _own_requests(self, ref: GangRef, snapshot: SnapshotLister) -> dict[int, Resource]:
        """The group's placed pods that the snapshot holds, their requests summed by row."""
        table = snapshot.table
        members = self.handle.gang_members(ref)
        by_row: dict[int, Resource] = {}
        for pod in (*members.bound, *members.assumed):
            row = table.index.get(pod.node_name)
            if row is None or not any(p.uid == pod.uid for p in table.infos[row].pods):
                continue
            requests = by_row.setdefault(row, Resource())
            requests.add(pod.requests)
            requests.allowed_pod_number += 1  # the pod's own slot, freed with it
        return by_row


def _left_column(table: NodeTable, name: str) -> npt.NDArray[np.int64]:
    """Allocatable minus requested per row (a new array)."""
    if name == CPU:
        left: npt.NDArray[np.int64] = table.alloc_cpu - table.req_cpu
    elif name == MEMORY:
        left = table.alloc_mem - table.req_mem
    elif name == EPHEMERAL_STORAGE:
        left = table.alloc_eph - table.req_eph
    elif name == PODS:
        left = table.alloc_pods - table.pod_count
    else:
        alloc, req = table.scalar(name)
        left = alloc - req
    return left
