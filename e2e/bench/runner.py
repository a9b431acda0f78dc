"""Runs one workload with one scheduler on a running control plane and returns its figures.

Each run gets fresh nodes (a per-run name prefix) and a fresh namespace, and removes both
afterwards, so kube-scheduler and kube-pysched meet identical clusters.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from e2e.bench.measure import PodWatcher, process_usage, summarize
from e2e.cluster import ControlPlane, NotReadyError, kwok_node_manifest, wait_for
from e2e.pysched import Pysched

SCHEDULER_NAME = "bench-scheduler"
CREATE_THREADS = 8
# kube-scheduler's default plugins minus those kube-pysched does not have yet, so both
# schedulers run the same profile.
NOT_IN_PYSCHED = [
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DefaultPreemption",
    "ImageLocality",
]


def scheduler_config() -> dict[str, Any]:
    """The same KubeSchedulerConfiguration for both schedulers (client limits as scheduler_perf)."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": 5000, "burst": 5000},
        "profiles": [
            {
                "schedulerName": SCHEDULER_NAME,
                "plugins": {"multiPoint": {"disabled": [{"name": n} for n in NOT_IN_PYSCHED]}},
            }
        ],
    }


@dataclass
class Size:
    nodes: int
    init_pods: int
    measured_pods: int


