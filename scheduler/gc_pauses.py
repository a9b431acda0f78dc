"""Keeps the interpreter's garbage collections out of pods' latency, and times them
(kube_pysched_gc_pause_seconds).

A collection runs in whichever thread allocated last and holds the GIL throughout, so every
thread (scheduling loop, binders, informers) waits for it. A full collection walks every
tracked object: with the informers of a 5000-node cluster that was one 590 ms pause inside a
benchmark's measured window, the slowest pods' whole latency.

So the old generation is frozen (gc.freeze): the heap the initial sync built, and after every
full collection its survivors. Full collections then walk only what was promoted since the last
one. A frozen object is still freed when its last reference goes (the cache's objects hold no
reference cycles: an update frees the replaced node or pod at once); only a cycle among frozen
objects would outlive its use. That is bounded: once the frozen heap has grown to GROWTH times
its size after the last complete collection, one complete collection (everything unfrozen,
collected, frozen again) reclaims such cycles, a pause as long as before but rarer each time.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import structlog

from scheduler import metrics

log = structlog.get_logger(__name__)

GROWTH = 2.0  # frozen heap / frozen heap after the last complete collection
CHECK_SECONDS = 10.0

_by_generation = [metrics.gc_pause.labels(str(g)) for g in range(3)]


class GcPolicy:
    """Process-wide, as the collector is: `install` at start, `release` at exit."""

    def __init__(self, growth: float = GROWTH, check_seconds: float = CHECK_SECONDS) -> None:
        self.growth = growth
        self.check_seconds = check_seconds
        self._started = 0.0  # the running collection's start (collections never overlap)
        self._baseline = 0  # frozen objects after the last complete collection
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def install(self) -> None:
        """Times every collection and freezes the survivors of each full one (idempotent)."""
        if self._on_collection not in gc.callbacks:
            gc.callbacks.append(self._on_collection)

    def uninstall(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info["generation"]
        _by_generation[generation].observe(time.perf_counter() - self._started)
        if generation == 2 and self._baseline:
            # Younger generations are empty now: only the survivors are frozen.
            gc.freeze()

    def freeze_synced_heap(self) -> int:
        """The first complete collection, once the informers have synced; starts the check
        for complete collections. Returns how many objects are frozen."""
        frozen = self.collect_completely()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gc-policy", daemon=True)
            self._thread.start()
        return frozen

    def collect_completely(self) -> int:
        """Everything unfrozen, collected and frozen again; returns the frozen count."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        # A collection of the now empty old generation: the interpreter's count of long-lived
        # objects drops to 0, so the next full collection comes after a few promotions rather
        # than after a quarter of the frozen heap's size (a walk of that many objects).
        gc.collect()
        self._baseline = max(1, gc.get_freeze_count())
        return self._baseline

    def check(self) -> bool:
        """A complete collection if the frozen heap has grown past `growth` times its size
        after the last one; True if one ran."""
        if not self._baseline:
            return False
        frozen = gc.get_freeze_count()
        if frozen < self.growth * self._baseline:
            return False
        start = time.perf_counter()
        after = self.collect_completely()
        log.info(
            "complete garbage collection: the frozen heap had grown",
            frozen_before=frozen,
            frozen_after=after,
            seconds=round(time.perf_counter() - start, 3),
        )
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.check_seconds):
            self.check()

    def release(self) -> None:
        """Undoes `install` and the freezing (the process is stopping; an in-process test's
        next scheduler starts afresh)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        self._stop = threading.Event()
        self.uninstall()
        self._baseline = 0
        gc.unfreeze()


POLICY = GcPolicy()
