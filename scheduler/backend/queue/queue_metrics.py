"""The queue's metrics, with their label children cached (labels() is costly on hot paths):
pending pods per queue, incoming pods per queue and event, unschedulable pods per plugin, and
the PreEnqueue extension point's duration.

kube-pysched has no pod groups, so every queued entity is a pod: scheduler_queued_entities
{type="pod"} follows scheduler_pending_pods, and scheduler_queue_incoming_entities_total
{type="pod"} is counted with scheduler_queue_incoming_pods_total (see incoming())."""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

from scheduler import metrics
from scheduler.backend.queue.unschedulable import UnschedulablePool
from scheduler.deferred_metrics import DeferredMetrics
from scheduler.framework.status import Code
from scheduler.framework.types import QueuedPodInfo

_PRE_ENQUEUE = "PreEnqueue"


class QueueMetrics:
    def __init__(self) -> None:
        # Incoming counts and PreEnqueue durations go through this, so a move of many pods
        # writes each child once (deferred_metrics.py); QueueingHints shares it.
        self.writes = DeferredMetrics()
        self._pending_children = {
            q: metrics.pending_pods.labels(q)
            for q in (metrics.ACTIVE_Q, metrics.BACKOFF_Q, metrics.UNSCHEDULABLE_Q, metrics.GATED_Q)
        }
        self._entity_children = {
            q: metrics.queued_entities.labels(q, metrics.POD_ENTITY) for q in self._pending_children
        }
        self._pending_values: dict[str, int] = {}
        self._incoming_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._reason_children: dict[tuple[str, str], Any] = {}
        self._pre_enqueue_children: dict[tuple[Code, str], Any] = {}

    def set_pending(self, active: Sized, backoff: Sized, pool: UnschedulablePool) -> None:
        """scheduler_pending_pods per queue; only the values that changed are written."""
        values = {
            metrics.ACTIVE_Q: len(active),
            metrics.BACKOFF_Q: len(backoff),
            metrics.UNSCHEDULABLE_Q: pool.unschedulable_count,
            metrics.GATED_Q: pool.gated_count,
        }
        last = self._pending_values
        for queue, value in values.items():
            if last.get(queue) != value:
                self._pending_children[queue].set(value)
                self._entity_children[queue].set(value)
        self._pending_values = values

    def incoming(self, queue: str, event: str, strategy_queue: str | None = None) -> None:
        """A pod entered `queue` because of `event`. When a queueing strategy sent it, the pod
        is a new queued entity only if it landed elsewhere than the strategy's queue (as
        kube-scheduler counts scheduler_queue_incoming_entities_total)."""
        key = (queue, event)
        children = self._incoming_children.get(key)
        if children is None:
            children = (
                metrics.queue_incoming_pods.labels(queue, event),
                metrics.queue_incoming_entities.labels(queue, event, metrics.POD_ENTITY),
            )
            self._incoming_children[key] = children
        self.writes.inc(children[0])
        if queue != strategy_queue:
            self.writes.inc(children[1])

    def unschedulable_reason(self, plugin: str, profile: str) -> Any:
        key = (plugin, profile)
        child = self._reason_children.get(key)
        if child is None:
            child = metrics.unschedulable_pods.labels(plugin, profile)
            self._reason_children[key] = child
        return child

    def forget_unschedulable_reasons(self, pinfo: QueuedPodInfo) -> None:
        profile = pinfo.pod.scheduler_name
        for plugin in pinfo.unschedulable_plugins | pinfo.pending_plugins:
            self.unschedulable_reason(plugin, profile).dec()

    def pre_enqueue_duration(self, code: Code, profile: str, seconds: float) -> None:
        key = (code, profile)
        child = self._pre_enqueue_children.get(key)
        if child is None:
            child = metrics.framework_extension_point_duration.labels(
                _PRE_ENQUEUE, code.label(), profile
            )
            self._pre_enqueue_children[key] = child
        self.writes.observe(child, seconds)
