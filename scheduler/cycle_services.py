"""The services a scheduling cycle uses, built once by the Scheduler and handed to the single-pod
cycle and the group cycle alike, so neither reaches into the other for them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.algorithm import SchedulingAlgorithm
from scheduler.api.objects import Pod
from scheduler.backend.api_dispatcher import ApiDispatcher
from scheduler.backend.cache import Cache, Snapshot
from scheduler.clock import Clock
from scheduler.explain.record import ExplainStore
from scheduler.framework.interface import ApiActions, EventRecorder

if TYPE_CHECKING:
    from scheduler.backend.queue import SchedulingQueue

#: The informer's current copy of a pod, by namespace/name.
PodLookup = Callable[[str], "Pod | None"]
#: Runs a binding cycle that may wait long (PreBind work) apart from the pool: (the cycle, a
#: name for its thread).
Spawn = Callable[[Callable[[], None], str], None]


def spawn_thread(work: Callable[[], None], name: str) -> None:
    """A daemon thread of its own, as kube-scheduler's goroutine per binding cycle."""
    threading.Thread(target=work, name=name, daemon=True).start()


@dataclass(frozen=True, slots=True)
class CycleServices:
    """What the scheduling and binding cycles use; the Scheduler owns their lifecycles."""

    cache: Cache
    queue: SchedulingQueue
    snapshot: Snapshot
    algorithm: SchedulingAlgorithm
    dispatcher: ApiDispatcher
    api: ApiActions
    recorder: EventRecorder
    pod_lookup: PodLookup
    clock: Clock
    binding_pool: Executor
    #: The latest attempt per pod, for explanations; None when recording is off.
    explain: ExplainStore | None = None
    #: Where a binding cycle with PreBind work runs (the simulator runs it at once, in line).
    spawn: Spawn = spawn_thread
