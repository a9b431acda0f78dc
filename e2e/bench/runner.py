"""One workload with one scheduler on a running control plane: set up, measure, clean up.

The scheduler is started after the run's objects (objects.py) and must bind a warm-up pod
before measuring begins (its caches are synced). Live mode creates the measured pods while the
scheduler runs; backlog and capacity mode create them before it starts and measure the drain.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from e2e.bench.measure import (
    CpuSnapshot,
    PodTimes,
    PodWatcher,
    ProcessUsage,
    cpu_breakdown,
    cpu_snapshot,
    process_usage,
    summarize,
)
from e2e.bench.objects import CREATE_THREADS, ClusterObjects
from e2e.bench.options import RunOptions
from e2e.bench.pacing import Pacing, create_paced
from e2e.bench.pinning import Pinned, capacity_cpus, format_cpus, thread_cpus
from e2e.bench.record import Figures, GangFigures, PodFigures
from e2e.bench.rest import CreateError
from e2e.bench.schedulers import (
    KUBE_PYSCHED,
    RunningScheduler,
    running_scheduler,
)
from e2e.bench.schedulers import scheduler_config as bench_config
from e2e.bench.scraped import Scrape, api_server_figures, keep_metrics, scrape, scraped_figures
from e2e.bench.workload import Arrivals, Size, Workload
from e2e.cluster import ControlPlane, NotReadyError, wait_for
from e2e.cluster.controlplane import feature_gate_flags
from e2e.cluster.kwok import DISREGARD_LABEL_KEY, DISREGARD_LABEL_VALUE

LEAD_IN_ROUNDS = 3
HARNESS = "bench harness"


def arrive_every(
    stop: threading.Event,
    interval: float,
    arrive: Callable[[int], None],
    lead_in: Callable[[], None],
    *,
    limit: int | None = None,
) -> None:
    """arrive(0), arrive(1), ... with `interval` seconds between them until `stop` is set or
    `limit` arrivals were made (an arrival the API server refuses is skipped, and counts);
    lead_in() is called once, after LEAD_IN_ROUNDS arrivals or after the last if fewer."""
    rounds = LEAD_IN_ROUNDS if limit is None else min(LEAD_IN_ROUNDS, limit)
    i = 0
    while not stop.is_set() and (limit is None or i < limit):
        with suppress(CreateError):
            arrive(i)
        i += 1
        if i == rounds:
            lead_in()
        stop.wait(interval)


def owner_refusal(workload: Workload, mode: str, create_qps: float | None) -> str | None:
    """Why a run of `workload` in `mode` at `create_qps` cannot be measured, or None: backlog
    and capacity modes and a creation rate need the harness to create the measured pods, and
    a workload with an owner (a ReplicaSet) has kube-controller-manager create them."""
    if not workload.owner or (mode == "live" and create_qps is None):
        return None
    asked = f"{mode} mode" if mode != "live" else f"a creation rate (--create-qps {create_qps:g})"
    return (
        f"{workload.name}: {asked} needs the harness to create the measured pods; this "
        f"workload has them created by a {workload.owner}"
    )


@dataclass(frozen=True)
class Reading:
    """One end of the window: the scheduler's usage, every process's CPU, the API server's and
    the scheduler's /metrics (None where they could not be read)."""

    usage: ProcessUsage
    cpu: CpuSnapshot
    api: str | None
    scraped: Scrape | None


