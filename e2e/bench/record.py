"""A run's record: what ran, how, and its figures, as typed fields; written as one JSON file.

The JSON is flat where the figures come from several sources (summarize's pod figures, /proc,
the scheduler's and the API server's /metrics sit side by side under `figures`), so the nested
parts marked `inline` are merged into their parent, and a field left None is left out (a
figure that could not be read is missing, never zero).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

#: Field metadata: merge this dataclass's fields into the parent's JSON object.
INLINE = {"inline": True}
#: Field metadata: write None as null instead of leaving the key out.
KEEP_NULL = {"keep_null": True}


def to_json(obj: Any) -> dict[str, Any]:
    """The dataclass `obj` as the JSON object the record files hold."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if value is None and not f.metadata.get("keep_null"):
            continue
        if f.metadata.get("inline"):
            out.update(to_json(value))
        else:
            out[f.name] = to_json(value) if is_dataclass(value) else value
    return out


@dataclass(frozen=True)
class PodFigures:
    """Throughput and latency of the measured pods, from the pod watch (measure.summarize)."""

    measured_pods: int
    bound_pods: int
    unscheduled_pods: int
    deleted_before_bound_pods: int
    running_in_window_pods: int
    elapsed_seconds: float
    throughput_overall: float
    throughput_samples: int
    throughput_avg: float
    throughput_p50: float
    throughput_p90: float
    throughput_p99: float
    latency_p50_ms: float
    latency_p90_ms: float
    latency_p99_ms: float


@dataclass(frozen=True)
class GangFigures:
    """A gang run's groups: how many, how many got all members bound, and how fast."""

    groups: int
    groups_all_bound: int
    group_all_bound_p50_s: float
    group_all_bound_p90_s: float
    group_all_bound_max_s: float


@dataclass(frozen=True)
class MachineFigures:
    """Who used the machine's CPUs over the window (measure.cpu_breakdown says how)."""

    window_seconds: float
    machine_busy_cores: float
    cpu_seconds_by_process: dict[str, float]
    machine_cpu_seconds_by_class: dict[str, float] | None = None


@dataclass(frozen=True)
class GcFigures:
    """kube-pysched's garbage collections in the window (scraped.gc_figures)."""

    gc_full_collections: int
    gc_full_ms: float
    gc_full_max_ms_at_most: float | None = field(metadata=KEEP_NULL)
    gc_young_ms: float


@dataclass(frozen=True)
class WorkFigures:
    """What the scheduler did in the window, from its own /metrics (scraped.py)."""

    attempts_scheduled: int
    attempts_unschedulable: int
    attempts_error: int
    preemption_attempts: int
    preemption_victims: int
    gc: GcFigures | None = field(default=None, metadata=INLINE)
    events_dropped: int | None = None


@dataclass(frozen=True)
class ApiServerFigures:
    """What the API server served in the window and what it cost it (scraped.py)."""

    api_requests: dict[str, int]
    api_refusals: dict[str, int]


@dataclass(frozen=True)
class PacingFigures:
    """A paced creation (--create-qps): the rates asked and achieved, how late creates started."""

    create_qps_asked: float
    create_qps_achieved: float
    create_qps_reached: bool
    create_lag_p50_ms: float
    create_lag_p99_ms: float
    create_lag_max_ms: float


@dataclass(frozen=True)
class Figures:
    """Everything measured over one run's window."""

    pods: PodFigures = field(metadata=INLINE)
    cpu_seconds: float
    cpu_ms_per_pod: float
    peak_rss_mib: float
    create_rate: float
    cpu: MachineFigures = field(metadata=INLINE)
    mode: str
    setup_seconds: float
    gang: GangFigures | None = field(default=None, metadata=INLINE)
    work: WorkFigures | None = field(default=None, metadata=INLINE)
    api_server: ApiServerFigures | None = field(default=None, metadata=INLINE)
    unready_nodes: int | None = None
    pacing: PacingFigures | None = field(default=None, metadata=INLINE)


@dataclass
class RunRecord:
    """One (workload, size, scheduler) run, filled in as the run goes; a field left None is
    not written (e.g. `figures` of a skipped or failed run, `variant` of a plain one)."""

    workload: str
    size: str
    scheduler: str
    variant: str | None = None
    plugin: str | None = None
    group_api: str | None = None
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    nodes: int | None = None
    init_pods: int | None = None
    group_sizes: list[int] | None = None
    config: dict[str, Any] | None = None
    skipped: str | None = None
    control_plane: str | None = None
    node_lease_seconds: int | None = None
    mode: str | None = None
    pending_pods: bool | None = None
    create_qps: float | None = None
    figures: Figures | None = None
    failed: str | None = None
    cleanup_failed: str | None = None
    phases_seconds: dict[str, float] | None = None
    run_id: str | None = None
    scheduler_log: str | None = None
    scheduler_user: str | None = None
    watch_errors: list[str] | None = None
    pinning: dict[str, Any] | None = None
    repeat: int | None = None
    repeats: int | None = None
    machine: dict[str, Any] | None = None
    load_average: dict[str, list[float]] | None = None
    command: str | None = None
    #: Where the record was written (not part of the file itself).
    json: str | None = None

    def write(self, results_dir: Path) -> Path:
        """Writes the record to `<stamp>-<workload>-<size>-<who>.json` and remembers where."""
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        who = self.variant or self.scheduler
        if self.repeat is not None:
            who += f"-r{self.repeat}"
        path = results_dir / f"{stamp}-{self.workload}-{self.size}-{who}.json"
        path.write_text(json.dumps(to_json(self), indent=2) + "\n")
        self.json = str(path)
        return path