def pod(name: str, template: dict[str, Any], **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": dict(template)},
            }
        ],
        "terminationGracePeriodSeconds": 0,
    }
    spec.update(extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def parallel(fn: Callable[[Any], Any], items: list[Any], threads: int = CREATE_THREADS) -> None:
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(fn, items):
            pass


class Run:
    """One (workload, scheduler) run."""

    def __init__(
        self,
        cp: ControlPlane,
        workload: dict[str, Any],
        size: Size,
        node_template: dict[str, Any],
        pod_template: dict[str, Any],
        *,
        workdir: Path,
        profile: bool = False,
    ) -> None:
        self.cp = cp
        self.workload = workload
        self.size = size
        self.node_template = node_template
        self.pod_template = pod_template
        self.workdir = workdir
        self.profile = profile
        self.run_id = uuid.uuid4().hex[:6]
        self.namespace = f"bench-{self.run_id}"
        self.node_names: list[str] = []
        self._api_local = threading.local()
        self.profile_path: Path | None = None

    def api(self) -> k8s.CoreV1Api:
        """One client per thread: the kubernetes client's pool is not shared well across threads."""
        api = getattr(self._api_local, "api", None)
        if api is None:
            api = k8s.CoreV1Api(self.cp.api_client())
            self._api_local.api = api
        return api

    # --- cluster setup ----------------------------------------------------------------------

    def create_nodes(self, count: int, offset: int = 0) -> None:
        label_rule = self.workload.get("nodeLabels")
        names = [f"bench-{self.run_id}-{i}" for i in range(offset, offset + count)]

        def create(i_name: tuple[int, str]) -> None:
            i, name = i_name
            labels = {"bench": self.run_id}
            if label_rule and i % int(label_rule["every"]) == 0:
                labels.update(label_rule["labels"])
            manifest = kwok_node_manifest(
                name,
                cpu=str(self.node_template["cpu"]),
                memory=str(self.node_template["memory"]),
                pods=int(self.node_template["pods"]),
                labels=labels,
            )
            self.api().create_node(manifest)

        parallel(create, list(enumerate(names, start=offset)))
        self.node_names += names

    def create_init_pods(self) -> None:
        """Pods already placed (spec.nodeName set), as scheduler_perf's initPods."""
        n = len(self.node_names)

        def create(i: int) -> None:
            body = pod(f"init-{i}", self.pod_template, nodeName=self.node_names[i % n])
            self.api().create_namespaced_pod(self.namespace, body)

        parallel(create, list(range(self.size.init_pods)))

    def measured_pod(self, i: int) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        selector = self.workload.get("podNodeSelector")
        if selector:
            extra["nodeSelector"] = dict(selector)
        return pod(f"pod-{i}", self.pod_template, **extra)

    # --- schedulers ---------------------------------------------------------------------------

    @contextmanager
    def scheduler(self, which: str) -> Iterator[int]:
        """Starts the scheduler under test; yields its pid."""
        if which == "kube-scheduler":
            handle = self.cp.start_scheduler(scheduler_config(), name=f"bench-ks-{self.run_id}")
            try:
                yield handle.pid
            finally:
                handle.stop()
            return
        sched = Pysched(
            self.cp.kubeconfig,
            scheduler_config(),
            workdir=self.workdir,
            name=f"kube-pysched-{self.run_id}",
        ).start()
        assert sched.process is not None
        spy = self._start_profiler(sched.process.pid) if self.profile else None
        try:
            yield sched.process.pid
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
            sched.stop()

    def _start_profiler(self, pid: int) -> subprocess.Popen[bytes]:
        """py-spy sampling the scheduler for the whole run: collapsed stacks for reading."""
        out = self.workdir / f"profile-{self.run_id}.txt"
        self.profile_path = out
        return subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--output",
                str(out),
                "--rate",
                "200",
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    # --- the run ----------------------------------------------------------------------------

    def execute(self, which: str, deadline: float) -> dict[str, Any]:
        api = self.api()
        api.create_namespace({"metadata": {"name": self.namespace}})
        try:
            return self._execute(which, deadline)
        finally:
            self.cleanup()

    def _execute(self, which: str, deadline: float) -> dict[str, Any]:
        api = self.api()
        t0 = time.monotonic()
        self.create_nodes(self.size.nodes)
        self.create_init_pods()
        setup_seconds = time.monotonic() - t0
        unsched = self.workload.get("unschedulablePods")
        with self.scheduler(which) as pid:
            if unsched:
                template = {**self.pod_template, "cpu": str(unsched["cpu"])}
                parallel(
                    lambda i: api.create_namespaced_pod(
                        self.namespace, pod(f"never-{i}", template)
                    ),
                    list(range(int(unsched["count"]))),
                )
            watcher = PodWatcher(self.api(), self.namespace).start()
            usage_before = process_usage(pid)
            names = [f"pod-{i}" for i in range(self.size.measured_pods)]
            churn = self._start_churn()
            start = time.monotonic()
            parallel(
                lambda i: self.api().create_namespaced_pod(self.namespace, self.measured_pod(i)),
                list(range(self.size.measured_pods)),
            )
            created_seconds = time.monotonic() - start
            wanted = set(names)
            try:
                wait_for(
                    lambda: (
                        watcher.bound_count(wanted) == len(wanted)
                        or f"{watcher.bound_count(wanted)}/{len(wanted)} bound"
                    ),
                    timeout=deadline,
                    what="every measured pod to be bound",
                    interval=0.5,
                )
            except NotReadyError:
                pass  # counted as unscheduled pods
            finally:
                self._stop_churn(churn)
            usage_after = process_usage(pid)
            watcher.stop()
        figures = summarize(watcher.snapshot(), names, start)
        figures.update(
            {
                "cpu_seconds": round(usage_after.cpu_seconds - usage_before.cpu_seconds, 2),
                "peak_rss_mib": round(usage_after.peak_rss_bytes / 2**20, 1),
                "create_rate": round(len(names) / created_seconds, 1) if created_seconds else 0.0,
                "setup_seconds": round(setup_seconds, 1),
            }
        )
        return figures

    # --- churn ------------------------------------------------------------------------------

    def _start_churn(self) -> tuple[threading.Event, threading.Thread] | None:
        spec = self.workload.get("churn")
        if not spec:
            return None
        stop = threading.Event()

        def churn() -> None:
            api = self.api()
            added = 0
            i = 0
            period = 1.0 / float(spec["podsPerSecond"])
            while not stop.wait(period):
                name = f"churn-{i}"
                try:
                    api.create_namespaced_pod(
                        self.namespace, pod(name, self.pod_template, schedulerName="nobody")
                    )
                    if i >= 5:
                        api.delete_namespaced_pod(f"churn-{i - 5}", self.namespace)
                except ApiException:
                    pass
                i += 1
                if added < int(spec["nodesAdded"]) and i % 10 == 0:
                    self.create_nodes(1, offset=self.size.nodes + added)
                    added += 1

        thread = threading.Thread(target=churn, name="bench-churn", daemon=True)
        thread.start()
        return stop, thread

    @staticmethod
    def _stop_churn(churn: tuple[threading.Event, threading.Thread] | None) -> None:
        if churn is not None:
            churn[0].set()
            churn[1].join(10)

    def cleanup(self) -> None:
        api = self.api()
        with suppress(ApiException):
            api.delete_namespace(self.namespace, grace_period_seconds=0)
        parallel(lambda n: _delete_node(api, n), self.node_names)

        def gone() -> bool | str:
            left = api.list_node(label_selector=f"bench={self.run_id}", limit=1).items
            return not left or "nodes still present"

        wait_for(gone, timeout=300, what="the run's nodes to be deleted")


def _delete_node(api: k8s.CoreV1Api, name: str) -> None:
    try:
        api.delete_node(name)
    except ApiException as err:
        if err.status != 404:
            raise
