"""Hands the C heap's free pages back to the system once a minute (glibc's `malloc_trim(0)`).

Why: kube-pysched's threads (binding workers, Event writers, informers, preemption workers)
allocate what CPython's small-object allocator does not serve (objects over 512 bytes: dict
tables, lists, response bodies) through glibc, which gives threads arenas of their own. glibc
hands a thread arena's free memory back only from the top of its heap, so under pod churn free
chunks left between live ones stay resident. Measured in a 30-minute churn soak
(docs/reliability.md): the resident part of the thread arenas grew by about 0.2 MiB a minute
while Python's own heap (pymalloc arenas) and the main heap stayed flat. `malloc_trim(0)`
releases the free pages inside every arena (madvise), so RSS follows what is in use; it holds
each arena's lock while it walks that arena.

The process' main thread calls `trim` between its waits (scheduler.cmd.app.run). Without glibc
(musl, macOS) there is no such call: one line says so at start-up, and memory is as the
platform's allocator keeps it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

#: Seconds between two trims: the period of the Event recorder's expiry check, after which the
#: most memory has just been freed.
PERIOD = 60.0


def _load() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


class HeapTrimmer:
    """glibc's malloc_trim, resolved once; `available` is False without it."""

    def __init__(self, loader: Callable[[], Callable[[int], int] | None] = _load) -> None:
        self._trim = loader()
        self.trims = 0

    @property
    def available(self) -> bool:
        return self._trim is not None

    def announce(self) -> None:
        """One line at start-up when there is nothing to call."""
        if self._trim is None:
            log.warning(
                "malloc_trim is not available (not glibc): free C heap is not handed back "
                "to the system periodically"
            )

    def trim(self) -> bool:
        """Hands free pages back; True if any memory was released."""
        if self._trim is None:
            return False
        self.trims += 1
        return bool(self._trim(0))
