"""The scheduler's view of the cluster: nodes, the pods on them, and pods assumed but not bound.

Mutated by informer threads (add/update/remove), by the scheduling loop (assume) and by binding
threads (finish_binding/forget). Every method takes the one lock; `update_snapshot` copies only
the nodes that changed since the previous call.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import structlog

from scheduler import metrics
from scheduler.api.gang import GangRef, gang_ref
from scheduler.api.objects import Node, Pod
from scheduler.backend.cache.node_tree import NodeTree, zone_key
from scheduler.backend.cache.snapshot import Snapshot
from scheduler.framework.gang import NO_MEMBERS, GangMembers
from scheduler.framework.types import NodeInfo

log = structlog.get_logger(__name__)


class CacheError(Exception):
    """A cache operation that contradicts the cache's state (a bug or an out-of-order event)."""


@dataclass(slots=True)
class _PodState:
    pod: Pod
    binding_finished: bool = False


class Cache:
    """Nodes and pods keyed by name/uid; assumed pods count on their node until confirmed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeInfo] = {}
        self._tree = NodeTree()
        self._pod_states: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._dirty: set[str] = set()
        self._structure_changed = True
        # Pod uids by the group they name: a group's quorum is counted in O(members).
        self._gangs: dict[GangRef, set[str]] = {}

    def export_metrics(self) -> None:
        """Points scheduler_cache_size at this cache; read at scrape time, so never stale."""
        metrics.cache_size.labels("nodes").set_function(lambda: len(self._nodes))
        metrics.cache_size.labels("pods").set_function(lambda: len(self._pod_states))
        metrics.cache_size.labels("assumed_pods").set_function(lambda: len(self._assumed))

    # --- pods -----------------------------------------------------------------------------

    def assume_pod(self, pod: Pod) -> None:
        """Counts `pod` (with node_name set) on its node before the binding is confirmed."""
        with self._lock:
            if pod.uid in self._pod_states:
                raise CacheError(f"pod {pod.key} ({pod.uid}) is in the cache, so can't be assumed")
            self._add_pod_locked(pod)
            self._pod_states[pod.uid] = _PodState(pod)
            self._assumed.add(pod.uid)

    def finish_binding(self, pod: Pod) -> None:
        """Marks an assumed pod's binding as sent; it stays assumed until the informer confirms."""
        with self._lock:
            state = self._pod_states.get(pod.uid)
            if state is not None and pod.uid in self._assumed:
                state.binding_finished = True

    def forget_pod(self, pod: Pod) -> None:
        """Undoes assume_pod after a failed Reserve/Permit/bind."""
        with self._lock:
            state = self._pod_states.get(pod.uid)
            if state is None or pod.uid not in self._assumed:
                raise CacheError(f"pod {pod.key} wasn't assumed so cannot be forgotten")
            if state.pod.node_name != pod.node_name:
                raise CacheError(
                    f"pod {pod.key} was assumed on {state.pod.node_name} "
                    f"but assigned to {pod.node_name}"
                )
            self._remove_pod_locked(state.pod)
            del self._pod_states[pod.uid]
            self._assumed.discard(pod.uid)

    def add_pod(self, pod: Pod) -> None:
        """An assigned pod seen by the informer: confirms an assumed pod or adds a new one."""
        with self._lock:
            state = self._pod_states.get(pod.uid)
            if state is not None and pod.uid in self._assumed:
                if state.pod.node_name != pod.node_name:
                    log.info(
                        "pod was added to a different node than it was assumed",
                        pod=pod.key,
                        assumed_node=state.pod.node_name,
                        node=pod.node_name,
                    )
                self._remove_pod_locked(state.pod)
                self._add_pod_locked(pod)
                self._assumed.discard(pod.uid)
                state.pod = pod
                return
            if state is not None:
                raise CacheError(f"pod {pod.key} was already in the cache")
            self._add_pod_locked(pod)
            self._pod_states[pod.uid] = _PodState(pod)

    def update_pod(self, old: Pod, new: Pod) -> None:
        with self._lock:
            state = self._pod_states.get(old.uid)
            if state is None:
                raise CacheError(
                    f"pod {old.key} is not added to scheduler cache, so cannot be updated"
                )
            if old.uid in self._assumed:
                # An update for an assumed pod means the informer saw the bind: confirm it.
                self._assumed.discard(old.uid)
            if state.pod.node_name != new.node_name:
                log.error(
                    "pod updated on a different node than previously added to",
                    pod=new.key,
                    node=new.node_name,
                    previous_node=state.pod.node_name,
                )
            self._remove_pod_locked(state.pod)
            self._add_pod_locked(new)
            state.pod = new

    def remove_pod(self, pod: Pod) -> None:
        with self._lock:
            state = self._pod_states.pop(pod.uid, None)
            if state is None:
                raise CacheError(
                    f"pod {pod.key} is not found in scheduler cache, so cannot be removed"
                )
            self._assumed.discard(pod.uid)
            self._remove_pod_locked(state.pod)

    def is_assumed_pod(self, pod: Pod) -> bool:
        with self._lock:
            return pod.uid in self._assumed

    def get_pod(self, uid: str) -> Pod | None:
        with self._lock:
            state = self._pod_states.get(uid)
            return state.pod if state is not None else None

    def gang_members(self, ref: GangRef) -> GangMembers:
        """The group's pods counted on nodes: bound, and assumed (not yet confirmed)."""
        with self._lock:
            uids = self._gangs.get(ref)
            if not uids:
                return NO_MEMBERS
            bound: list[Pod] = []
            assumed: list[Pod] = []
            for uid in uids:
                state = self._pod_states.get(uid)
                if state is not None:
                    (assumed if uid in self._assumed else bound).append(state.pod)
            return GangMembers(tuple(bound), tuple(assumed))

    def node_now(self, name: str) -> NodeInfo | None:
        """A copy of the node as the cache holds it now (assumed pods count), for a queueing
        hint that judges an event by the cluster after it rather than by a cycle's snapshot."""
        with self._lock:
            info = self._nodes.get(name)
            if info is None or info.node is None:
                return None
            return info.snapshot()

    def node_generation(self, name: str) -> int | None:
        """The node's NodeInfo generation now (it changes with every pod added or removed):
        lets a hint keep what it read of a node until the node changes. Read without the
        lock: a hint asks this for every waiting preemptor on each deletion, and a dict lookup
        and an attribute read are each atomic under the GIL (a read racing a change answers
        the generation before or after it; the next event asks again)."""
        info = self._nodes.get(name)
        return None if info is None or info.node is None else info.generation

    def _add_pod_locked(self, pod: Pod) -> None:
        ref = gang_ref(pod)
        if ref is not None:
            self._gangs.setdefault(ref, set()).add(pod.uid)
        info = self._nodes.get(pod.node_name)
        if info is None:
            # A pod can arrive before its node (informers are independent): keep a ghost node.
            info = NodeInfo()
            self._nodes[pod.node_name] = info
        info.add_pod(pod)
        self._dirty.add(pod.node_name)

    def _remove_pod_locked(self, pod: Pod) -> None:
        ref = gang_ref(pod)
        if ref is not None:
            uids = self._gangs.get(ref)
            if uids is not None:
                uids.discard(pod.uid)
                if not uids:
                    del self._gangs[ref]
        info = self._nodes.get(pod.node_name)
        if info is None or not info.remove_pod(pod):
            log.error("pod to remove was not on its node", pod=pod.key, node=pod.node_name)
            return
        if info.node is None and not info.pods:
            del self._nodes[pod.node_name]
        self._dirty.add(pod.node_name)

    # --- nodes ----------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        with self._lock:
            info = self._nodes.get(node.name)
            if info is None:
                info = NodeInfo(node)
                self._nodes[node.name] = info
            else:
                info.set_node(node)
            self._tree.add(node)
            self._dirty.add(node.name)
            self._structure_changed = True

    def update_node(self, old: Node, new: Node) -> None:
        with self._lock:
            info = self._nodes.get(new.name)
            if info is None:
                info = NodeInfo(new)
                self._nodes[new.name] = info
                self._structure_changed = True
            else:
                if info.node is None or _zone_changed(info.node, new):
                    self._structure_changed = True
                info.set_node(new)
            self._tree.add(new)
            self._dirty.add(new.name)

    def remove_node(self, node: Node) -> None:
        """Removes the node; its pods stay (as a ghost) until their deletes arrive."""
        with self._lock:
            info = self._nodes.get(node.name)
            if info is None:
                raise CacheError(f"node {node.name} is not found")
            if info.pods:
                info.remove_node()
            else:
                del self._nodes[node.name]
            self._tree.remove(node.name)
            self._dirty.add(node.name)
            self._structure_changed = True

    def node_count(self) -> int:
        with self._lock:
            return len(self._tree)

    def pod_count(self) -> int:
        with self._lock:
            return len(self._pod_states)

    def assumed_pod_count(self) -> int:
        with self._lock:
            return len(self._assumed)

    def node_infos(self) -> dict[str, NodeInfo]:
        """Copies of every node's info, for debugging and tests."""
        with self._lock:
            return {name: info.snapshot() for name, info in self._nodes.items()}

    # --- snapshots ------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Brings `snapshot` up to date, copying only nodes that changed since the last call."""
        with self._lock:
            dirty, self._dirty = self._dirty, set()
            structural = self._structure_changed or snapshot.generation == 0
            self._structure_changed = False
            updated: list[NodeInfo] = []
            for name in dirty:
                info = self._nodes.get(name)
                if info is None or info.node is None:
                    if snapshot.node_info_map.pop(name, None) is not None:
                        structural = True
                    continue
                copy = info.snapshot()
                if name not in snapshot.node_info_map:
                    structural = True
                snapshot.node_info_map[name] = copy
                updated.append(copy)
            if structural:
                order = self._tree.ordered()
                snapshot.rebuild([snapshot.node_info_map[name] for name in order])
            else:
                for copy in updated:
                    snapshot.replace(copy)
            snapshot.generation += 1


def _zone_changed(old: Node, new: Node) -> bool:
    return zone_key(old) != zone_key(new)