class Run(ClusterObjects):
    """One (workload, size, scheduler) run; `execute()` returns its figures."""

    def __init__(
        self,
        cp: ControlPlane,
        workload: Workload,
        size: Size,
        which: str,
        options: RunOptions,
        *,
        cleanup: bool = True,
    ) -> None:
        super().__init__(cp, workload, size, options)
        self.which = which
        #: Whether the run deletes its objects at the end: not when its control plane is its own
        #: and is stopped after it (nothing of the run outlives it then).
        self.cleans_up = cleanup
        self.scheduler_log: Path | None = None
        self.watch_errors: list[str] = []
        self.cleanup_error: str | None = None
        #: Capacity mode: the CPUs used and each process's threads' CPU lists during the run.
        self.pinning: dict[str, Any] | None = None
        #: Released by the background and the churn once each has run its lead-in rounds.
        self._lead_in = threading.Semaphore(0)

    # --- what a kind of workload varies (gangs.GangRun overrides these) ---------------------

    def scheduler_config(self) -> dict[str, Any]:
        """The KubeSchedulerConfiguration the scheduler under test runs with."""
        return bench_config(self.workload)

    def pysched_feature_gates(self) -> dict[str, bool]:
        """kube-pysched's --feature-gates (kube-scheduler runs with the control plane's)."""
        return {}

    def extra_figures(self, times: PodTimes, names: list[str]) -> GangFigures | None:
        """Figures of a live run beyond summarize's (none here)."""
        return None

    # --- the run ----------------------------------------------------------------------------

    def execute(self) -> Figures:
        """The run's figures. A cleanup that fails leaves `cleanup_error` set (the figures
        stand, but the cluster still holds this run's objects)."""
        self.create_namespace()
        try:
            if self.options.capacity:
                capacity_cpus()  # fails at once, before any setup, on a one-CPU machine
            refused = owner_refusal(self.workload, self.options.mode, self.options.create_qps)
            if refused is not None:
                raise ValueError(refused)
            self.set_up()
            if self.options.drains_backlog:
                return self._drain_backlog()
            with self._scheduler() as sched:
                with self._phase("warm_up"):
                    self.warm_up()
                with self._phase("measure"):
                    return self._measure_live(sched)
        finally:
            if self.cleans_up:
                with self._phase("cleanup"):
                    try:
                        self.cleanup()
                    except Exception as err:  # must not hide the run's own outcome
                        self.cleanup_error = f"{type(err).__name__}: {err}"
            self.close()

    @contextmanager
    def _scheduler(self, cpus: set[int] | None = None) -> Iterator[RunningScheduler]:
        """The scheduler under test, started (phase scheduler_start) and stopped after."""
        with ExitStack() as stack:
            with self._phase("scheduler_start"):
                sched = stack.enter_context(
                    running_scheduler(
                        self.which,
                        self.cp,
                        self.scheduler_config(),
                        run_id=self.run_id,
                        workdir=self.options.results_dir,
                        cpus=cpus,
                        extra_args=self._scheduler_args(),
                    )
                )
            self.scheduler_log = sched.log_path
            yield sched
            stopping = time.monotonic()
        self.phases["scheduler_stop"] = round(time.monotonic() - stopping, 1)

    def _scheduler_args(self) -> list[str]:
        """-v=N (--verbosity); for kube-pysched, its feature gates and --pysched-arg's."""
        verbosity = self.options.verbosity
        args = [] if verbosity is None else [f"-v={verbosity}"]
        if self.which == KUBE_PYSCHED:
            args += feature_gate_flags(self.pysched_feature_gates())
            args += self.options.pysched_args or ()
        return args

    def _drain_backlog(self) -> Figures:
        """Backlog mode: every measured pod exists before the scheduler starts; throughput is
        the drain rate from the first binding to the last (latency left at 0), CPU counted over
        the same window (both schedulers have synced by then: no start-up in the figure).
        Capacity mode also pins the control plane and this harness to one CPU and the scheduler
        to another, and kwok leaves the pods alone: the scheduler's own drain rate."""
        watcher = PodWatcher(self.core, self.namespace).start()
        names = [f"pod-{i}" for i in range(self.size.measured_pods)]
        first_bound = watcher.first_bound(set(names))
        try:
            with self._phase("backlog"):
                self.create_measured(names)
            with ExitStack() as stack:
                sched_cpus: set[int] | None = None
                pinned: Pinned | None = None
                if self.options.capacity:
                    cp_cpu, sched_cpu = capacity_cpus()
                    sched_cpus = {sched_cpu}
                    # Entered first, so left last: masks are restored after the scheduler stops.
                    pinned = stack.enter_context(Pinned(self._environment_pids(), {cp_cpu}))
                sched = stack.enter_context(self._scheduler(sched_cpus))
                with self._phase("measure"):
                    first_bound.wait(self.options.deadline)
                    before, after = self._window(sched, lambda: self._wait_bound(watcher, names))
                    if pinned is not None and sched_cpus is not None:
                        self.pinning = self._pinning_state(pinned, sched.pid, sched_cpus)
        finally:
            watcher.stop()
        self.watch_errors = watcher.errors
        times = watcher.snapshot()
        bound = [times.bound[n] for n in names if n in times.bound]
        pods = summarize(times, names, min(bound) if bound else 0.0)
        no_latency = dict.fromkeys(("latency_p50_ms", "latency_p90_ms", "latency_p99_ms"), 0.0)
        return self._figures(replace(pods, **no_latency), before, after, create_rate=0.0)

    def _measure_live(self, sched: RunningScheduler) -> Figures:
        """Creates the measured pods while the scheduler runs (with the workload's background
        and churn going) and measures from the first create to the last binding."""
        watcher = PodWatcher(self.core, self.namespace).start()
        names = [f"pod-{i}" for i in range(self.size.measured_pods)]
        stop = threading.Event()
        arrivals = (
            (self.workload.background, self._background),
            (self.workload.churn, self._churn),
        )
        helpers = [
            threading.Thread(target=self._arrivals, args=(stop, spec, arrive), daemon=True)
            for spec, arrive in arrivals
            if spec is not None
        ]
        for thread in helpers:
            thread.start()
        pacing: Pacing | None = None
        created_seconds = 0.0
        start = 0.0

        def create_and_wait() -> None:
            nonlocal names, pacing, created_seconds, start
            start = time.monotonic()
            if self.workload.owner:
                names = self.create_through_replica_set(watcher)
            elif self.options.create_qps is not None:
                pacing = create_paced(
                    lambda i: self.create_pod(self.measured_manifest(names[i])),
                    len(names),
                    self.options.create_qps,
                    threads=CREATE_THREADS,
                )
            else:
                self.create_measured(names)
            created_seconds = time.monotonic() - start
            self._wait_bound(watcher, names)

        try:
            # Background and churn run LEAD_IN_ROUNDS rounds before the measured pods arrive,
            # so even a sub-second small run meets them (scheduler_perf starts them first too).
            for _ in helpers:
                if not self._lead_in.acquire(timeout=60):
                    raise TimeoutError("background or churn did not start")
            before, after = self._window(sched, create_and_wait, scrape_scheduler=True)
        finally:
            stop.set()
            for thread in helpers:
                thread.join(30)
            watcher.stop()
        self.watch_errors = watcher.errors
        times = watcher.snapshot()
        create_rate = round(len(names) / created_seconds, 1) if created_seconds else 0.0
        return self._figures(
            summarize(times, names, start),
            before,
            after,
            create_rate=create_rate,
            gang=self.extra_figures(times, names),
            unready_nodes=self.unready_nodes(),
            pacing=None if pacing is None else pacing.figures(),
        )

    def _window(
        self,
        sched: RunningScheduler,
        body: Callable[[], None],
        *,
        scrape_scheduler: bool = False,
    ) -> tuple[Reading, Reading]:
        """Reads both ends of the window around `body`. The API server's /metrics (megabytes)
        are read outside the CPU readings."""
        pids = self._pids(sched.pid)
        metrics = sched.metrics if scrape_scheduler else None
        pauses = self.which == KUBE_PYSCHED
        api_before = self._api_server_metrics()
        usage, cpu = process_usage(sched.pid), cpu_snapshot(pids)
        before = Reading(usage, cpu, api_before, scrape(metrics, pauses=pauses))
        body()
        usage, cpu = process_usage(sched.pid), cpu_snapshot(pids)
        scraped = scrape(metrics, pauses=pauses)
        keep_metrics(scraped, self.scheduler_log)
        return before, Reading(usage, cpu, self._api_server_metrics(), scraped)

    def _figures(self, pods: PodFigures, before: Reading, after: Reading, **extra: Any) -> Figures:
        """The figures every mode records, from the pod watch and the window's two ends."""
        cpu = after.usage.cpu_seconds - before.usage.cpu_seconds
        bound = pods.bound_pods
        return Figures(
            pods=pods,
            cpu_seconds=round(cpu, 2),
            cpu_ms_per_pod=round(1000 * cpu / bound, 2) if bound else 0.0,
            peak_rss_mib=round(after.usage.peak_rss_bytes / 2**20, 1),
            cpu=cpu_breakdown(before.cpu, after.cpu),
            mode=self.options.mode,
            setup_seconds=self.phases["setup"],
            work=scraped_figures(before.scraped, after.scraped),
            api_server=api_server_figures(before.api, after.api),
            **extra,
        )

    def _environment_pids(self) -> dict[str, int]:
        """Everything capacity mode keeps off the scheduler's CPU: the control plane's live
        processes (etcd, kube-apiserver, kube-controller-manager, kwok, and a default
        kube-scheduler if the control plane runs one) and this harness (its pod watch)."""
        live = {name: p.pid for name, p in self.cp.processes.items() if p.alive()}
        return {**live, HARNESS: os.getpid()}

    def _pinning_state(self, pinned: Pinned, scheduler_pid: int, cpus: set[int]) -> dict[str, Any]:
        """The CPUs asked for and what every thread of each process was allowed at the end of
        the measurement (/proc/<pid>/task/<tid>/status), and whether all matched."""
        processes = pinned.state()
        own = thread_cpus(scheduler_pid)
        processes[self.which] = {"pid": scheduler_pid, "threads_by_cpus": own}
        control_plane, scheduler = format_cpus(pinned.cpus), format_cpus(cpus)
        held = all(
            set(p["threads_by_cpus"]) == {scheduler if name == self.which else control_plane}
            for name, p in processes.items()
        )
        return {
            "control_plane_cpus": control_plane,
            "scheduler_cpus": scheduler,
            "held": held,
            "kwok_pods": f"disregarded (label {DISREGARD_LABEL_KEY}={DISREGARD_LABEL_VALUE})",
            "processes": processes,
        }

    def _pids(self, scheduler_pid: int) -> dict[str, int]:
        """The processes whose CPU the record breaks down: control plane, scheduler, harness."""
        others = {n: pid for n, pid in self._environment_pids().items() if pid != scheduler_pid}
        return {**others, self.which: scheduler_pid}

    def _wait_bound(self, watcher: PodWatcher, names: list[str]) -> None:
        """Until the watch has seen every wanted pod bound (or deleted before it could be), or
        the deadline (then unscheduled)."""
        wanted = set(names)

        def all_bound() -> bool | str:
            n = watcher.settled_count(wanted)
            return n == len(wanted) or f"{n}/{len(wanted)} bound or deleted"

        with suppress(NotReadyError):
            timeout = self.options.deadline
            wait_for(all_bound, timeout=timeout, what="the measured pods", interval=0.2)

    # --- load while measuring ---------------------------------------------------------------

    def _arrivals(
        self, stop: threading.Event, spec: Arrivals, arrive: Callable[[int], None]
    ) -> None:
        """arrive(i) every `spec.interval` until `stop` (an arrival the API server refuses is
        skipped), at most the size's backgroundPods times for the background; the lead-in is
        released after LEAD_IN_ROUNDS of them (or after the last, if fewer)."""
        limit = self.size.background_pods if spec is self.workload.background else None
        arrive_every(stop, spec.interval, arrive, self._lead_in.release, limit=limit)

    def _background(self, i: int) -> None:
        """A pod arriving (scheduler_perf churn, mode create)."""
        assert self.workload.background is not None
        self.create_pod(self.workload.background.template.manifest(f"background-{i}"))

    def _churn(self, i: int) -> None:
        """The previous node and pod deleted and created again (churn, mode recreate)."""
        spec = self.workload.churn
        assert spec is not None
        if i > 0:
            self.rest.delete(f"/api/v1/nodes/bench-{self.run_id}-{self.size.nodes + i - 1}")
            self.rest.delete(f"/api/v1/namespaces/{self.namespace}/pods/churn-{i - 1}")
        self.create_nodes([self.size.nodes + i], template=spec.node)
        self.create_pod(spec.template.manifest(f"churn-{i}"))
