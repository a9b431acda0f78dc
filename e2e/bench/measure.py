"""Figures from a pod watch and /proc: throughput samples, latency percentiles, CPU and RSS.

The watch reads raw JSON lines: building V1Pod objects for thousands of pods would make the
watcher late and inflate the latencies it records.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes.watch.watch import iter_resp_lines

from e2e.bench.record import MachineFigures, PodFigures

SAMPLE_INTERVAL = 1.0  # seconds, as scheduler_perf's throughputSampleInterval


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class PodTimes:
    """Monotonic times a pod was first seen, first seen with spec.nodeName set, first seen
    Running (kwok's status patch), and seen deleted without ever being seen bound (a preemption
    may evict a pod while its binding is in flight: it can never be bound, so waiting for it
    would only run into the deadline)."""

    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    deleted: dict[str, float] = field(default_factory=dict)
    running: dict[str, float] = field(default_factory=dict)

    def record(
        self,
        name: str,
        spec: Mapping[str, Any],
        now: float,
        deleted: bool,
        phase: str | None = None,
    ) -> None:
        """One watch event about pod `name` (`deleted` for a DELETED event; `phase` its
        status.phase)."""
        self.created.setdefault(name, now)
        if phase == "Running":
            self.running.setdefault(name, now)
        if spec.get("nodeName") and name not in self.bound:
            self.bound[name] = now
        elif deleted and name not in self.bound:
            self.deleted.setdefault(name, now)

    def settled_count(self, names: set[str]) -> int:
        """How many of `names` were seen bound or deleted before being bound."""
        return len(names.intersection(self.bound)) + len(names.intersection(self.deleted))


class PodWatcher:
    """Watches one namespace from a given point and records each pod's first-seen times."""

    def __init__(self, api: k8s.CoreV1Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.times = PodTimes()
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-watch", daemon=True)
        self._resp: Any = None
        self._expected: frozenset[str] = frozenset()
        self._first_bound = threading.Event()

    def start(self) -> PodWatcher:
        """Returns once the watch is open, so no pod created afterwards can be missed."""
        self._thread.start()
        if not self._ready.wait(30):
            raise TimeoutError("pod watch did not start")
        return self

    def stop(self) -> None:
        """Shuts the watch's socket (a blocked read then returns at once) and joins the reader."""
        self._stop.set()
        resp = self._resp
        if resp is not None:
            with suppress(Exception):
                resp.shutdown()
        self._thread.join(15)

    def _list_version(self) -> str:
        pods = self.api.list_namespaced_pod(self.namespace, limit=1)
        return str(pods.metadata.resource_version)

    def _run(self) -> None:
        version = self._list_version()
        while not self._stop.is_set():
            resp = self.api.list_namespaced_pod(
                self.namespace,
                watch=True,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=30,
                _preload_content=False,
                _request_timeout=(10, 60),
            )
            self._resp = resp
            self._ready.set()
            try:
                for line in iter_resp_lines(resp):
                    now = time.monotonic()
                    event = json.loads(line)
                    obj: dict[str, Any] = event.get("object", {})
                    if event.get("type") == "ERROR":
                        # 410 Gone: the version expired; restart from the current state (pods
                        # seen before keep their first-seen times).
                        self.errors.append(str(obj.get("message")))
                        version = self._list_version()
                        break
                    meta = obj.get("metadata", {})
                    version = meta.get("resourceVersion", version)
                    if event.get("type") != "BOOKMARK":
                        self._record(meta.get("name", ""), obj, now, event["type"] == "DELETED")
                    if self._stop.is_set():
                        break
            except Exception as exc:  # a dropped connection: resume from the last version
                if self._stop.is_set():
                    return
                self.errors.append(repr(exc))
            finally:
                with suppress(Exception):
                    resp.close()
                    resp.release_conn()

    def first_bound(self, names: set[str]) -> threading.Event:
        """An Event set as soon as the watch sees any of `names` bound (at once if it has)."""
        with self._lock:
            self._expected = frozenset(names)
            if self._expected.intersection(self.times.bound):
                self._first_bound.set()
        return self._first_bound

    def _record(self, name: str, pod: dict[str, Any], now: float, deleted: bool) -> None:
        with self._lock:
            phase = pod.get("status", {}).get("phase")
            self.times.record(name, pod.get("spec", {}), now, deleted, phase)
            if name in self._expected and name in self.times.bound:
                self._first_bound.set()

    def settled_count(self, names: set[str]) -> int:
        with self._lock:
            return self.times.settled_count(names)

    def snapshot(self) -> PodTimes:
        with self._lock:
            return PodTimes(**{name: dict(seen) for name, seen in vars(self.times).items()})


@dataclass(frozen=True)
class ProcessUsage:
    cpu_seconds: float
    peak_rss_bytes: int


def process_usage(pid: int) -> ProcessUsage:
    """utime+stime (own threads, not children) and VmHWM of a running process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    peak = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return ProcessUsage(cpu, peak)


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds used so far by the whole machine and by named processes, at one moment."""

    at: float
    machine_busy_seconds: float
    by_process: dict[str, float]
    #: two classes of machine_busy_seconds from /proc/stat: `steal` (the hypervisor ran
    #: something else on our virtual CPUs) and `interrupts` (hard and soft IRQs, e.g. the
    #: loopback network's packets, charged to whichever task they interrupted)
    by_class: dict[str, float] = field(default_factory=dict)


def cpu_snapshot(pids: Mapping[str, int]) -> CpuSnapshot:
    """Reads /proc/stat (all CPUs, busy = not idle or iowait) and each named process's CPU."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    ticks += [0] * (8 - len(ticks))  # user nice system idle iowait irq softirq steal
    hz = os.sysconf("SC_CLK_TCK")
    busy = (sum(ticks[:8]) - ticks[3] - ticks[4]) / hz
    by_class = {"steal": ticks[7] / hz, "interrupts": (ticks[5] + ticks[6]) / hz}
    by_process: dict[str, float] = {}
    for name, pid in pids.items():
        with suppress(FileNotFoundError, ProcessLookupError):
            by_process[name] = process_usage(pid).cpu_seconds
    return CpuSnapshot(time.monotonic(), busy, by_process, by_class)


def cpu_breakdown(before: CpuSnapshot, after: CpuSnapshot) -> MachineFigures:
    """Who used the machine's CPUs over a window, to read what bounds throughput: busy cores
    (near the core count: the machine is the limit), CPU seconds by process (`other`: all
    unnamed) and by class (steal, interrupts)."""
    wall = after.at - before.at
    used = {
        name: round(after.by_process[name] - before.by_process[name], 2)
        for name in after.by_process
        if name in before.by_process
    }
    busy = after.machine_busy_seconds - before.machine_busy_seconds
    used["other"] = round(max(0.0, busy - sum(used.values())), 2)
    return MachineFigures(
        window_seconds=round(wall, 2),
        machine_busy_cores=round(busy / wall, 2) if wall > 0 else 0.0,
        cpu_seconds_by_process=used,
        machine_cpu_seconds_by_class={
            k: round(after.by_class[k] - before.by_class.get(k, 0.0), 2) for k in after.by_class
        },
    )


def throughput_samples(bound_times: Sequence[float], start: float) -> list[float]:
    """scheduler_perf's SchedulingThroughput samples over recorded binding times: a tick each
    second from `start`; the first that sees a binding sets the baseline; a tick without one is
    folded into the next, which records its rate once per folded tick."""
    if not bound_times:
        return []
    ordered = sorted(bound_times)
    last = ordered[-1]
    samples: list[float] = []
    baseline: int | None = None
    baseline_at = start
    skipped = 0
    seen = 0
    tick = start
    while tick <= last:
        tick += SAMPLE_INTERVAL
        while seen < len(ordered) and ordered[seen] <= tick:
            seen += 1
        if seen == 0:
            continue
        if baseline is None:
            baseline, baseline_at = seen, tick
            continue
        new = seen - baseline
        if new == 0:
            skipped += 1
            continue
        rate = new / (tick - baseline_at)
        samples.extend([rate] * (skipped + 1))
        baseline, baseline_at, skipped = seen, tick, 0
    return samples


def summarize(times: PodTimes, measured: Sequence[str], start: float) -> PodFigures:
    """Throughput and latency figures for the measured pods; `start` is when creation began."""
    bound = [times.bound[n] for n in measured if n in times.bound]
    latencies = [times.bound[n] - times.created[n] for n in measured if n in times.bound]
    deleted = sum(1 for n in measured if n in times.deleted)
    samples = throughput_samples(bound, start)
    elapsed = (max(bound) - start) if bound else 0.0
    overall = len(bound) / elapsed if elapsed > 0 else 0.0
    # kwok's Running patches that landed inside the window (it ends at the last binding): the
    # API server's work for them counts against this run, for the ones after it against none.
    running = sum(1 for n in measured if times.running.get(n, math.inf) <= start + elapsed)
    return PodFigures(
        measured_pods=len(measured),
        bound_pods=len(bound),
        unscheduled_pods=len(measured) - len(bound) - deleted,
        deleted_before_bound_pods=deleted,
        running_in_window_pods=running,
        elapsed_seconds=round(elapsed, 3),
        throughput_overall=round(overall, 1),
        throughput_samples=len(samples),
        # scheduler_perf's Average of the samples: 0 for a run shorter than two ticks, and
        # dominated by the last partial second for a run of a few seconds.
        throughput_avg=round(sum(samples) / len(samples), 1) if samples else 0.0,
        throughput_p50=round(percentile(samples, 50), 1),
        throughput_p90=round(percentile(samples, 90), 1),
        throughput_p99=round(percentile(samples, 99), 1),
        latency_p50_ms=round(percentile(latencies, 50) * 1000, 1),
        latency_p90_ms=round(percentile(latencies, 90) * 1000, 1),
        latency_p99_ms=round(percentile(latencies, 99) * 1000, 1),
    )
