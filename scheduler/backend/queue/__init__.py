"""The scheduling queue: which pod to schedule next, and when to retry the ones that failed."""

from scheduler.backend.queue.heap import LessFn, SortKeyFn
from scheduler.backend.queue.nominator import Nominator
from scheduler.backend.queue.scheduling_queue import (
    PreEnqueueCheck,
    QueueProfile,
    SchedulingQueue,
)

__all__ = [
    "LessFn",
    "Nominator",
    "PreEnqueueCheck",
    "QueueProfile",
    "SchedulingQueue",
    "SortKeyFn",
]
