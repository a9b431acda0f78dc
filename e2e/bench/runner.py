"""One workload with one scheduler on a running control plane: set up, measure, clean up.

Every run gets its own namespace and nodes (labelled with the run id), which are deleted and
waited for afterwards, so each scheduler meets an identical, empty cluster. Init pods are placed
directly (spec.nodeName), so setup does not depend on the scheduler under test; the scheduler is
started after them and must bind a warm-up pod before measuring begins (its caches are synced).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Container, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from e2e.bench.apiserver_profile import ApiServerProfiler, write_top
from e2e.bench.measure import (
    PodTimes,
    PodWatcher,
    cpu_breakdown,
    cpu_snapshot,
    process_usage,
    summarize,
)
from e2e.bench.pacing import Pacing, create_paced
from e2e.bench.pinning import Pinned, capacity_cpus, format_cpus, thread_cpus
from e2e.bench.rest import CreateError, RestClient
from e2e.bench.schedulers import (
    KUBE_PYSCHED,
    authenticated_user,
    running_scheduler,
    scheduler_config,
)
from e2e.bench.scraped import (
    api_server_figures,
    cluster_pod_lists,
    keep_metrics,
    scrape,
    scraped_figures,
)
from e2e.bench.workload import (
    PRIORITY_CLASSES,
    NodeTemplate,
    PodTemplate,
    Size,
    Workload,
    replica_set_manifest,
    service_manifest,
)
from e2e.cluster import ControlPlane, NotReadyError, wait_default_service_account, wait_for
from e2e.cluster.controlplane import (
    BENCH_NODE_LEASE_DURATION_SECONDS,
    BENCH_NODE_MONITOR_GRACE_PERIOD,
)
from e2e.cluster.kwok import DISREGARD_LABEL_KEY, DISREGARD_LABEL_VALUE

CREATE_THREADS = 24
CLEANUP_TIMEOUT = 600.0
# How long cleanup waits for a DeleteCollection to take effect before asking again.
DELETE_RETRY_SECONDS = 30.0
NODE_READY_SECONDS_EACH = 0.15
# kwok's pod LIST per node, one at a time: about 40 ms each at 5000 nodes (session 48); generous.
KWOK_NODE_SYNC_SECONDS_EACH = 0.2
# Waiting for kwok to make the init pods Running: generous, 0.1 s each (20 000 at PreemptionAsync
# 5000); the record's phases_seconds.init_pods_running says how long it took.
INIT_POD_RUNNING_SECONDS_EACH = 0.1
LEAD_IN_ROUNDS = 3
#: The label kwok's disregardStatusWithLabelSelector skips: a bound pod carrying it stays Pending.
KWOK_IGNORES = {DISREGARD_LABEL_KEY: DISREGARD_LABEL_VALUE}
WARMUP = PodTemplate(requests={"cpu": "1m", "memory": "1Mi"})


#: The name of the measured pods' ReplicaSet and Service (when the workload has them).
MEASURED_OWNER = "measured"


def parallel(
    fn: Callable[[Any], object], items: Iterable[Any], threads: int = CREATE_THREADS
) -> None:
    """Runs fn over items from a thread pool, re-raising the first failure."""
    with ThreadPoolExecutor(threads, thread_name_prefix="bench-create") as pool:
        for _ in pool.map(fn, items):
            pass


def ensure_priority_classes(api_client: k8s.ApiClient) -> None:
    """The PriorityClasses the workload templates name (cluster-wide, created once)."""
    scheduling = k8s.SchedulingV1Api(api_client)
    for name, value in PRIORITY_CLASSES.items():
        body = {
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        try:
            scheduling.create_priority_class(body)
        except ApiException as err:
            if err.status != 409:
                raise


class Countdown:
    """Set once count_down() has been called `count` times (at once for a count of 0)."""

    def __init__(self, count: int) -> None:
        self._left = count
        self._lock = threading.Lock()
        self._done = threading.Event()
        if count == 0:
            self._done.set()

    def count_down(self) -> None:
        with self._lock:
            self._left -= 1
            if self._left <= 0:
                self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)


#: Taints the node lifecycle controller puts on a node it has stopped hearing from.
UNREADY_TAINTS = frozenset({"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"})


def bench_control_plane(**options: Any) -> ControlPlane:
    """A control plane for benchmark runs (not started): kwok renews its node Leases once an
    hour (BENCH_NODE_LEASE_DURATION_SECONDS), so the windows carry no renewals, and its node
    lifecycle controller waits two hours before tainting a silent node."""
    return ControlPlane(
        with_scheduler=False,
        node_monitor_grace_period=BENCH_NODE_MONITOR_GRACE_PERIOD,
        node_lease_duration_seconds=BENCH_NODE_LEASE_DURATION_SECONDS,
        **options,
    )


def unready_node_count(node_list: dict[str, Any], names: Container[str]) -> int:
    """How many nodes of a NodeList among `names` carry a taint of UNREADY_TAINTS."""
    count = 0
    for node in node_list.get("items", []):
        if node["metadata"]["name"] not in names:
            continue
        taints = node.get("spec", {}).get("taints") or []
        count += any(t.get("key") in UNREADY_TAINTS for t in taints)
    return count


def owner_refusal(workload: Workload, mode: str, create_qps: float | None) -> str | None:
    """Why a run of `workload` in `mode` at `create_qps` cannot be measured, or None: backlog
    and capacity modes and a creation rate need the harness to create the measured pods, and
    a workload with an owner (a ReplicaSet) has kube-controller-manager create them."""
    if not workload.owner:
        return None
    if mode != "live":
        asked = f"{mode} mode"
    elif create_qps is not None:
        asked = f"a creation rate (--create-qps {create_qps:g})"
    else:
        return None
    return (
        f"{workload.name}: {asked} needs the harness to create the measured pods; this "
        f"workload has them created by a {workload.owner}"
    )


class Run:
    """One (workload, size, scheduler) run; `execute()` returns its record's figures."""

    def __init__(
        self,
        cp: ControlPlane,
        workload: Workload,
        size: Size,
        which: str,
        *,
        workdir: Path,
        deadline: float,
        profile: bool = False,
        backlog: bool = False,
        capacity: bool = False,
        create_qps: float | None = None,
        verbosity: int | None = None,
        apiserver_profile: bool = False,
        pending_pods: bool = False,
        cleanup: bool = True,
    ) -> None:
        self.cp = cp
        #: Whether the run deletes its objects at the end: not when its control plane is its own
        #: and is stopped after it (nothing of the run outlives it then).
        self.cleans_up = cleanup
        #: kwok plays no stage for the pods the scheduler binds in the window (see create_pod).
        self.pending_pods = pending_pods
        self.apiserver_profile = apiserver_profile
        #: The kube-apiserver CPU profile slices of the measure window and their merged top.
        self.apiserver_profiles: list[Path] = []
        self.apiserver_top: Path | None = None
        self.verbosity = verbosity
        # Capacity mode is backlog mode with the control plane and the scheduler on a CPU each.
        self.backlog = backlog or capacity
        self.capacity = capacity
        self.create_qps = create_qps
        if create_qps is not None and self.backlog:
            raise ValueError("a creation rate applies to live runs, not backlog or capacity")
        self.workload = workload
        self.size = size
        self.which = which
        self.workdir = workdir
        self.deadline = deadline
        self.profile = profile
        self.run_id = uuid.uuid4().hex[:6]
        self.namespace = f"bench-{self.run_id}"
        self.run_label = {"bench": self.run_id}
        self.node_names: list[str] = []
        self.volume_names: list[str] = []
        self.csi_nodes: list[str] = []
        self.profile_path: Path | None = None
        self.scheduler_log: Path | None = None
        #: The credentials the scheduler ran with (its user is recorded after the run).
        self.scheduler_kubeconfig: Path | None = None
        self.watch_errors: list[str] = []
        self.cleanup_error: str | None = None
        self.phases: dict[str, float] = {}
        #: Capacity mode: the CPUs used and each process's threads' CPU lists during the run.
        self.pinning: dict[str, Any] | None = None
        self._local = threading.local()
        self._clients: list[k8s.ApiClient] = []
        self._clients_lock = threading.Lock()
        self.rest = RestClient(self.api().api_client)
        helpers = (workload.background, workload.churn)
        self._lead_in = Countdown(sum(1 for h in helpers if h is not None))

    def api(self) -> k8s.CoreV1Api:
        """A kubernetes client per thread (the main, watch and churn threads each use one)."""
        api: k8s.CoreV1Api | None = getattr(self._local, "api", None)
        if api is None:
            client = self.cp.api_client()
            with self._clients_lock:
                self._clients.append(client)
            api = k8s.CoreV1Api(client)
            self._local.api = api
        return api

    # --- the run ----------------------------------------------------------------------------

    def execute(self) -> dict[str, Any]:
        """The run's figures. A cleanup that fails leaves `cleanup_error` set (the figures
        stand, but the cluster still holds this run's objects)."""
        ensure_priority_classes(self.api().api_client)
        self.api().create_namespace({"metadata": {"name": self.namespace}})
        try:
            return self._execute()
        finally:
            if self.cleans_up:
                with self._phase("cleanup"):
                    try:
                        self.cleanup()
                    except Exception as err:  # must not hide the run's own outcome
                        self.cleanup_error = f"{type(err).__name__}: {err}"
            self.rest.close()
            for client in self._clients:
                client.close()

    @property
    def mode(self) -> str:
        """live, backlog or capacity (what the record's `mode` says)."""
        return "capacity" if self.capacity else "backlog" if self.backlog else "live"

    def _execute(self) -> dict[str, Any]:
        if self.capacity:
            capacity_cpus()  # fails at once, before any setup, on a one-CPU machine
        refused = owner_refusal(self.workload, self.mode, self.create_qps)
        if refused is not None:
            raise ValueError(refused)
        lists_before = self._cluster_pod_lists()
        with self._phase("setup"):
            wait_default_service_account(self.api(), self.namespace)
            self.create_nodes(range(self.size.nodes))
            self.create_service()
            self.create_volumes()
            self.create_init_pods()
            self.create_groups()
        with self._phase("kwok_node_sync"):
            self._wait_kwok_node_sync(lists_before)
        if self.backlog:
            return self._execute_backlog()
        config = self.scheduler_config()
        with ExitStack() as stack:
            with self._phase("scheduler_start"):
                sched = stack.enter_context(
                    running_scheduler(
                        self.which,
                        self.cp,
                        config,
                        run_id=self.run_id,
                        workdir=self.workdir,
                        profile_stem=self._profile_stem() if self.profile else None,
                        feature_gates=self.scheduler_feature_gates(),
                        verbosity=self.verbosity,
                    )
                )
            self.scheduler_log = sched.log_path
            self.scheduler_kubeconfig = sched.kubeconfig
            with self._phase("warm_up"):
                self._warm_up()
            with self._phase("measure"):
                figures = self._measure(sched.pid, sched.metrics)
            stopping = time.monotonic()
        self.phases["scheduler_stop"] = round(time.monotonic() - stopping, 1)
        self.profile_path = sched.profile_path
        figures["setup_seconds"] = self.phases["setup"]
        return figures

    def _execute_backlog(self) -> dict[str, Any]:
        """Backlog mode: every measured pod exists before the scheduler starts, so the API
        server's create rate no longer paces the run; throughput is the drain rate from the
        first binding to the last (latency is not meaningful here and is left out). CPU is
        counted over the same window, from the first measured binding seen: both schedulers
        have listed everything by then (they schedule only after their caches synced), so
        neither one's start-up is in the figure. The API server's /metrics are read at both
        ends of the same window (the first read is served inside the drain, for either
        scheduler alike), and --apiserver-profile profiles it.

        Capacity mode in addition runs the control plane (and this harness) on one CPU and the
        scheduler, started pinned, on another, and kwok leaves the pods alone (see create_pod),
        so the drain rate is what the scheduler sustains with a core to itself."""
        watcher = PodWatcher(self.api(), self.namespace).start()
        names = [f"pod-{i}" for i in range(self.size.measured_pods)]
        wanted = set(names)
        first_bound = watcher.first_bound(wanted)
        try:
            with self._phase("backlog"):
                parallel(lambda name: self.create_pod(self.measured_manifest(name)), names)
            with ExitStack() as stack:
                sched_cpus: set[int] | None = None
                pinned: Pinned | None = None
                if self.capacity:
                    cp_cpu, sched_cpu = capacity_cpus()
                    sched_cpus = {sched_cpu}
                    # Entered first, so left last: masks are restored after the scheduler stops.
                    pinned = stack.enter_context(Pinned(self._environment_pids(), {cp_cpu}))
                with self._phase("scheduler_start"):
                    sched = stack.enter_context(
                        running_scheduler(
                            self.which,
                            self.cp,
                            self.scheduler_config(),
                            run_id=self.run_id,
                            workdir=self.workdir,
                            profile_stem=self._profile_stem() if self.profile else None,
                            cpus=sched_cpus,
                            feature_gates=self.scheduler_feature_gates(),
                            verbosity=self.verbosity,
                        )
                    )
                self.scheduler_log = sched.log_path
                self.scheduler_kubeconfig = sched.kubeconfig
                with self._phase("measure"):
                    pids = self._pids(sched.pid)
                    first_bound.wait(self.deadline)
                    api_before = self._api_server_metrics()
                    usage_before, cpu_before = process_usage(sched.pid), cpu_snapshot(pids)
                    profiler = self._start_apiserver_profiler()
                    try:
                        self._wait_bound(watcher, wanted)
                        usage_after, cpu_after = process_usage(sched.pid), cpu_snapshot(pids)
                        api_after = self._api_server_metrics()
                    finally:
                        if profiler is not None:
                            self.apiserver_profiles = profiler.stop()
                    if pinned is not None and sched_cpus is not None:
                        self.pinning = self._pinning_state(pinned, sched.pid, sched_cpus)
                stopping = time.monotonic()
            self.phases["scheduler_stop"] = round(time.monotonic() - stopping, 1)
            self.profile_path = sched.profile_path
        finally:
            watcher.stop()
        self.watch_errors = watcher.errors
        times = watcher.snapshot()
        bound = [times.bound[n] for n in names if n in times.bound]
        first = min(bound) if bound else 0.0
        figures: dict[str, Any] = summarize(times, names, first)
        for key in ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms"):
            figures[key] = 0.0
        cpu = usage_after.cpu_seconds - usage_before.cpu_seconds
        figures.update(
            {
                "mode": self.mode,
                "cpu_seconds": round(cpu, 2),
                "cpu_ms_per_pod": round(1000 * cpu / len(bound), 2) if bound else 0.0,
                "peak_rss_mib": round(usage_after.peak_rss_bytes / 2**20, 1),
                "create_rate": 0.0,
                "setup_seconds": self.phases["setup"],
                **cpu_breakdown(cpu_before, cpu_after),
                **api_server_figures(api_before, api_after),
            }
        )
        self._write_apiserver_top()
        return figures

    def _environment_pids(self) -> dict[str, int]:
        """Everything capacity mode keeps off the scheduler's CPU: the control plane's live
        processes (etcd, kube-apiserver, kube-controller-manager, kwok, and a default
        kube-scheduler if the control plane runs one) and this harness (its pod watch)."""
        live = {name: p.pid for name, p in self.cp.processes.items() if p.alive()}
        return {**live, "bench harness": os.getpid()}

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
        control_plane = {n: pid for n, pid in self.cp.pids.items() if pid != scheduler_pid}
        return {**control_plane, self.which: scheduler_pid, "bench harness": os.getpid()}

    def _profile_stem(self) -> Path:
        return self.workdir / f"profile-{self.workload.name}-{self.size.name}-{self.run_id}"

    @contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        """Records how long a phase took (wall seconds), to see where a run's time goes."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = round(time.monotonic() - began, 1)

    def _measure(self, pid: int, metrics: Callable[[], str] | None) -> dict[str, Any]:
        watcher = PodWatcher(self.api(), self.namespace).start()
        names = [f"pod-{i}" for i in range(self.size.measured_pods)]
        stop = threading.Event()
        helpers = [
            threading.Thread(target=fn, args=(stop,), name=f"bench-{fn.__name__}", daemon=True)
            for fn in (self._background, self._churn)
        ]
        for thread in helpers:
            thread.start()
        profiler: ApiServerProfiler | None = None
        try:
            # Background and churn run LEAD_IN_ROUNDS rounds before the measured pods arrive,
            # so even a sub-second small run meets them (scheduler_perf starts them first too).
            if not self._lead_in.wait(60):
                raise TimeoutError("background or churn did not start")
            pids = self._pids(pid)
            exports_gc = self.which == KUBE_PYSCHED
            api_before = self._api_server_metrics()  # before the CPU readings: megabytes
            usage_before, cpu_before = process_usage(pid), cpu_snapshot(pids)
            scraped_before = scrape(metrics, pauses=exports_gc)
            profiler = self._start_apiserver_profiler()
            start = time.monotonic()
            pacing: Pacing | None = None
            if self.workload.owner:
                names = self._create_through_replica_set(watcher)
            elif self.create_qps is not None:
                pacing = create_paced(
                    lambda i: self.create_pod(self.measured_manifest(names[i])),
                    len(names),
                    self.create_qps,
                    threads=CREATE_THREADS,
                )
            else:
                parallel(lambda name: self.create_pod(self.measured_manifest(name)), names)
            created_seconds = time.monotonic() - start
            self._wait_bound(watcher, set(names))
            usage_after, cpu_after = process_usage(pid), cpu_snapshot(pids)
            scraped_after = scrape(metrics, pauses=exports_gc)
            keep_metrics(scraped_after, self.scheduler_log)
            api_after = self._api_server_metrics()
        finally:
            stop.set()
            if profiler is not None:
                self.apiserver_profiles = profiler.stop()
            for thread in helpers:
                thread.join(30)
            watcher.stop()
        self._write_apiserver_top()
        self.watch_errors = watcher.errors
        times = watcher.snapshot()
        figures: dict[str, Any] = summarize(times, names, start)
        figures.update(self.extra_figures(times, names))
        cpu = usage_after.cpu_seconds - usage_before.cpu_seconds
        bound = figures["bound_pods"]
        figures.update(
            {
                "cpu_seconds": round(cpu, 2),
                "cpu_ms_per_pod": round(1000 * cpu / bound, 2) if bound else 0.0,
                "peak_rss_mib": round(usage_after.peak_rss_bytes / 2**20, 1),
                "create_rate": round(len(names) / created_seconds, 1) if created_seconds else 0.0,
                **cpu_breakdown(cpu_before, cpu_after),
            }
        )
        figures.update(scraped_figures(scraped_before, scraped_after))
        figures.update(api_server_figures(api_before, api_after))
        if figures.get("events_dropped"):
            print(
                f"warning: {self.workload.name} with {self.which}: {figures['events_dropped']} "
                "events dropped in the window (the recorder's buffer was full: the API server "
                "was spared their writes)",
                file=sys.stderr,
                flush=True,
            )
        unready = self._unready_nodes()
        if unready is not None:
            figures["unready_nodes"] = unready
            if unready:
                print(
                    f"warning: {self.workload.name} with {self.which}: {unready} of the run's "
                    "nodes were tainted unreachable or not-ready at the end of the window (their "
                    "nominated pods preempt again elsewhere: the figures are not comparable)",
                    file=sys.stderr,
                    flush=True,
                )
        figures["mode"] = self.mode
        if pacing is not None:
            figures.update(pacing.figures())
            if not pacing.reached:
                print(
                    f"warning: {self.workload.name} with {self.which}: measured pods created at "
                    f"{pacing.achieved:.1f}/s, asked {pacing.asked:g}/s (the harness or the API "
                    f"server could not keep up; see create_lag_*_ms in the record)",
                    file=sys.stderr,
                    flush=True,
                )
        return figures

    def _start_apiserver_profiler(self) -> ApiServerProfiler | None:
        """Profiles kube-apiserver from now until its stop(), if this run was asked to."""
        if not self.apiserver_profile:
            return None
        return ApiServerProfiler(
            lambda path: self.rest.request("GET", path), self._profile_stem()
        ).start()

    def _write_apiserver_top(self) -> None:
        """Merges the window's profile slices (if any) into one top listing beside them."""
        if self.apiserver_profiles:
            self.apiserver_top = write_top(
                self.apiserver_profiles, self._profile_stem().with_suffix(".apiserver.top.txt")
            )

    def _unready_nodes(self) -> int | None:
        """How many of the run's nodes the node lifecycle controller has tainted as silent, or
        None (with a warning: no figure, never a zero) if the nodes cannot be listed. Only the
        nodes made Ready before the scheduler started count: a churn node created a moment ago
        is still tainted not-ready without having gone silent."""
        body = self._read("/api/v1/nodes", "list the nodes")
        if body is None:
            return None
        ready_before = {f"bench-{self.run_id}-{i}" for i in range(self.size.nodes)}
        return unready_node_count(json.loads(body), ready_before)

    def _api_server_metrics(self) -> str | None:
        """The API server's /metrics text, or None (with a warning: the record then has no
        `api_requests`, never zeros) if it cannot be read."""
        body = self._read("/metrics", "read the API server's /metrics")
        return None if body is None else body.decode()

    def _read(self, path: str, what: str) -> bytes | None:
        """GET `path` from the API server, or None with a warning saying it could not `what`."""
        try:
            status, body = self.rest.request("GET", path)
        except (OSError, http.client.HTTPException) as err:
            print(f"warning: could not {what}: {err}", file=sys.stderr)
            return None
        if status != 200:
            print(f"warning: could not {what}: the API server answered {status}", file=sys.stderr)
            return None
        return body

    def _wait_bound(self, watcher: PodWatcher, wanted: set[str]) -> None:
        """Until the watch has seen every wanted pod bound (or deleted before it could be), or
        the deadline (then unscheduled)."""

        def all_bound() -> bool | str:
            n = watcher.settled_count(wanted)
            return n == len(wanted) or f"{n}/{len(wanted)} bound or deleted"

        with suppress(NotReadyError):
            wait_for(all_bound, timeout=self.deadline, what="the measured pods", interval=0.2)

    def _kwok_labels(self) -> dict[str, str]:
        """The label that keeps kwok off a measured pod, when the run asks for that."""
        return dict(KWOK_IGNORES) if self.pending_pods else {}

    def _create_through_replica_set(self, watcher: PodWatcher) -> list[str]:
        """Creates the measured pods' ReplicaSet; returns their names once the watch has seen
        all of them (kube-controller-manager names them)."""
        count = self.size.measured_pods
        self.rest.create(
            f"/apis/apps/v1/namespaces/{self.namespace}/replicasets",
            replica_set_manifest(
                MEASURED_OWNER, self.workload.measured, count, self._kwok_labels()
            ),
        )
        prefix = f"{MEASURED_OWNER}-"

        def seen() -> list[str]:
            return [n for n in watcher.snapshot().created if n.startswith(prefix)]

        wait_for(
            lambda: len(seen()) >= count or f"{len(seen())}/{count} created",
            timeout=self.deadline,
            what=f"the pods of ReplicaSet {MEASURED_OWNER}",
            interval=0.2,
        )
        return seen()

    # --- what a kind of workload varies (gangs.GangRun overrides these) ---------------------

    def scheduler_config(self) -> dict[str, Any]:
        """The KubeSchedulerConfiguration the scheduler under test runs with."""
        return scheduler_config(self.workload)

    def scheduler_feature_gates(self) -> dict[str, bool] | None:
        """The scheduler's --feature-gates (None: its default, see running_scheduler)."""
        return None

    def measured_manifest(self, name: str) -> dict[str, Any]:
        """The measured pod `name`."""
        return self.workload.measured.manifest(name)

    def create_groups(self) -> None:
        """Objects the measured pods need besides nodes, volumes and init pods (none here)."""

    def extra_figures(self, times: PodTimes, names: list[str]) -> dict[str, Any]:
        """Figures of a live run beyond summarize's (none here)."""
        return {}

    # --- cluster objects --------------------------------------------------------------------

    def create_pod(self, manifest: dict[str, Any]) -> None:
        """Creates the pod; with workload volumes, an init or measured pod uses the claim
        `create_volumes` made for it."""
        name = manifest["metadata"]["name"]
        if self.workload.volumes is not None and name.startswith(("init-", "pod-")):
            claim = self.workload.volumes.manifests(self.namespace, name)[0]
            volumes = [{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]
            manifest = {**manifest, "spec": {**manifest["spec"], "volumes": volumes}}
        if (self.capacity and name.startswith(("init-", "pod-"))) or (
            self.pending_pods and name.startswith(("pod-", "warm-up"))
        ):
            # kwok plays no stage for them: no Running status patch per bound pod, which the
            # API server, kwok and both schedulers' informers would otherwise spend CPU on.
            meta = manifest["metadata"]
            labels = {**meta.get("labels", {}), **KWOK_IGNORES}
            manifest = {**manifest, "metadata": {**meta, "labels": labels}}
        self.rest.create(f"/api/v1/namespaces/{self.namespace}/pods", manifest)

    def create_volumes(self) -> None:
        """A pre-bound PV (first) and claim per init and measured pod, before any pod, waited
        for until the PV controller has bound every claim (so the measured pods find their
        claims bound, as scheduler_perf's do)."""
        volumes = self.workload.volumes
        if volumes is None:
            return
        pods = [f"init-{i}" for i in range(self.size.init_pods)]
        pods += [f"pod-{i}" for i in range(self.size.measured_pods)]
        claims_path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims"

        def create(pod: str) -> None:
            _, pv, pvc = volumes.manifests(self.namespace, pod)
            with self._clients_lock:
                self.volume_names.append(pv["metadata"]["name"])
            self.rest.create("/api/v1/persistentvolumes", pv)
            self.rest.create(claims_path, pvc)

        parallel(create, pods)

        def bound() -> bool | str:
            resp = self.api().list_namespaced_persistent_volume_claim(
                self.namespace, _preload_content=False
            )
            claims = json.loads(resp.data)["items"]
            n = sum(1 for c in claims if c.get("status", {}).get("phase") == "Bound")
            return n >= len(pods) or f"{n}/{len(pods)} claims Bound"

        # The PV controller binds one claim at a time with four writes; at 5000 nodes, beside
        # kwok's node leases, it managed 9-12 claims/s on a 2-core machine (session 24), so
        # allow 0.2 s per claim (20 minutes for 5000's 6000 claims).
        wait_for(bound, timeout=max(120.0, 0.2 * len(pods)), what="the run's claims Bound")

    def create_nodes(
        self, indexes: Iterable[int], *, template: NodeTemplate | None = None
    ) -> list[str]:
        """Creates nodes from the workload's template (waited for until Ready) or `template`."""
        node_template = template or self.workload.nodes
        pairs = [(i, f"bench-{self.run_id}-{i}") for i in indexes]

        def create(pair: tuple[int, str]) -> None:
            i, name = pair
            if node_template.csi_node:
                self.rest.create(
                    "/apis/storage.k8s.io/v1/csinodes", node_template.csi_node_manifest(name)
                )
                with self._clients_lock:
                    self.csi_nodes.append(name)
            self.rest.create("/api/v1/nodes", node_template.manifest(name, i, self.run_label))

        parallel(create, pairs)
        names = [name for _, name in pairs]
        self.node_names += names
        if template is None:
            self._wait_nodes_ready(len(self.node_names))
        return names

    def _wait_nodes_ready(self, count: int) -> None:
        """Until the nodes are Ready and no not-ready taint is left on them."""

        def ready() -> bool | str:
            resp = self.api().list_node(
                label_selector=f"bench={self.run_id}", _preload_content=False
            )
            nodes = json.loads(resp.data)["items"]
            n = sum(1 for node in nodes if _node_ready(node))
            return n >= count or f"{n}/{count} nodes Ready"

        # Registered Ready, the nodes still wait for the node lifecycle controller to lift the
        # not-ready taint the API server's admission put on them: 5000 can take minutes.
        timeout = max(300.0, NODE_READY_SECONDS_EACH * count)
        wait_for(ready, timeout=timeout, what="the run's nodes to be Ready", interval=1.0)

    def create_service(self) -> None:
        if self.workload.service:
            self.rest.create(
                f"/api/v1/namespaces/{self.namespace}/services",
                service_manifest(MEASURED_OWNER, self.workload.measured),
            )

    def create_init_pods(self) -> None:
        """Init pods placed round-robin over the nodes, as if scheduled before the run."""
        template = self.workload.init
        if template is None or self.size.init_pods == 0:
            return
        nodes = self.node_names

        def create(i: int) -> None:
            self.create_pod(template.manifest(f"init-{i}", nodeName=nodes[i % len(nodes)]))

        parallel(create, range(self.size.init_pods))
        if not self.capacity:  # capacity mode has kwok leave them Pending
            with self._phase("init_pods_running"):
                self._wait_init_pods_running()

    def _wait_init_pods_running(self) -> None:
        """Until kwok has made every init pod Running, so that none of its status patches for
        them lands in the measure window (at 1000 nodes up to ~540 did, a different number in
        each run). Only init pods are in the namespace yet."""

        def running() -> bool | str:
            left = self.api().list_namespaced_pod(
                self.namespace, field_selector="status.phase!=Running", limit=1
            )
            return not left.items or f"{left.items[0].metadata.name} and maybe others not Running"

        timeout = max(300.0, INIT_POD_RUNNING_SECONDS_EACH * self.size.init_pods)
        wait_for(running, timeout=timeout, what="kwok to make the init pods Running", interval=1.0)

    def _cluster_pod_lists(self) -> float | None:
        text = self._api_server_metrics()
        return None if text is None else cluster_pod_lists(text)

    def _wait_kwok_node_sync(self, before: float | None) -> None:
        """Until kwok has listed every node's pods once: it does when it first holds a node's
        Lease, one LIST after another (podsOnNodeSyncParallelism 1), and at 5000 nodes the last
        came 3.5 minutes after the nodes, past the end of setup. They had fallen into the first
        seconds of the window, more of them into kube-scheduler's, which opens 1-2 s sooner
        after setup than kube-pysched's: 20-113 LISTs in nine of its fourteen 1000-node windows,
        up to 1 427 in one at 5000 (docs/benchmarks.md, harness change 29)."""
        if before is None:
            print(
                "warning: cannot tell whether kwok has listed every node's pods; their LISTs "
                "may fall into the window",
                file=sys.stderr,
            )
            return
        wanted = before + self.size.nodes

        def synced() -> bool | str:
            lists = self._cluster_pod_lists()
            if lists is None:
                return "the API server's /metrics could not be read"
            return lists >= wanted or f"{lists - before:.0f} of {self.size.nodes} nodes listed"

        wait_for(
            synced,
            timeout=max(300.0, KWOK_NODE_SYNC_SECONDS_EACH * self.size.nodes),
            what="kwok to list the pods of every node",
            interval=1.0,
        )

    def _warm_up(self) -> None:
        """One tiny pod bound proves the scheduler has synced its caches and is scheduling."""
        self.create_pod(WARMUP.manifest("warm-up"))

        def bound() -> bool | str:
            pod = self.api().read_namespaced_pod("warm-up", self.namespace)
            return bool(pod.spec.node_name) or "not bound yet"

        wait_for(bound, timeout=120, what="the warm-up pod to be bound", interval=0.1)

    # --- load while measuring ---------------------------------------------------------------

    def _background(self, stop: threading.Event) -> None:
        """Pods arriving at a fixed interval (scheduler_perf churn, mode create)."""
        spec = self.workload.background
        if spec is None:
            return
        i = 0
        while not stop.is_set():
            with suppress(CreateError):
                self.create_pod(spec.template.manifest(f"background-{i}"))
            i += 1
            if i == LEAD_IN_ROUNDS:
                self._lead_in.count_down()
            stop.wait(spec.interval)

    def _churn(self, stop: threading.Event) -> None:
        """A node and a pod deleted and created again each interval (churn, mode recreate)."""
        spec = self.workload.churn
        if spec is None:
            return
        i = 0
        previous: tuple[str, str] | None = None
        while not stop.wait(spec.interval):
            with suppress(CreateError):
                if previous is not None:
                    self.rest.delete(f"/api/v1/nodes/{previous[0]}")
                    self.rest.delete(f"/api/v1/namespaces/{self.namespace}/pods/{previous[1]}")
                node = self.create_nodes([self.size.nodes + i], template=spec.node)[0]
                pod = f"churn-{i}"
                self.create_pod(spec.template.manifest(pod))
                previous = (node, pod)
            i += 1
            if i == LEAD_IN_ROUNDS:
                self._lead_in.count_down()

    # --- cleanup ----------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Deletes the run's pods, nodes and namespace; waits for the pods and nodes to be gone.

        The namespace itself is left to terminate in the background: nothing in it is left
        for a later run's scheduler to see.
        """
        api = self.api()
        if self.workload.owner:  # or it would recreate the pods deleted next
            with suppress(ApiException, HTTPError):
                k8s.AppsV1Api(api.api_client).delete_namespaced_replica_set(
                    MEASURED_OWNER, self.namespace, propagation_policy="Orphan"
                )
        self._delete_pods(api)
        with suppress(ApiException, HTTPError):
            api.delete_namespace(self.namespace, grace_period_seconds=0)
        parallel(lambda name: self.rest.delete(f"/api/v1/nodes/{name}"), self.node_names)
        # Cluster-wide storage objects; a PV goes once its claim is gone (pv-protection).
        parallel(
            lambda name: self.rest.delete(f"/api/v1/persistentvolumes/{name}"), self.volume_names
        )
        parallel(
            lambda name: self.rest.delete(f"/apis/storage.k8s.io/v1/csinodes/{name}"),
            self.csi_nodes,
        )
        asked = time.monotonic()

        def gone() -> bool | str:
            nonlocal asked
            try:
                pods = api.list_namespaced_pod(self.namespace, limit=1).items
                nodes = api.list_node(label_selector=f"bench={self.run_id}", limit=1).items
            except (ApiException, HTTPError) as err:
                return f"listing failed: {err}"
            if pods and time.monotonic() - asked > DELETE_RETRY_SECONDS:
                self._delete_pods(api)  # the first request may have been cut off part way
                asked = time.monotonic()
            return (not pods and not nodes) or "pods or nodes still present"

        wait_for(gone, timeout=CLEANUP_TIMEOUT, what="the run's pods and nodes to be deleted")

    def _delete_pods(self, api: k8s.CoreV1Api) -> None:
        """DeleteCollection of the namespace's pods. With tens of thousands of pods the API
        server may cut the request at its timeout after deleting only some; `cleanup` asks
        again while pods remain."""
        with suppress(ApiException, HTTPError):
            resp = api.delete_collection_namespaced_pod(
                self.namespace, grace_period_seconds=0, _preload_content=False
            )
            resp.read()
            resp.release_conn()


def record_run(run: Run, record: dict[str, Any]) -> dict[str, Any]:
    """Executes `run` and completes its `record`: figures (or why it failed), phases, and where
    its log and profile are."""
    record["mode"] = run.mode
    if run.pending_pods:
        record["pending_pods"] = True
    if run.create_qps is not None:
        record["create_qps"] = run.create_qps
    try:
        record["figures"] = run.execute()
    except Exception as err:  # one broken run must not lose the runs after it
        traceback.print_exc()
        record["failed"] = f"failed: {type(err).__name__}: {err}"
    if run.cleanup_error is not None:
        record["cleanup_failed"] = run.cleanup_error
    record["phases_seconds"] = run.phases
    if "failed" in record:
        return record
    record["run_id"] = run.run_id
    record["scheduler_log"] = str(run.scheduler_log)
    if run.scheduler_kubeconfig is not None:
        # Asked after the window, so the review is not among the measured requests.
        try:
            record["scheduler_user"] = authenticated_user(run.scheduler_kubeconfig)
        except (ApiException, HTTPError, OSError) as err:
            print(f"warning: could not ask who the scheduler ran as: {err}", file=sys.stderr)
    if run.watch_errors:
        record["watch_errors"] = run.watch_errors
    if run.profile_path is not None:
        record["profile"] = str(run.profile_path)
    if run.pinning is not None:
        record["pinning"] = run.pinning
    if run.apiserver_profiles:
        record["apiserver_profile"] = {
            "slices": [str(p) for p in run.apiserver_profiles],
            "top": None if run.apiserver_top is None else str(run.apiserver_top),
        }
    return record


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints") or []
    return ready and not any(t.get("key", "").startswith("node.kubernetes.io/") for t in taints)


#: A control plane handed to every run, or a factory that starts none yet (one per run).
ControlPlanes = ControlPlane | Callable[[], ControlPlane]


def run_on_control_plane(
    record: dict[str, Any],
    control_plane: ControlPlanes,
    make_run: Callable[[ControlPlane, bool], Run],
    prepare: Callable[[ControlPlane], None] | None = None,
) -> dict[str, Any]:
    """Executes the run `make_run(cp, cleanup)` gives and completes `record` (record_run). A
    shared control plane is used as it is, and the run deletes its objects for the next one;
    from a factory the run gets a control plane of its own, `prepare`d, started for it and
    stopped after it, with no cleanup. A control plane that does not start is this run's
    failure, not the invocation's."""
    if isinstance(control_plane, ControlPlane):
        record["control_plane"] = "shared"
        record["node_lease_seconds"] = control_plane.node_lease_duration_seconds
        return record_run(make_run(control_plane, True), record)
    record["control_plane"] = "own"
    try:
        cp = control_plane()
        record["node_lease_seconds"] = cp.node_lease_duration_seconds
        cp.start()
    except Exception as err:  # one broken run must not lose the runs after it
        record["failed"] = f"control plane did not start: {type(err).__name__}: {err}"
        return record
    try:
        if prepare is not None:
            prepare(cp)
        return record_run(make_run(cp, False), record)
    finally:
        cp.stop()
