"""Log volume at the default verbosity with a backlog that cannot be placed, beside kube-scheduler.

1,000 pods that fit on no node (each asks for more CPU than any of the group's kwok nodes has,
so every attempt fails Filter, runs preemption and finds no candidate) are given to kube-pysched
at `--v 0`, and 1,000 more to a kube-scheduler on the same control plane at its default
verbosity. Both run for the same 60 s workload; each one's log lines are counted from its start.
kube-scheduler writes its per-attempt lines ("No preemption candidate is found", "Unable to
schedule pod; no fit; waiting") at V(2), so at V(0) a backlog costs it no lines; kube-pysched
must not either. The bound is a fixed number of lines, far below one line per attempt.
"""

from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from e2e.cluster import ControlPlane, wait_for
from e2e.cluster.nodes import NodeFactory
from e2e.cluster.readiness import get_text, tls_context
from e2e.pysched import metric_value
from e2e.test_scheduling import Factory, profile_config, unique
from e2e.workload import pod_manifest

PODS = 1000
WORKLOAD_SECONDS = 60.0
# Start-up, informer and shutdown lines only: measured 7 for kube-pysched and 16 for
# kube-scheduler. One line per attempt would be 1,000 or more.
MAX_LINES = 150


def _pods(prefix: str, scheduler_name: str, group: str) -> list[dict[str, Any]]:
    return [
        pod_manifest(
            f"{prefix}-{i:04d}",
            scheduler_name=scheduler_name,
            cpu="2",  # the nodes have 1 CPU each
            memory="32Mi",
            node_selector={"g": group},
        )
        for i in range(PODS)
    ]


def _create(core_v1: k8s.CoreV1Api, namespace: str, bodies: list[dict[str, Any]]) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda b: core_v1.create_namespaced_pod(namespace, b), bodies))


def _unschedulable_attempts(text: str, profile: str) -> float:
    labels = {"profile": profile, "result": "unschedulable"}
    return metric_value(text, "scheduler_schedule_attempts_total", labels) or 0.0


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def test_a_backlog_that_cannot_fit_writes_few_lines_at_v0(
    local_control_plane: ControlPlane,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    kwok_nodes: NodeFactory,
    pysched: Factory,
) -> None:
    group = unique("g")
    kwok_nodes(4, cpu="1", memory="4Gi", labels={"g": group})
    py_name, ks_name = unique("pysched"), unique("ks")
    ours = pysched(profile_config(py_name))  # no -v: kube-pysched's default, 0
    ks = local_control_plane.start_scheduler(profile_config(ks_name), name=unique("kube-sched"))
    context = tls_context(local_control_plane.ca_cert)
    try:
        started = time.monotonic()
        _create(core_v1, namespace, _pods("py", py_name, group) + _pods("ks", ks_name, group))

        def all_attempted() -> bool | str:
            mine = _unschedulable_attempts(ours.metrics(), py_name)
            theirs = _unschedulable_attempts(get_text(ks.metrics_url, context), ks_name)
            return (mine >= PODS and theirs >= PODS) or f"attempts: {mine} and {theirs}"

        wait_for(all_attempted, timeout=WORKLOAD_SECONDS, what="every pod attempted by both")
        # The workload runs for its stated duration: the backlog stays pending meanwhile.
        time.sleep(max(0.0, WORKLOAD_SECONDS - (time.monotonic() - started)))
        py_text = ours.metrics()
        attempts = _unschedulable_attempts(py_text, py_name)
        preemptions = metric_value(py_text, "scheduler_preemption_attempts_total") or 0.0
        py_lines = _lines(ours.log_path)
        ks_lines = _lines(ks.process.log_path)
    finally:
        ks.stop()
    print(
        f"log lines in {WORKLOAD_SECONDS:.0f} s with {PODS} pods that cannot fit: "
        f"kube-pysched {py_lines} ({attempts:.0f} unschedulable attempts, {preemptions:.0f} "
        f"preemption attempts), kube-scheduler {ks_lines}"
    )
    # The per-attempt path ran (each attempt tried preemption and found no candidate) ...
    assert attempts >= PODS and preemptions >= PODS
    # ... and wrote no line per attempt, as kube-scheduler writes none.
    assert py_lines < MAX_LINES, ours.tail(40)
    assert ks_lines < MAX_LINES, ks.tail(40)
