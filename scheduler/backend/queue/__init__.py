"""The scheduling queue: which pod to schedule next, and when to retry the ones that failed."""

from scheduler.backend.queue.nominator import Nominator
from scheduler.backend.queue.scheduling_queue import (
    LessFn,
    PreEnqueueCheck,
    QueueProfile,
    SchedulingQueue,
    SortKeyFn,
)

__all__ = [
    "LessFn",
    "Nominator",
    "PreEnqueueCheck",
    "QueueProfile",
    "SchedulingQueue",
    "SortKeyFn",
]
