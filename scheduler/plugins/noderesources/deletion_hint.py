"""NodeResourcesFit's hint for an assigned pod's deletion, for a preemptor waiting for victims.

kube-scheduler v1.37 answers Queue for every scheduled pod's deletion. A preemptor whose victims
still hold its nominated node (terminating, or asked to go and not yet shown gone by the
informer) cannot preempt again (DefaultPreemption's eligibility), so its retry succeeds only on
a node it fits on; a deletion changes one node, so unless the pod now fits on the node the
deleted pod left (counting the nominated pods of equal or higher priority there, as the Filter
pass does), the retry is bound to fail. With a fast loop and pop-from-backoffQ those retries
came back on every deletion anywhere: 4 100-9 300 failed attempts for 1 000 preemptors in
PreemptionBasic (with the queue asking a closed PreEnqueue gate first, skipping them took
38-44 % off kube-pysched's CPU there). The answer is QueueSkip there and Queue everywhere
else; the pod is retried at the latest when the last of its victims has left its nominated node
(then it fits there, or may preempt again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework import (
    Handle,
    NodeInfo,
    Pod,
    Resource,
    counting_against,
    gang_ref,
    pod_terminating_by_preemption,
)

#: Whether a request fits in (allocatable, requested, pod count): the Filter's own check.
Fits = Callable[[Resource, Resource, Resource, int], bool]


@dataclass(frozen=True, slots=True)
class _Freed:
    """The node a deleted pod left, as the cache held it after the deletion; cpu and memory
    free there (allocatable less requested), read once per deletion."""

    info: NodeInfo
    cpu: int
    memory: int


#: A node's pods as (priority, uid, terminating by preemption), lowest priority first.
_Holding = tuple[tuple[int, str, bool], ...]


@dataclass(frozen=True, slots=True)
class _Deletion:
    deleted: Pod
    node: _Freed | None


class WaitingPreemptors:
    """Decides, per waiting pod, whether a deletion cannot help it (QueueSkip).

    A queue move asks this for every pod of the unschedulable pool with the same deleted pod,
    and a preemptor waits there through hundreds of deletions, so each answer must cost about
    what kube-scheduler's one-line hint does: the node the deleted pod left is read from the
    scheduler cache once per deletion, and what a nominated node holds (its pods by priority,
    and which are terminating by preemption) is kept per node until the node's generation
    changes. Called under the queue's lock."""

    __slots__ = ("_fits", "_freed", "_handle", "_held")

    def __init__(self, handle: Handle, fits: Fits) -> None:
        self._handle = handle
        self._fits = fits
        # The last deletion asked about, and its node as the cache held it then.
        self._freed: _Deletion | None = None
        # nominated node -> (its generation, what it held then)
        self._held: dict[str, tuple[int, _Holding]] = {}

    def deletion_cannot_help(self, pod: Pod, deleted: Pod) -> bool:
        if not deleted.node_name:
            return False
        # As the preemption evaluator reads it: the status, else the scheduler's own record.
        nominated = pod.nominated_node_name or self._handle.nominator.nominated_node_for(pod.uid)
        if not nominated:
            return False
        freed = self._freed_node(deleted)
        if freed is None or self._fits_on(pod, freed):
            return False
        # A gang member's group preemption decides otherwise: it keeps kube-scheduler's answer.
        return self._held_back(pod, nominated) and gang_ref(pod) is None

    def _fits_on(self, pod: Pod, freed: _Freed) -> bool:
        """The Filter pass on the freed node: its pods and the nominated pods that count."""
        request, info = pod.requests, freed.info
        cpu, memory = request.milli_cpu, request.memory
        if (cpu > 0 and cpu > freed.cpu) or (memory > 0 and memory > freed.memory):
            return False  # the common answer, at the cost of two comparisons
        count = len(info.pods)
        nominator = self._handle.nominator
        nominated = counting_against(pod, nominator.nominated_pods_for_node(info.name))
        if not nominated:
            return self._fits(request, info.allocatable, info.requested, count)
        used = info.requested.clone()
        for other in nominated:
            used.add(other.requests)
        return self._fits(request, info.allocatable, used, count + len(nominated))

    def _freed_node(self, deleted: Pod) -> _Freed | None:
        memo = self._freed
        if memo is not None and memo.deleted is deleted:
            return memo.node
        info = self._handle.node_now(deleted.node_name)
        freed = None
        if info is not None:
            free_cpu = info.allocatable.milli_cpu - info.requested.milli_cpu
            free_memory = info.allocatable.memory - info.requested.memory
            freed = _Freed(info, free_cpu, free_memory)
        self._freed = _Deletion(deleted, freed)
        return freed

    def _held_back(self, pod: Pod, node: str) -> bool:
        """DefaultPreemption would not let the pod preempt again: a lower-priority pod on its
        nominated node is terminating by preemption, or is one whose deletion a preemption
        asked for and the informer has not shown yet (the window right after the preemption's
        calls, when its victims still hold the node)."""
        held = self._holding(node)
        if held is None:
            return False
        priority = pod.priority
        requested = self._handle.evictions.requested
        for other_priority, uid, terminating in held:
            if other_priority >= priority:
                return False
            if terminating or requested(uid):
                return True
        return False

    def _holding(self, node: str) -> _Holding | None:
        """What the node holds, read again only once its generation changed."""
        generation = self._handle.node_generation(node)
        if generation is None:
            self._held.pop(node, None)
            return None
        kept = self._held.get(node)
        if kept is not None and kept[0] == generation:
            return kept[1]
        info = self._handle.node_now(node)
        if info is None:
            return None
        held = tuple(
            sorted((p.priority, p.uid, pod_terminating_by_preemption(p)) for p in info.pods)
        )
        self._held[node] = (info.generation, held)
        return held
