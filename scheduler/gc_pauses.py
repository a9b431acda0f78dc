"""Times the interpreter's garbage collections (kube_pysched_gc_pause_seconds).

A collection runs in whichever thread allocated last and holds the GIL throughout, so every
thread (scheduling loop, binders, informers) waits for it. Over a cache of thousands of nodes
and pods a full collection takes tens of milliseconds: one lands in a pod's latency as a pause
no profile of the scheduling code shows.
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
