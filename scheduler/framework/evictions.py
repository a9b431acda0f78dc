"""The pods a preemption is evicting or asked to go, until the informer has caught up.

A retry right after a preemption must neither evict them again nor preempt anew while they
still hold its nominated node (DefaultPreemption's eligibility), and a queueing hint must know
that such a preemptor waits for them (plugins/noderesources/deletion_hint.py). One memory per
process, shared by every profile's preemption: a pod asked to go is going, whoever asked.

A preemption *claims* its victims when it decides on them, before its API calls run (on a
worker, with asynchronous preemption): another preemptor that chooses the same pods in the
meantime finds them claimed and sends nothing for them, so each victim is evicted once (one
DisruptionTarget patch, one delete, one Preempted event). A claim ends when the eviction is
remembered, or is released when the calls end without it (a failure: another preemptor may
try again).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable

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
        # Victims a preemption decided on whose eviction has not been asked for yet: bounded
        # by the preemptions under way (each releases its claims when its calls end).
        self._claimed: set[str] = set()

    def requested(self, uid: str) -> bool:
        """A preemption of this scheduler is evicting the pod or asked for its deletion (the
        informer may not show it yet). Read without the lock: a membership test is atomic
        under the GIL, and a hint asks this for the pods of every waiting preemptor's node on
        each deletion. Claims are read first: `remember` records the eviction before it drops
        the claim, so a pod moving from one to the other is never missed."""
        return uid in self._claimed or uid in self._evicted

    def claim(self, uids: Iterable[str]) -> set[str]:
        """Claims the pods for one preemption; returns those no preemption had claimed or
        evicted before (the only ones it may send API calls for)."""
        with self._lock:
            claimed, evicted = self._claimed, self._evicted
            fresh = {uid for uid in uids if uid not in claimed and uid not in evicted}
            claimed.update(fresh)
        return fresh

    def release(self, uids: Iterable[str]) -> None:
        """Ends a preemption's claims; the pods it evicted stay remembered."""
        with self._lock:
            self._claimed.difference_update(uids)

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
            self._claimed.discard(uid)
