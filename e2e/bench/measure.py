"""Figures from watch events and /proc: throughput samples, latency percentiles, CPU and RSS."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class PodTimes:
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)


class PodWatcher:
    """Watches one namespace and records when each pod was first seen and first seen bound."""

    def __init__(self, api: k8s.CoreV1Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.times = PodTimes()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-watch", daemon=True)

    def start(self) -> PodWatcher:
        self._thread.start()
        if not self._ready.wait(30):
            raise TimeoutError("pod watch did not start")
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        rv = self.api.list_namespaced_pod(self.namespace, limit=1).metadata.resource_version
        self._ready.set()
        while not self._stop.is_set():
            w = watch.Watch()
            try:
                for event in w.stream(
                    self.api.list_namespaced_pod,
                    self.namespace,
                    resource_version=rv,
                    timeout_seconds=5,
                    allow_watch_bookmarks=True,
                ):
                    now = time.monotonic()
                    obj: Any = event["object"]
                    if event["type"] == "BOOKMARK":
                        raw = event.get("raw_object") or {}
                        rv = raw.get("metadata", {}).get("resourceVersion", rv)
                        continue
                    rv = obj.metadata.resource_version
                    name = obj.metadata.name
                    with self._lock:
                        self.times.created.setdefault(name, now)
                        if obj.spec.node_name and name not in self.times.bound:
                            self.times.bound[name] = now
                    if self._stop.is_set():
                        break
            except ApiException as err:
                if err.status != 410:
                    raise
                # Expired: list again; pods seen before keep their first-seen times.
                rv = self.api.list_namespaced_pod(self.namespace).metadata.resource_version
            finally:
                w.stop()

    def bound_count(self, names: set[str]) -> int:
        with self._lock:
            return sum(1 for n in names if n in self.times.bound)

    def snapshot(self) -> PodTimes:
        with self._lock:
            return PodTimes(dict(self.times.created), dict(self.times.bound))


@dataclass
class ProcessUsage:
    cpu_seconds: float
    peak_rss_bytes: int


def process_usage(pid: int) -> ProcessUsage:
    """utime+stime and VmHWM of a running process (Linux /proc)."""
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


def throughput_samples(bound_times: Sequence[float], start: float) -> list[float]:
    """Pods bound in each whole second after `start`, up to the last binding (scheduler_perf)."""
    if not bound_times:
        return []
    seconds = max(1, math.ceil(max(bound_times) - start))
    counts = [0] * seconds
    for t in bound_times:
        counts[min(int(t - start), seconds - 1)] += 1
    return [float(c) for c in counts]


def summarize(times: PodTimes, measured: Sequence[str], start: float) -> dict[str, float]:
    bound = [times.bound[n] for n in measured if n in times.bound]
    latencies = [
        times.bound[n] - times.created[n]
        for n in measured
        if n in times.bound and n in times.created
    ]
    samples = throughput_samples(bound, start)
    elapsed = (max(bound) - start) if bound else 0.0
    return {
        "measured_pods": float(len(measured)),
        "bound_pods": float(len(bound)),
        "unscheduled_pods": float(len(measured) - len(bound)),
        "elapsed_seconds": round(elapsed, 3),
        "throughput_avg": round(len(bound) / elapsed, 2) if elapsed > 0 else 0.0,
        "throughput_p50": percentile(samples, 50),
        "throughput_p90": percentile(samples, 90),
        "throughput_p99": percentile(samples, 99),
        "latency_p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "latency_p90_ms": round(percentile(latencies, 90) * 1000, 1),
        "latency_p99_ms": round(percentile(latencies, 99) * 1000, 1),
    }
