"""The two schedulers under test: one shared configuration, and how each process is started.

Both run kube-scheduler's default profile (schedulerName `bench-scheduler`) minus the default
plugins kube-pysched lacks, so both run the same plugins, with leader election off and
scheduler_perf's client limits, and both as system:kube-scheduler, so the API server authorises
and queues them alike. A workload needing a missing plugin runs with kube-scheduler only and
is reported "not supported yet" for kube-pysched.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from e2e.bench.workload import SCHEDULER_NAME, Workload
from e2e.cluster import ControlPlane
from e2e.cluster.build import ensure_scheduler_plugins
from e2e.cluster.readiness import get_text, tls_context
from e2e.pysched import Pysched
from scheduler.config.defaults import KUBE_SCHEDULER_MULTI_POINT
from scheduler.plugins.registry import in_tree_registry

KUBE_SCHEDULER = "kube-scheduler"
KUBE_PYSCHED = "kube-pysched"
SCHEDULERS = (KUBE_SCHEDULER, KUBE_PYSCHED)
#: scheduler-plugins' kube-scheduler (its Coscheduling plugin): the gang benchmark's third
#: scheduler, built from its Go module only when a run asks for it.
SCHEDULER_PLUGINS = "scheduler-plugins"


def pysched_missing_plugins() -> list[str]:
    """kube-scheduler's default plugins that kube-pysched does not register."""
    available = set(in_tree_registry().keys())
    return [name for name, _ in KUBE_SCHEDULER_MULTI_POINT if name not in available]


def unsupported_reason(workload: Workload) -> str | None:
    """Why kube-pysched cannot run the workload yet, or None when it can."""
    lacking = set(pysched_missing_plugins())
    missing = [p for p in workload.requires if p in lacking]
    if not missing:
        return None
    return f"not supported yet: kube-pysched has no {', '.join(missing)} plugin"


def scheduler_config(workload: Workload) -> dict[str, Any]:
    """The KubeSchedulerConfiguration both schedulers run the workload with."""
    disabled = [n for n in pysched_missing_plugins() if n not in workload.requires]
    profile: dict[str, Any] = {"schedulerName": SCHEDULER_NAME}
    if disabled:
        profile["plugins"] = {"multiPoint": {"disabled": [{"name": n} for n in disabled]}}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": 5000, "burst": 5000},
        "profiles": [profile],
    }


def authenticated_user(kubeconfig: Path) -> str:
    """The user the API server takes these credentials for (a SelfSubjectReview)."""
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    try:
        review = k8s.AuthenticationV1Api(api).create_self_subject_review(k8s.V1SelfSubjectReview())
        return str(review.status.user_info.username)
    finally:
        api.close()


@dataclass
class RunningScheduler:
    pid: int
    log_path: Path
    metrics: Callable[[], str]  # the scheduler's /metrics text


@contextmanager
def running_scheduler(
    which: str,
    cp: ControlPlane,
    config: dict[str, Any],
    *,
    run_id: str,
    workdir: Path,
    cpus: set[int] | None = None,
    extra_args: Sequence[str] = (),
) -> Iterator[RunningScheduler]:
    """Starts `which` (ready to serve, with `extra_args` on its command line) and stops it on
    exit.

    `cpus` pins it (capacity mode). kube-scheduler runs with the control plane's feature gates,
    scheduler-plugins' build with none. Every log ends up
    in `workdir/logs` (kube-scheduler's copied there: its folder goes with the control plane).
    """
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    if which in (KUBE_SCHEDULER, SCHEDULER_PLUGINS):
        plugins = which == SCHEDULER_PLUGINS
        name = f"bench-{'sp' if plugins else 'ks'}-{run_id}"
        handle = cp.start_scheduler(
            config,
            name=name,
            cpus=cpus,
            feature_gates={} if plugins else None,
            binary=ensure_scheduler_plugins() if plugins else None,
            extra_args=list(extra_args),
        )
        kept = logs / f"{name}.log"
        try:
            metrics = functools.partial(get_text, handle.metrics_url, tls_context(cp.ca_cert))
            yield RunningScheduler(handle.pid, kept, metrics)
        finally:
            handle.stop()
            if handle.process.log_path.exists():
                shutil.copyfile(handle.process.log_path, kept)
        return
    if which != KUBE_PYSCHED:
        raise ValueError(f"unknown scheduler {which!r}")
    sched = Pysched(
        cp.scheduler_kubeconfig,
        config,
        workdir=logs,
        name=f"kube-pysched-{run_id}",
        cpus=cpus,
        extra_args=list(extra_args),
    ).start()
    assert sched.process is not None
    try:
        yield RunningScheduler(sched.process.pid, sched.log_path, sched.metrics)
    finally:
        sched.stop()
