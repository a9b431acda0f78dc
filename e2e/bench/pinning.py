"""CPU pinning for capacity mode: the control plane on one CPU, the scheduler on another.

sched_setaffinity on a pid sets one thread, so a running process is pinned thread by thread
(/proc/<pid>/task); the scheduler is started pinned instead (taskset). `Pinned` restores every
process's mask when it ends.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import Any


class CapacityError(RuntimeError):
    """Capacity mode needs two CPUs: one for the control plane, one for the scheduler."""


def capacity_cpus(available: Iterable[int] | None = None) -> tuple[int, int]:
    """(control plane CPU, scheduler CPU): the first two CPUs this process may run on."""
    cpus = sorted(os.sched_getaffinity(0) if available is None else available)
    if len(cpus) < 2:
        raise CapacityError(
            f"capacity mode pins the control plane and the scheduler to one CPU each and needs "
            f"2 CPUs; this process may use {len(cpus)} ({format_cpus(cpus) or 'none'})"
        )
    return cpus[0], cpus[1]


def format_cpus(cpus: Iterable[int]) -> str:
    """A CPU set in the kernel's list format, e.g. "0-2,5"."""
    parts = []
    # In a run of consecutive CPUs, CPU minus position stays the same.
    for _, run in itertools.groupby(enumerate(sorted(set(cpus))), lambda at: at[1] - at[0]):
        in_run = [cpu for _, cpu in run]
        first, last = in_run[0], in_run[-1]
        parts.append(str(first) if first == last else f"{first}-{last}")
    return ",".join(parts)


def thread_ids(pid: int) -> list[int]:
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


def set_process_affinity(pid: int, cpus: set[int]) -> None:
    """Sets every thread of `pid` to `cpus`, again while new threads show up (at most ten
    rounds). Threads that end meanwhile are skipped."""
    done: set[int] = set()
    for _ in range(10):
        new = set(thread_ids(pid)) - done
        for tid in new:
            with suppress(ProcessLookupError):
                os.sched_setaffinity(tid, cpus)
        done |= new


def thread_cpus(pid: int) -> dict[str, int]:
    """Cpus_allowed_list of each thread of `pid` (/proc/<pid>/task/<tid>/status), counted."""
    counts: Counter[str] = Counter()
    for tid in thread_ids(pid):
        with (
            suppress(FileNotFoundError, ProcessLookupError),
            open(f"/proc/{pid}/task/{tid}/status") as f,
        ):
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    counts[line.split(":", 1)[1].strip()] += 1
    return dict(counts)


class Pinned:
    """Pins named processes to `cpus` on entry and restores each one's mask on exit."""

    def __init__(self, pids: Mapping[str, int], cpus: set[int]) -> None:
        self.pids = dict(pids)
        self.cpus = set(cpus)
        self._before: dict[str, set[int]] = {}

    def __enter__(self) -> Pinned:
        try:
            for name, pid in self.pids.items():
                before = os.sched_getaffinity(pid)
                set_process_affinity(pid, self.cpus)
                self._before[name] = before
        except BaseException:
            self.restore()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.restore()

    def restore(self) -> None:
        """Every pinned process back to the mask it had (processes gone meanwhile skipped)."""
        for name, before in self._before.items():
            with suppress(FileNotFoundError, ProcessLookupError):
                set_process_affinity(self.pids[name], before)
        self._before.clear()

    def state(self) -> dict[str, Any]:
        """Per process, its pid and how many threads have which Cpus_allowed_list now."""
        state: dict[str, Any] = {}
        for name, pid in self.pids.items():
            with suppress(FileNotFoundError, ProcessLookupError):
                state[name] = {"pid": pid, "threads_by_cpus": thread_cpus(pid)}
        return state
