"""Opt-in memory tracing for finding what a long-running process holds: off unless asked for.

With $KUBE_PYSCHED_MEMTRACE_DIR set, the process starts tracemalloc at start-up (which costs
CPU and memory of its own: a debugging aid, never the default) and, on every SIGUSR2, writes
into that directory `stats-N.json` (RSS, the traced Python heap, pymalloc's allocated blocks,
objects tracked and frozen by the collector, threads, and the RSS after glibc's
`malloc_trim(0)`: what the C allocator could hand back to the system, i.e. free memory it kept
rather than objects) and a tracemalloc snapshot (`snapshot-N.pickle`, for
`tracemalloc.Snapshot.load`). $KUBE_PYSCHED_MEMTRACE_FRAMES (default 1) sets the frames kept per
allocation; 0 traces nothing and writes the figures only (RSS then measures the process alone;
each trim still hands free memory back).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import os
import signal
import sys
import threading
import tracemalloc
from pathlib import Path
from types import FrameType

import structlog

log = structlog.get_logger(__name__)

DIR_ENV = "KUBE_PYSCHED_MEMTRACE_DIR"
FRAMES_ENV = "KUBE_PYSCHED_MEMTRACE_FRAMES"


def rss_bytes() -> int:
    """This process' resident set (VmRSS), in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def malloc_trim() -> bool:
    """glibc's malloc_trim(0): returns free heap pages to the system; False without glibc."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


class MemTrace:
    """Writes numbered snapshots and figures into `directory`, one pair per `dump()`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._count = 0
        self._lock = threading.Lock()

    def dump(self) -> Path:
        """Writes snapshot-N.pickle and stats-N.json; returns the stats file."""
        with self._lock:
            self._count += 1
            n = self._count
        rss = rss_bytes()
        traced, peak = tracemalloc.get_traced_memory()
        stats = {
            "rss": rss,
            "traced": traced,
            "traced_peak": peak,
            "allocated_blocks": sys.getallocatedblocks(),
            "gc_objects": len(gc.get_objects()),
            "gc_frozen": gc.get_freeze_count(),
            "threads": threading.active_count(),
            "trimmed": malloc_trim(),
            "rss_after_trim": rss_bytes(),
        }
        if tracemalloc.is_tracing():
            # After the figures: the snapshot's own copies would count in them otherwise.
            tracemalloc.take_snapshot().dump(str(self.directory / f"snapshot-{n}.pickle"))
            malloc_trim()
        path = self.directory / f"stats-{n}.json"
        path.write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n")
        log.info("memory trace written", path=str(path), rss=rss, traced=traced)
        return path


def install_from_env() -> MemTrace | None:
    """Starts tracing and the SIGUSR2 handler when $KUBE_PYSCHED_MEMTRACE_DIR is set."""
    directory = os.environ.get(DIR_ENV)
    if not directory:
        return None
    frames = int(os.environ.get(FRAMES_ENV, "1"))
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    if frames > 0:
        tracemalloc.start(frames)
    trace = MemTrace(path)

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        trace.dump()

    signal.signal(signal.SIGUSR2, on_signal)
    log.warning("memory tracing on (a debugging aid: slower, larger)", dir=directory)
    return trace
