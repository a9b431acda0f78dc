"""The pods whose deletion a preemption asked for, until the informer has caught up.

A retry right after a preemption must neither evict them again nor preempt anew while they
still hold its nominated node (DefaultPreemption's eligibility), and a queueing hint must know
that such a preemptor waits for them (plugins/noderesources/deletion_hint.py). One memory per
process, shared by every profile's preemption: a pod asked to go is going, whoever asked.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

# How long an eviction is remembered (the informer reports the deletion long before) and how
# many entries are kept before old ones are dropped.
EVICTED_MEMORY_SECONDS = 300.0
EVICTED_MEMORY_SIZE = 1024


class Evictions:
    """Thread-safe: preemption threads remember, the loop and the queue's hints ask."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: The clock of the memory (a test sets its own).
        self.monotonic: Callable[[], float] = time.monotonic
        # uid -> when its deletion was asked for, in that order.
        self._evicted: dict[str, float] = {}

    def requested(self, uid: str) -> bool:
        """This scheduler asked for the pod's deletion (the informer may not show it yet).
        Read without the lock: a dict membership test is atomic under the GIL, and a hint asks
        this for the pods of every waiting preemptor's node on each deletion."""
        return uid in self._evicted

    def remember(self, uid: str) -> None:
        """Entries are kept in eviction order, so the expired ones are the first: dropping
        them costs what is dropped (a rebuild of the whole memory per eviction was quadratic
        in a burst of more than EVICTED_MEMORY_SIZE evictions)."""
        with self._lock:
            now = self.monotonic()  # read under the lock, so entries stay in time order
            evicted = self._evicted
            evicted.pop(uid, None)
            evicted[uid] = now
            if len(evicted) > EVICTED_MEMORY_SIZE:
                cutoff = now - EVICTED_MEMORY_SECONDS
                expired = list(itertools.takewhile(lambda item: item[1] < cutoff, evicted.items()))
                for key, _ in expired:
                    del evicted[key]
