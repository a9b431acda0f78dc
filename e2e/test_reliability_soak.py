"""The churn soak of the reliability suite: `reliability_long`, not in `make e2e`.

For $RELIABILITY_SOAK_SECONDS (default 1800) pods are created and deleted at
$RELIABILITY_SOAK_PODS_PER_SECOND (default 20) around a population of 60, and every
$RELIABILITY_SOAK_NODE_PERIOD seconds (default 60) a node is deleted and another added, while
kube-pysched's RSS and CPU time are sampled every $RELIABILITY_SOAK_SAMPLE_SECONDS (default 5)
from /proc. Asserted: once the churn stops every pod is bound (everything fits), no pod is ever
bound to a node after the scheduler's cache has dropped it, the cache matches the API, and,
when the churn ran for the warm-up plus the window ($RELIABILITY_SOAK_FLAT_WINDOW, default
1200 s), RSS grew less than 2 MiB over that last window (flat after warm-up: every holder
is bounded, docs/reliability.md). The series and its summary are figures (soak.json).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from e2e.cluster import create_kwok_nodes, delete_kwok_nodes, wait_for
from e2e.reliability import (
    Sampler,
    cache_matches_api,
    cache_size,
    record_figures,
    rss_growth,
    rss_summary,
)
from e2e.reliability import scheduled as scheduled_count
from e2e.test_scheduling import Factory, assert_no_overcommit, profile_config, unique, wait_bound
from e2e.workload import pod_manifest

SOAK_SECONDS = float(os.environ.get("RELIABILITY_SOAK_SECONDS", "1800"))
PODS_PER_SECOND = int(os.environ.get("RELIABILITY_SOAK_PODS_PER_SECOND", "20"))
NODE_PERIOD = float(os.environ.get("RELIABILITY_SOAK_NODE_PERIOD", "60"))
SAMPLE_SECONDS = float(os.environ.get("RELIABILITY_SOAK_SAMPLE_SECONDS", "5"))
FLAT_WINDOW = float(os.environ.get("RELIABILITY_SOAK_FLAT_WINDOW", "1200"))
# The warm-up, a bound rather than a measure: Events kept for a repeat reach their bound within
# 7 minutes at any rate (docs/reliability.md), informer stores and pools sooner.
WARM_UP = 600.0
FLAT_MIB = 2.0
# Seconds the idle process is still sampled after the drain (what comes back once the Events
# kept for a repeat are forgotten, 6-7 minutes on); 0 by default.
IDLE_SECONDS = float(os.environ.get("RELIABILITY_SOAK_IDLE_SECONDS", "0"))
# With $KUBE_PYSCHED_MEMTRACE_DIR set (the process inherits it and traces its allocations), a
# memory trace is asked for (SIGUSR2) at the start, every this many seconds, and after the drain.
MEMTRACE_SECONDS = float(os.environ.get("RELIABILITY_SOAK_MEMTRACE_SECONDS", "120"))
MEMTRACE = bool(os.environ.get("KUBE_PYSCHED_MEMTRACE_DIR"))
POPULATION = 60
NODES = 8  # x 16 pods of 250m; one node short during a swap still holds 112 > POPULATION

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.reliability_long,
    pytest.mark.timeout(SOAK_SECONDS + 900),
]

FORCE = k8s.V1DeleteOptions(grace_period_seconds=0)


def _delete_pod(core: k8s.CoreV1Api, namespace: str, name: str) -> None:
    try:
        core.delete_namespaced_pod(name, namespace, body=FORCE)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise


def _rss_at(samples: list[tuple[float, int, float]], t: float) -> float | None:
    """The last RSS sampled by `t` seconds (MiB)."""
    before = [rss for at, rss, _ in samples if at <= t]
    return round(before[-1] / (1024 * 1024), 1) if before else None


def test_churn_soak_rss_sampled_nothing_pending_nothing_on_deleted_nodes(
    core_v1: k8s.CoreV1Api,
    namespace: str,
    pysched: Factory,
    tmp_path: Path,
) -> None:
    group = unique("g")
    name = unique("pysched")
    node_args: dict[str, Any] = {"cpu": "4", "memory": "16Gi", "labels": {"g": group}}
    live: list[str] = []
    retired: set[str] = set()  # deleted and dropped by the scheduler's cache
    violations: list[str] = []
    orphans = 0  # pods on a node when it was deleted: swept as the pod GC would
    race_binds = 0  # pods bound to a node while its delete was on the way: swept too
    swaps = created = deleted = 0

    def add_node() -> None:
        node = create_kwok_nodes(core_v1, 1, f"soak-{uuid.uuid4().hex[:6]}-", **node_args)[0]
        live.append(node.metadata.name)

    def on_node(node: str) -> list[str]:
        pods = core_v1.list_namespaced_pod(namespace, field_selector=f"spec.nodeName={node}")
        return [p.metadata.name for p in pods.items]

    for _ in range(NODES):
        add_node()
    sched = pysched(profile_config(name), name="soaked")
    assert sched.process is not None
    counter = 0
    try:
        with Sampler(sched.process.pid, SAMPLE_SECONDS) as sampler:
            start = time.monotonic()
            next_swap = start + NODE_PERIOD
            next_trace = start
            while time.monotonic() - start < SOAK_SECONDS:
                tick = time.monotonic()
                if MEMTRACE and tick >= next_trace:
                    os.kill(sched.process.pid, signal.SIGUSR2)
                    next_trace = tick + MEMTRACE_SECONDS
                for _ in range(PODS_PER_SECOND):
                    body = pod_manifest(
                        f"p-{counter}",
                        scheduler_name=name,
                        cpu="250m",
                        memory="64Mi",
                        node_selector={"g": group},
                    )
                    core_v1.create_namespaced_pod(namespace, body)
                    counter += 1
                    created += 1
                pods = core_v1.list_namespaced_pod(namespace).items
                for pod in pods:
                    if pod.spec.node_name in retired:
                        violations.append(f"{pod.metadata.name} on {pod.spec.node_name}")
                bound = sorted(
                    (p for p in pods if p.spec.node_name and not p.metadata.deletion_timestamp),
                    key=lambda p: p.metadata.creation_timestamp,
                )
                excess = len(pods) - POPULATION
                for pod in bound[: max(0, min(excess, PODS_PER_SECOND))]:
                    _delete_pod(core_v1, namespace, pod.metadata.name)
                    deleted += 1
                if time.monotonic() >= next_swap:
                    victim = live.pop(0)
                    before = set(on_node(victim))
                    core_v1.delete_node(victim)
                    add_node()
                    swept: list[str] = []

                    def dropped(node: str = victim, swept: list[str] = swept) -> bool | str:
                        # The node's pods, and those the scheduler placed while the delete
                        # travelled, as the pod GC would; the cache drops a node without pods.
                        for pod_name in on_node(node):
                            _delete_pod(core_v1, namespace, pod_name)
                            swept.append(pod_name)
                        return cache_matches_api(sched, core_v1)

                    wait_for(dropped, timeout=60, what=f"{victim} dropped by the cache")
                    orphans += len(before)
                    race_binds += len(set(swept) - before)
                    deleted += len(set(swept))
                    retired.add(victim)
                    swaps += 1
                    next_swap = time.monotonic() + NODE_PERIOD
                time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))  # the churn's pace
            churn_seconds = time.monotonic() - start

            remaining = [p.metadata.name for p in core_v1.list_namespaced_pod(namespace).items]
            settle = time.monotonic()
            wait_bound(core_v1, namespace, remaining, timeout=120)
            settle_seconds = time.monotonic() - settle
            wait_for(lambda: cache_matches_api(sched, core_v1), timeout=60, what="cache = API")
            if MEMTRACE:
                os.kill(sched.process.pid, signal.SIGUSR2)
            drained = time.monotonic() - start
            time.sleep(IDLE_SECONDS)  # a measured idle period, not a wait for anything
            if MEMTRACE and IDLE_SECONDS:
                os.kill(sched.process.pid, signal.SIGUSR2)
        assert sched.alive()
        pods = core_v1.list_namespaced_pod(namespace).items
        existing = {n.metadata.name for n in core_v1.list_node().items}
        stranded = [p.metadata.name for p in pods if p.spec.node_name not in existing]
        assert not stranded, f"pods bound to deleted nodes: {stranded[:10]}"
        assert not violations, f"bound after the cache dropped the node: {violations[:10]}"
        assert_no_overcommit(core_v1, set(live))
        churned = [sample for sample in sampler.samples if sample[0] <= churn_seconds]
        growth = (
            rss_growth(churned, FLAT_WINDOW) if churn_seconds >= WARM_UP + FLAT_WINDOW else None
        )
        summary = {
            "soak_seconds": round(churn_seconds, 1),
            "pods_per_second": PODS_PER_SECOND,
            "population": POPULATION,
            "nodes": NODES,
            "node_swaps": swaps,
            "pods_created": created,
            "pods_deleted": deleted,
            "orphans_swept": orphans,
            "race_binds_swept": race_binds,
            "scheduled": scheduled_count(sched, name),
            "settle_s": round(settle_seconds, 2),
            "cache_pods_end": cache_size(sched, "pods"),
            **rss_summary(sampler.samples),
            "flat_window_s": FLAT_WINDOW,
            "rss_growth_flat_window_mib": None if growth is None else round(growth, 2),
            "rss_drained_mib": _rss_at(sampler.samples, drained),
            "idle_s": IDLE_SECONDS,
        }
        record_figures(tmp_path, "soak", summary)
        (tmp_path / "soak-samples.json").write_text(
            "[\n"
            + ",\n".join(f"[{t:.1f}, {rss}, {cpu:.2f}]" for t, rss, cpu in sampler.samples)
            + "\n]\n"
        )
        if growth is not None:
            assert growth < FLAT_MIB, (
                f"RSS grew {growth:.2f} MiB over the last {FLAT_WINDOW:.0f} s of the churn"
            )
    finally:
        delete_kwok_nodes(core_v1, live)
