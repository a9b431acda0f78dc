"""Small fakes for queue tests: PreEnqueue plugins, hint functions, a queue factory."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.backend.queue import QueueProfile, SchedulingQueue
from scheduler.clock import FakeClock
from scheduler.features import FeatureGates
from scheduler.framework.events import ClusterEventWithHint, QueueingHint
from scheduler.framework.status import Code, Status
from scheduler.framework.types import QueuedPodInfo

PROFILE = "kube-pysched"  # tests.builders' default schedulerName


class GatePlugin:
    """Rejects pods that still have scheduling gates, like SchedulingGates."""

    def __init__(self, name: str = "SchedulingGates") -> None:
        self.name = name
        self.calls = 0

    def pre_enqueue(self, pod: Pod) -> Status | None:
        self.calls += 1
        if pod.scheduling_gates:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gated", plugin=self.name)
        return None


class SwitchPlugin:
    """Rejects every pod while `reject` is set."""

    def __init__(self, name: str = "Switch", reject: bool = True) -> None:
        self.name = name
        self.reject = reject

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if self.reject:
            return Status(Code.UNSCHEDULABLE, "switched off", plugin=self.name)
        return None


def always(hint: QueueingHint) -> Callable[[Pod, Any, Any], QueueingHint]:
    def fn(pod: Pod, old: Any, new: Any) -> QueueingHint:
        return hint

    return fn


def make_queue(
    clock: FakeClock,
    events: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
    pre_enqueue: Sequence[Any] = (),
    gates: Mapping[str, bool] | None = None,
    **kwargs: Any,
) -> SchedulingQueue:
    return SchedulingQueue(
        clock=clock,
        profiles={
            PROFILE: QueueProfile(pre_enqueue=list(pre_enqueue), events_to_register=events or {})
        },
        features=FeatureGates(dict(gates or {})),
        **kwargs,
    )


def fail(
    queue: SchedulingQueue,
    pinfo: QueuedPodInfo,
    *plugins: str,
    pending: Sequence[str] = (),
) -> None:
    """Ends a popped pod's attempt as rejected by `plugins` (an error if none)."""
    pinfo.unschedulable_plugins = set(plugins)
    pinfo.pending_plugins = set(pending)
    queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)


def pop_and_fail(
    queue: SchedulingQueue, *plugins: str, pending: Sequence[str] = ()
) -> QueuedPodInfo:
    pinfo = queue.pop()
    assert pinfo is not None
    fail(queue, pinfo, *plugins, pending=pending)
    return pinfo


def sample(name: str, **labels: str) -> float:
    value = metrics.REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def incoming(queue: str, event: str) -> float:
    return sample("scheduler_queue_incoming_pods_total", queue=queue, event=event)


def pending(queue: str) -> float:
    return sample("scheduler_pending_pods", queue=queue)
