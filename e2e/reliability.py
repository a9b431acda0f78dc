"""Helpers of the reliability suite: figures, etcd compaction, process sampling.

Figures are what the tests measure but never assert on (takeover times, relist counts, RSS):
each test writes its own JSON under its tmp dir, and also into $RELIABILITY_OUT when that is
set (`make reliability` sets it), from where docs/reliability.md takes its numbers.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from e2e.cluster.ports import LOOPBACK
from e2e.pysched import Pysched, metric_value

#: Every informer kube-pysched runs with the default profile: the scheduler's own and the
#: storage plugins' (scheduler/cmd/app.py, scheduler/client/storage.py), by reflector name.
INFORMERS = frozenset(
    {
        "pods",
        "nodes",
        "poddisruptionbudgets",
        "namespaces",
        "services",
        "replicationcontrollers",
        "replicasets",
        "statefulsets",
        "persistentvolumeclaims",
        "persistentvolumes",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "volumeattachments",
    }
)

#: The reflector's line for a watch answered with 410 Gone (it relists next); a V(4) line, so
#: the process must run with -v 4 for it to be written.
GONE_LINE = "watch closed: resourceVersion too old"


def record_figures(tmp_path: Path, name: str, figures: dict[str, Any]) -> Path:
    """Writes `figures` as <tmp_path>/<name>.json (and into $RELIABILITY_OUT) and prints them."""
    text = json.dumps(figures, indent=2, sort_keys=True)
    path = tmp_path / f"{name}.json"
    path.write_text(text + "\n")
    out = os.environ.get("RELIABILITY_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{name}.json").write_text(text + "\n")
    print(f"reliability figures {name}: {text}")
    return path


def log_times(proc: Pysched, event: str) -> list[float]:
    """When the process logged `event`, as epoch seconds."""
    return [
        datetime.fromisoformat(r["timestamp"]).timestamp()
        for r in proc.log_records()
        if r.get("event") == event
    ]


def bound_pods(proc: Pysched) -> list[str]:
    """Pods the process logged as bound (-v 2 line), in order."""
    return [
        str(r.get("pod"))
        for r in proc.log_records()
        if r.get("event") == "successfully bound pod to node"
    ]


def relists_since(proc: Pysched, since: float) -> Counter[str]:
    """Per reflector, how many 410 Gone answers it logged at or after `since` (epoch s)."""
    counts: Counter[str] = Counter()
    for r in proc.log_records():
        if r.get("event") != GONE_LINE:
            continue
        if datetime.fromisoformat(r["timestamp"]).timestamp() >= since:
            counts[str(r.get("reflector"))] += 1
    return counts


def scheduled(proc: Pysched, profile: str) -> int:
    """scheduler_schedule_attempts_total{result=scheduled} of one profile (0 when absent)."""
    labels = {"result": "scheduled", "profile": profile}
    value = metric_value(proc.metrics(), "scheduler_schedule_attempts_total", labels)
    return int(value or 0)


def cache_size(proc: Pysched, kind: str) -> int:
    """scheduler_cache_size{type=kind}: nodes (ghosts included), pods or assumed_pods."""
    return int(metric_value(proc.metrics(), "scheduler_cache_size", {"type": kind}) or 0)


def live_bound_pods(core: k8s.CoreV1Api) -> int:
    """Pods with a node that are not terminal, cluster-wide: what the scheduler cache holds."""
    return sum(
        1
        for p in core.list_pod_for_all_namespaces().items
        if p.spec.node_name and p.status.phase not in ("Succeeded", "Failed")
    )


def cache_matches_api(proc: Pysched, core: k8s.CoreV1Api) -> bool | str:
    """A wait_for check: the scheduler's cache has as many nodes and pods as the API."""
    nodes, pods = len(core.list_node().items), live_bound_pods(core)
    cached_nodes, cached_pods = cache_size(proc, "nodes"), cache_size(proc, "pods")
    if (cached_nodes, cached_pods) == (nodes, pods):
        return True
    return f"cache nodes={cached_nodes} pods={cached_pods}, API nodes={nodes} pods={pods}"


# --- etcd ---------------------------------------------------------------------------------


def _etcd_post(port: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"http://{LOOPBACK}:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
    return answer


def etcd_revision(port: int) -> int:
    """etcd's current revision (the header of a range read, via the grpc-gateway)."""
    key = base64.b64encode(b"/registry/health").decode()
    return int(_etcd_post(port, "/v3/kv/range", {"key": key})["header"]["revision"])


def compact_etcd(port: int, revision: int) -> None:
    """Compacts etcd's history up to `revision` (physical: returns once it is gone)."""
    _etcd_post(port, "/v3/kv/compaction", {"revision": revision, "physical": True})


# --- process sampling ---------------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler:
    """Samples a process' RSS and CPU time every `interval` seconds on a thread of its own."""

    def __init__(self, pid: int, interval: float) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, int, float]] = []  # (t since start, RSS, CPU s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._t0 = 0.0

    def __enter__(self) -> Sampler:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while True:
            try:
                self.samples.append(
                    (time.monotonic() - self._t0, rss_bytes(self.pid), cpu_seconds(self.pid))
                )
            except (OSError, RuntimeError):
                return  # the process is gone
            if self._stop.wait(self.interval):
                return


def slope_per_hour(points: Iterable[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) points, per hour (0 with fewer than 2 points)."""
    pts = list(points)
    if len(pts) < 2:
        return 0.0
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    var = sum((x - mx) ** 2 for x, _ in pts)
    if var == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in pts) / var * 3600.0


def rss_growth(samples: list[tuple[float, int, float]], window: float) -> float | None:
    """RSS growth over the last `window` seconds of a series (MiB): the mean of its last
    minute minus the mean of the window's first minute; None if the series is shorter."""
    if not samples or samples[-1][0] - samples[0][0] < window:
        return None
    end = samples[-1][0]
    first = [r for t, r, _ in samples if end - window <= t < end - window + 60]
    last = [r for t, r, _ in samples if t > end - 60]
    mib = 1024 * 1024
    return (sum(last) / len(last) - sum(first) / len(first)) / mib


def rss_summary(samples: list[tuple[float, int, float]]) -> dict[str, Any]:
    """Start, max, end and slope of an RSS series (MiB), and the CPU used (s)."""
    mib = 1024 * 1024
    if not samples:
        return {"samples": 0}
    rss = [(t, r / mib) for t, r, _ in samples]
    half = rss[len(rss) // 2 :]
    duration = samples[-1][0] - samples[0][0]
    cpu = samples[-1][2] - samples[0][2]
    return {
        "samples": len(samples),
        "duration_s": round(duration, 1),
        "rss_start_mib": round(rss[0][1], 1),
        "rss_max_mib": round(max(v for _, v in rss), 1),
        "rss_end_mib": round(rss[-1][1], 1),
        "rss_slope_mib_per_hour": round(slope_per_hour(rss), 1),
        "rss_slope_second_half_mib_per_hour": round(slope_per_hour(half), 1),
        "cpu_seconds": round(cpu, 1),
        "cpu_mean_cores": round(cpu / duration, 3) if duration > 0 else 0.0,
    }
