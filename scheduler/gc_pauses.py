"""Keeps the interpreter's garbage collections out of pods' latency, and times them
(kube_pysched_gc_pause_seconds).

A collection runs in whichever thread allocated last and holds the GIL throughout, so every
thread (scheduling loop, binders, informers) waits for it. A full collection walks every
tracked object: with the informers of a 5000-node cluster that was one 590 ms pause inside a
benchmark's measured window, the slowest pods' whole latency. The objects the initial sync
built live as long as the process (or are freed by reference counting when an update replaces
them), so they are frozen once the informers have synced: later collections skip them.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from scheduler import metrics

_by_generation = [metrics.gc_pause.labels(str(g)) for g in range(3)]
_started = [0.0]  # the running collection's start (perf_counter)


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    """gc.callbacks hook: collections never overlap (each holds the GIL), so one start."""
    if phase == "start":
        _started[0] = time.perf_counter()
    else:
        _by_generation[info["generation"]].observe(time.perf_counter() - _started[0])


def install() -> None:
    """Starts timing collections (idempotent)."""
    if _on_collection not in gc.callbacks:
        gc.callbacks.append(_on_collection)


def freeze_synced_heap() -> int:
    """Moves every object alive now out of the collector's reach (gc.freeze): called once the
    informers have synced, so full collections walk only what arrived since. A frozen object
    is still freed when its last reference goes; only a reference cycle among frozen objects
    would outlive its use. Returns how many objects are frozen."""
    gc.collect()  # garbage of the sync itself is not frozen
    gc.freeze()
    return gc.get_freeze_count()
