"""Informer callbacks: route pod, node and storage events to the cache and the scheduling queue.

Follows kube-scheduler's eventhandlers.go: assigned pods go to the cache, unassigned pods whose
schedulerName is one of our profiles go to the queue, and every change that may make waiting
pods schedulable becomes a ClusterEvent for the queue's QueueingHints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from scheduler import metrics
from scheduler.api.gang import gang_ref
from scheduler.api.objects import DEFAULT_SCHEDULER_NAME, Node, Pod
from scheduler.api.parse import parse_node, parse_pod
from scheduler.backend.cache import Cache, CacheError
from scheduler.framework.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    EVENT_NODE_DELETE,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_DELETE,
    EVENT_UNSCHEDULED_POD_UPDATE,
    ActionType,
    ClusterEvent,
    EventResource,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)

if TYPE_CHECKING:
    from scheduler.backend.queue import SchedulingQueue
    from scheduler.framework.runtime import Framework

log = structlog.get_logger(__name__)


def _observe(label: str, start: float) -> None:
    metrics.event_handling_duration.labels(label).observe(time.perf_counter() - start)


class PodTransform:
    """Parses only the pods the scheduler cares about; everything else is ignored cheaply.
    `scheduling_groups` (the GenericWorkload gate) makes it read spec.schedulingGroup; off,
    the field is ignored, as kube-scheduler ignores it with the gate off."""

    def __init__(
        self, scheduler_names: Collection[str], *, scheduling_groups: bool = False
    ) -> None:
        self._names = frozenset(scheduler_names)
        self._groups = scheduling_groups

    def __call__(self, raw: Mapping[str, Any]) -> Pod | None:
        spec = raw.get("spec") or {}
        if (
            spec.get("nodeName")
            or (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) in self._names
        ):
            return parse_pod(raw, scheduling_group=self._groups)
        return None


def transform_node(raw: Mapping[str, Any]) -> Node:
    return parse_node(raw)


class EventHandlers:
    """The informer handlers for pods and nodes."""

    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        profiles: Mapping[str, Framework],
    ) -> None:
        self.cache = cache
        self.queue = queue
        self.profiles = profiles

    def _responsible(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.profiles

    # --- nodes ------------------------------------------------------------------------------

    def on_node_add(self, node: Node) -> None:
        start = time.perf_counter()
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, node)
        _observe(EVENT_NODE_ADD.label, start)

    def on_node_update(self, old: Node, new: Node) -> None:
        start = time.perf_counter()
        self.cache.update_node(old, new)
        for event in node_scheduling_properties_change(new, old):
            self.queue.move_all_to_active_or_backoff_queue(event, old, new)
            _observe(event.label, start)

    def on_node_delete(self, node: Node) -> None:
        start = time.perf_counter()
        self.queue.move_all_to_active_or_backoff_queue(EVENT_NODE_DELETE, node, None)
        try:
            self.cache.remove_node(node)
        except CacheError as err:
            log.error("scheduler cache RemoveNode failed", node=node.name, error=str(err))
        _observe(EVENT_NODE_DELETE.label, start)

    # --- storage objects (and any other kind whose changes only move pods) ---------------

    def resource_handlers(
        self, resource: EventResource
    ) -> tuple[Callable[[Any], None], Callable[[Any, Any], None], Callable[[Any], None]]:
        """(on_add, on_update, on_delete) turning changes of `resource` into the generic
        Add / Update / Delete cluster events, as kube-scheduler's buildEvtResHandler."""
        add, update, delete = (
            ClusterEvent(resource, action)
            for action in (ActionType.ADD, ActionType.UPDATE, ActionType.DELETE)
        )

        def on_add(obj: Any) -> None:
            start = time.perf_counter()
            self.queue.move_all_to_active_or_backoff_queue(add, None, obj)
            _observe(add.label, start)

        def on_update(old: Any, new: Any) -> None:
            start = time.perf_counter()
            self.queue.move_all_to_active_or_backoff_queue(update, old, new)
            _observe(update.label, start)

        def on_delete(obj: Any) -> None:
            start = time.perf_counter()
            self.queue.move_all_to_active_or_backoff_queue(delete, obj, None)
            _observe(delete.label, start)

        return on_add, on_update, on_delete

    def update_handlers(
        self, resource: EventResource
    ) -> tuple[Callable[[Any], None], Callable[[Any, Any], None], Callable[[Any], None]]:
        """(on_add, on_update, on_delete) that all send `resource`'s generic Update event
        without objects: for a kind whose changes alter objects of another kind (a
        DeviceTaintRule taints the devices of ResourceSlices)."""
        update = ClusterEvent(resource, ActionType.UPDATE)

        def changed(*_objects: Any) -> None:
            start = time.perf_counter()
            self.queue.move_all_to_active_or_backoff_queue(update, None, None)
            _observe(update.label, start)

        return changed, changed, changed

    # --- pods -------------------------------------------------------------------------------

    def on_pod_add(self, pod: Pod) -> None:
        if pod.node_name:
            self._add_assigned_pod(pod)
        elif self._responsible(pod):
            start = time.perf_counter()
            log.debug("add event for unscheduled pod", pod=pod.key)
            self.queue.add(pod)
            if gang_ref(pod) is not None:
                self._member_changed(EVENT_UNSCHEDULED_POD_ADD, None, pod)
            _observe(EVENT_UNSCHEDULED_POD_ADD.label, start)

    def on_pod_update(self, old: Pod, new: Pod) -> None:
        if old.node_name:
            self._update_assigned_pod(old, new)
        elif new.node_name:
            self._add_assigned_pod(new)
            if self._responsible(old):
                self._delete_from_queue(old, in_binding=True)
        elif self._responsible(old):
            self._update_in_queue(old, new)

    def on_pod_delete(self, pod: Pod) -> None:
        if pod.node_name:
            self._delete_assigned_pod(pod)
        elif self._responsible(pod):
            self._delete_from_queue(pod, in_binding=False)

    def _add_assigned_pod(self, pod: Pod) -> None:
        start = time.perf_counter()
        try:
            self.cache.add_pod(pod)
        except CacheError as err:
            log.error("scheduler cache AddPod failed", pod=pod.key, error=str(err))
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_ADD, None, pod)
        _observe(EVENT_ASSIGNED_POD_ADD.label, start)

    def _update_assigned_pod(self, old: Pod, new: Pod) -> None:
        start = time.perf_counter()
        try:
            self.cache.update_pod(old, new)
        except CacheError as err:
            log.error("scheduler cache UpdatePod failed", pod=old.key, error=str(err))
        for event in pod_scheduling_properties_change(new, old):
            self.queue.move_all_to_active_or_backoff_queue(event, old, new)
            _observe(event.label, start)

    def _delete_assigned_pod(self, pod: Pod) -> None:
        start = time.perf_counter()
        try:
            self.cache.remove_pod(pod)
        except CacheError as err:
            log.error("scheduler cache RemovePod failed", pod=pod.key, error=str(err))
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, pod, None)
        _observe(EVENT_ASSIGNED_POD_DELETE.label, start)

    def _update_in_queue(self, old: Pod, new: Pod) -> None:
        if old.resource_version == new.resource_version:
            return
        start = time.perf_counter()
        if self.cache.is_assumed_pod(new):
            if new.deletion_timestamp is not None and old.deletion_timestamp is None:
                self._handle_assumed_pod_deletion(new)
            return
        log.debug("update event for unscheduled pod", pod=new.key)
        self.queue.update(old, new)
        if gang_ref(new) is not None:
            for event in pod_scheduling_properties_change(new, old):
                if event.action_type in _MEMBER_UPDATES:
                    self._member_changed(event, old, new)
        if old.nominated_node_name and old.nominated_node_name != new.nominated_node_name:
            priority = old.priority
            self.queue.move_all_to_active_or_backoff_queue(
                EVENT_ASSIGNED_POD_DELETE, old, None, _le_priority(priority)
            )
        _observe(EVENT_UNSCHEDULED_POD_UPDATE.label, start)

    def _member_changed(self, event: ClusterEvent, old: Pod | None, new: Pod) -> None:
        """A pending pod of a gang appeared or became schedulable: its siblings, held until
        the group has minMember pods, may go now. Only for members: an ordinary pending pod
        changes nothing for other pending pods (kube-scheduler sends no such event)."""
        self.queue.move_all_to_active_or_backoff_queue(event, old, new)

    def _delete_from_queue(self, pod: Pod, in_binding: bool) -> None:
        start = time.perf_counter()
        log.debug("delete event for unscheduled pod", pod=pod.key)
        self.queue.delete(pod)
        if not in_binding:
            if self.cache.is_assumed_pod(pod):
                self._handle_assumed_pod_deletion(pod)
            elif pod.nominated_node_name:
                self.queue.move_all_to_active_or_backoff_queue(
                    EVENT_ASSIGNED_POD_DELETE, pod, None, _le_priority(pod.priority)
                )
        _observe(EVENT_UNSCHEDULED_POD_DELETE.label, start)

    def _handle_assumed_pod_deletion(self, pod: Pod) -> None:
        assumed = self.cache.get_pod(pod.uid)
        if assumed is None:
            return
        fwk = self.profiles.get(assumed.scheduler_name)
        if fwk is None or not fwk.reject_waiting_pod(assumed.uid):
            try:
                self.cache.forget_pod(assumed)
            except CacheError as err:
                log.error("scheduler cache RemoveAssumedPod failed", pod=pod.key, error=str(err))
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, assumed, None)


#: Updates of a pending gang member that can complete its group's count.
_MEMBER_UPDATES = (ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)


def _le_priority(priority: int) -> Callable[[Pod], bool]:
    return lambda p: p.priority <= priority
