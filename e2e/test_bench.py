"""The benchmark harness works end to end at the small size; figures are recorded, not judged.

Every workload kube-pysched supports runs with both schedulers on the session's control plane:
each measured pod must be bound and each run's JSON must carry the figures. Workloads it does
not support yet must be reported as such for kube-pysched, not fail.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client as k8s

from e2e.bench import __main__ as bench_main
from e2e.bench.__main__ import run_workloads
from e2e.bench.gangs import (
    COSCHEDULING,
    GANG_SCHEDULING,
    V1ALPHA1,
    V1BETA1,
    VARIANTS,
    Variant,
    gang_config,
    gang_control_plane,
    group_times,
    podgroup_manifest,
    run_gang_workload,
)
from e2e.bench.invocation import bench_control_plane
from e2e.bench.measure import (
    CpuSnapshot,
    PodTimes,
    PodWatcher,
    cpu_breakdown,
    cpu_snapshot,
    summarize,
    throughput_samples,
)
from e2e.bench.objects import WARMUP
from e2e.bench.options import RunOptions
from e2e.bench.pinning import capacity_cpus, thread_cpus
from e2e.bench.record import Figures, MachineFigures, PodFigures, RunRecord, to_json
from e2e.bench.report import COLUMNS, markdown_cpu_table, one_line, table
from e2e.bench.schedulers import (
    KUBE_PYSCHED,
    KUBE_SCHEDULER,
    SCHEDULER_PLUGINS,
    SCHEDULERS,
    unsupported_reason,
)
from e2e.bench.workload import gang_names, group_sizes, load_workloads, ordered_names
from e2e.cluster import (
    ControlPlane,
    create_kwok_nodes,
    is_running,
    wait_for,
    wait_for_pod,
    wait_node_lease,
)
from e2e.cluster.build import module_replaces, scheduler_plugins_built, scheduler_plugins_path
from e2e.cluster.controlplane import BENCH_NODE_LEASE_DURATION_SECONDS
from e2e.cluster.kwok import DISREGARD_LABEL_KEY, DISREGARD_LABEL_VALUE, NODE_LEASE_DURATION_SECONDS
from e2e.cluster.versions import SCHEDULER_PLUGINS_VERSION

WORKLOADS = load_workloads()
SUPPORTED = [n for n in ordered_names(WORKLOADS) if unsupported_reason(WORKLOADS[n]) is None]
UNSUPPORTED = [n for n in ordered_names(WORKLOADS) if n not in SUPPORTED]
FIGURES = {key for key, _ in COLUMNS} | {"measured_pods", "bound_pods", "setup_seconds"}

pytestmark = pytest.mark.timeout(600)


def _json(records: list[RunRecord]) -> list[dict[str, Any]]:
    """The records as their JSON files hold them (with where each was written)."""
    return [to_json(r) for r in records]


def test_every_supported_workload_binds_every_measured_pod_with_both_schedulers(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    records = _json(
        run_workloads(
            SUPPORTED,
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120),
            control_plane=local_control_plane,
        )
    )

    assert [(r["workload"], r["scheduler"]) for r in records] == [
        (n, s) for n in SUPPORTED for s in (KUBE_SCHEDULER, KUBE_PYSCHED)
    ]
    for record in records:
        figures = record["figures"]
        wanted = WORKLOADS[record["workload"]].sizes["small"].measured_pods
        assert figures["measured_pods"] == figures["bound_pods"] == wanted, record
        assert figures["unscheduled_pods"] == 0, record
        assert figures.keys() >= FIGURES
        assert figures["peak_rss_mib"] > 0
        assert 0 < figures["latency_p50_ms"] <= figures["latency_p99_ms"]
        saved = json.loads(Path(record["json"]).read_text())
        assert saved["figures"] == figures
        assert saved["machine"]["versions"]["kubernetes"].startswith("v1.")
        assert saved["machine"]["cpus"] >= 1
        used = figures["cpu_seconds_by_process"]
        assert used.keys() >= {"kube-apiserver", "etcd", record["scheduler"], "bench harness"}
        assert used["kube-apiserver"] > 0 and figures["machine_busy_cores"] > 0
        assert not any(name.startswith("bench-ks-") for name in used)  # counted once, by role
        # The API server's requests in the window: at least one binding per measured pod.
        assert figures["api_requests"].get("POST pods/binding", 0) >= wanted, record
        assert figures["unready_nodes"] == 0, record  # every node still heard from
        # On a control plane it was given, a run deletes its objects for the next one.
        assert record["control_plane"] == "shared" and "cleanup" in record["phases_seconds"]
        # Both schedulers meet the API server as the same user (RBAC, priority and fairness).
        assert record["scheduler_user"] == saved["scheduler_user"] == "system:kube-scheduler"
    rendered = table(records)
    assert rendered.count("ratio py/ks") == len(SUPPORTED)


@pytest.mark.skipif(not UNSUPPORTED, reason="kube-pysched supports every workload")
def test_unsupported_workloads_run_with_kube_scheduler_and_are_reported_for_kube_pysched(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    records = _json(
        run_workloads(
            UNSUPPORTED,
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120),
            control_plane=local_control_plane,
        )
    )

    by_scheduler = {s: [r for r in records if r["scheduler"] == s] for s in SCHEDULERS}
    assert [r["workload"] for r in by_scheduler[KUBE_PYSCHED]] == UNSUPPORTED
    for record in by_scheduler[KUBE_PYSCHED]:
        assert record["skipped"].startswith("not supported yet"), record
        assert "figures" not in record
        assert json.loads(Path(record["json"]).read_text())["skipped"] == record["skipped"]
    for record in by_scheduler[KUBE_SCHEDULER]:
        # The harness itself handles these workloads (preemption, affinity, spreading).
        figures = record["figures"]
        assert figures["bound_pods"] == figures["measured_pods"] > 0, record
    assert table(records).count("not supported yet") == len(UNSUPPORTED)


def test_without_a_control_plane_each_run_has_one_of_its_own_and_stops_it(
    tmp_path: Path,
) -> None:
    """The command line's way: every scheduler meets a fresh API server and etcd, nothing of a
    run is left running after it, and no run spends time deleting its objects."""
    planes: list[ControlPlane] = []

    def new_control_plane() -> ControlPlane:
        planes.append(bench_control_plane())
        return planes[-1]

    records = _json(
        run_workloads(
            ["SchedulingBasic"],
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120),
            new_control_plane=new_control_plane,
        )
    )

    assert len(planes) == 2 and planes[0].workdir != planes[1].workdir
    for cp in planes:
        assert cp.processes and not any(p.alive() for p in cp.processes.values())
    for record in records:
        assert record["control_plane"] == "own", record
        figures = record["figures"]
        assert figures["bound_pods"] == figures["measured_pods"] > 0, record
        assert "cleanup" not in record["phases_seconds"] and "cleanup_failed" not in record
        assert record["scheduler_user"] == "system:kube-scheduler"
        assert record["node_lease_seconds"] == BENCH_NODE_LEASE_DURATION_SECONDS


def test_a_bench_control_plane_renews_node_leases_once_an_hour() -> None:
    """kwok's node Lease renewals are API-server writes in every window; a benchmark's control
    plane has kwok hold each Lease for four hours (renewed hourly, after any run is over); its
    node still turns Ready and untainted (create_kwok_nodes waits for that)."""
    assert BENCH_NODE_LEASE_DURATION_SECONDS > NODE_LEASE_DURATION_SECONDS
    with bench_control_plane() as cp:
        client = cp.api_client()
        (node,) = create_kwok_nodes(client, 1, prefix="lease-")
        lease = wait_node_lease(client, node.metadata.name)
        assert lease.spec.lease_duration_seconds == BENCH_NODE_LEASE_DURATION_SECONDS


def test_backlog_mode_drains_pods_created_before_the_scheduler_started(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    records = _json(
        run_workloads(
            ["SchedulingBasic"],
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120, backlog=True),
            control_plane=local_control_plane,
        )
    )
    for record in records:
        figures = record["figures"]
        assert record["mode"] == figures["mode"] == "backlog"
        assert figures["bound_pods"] == figures["measured_pods"] > 0, record
        assert "backlog" in record["phases_seconds"]
        assert figures["throughput_overall"] > 0
        # The API server's /metrics are read at both ends of the drain, from the first binding
        # on: requests by kind are recorded here too, the window's and not the whole run's.
        assert figures.keys() >= {"api_requests", "api_refusals"}, figures
        assert figures["api_requests"].get("POST pods/binding", 0) < figures["measured_pods"]


def test_pods_unbound_at_the_deadline_count_as_unscheduled() -> None:
    times = PodTimes(created={"a": 10.0, "b": 10.1}, bound={"a": 10.5})
    figures = summarize(times, ["a", "b"], start=10.0)
    assert (figures.bound_pods, figures.unscheduled_pods) == (1, 1)
    assert figures.deleted_before_bound_pods == 0
    assert figures.latency_p99_ms == 500.0


def test_a_pod_deleted_before_it_was_bound_is_not_waited_for() -> None:
    """A preemption may evict a measured pod while its binding is in flight."""
    times = PodTimes()
    times.record("a", {}, 1.0, deleted=False)
    times.record("b", {}, 1.1, deleted=False)
    times.record("a", {"nodeName": "n"}, 1.5, deleted=False)
    times.record("b", {}, 1.8, deleted=True)
    times.record("a", {"nodeName": "n"}, 2.0, deleted=True)  # bound, then evicted
    assert times.settled_count({"a", "b", "c"}) == 2
    figures = summarize(times, ["a", "b", "c"], start=1.0)
    assert (figures.bound_pods, figures.deleted_before_bound_pods) == (1, 1)
    assert figures.unscheduled_pods == 1


def test_throughput_samples_follow_scheduler_perf_ticks() -> None:
    # Ticks at 1, 2, 3, 4 s: the first tick with a binding sets the baseline, a tick with no
    # new binding is folded into the next, which records its rate once per folded tick.
    bound = [0.5, 0.6, 1.5, 3.2, 3.3, 3.4, 3.9]
    assert throughput_samples(bound, start=0.0) == [1.0, 2.0, 2.0]
    assert throughput_samples([], start=0.0) == []


def test_cpu_breakdown_names_who_used_the_machine_over_the_window() -> None:
    before = CpuSnapshot(100.0, 50.0, {"a": 10.0, "b": 1.0})
    after = CpuSnapshot(104.0, 57.0, {"a": 14.0, "c": 9.0})
    assert to_json(cpu_breakdown(before, after)) == {
        "window_seconds": 4.0,
        "machine_busy_cores": 1.75,
        "cpu_seconds_by_process": {"a": 4.0, "other": 3.0},  # b exited, c started mid-window
        "machine_cpu_seconds_by_class": {},
    }


def test_cpu_breakdown_reads_steal_and_interrupts_over_the_window() -> None:
    before = CpuSnapshot(100.0, 50.0, {"a": 10.0}, {"steal": 1.0, "interrupts": 2.0})
    after = CpuSnapshot(104.0, 57.0, {"a": 13.0}, {"steal": 2.5, "interrupts": 2.5})
    figures = to_json(cpu_breakdown(before, after))
    assert figures["cpu_seconds_by_process"] == {"a": 3.0, "other": 4.0}
    assert figures["machine_cpu_seconds_by_class"] == {"steal": 1.5, "interrupts": 0.5}


def test_cpu_snapshot_reads_this_process_and_skips_one_that_is_gone() -> None:
    snap = cpu_snapshot({"me": os.getpid(), "gone": 2**22 + 1})
    assert set(snap.by_process) == {"me"} and snap.machine_busy_seconds > 0
    assert set(snap.by_class) == {"steal", "interrupts"}


def test_cpu_table_lists_runs_that_recorded_the_breakdown() -> None:
    used = {"kube-pysched": 4.0, "kube-apiserver": 12.0, "etcd": 2.0, "other": 0.5}
    recorded = {
        "workload": "W",
        "size": "5000",
        "scheduler": "kube-pysched",
        "figures": {
            "machine_busy_cores": 1.99,
            "cpu_seconds_by_process": used,
            "window_seconds": 10.0,
        },
    }
    older = {"workload": "W", "size": "1000", "scheduler": "kube-pysched", "figures": {}}
    rows = markdown_cpu_table([recorded, older]).splitlines()
    assert len(rows) == 3
    assert (
        rows[2]  # other = machine busy (1.99 cores x 10 s) - the named processes (18 s)
        == "| W | 5000 | kube-pysched | live | 1.99 | 4.0 | 12.0 | 2.0 | 0.0 | 0.0 | 0.0 | 1.9 "
        "| 10.0 |"
    )
    assert markdown_cpu_table([older]) == ""


def test_a_failed_run_is_reported_with_its_reason_among_the_others() -> None:
    failed = {
        "workload": "W",
        "size": "5000",
        "scheduler": KUBE_PYSCHED,
        "failed": "failed: NotReadyError: the run's nodes to be Ready not ready after 750s",
    }
    assert one_line(failed).endswith(
        "failed: NotReadyError: the run's nodes to be Ready not ready after 750s"
    )
    rendered = table([failed])
    assert "NotReadyError" in rendered and "ratio py/ks" not in rendered


def test_runs_after_a_failed_cleanup_are_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their scheduler would see the earlier run's pods and nodes."""
    calls: list[str] = []

    def fake_run(record: RunRecord, **_: Any) -> None:
        calls.append(record.scheduler)
        pods = PodFigures(*[0] * len(fields(PodFigures)))
        machine = MachineFigures(1.0, 1.0, {}, {})
        record.figures = Figures(pods, 1.0, 1.0, 1.0, 1.0, machine, "live", 0.0)
        record.cleanup_failed = "NotReadyError: pods still present"

    monkeypatch.setattr(bench_main, "run_on_control_plane", fake_run)
    records = _json(
        run_workloads(
            ["SchedulingBasic", "Unschedulable"],
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path),
            control_plane=cast(ControlPlane, object()),
        )
    )
    assert calls == [KUBE_SCHEDULER]
    assert "CLEANUP FAILED" in one_line(records[0])
    assert [r["failed"].startswith("not run:") for r in records[1:]] == [True, True, True]
    assert len(list(tmp_path.glob("*.json"))) == 4


def _cpu_lists(pids: dict[str, int]) -> dict[str, dict[str, int]]:
    return {name: thread_cpus(pid) for name, pid in pids.items()}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="capacity mode needs 2 CPUs")
def test_capacity_mode_pins_the_control_plane_and_the_scheduler_and_restores_them(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    live = {n: p.pid for n, p in local_control_plane.processes.items() if p.alive()}
    environment = {**live, "bench harness": os.getpid()}
    before = _cpu_lists(environment)

    records = _json(
        run_workloads(
            ["SchedulingBasic"],
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120, capacity=True),
            control_plane=local_control_plane,
        )
    )

    cp_cpu, sched_cpu = capacity_cpus()
    for record in records:
        figures = record["figures"]
        assert record["mode"] == figures["mode"] == "capacity"
        assert figures["bound_pods"] == figures["measured_pods"] > 0, record
        assert figures["throughput_overall"] > 0 and figures["cpu_seconds"] >= 0
        pinning = record["pinning"]
        assert pinning["held"], pinning
        assert pinning["control_plane_cpus"] == str(cp_cpu)
        assert pinning["scheduler_cpus"] == str(sched_cpu)
        # Every thread of every process, read from /proc/<pid>/task/<tid>/status in the run.
        processes = pinning["processes"]
        assert processes.keys() >= {"etcd", "kube-apiserver", "kwok", record["scheduler"]}
        for name, state in processes.items():
            wanted = str(sched_cpu) if name == record["scheduler"] else str(cp_cpu)
            assert set(state["threads_by_cpus"]) == {wanted}, (name, state)
        assert processes[record["scheduler"]]["threads_by_cpus"][str(sched_cpu)] > 1
        # Nothing is left pinned: every process has the CPUs it had before.
        assert {n: set(c) for n, c in _cpu_lists(environment).items()} == {
            n: set(c) for n, c in before.items()
        }


def test_kwok_leaves_a_pod_with_the_disregard_label_as_the_scheduler_left_it(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_node: k8s.V1Node
) -> None:
    node = kwok_node.metadata.name

    def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
        manifest = WARMUP.manifest(name, nodeName=node)
        manifest["metadata"]["labels"] = labels
        return manifest

    core_v1.create_namespaced_pod(
        namespace, pod("left-alone", {DISREGARD_LABEL_KEY: DISREGARD_LABEL_VALUE})
    )
    core_v1.create_namespaced_pod(namespace, pod("played", {}))
    wait_for_pod(core_v1, namespace, "played", is_running, what="Running")
    alone = core_v1.read_namespaced_pod("left-alone", namespace)
    assert alone.spec.node_name == node
    assert alone.status.phase == "Pending" and not alone.status.pod_ip


def test_pending_pods_runs_leave_every_bound_pod_pending_for_both_schedulers(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    """--pending-pods: kwok plays no stage for the measured pods (created by the harness, or by
    a ReplicaSet), so none turns Running inside either scheduler's window."""
    records = _json(
        run_workloads(
            ["SchedulingBasic", "DefaultTopologySpreading"],
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120, pending_pods=True),
            control_plane=local_control_plane,
        )
    )
    assert len(records) == 4
    for record in records:
        figures = record["figures"]
        assert record["pending_pods"] is True and figures["mode"] == "live", record
        assert figures["bound_pods"] == figures["measured_pods"] > 0, record
        assert figures["running_in_window_pods"] == 0, record
        # Nor any init pod: the window starts once kwok has made all of them Running.
        assert "init_pods_running" in record["phases_seconds"]
        assert figures["api_requests"].get("PATCH pods/status", 0) == 0, figures["api_requests"]
    assert "live pending" in table(records)


def test_the_pod_watch_records_when_kwok_made_a_pod_running(
    core_v1: k8s.CoreV1Api, namespace: str, kwok_node: k8s.V1Node
) -> None:
    """What `running_in_window_pods` counts: the watch's first sight of phase Running."""
    watcher = PodWatcher(core_v1, namespace).start()
    try:
        core_v1.create_namespaced_pod(
            namespace, WARMUP.manifest("runs", nodeName=kwok_node.metadata.name)
        )
        wait_for(
            lambda: "runs" in watcher.snapshot().running or "not seen Running yet",
            timeout=60,
            what="the watch to see the pod Running",
            interval=0.1,
        )
    finally:
        watcher.stop()
    times = watcher.snapshot()
    assert times.created["runs"] <= times.running["runs"]


def test_a_paced_run_records_the_asked_and_achieved_creation_rates(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    records = _json(
        run_workloads(
            ["SchedulingBasic"],
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120, create_qps=100),
            control_plane=local_control_plane,
        )
    )
    for record in records:
        figures = record["figures"]
        assert record["mode"] == figures["mode"] == "live" and record["create_qps"] == 100
        assert figures["bound_pods"] == figures["measured_pods"] > 0, record
        assert figures["create_qps_asked"] == 100 and figures["create_qps_achieved"] > 0
        assert isinstance(figures["create_qps_reached"], bool)
        assert 0 <= figures["create_lag_p50_ms"] <= figures["create_lag_max_ms"]
        assert 0 < figures["latency_p50_ms"] <= figures["latency_p99_ms"]
        assert "qps 100" in table(records)


def test_verbose_runs_keep_both_logs_with_each_failed_preemption_attempt(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    records = _json(
        run_workloads(
            ["PreemptionBasic"],
            "small",
            [KUBE_SCHEDULER, KUBE_PYSCHED],
            RunOptions(results_dir=tmp_path, deadline=120, verbosity=2),
            control_plane=local_control_plane,
        )
    )
    for record in records:
        log = Path(record["scheduler_log"])
        # kube-scheduler's log is copied out of the control plane's folder when it stops.
        assert log.parent == tmp_path / "logs" and log.is_file(), record
        # Every measured pod preempts: its first attempt fails, then it is bound (both V(2)).
        text = log.read_text().lower()
        assert "unable to schedule pod" in text and "successfully bound pod to node" in text


# --- the gang benchmark (e2e/bench/gangs.py) ----------------------------------------

GANGS = WORKLOADS["SchedulingGangs"]
SCHEDULER_PLUGINS_SKIP = (
    f"scheduler-plugins' kube-scheduler {SCHEDULER_PLUGINS_VERSION} is not cached "
    f"({scheduler_plugins_path()}): building it from its Go module takes about ten minutes on a "
    "cold two-core machine, too long for every CI run; it is built by the gang benchmark "
    "(python -m e2e.bench --workload SchedulingGangs), after which this test runs"
)


@pytest.fixture(scope="module")
def gang_plane() -> Iterator[ControlPlane]:
    """The gang benchmark's own control plane (GenericWorkload on, v1beta1 PodGroups served)."""
    with gang_control_plane() as cp:
        yield cp


def _assert_every_group_bound(record: dict[str, Any]) -> None:
    figures = record["figures"]
    small = GANGS.sizes["small"]
    assert figures["measured_pods"] == figures["bound_pods"] == sum(small.groups), record
    assert figures["unscheduled_pods"] == 0, record
    assert figures["groups"] == figures["groups_all_bound"] == len(small.groups), record
    assert 0 < figures["group_all_bound_p50_s"] <= figures["group_all_bound_max_s"]
    assert figures["cpu_ms_per_pod"] > 0 and figures["throughput_overall"] > 0
    assert json.loads(Path(record["json"]).read_text())["figures"] == figures
    # Each scheduler may read its PodGroups (scheduler-plugins runs as system:kube-scheduler).
    assert "forbidden" not in Path(record["scheduler_log"]).read_text().lower(), record


def test_every_gang_variant_binds_every_pod_of_every_group_or_is_reported_unsupported(
    tmp_path: Path,
) -> None:
    """The command line's way: each variant on a control plane of its own, serving the
    PodGroup APIs, stopped after it, with no cleanup."""
    planes: list[ControlPlane] = []

    def new_control_plane() -> ControlPlane:
        planes.append(gang_control_plane())
        return planes[-1]

    records = _json(
        run_gang_workload(
            GANGS,
            "small",
            [KUBE_PYSCHED, KUBE_SCHEDULER],
            RunOptions(deadline=120, results_dir=tmp_path),
            new_control_plane=new_control_plane,
        )
    )

    wanted = [v for v in VARIANTS if v.scheduler != SCHEDULER_PLUGINS]
    assert [r["variant"] for r in records] == [v.name for v in wanted]
    ran = [r for r in records if "skipped" not in r]
    assert len(planes) == len(ran) and len({cp.workdir for cp in planes}) == len(ran)
    for cp in planes:
        assert cp.processes and not any(p.alive() for p in cp.processes.values())
    for variant, record in zip(wanted, records, strict=True):
        assert record["group_api"] == variant.api
        _assert_every_group_bound(record)
        assert record["control_plane"] == "own", record
        assert "cleanup" not in record["phases_seconds"] and "cleanup_failed" not in record


@pytest.mark.skipif(not scheduler_plugins_built(), reason=SCHEDULER_PLUGINS_SKIP)
def test_scheduler_plugins_coscheduling_binds_every_pod_of_every_group(
    gang_plane: ControlPlane, tmp_path: Path
) -> None:
    records = _json(
        run_gang_workload(
            GANGS,
            "small",
            [SCHEDULER_PLUGINS],
            RunOptions(deadline=120, results_dir=tmp_path),
            control_plane=gang_plane,
        )
    )
    assert [r["variant"] for r in records] == [f"{SCHEDULER_PLUGINS}-{COSCHEDULING}"]
    _assert_every_group_bound(records[0])
    assert records[0]["control_plane"] == "shared" and "cleanup" in records[0]["phases_seconds"]


def test_gang_workloads_run_only_when_named_and_draw_the_same_groups_every_time() -> None:
    assert gang_names(WORKLOADS) == ["SchedulingGangs"]
    assert "SchedulingGangs" not in ordered_names(WORKLOADS)
    full = GANGS.sizes["1000"]
    assert (full.nodes, len(full.groups)) == (1000, 100)
    assert all(10 <= n <= 50 for n in full.groups)
    assert full.groups == group_sizes(100, 10, 50, seed=17)
    assert full.measured_pods == sum(full.groups) == len(full.group_of())


def test_group_time_runs_from_the_first_member_created_to_the_last_bound() -> None:
    times = PodTimes(
        created={"pod-0": 1.0, "pod-1": 2.0, "pod-2": 3.0, "pod-3": 3.5},
        bound={"pod-0": 4.0, "pod-1": 6.5, "pod-2": 5.0},
    )
    names = ["pod-0", "pod-1", "pod-2", "pod-3"]
    # Group 1 is left out: pod-3 was never bound.
    assert group_times(times, names, [0, 0, 1, 1]) == {0: 5.5}


def test_each_gang_variant_names_its_groups_the_way_its_plugin_reads_them() -> None:
    alpha = podgroup_manifest(V1ALPHA1, "g", 7)
    assert alpha["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert alpha["spec"] == {"minMember": 7}
    beta = podgroup_manifest(V1BETA1, "g", 7)
    assert beta["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert beta["spec"] == {"schedulingPolicy": {"gang": {"minCount": 7}}}

    cosched = gang_config(GANGS, Variant(SCHEDULER_PLUGINS, COSCHEDULING, V1ALPHA1))
    plugins = cosched["profiles"][0]["plugins"]
    assert plugins["queueSort"] == {
        "enabled": [{"name": COSCHEDULING}],
        "disabled": [{"name": "*"}],
    }
    assert plugins["multiPoint"]["enabled"] == [{"name": COSCHEDULING}]
    # Every gang scheduler runs the same plugins besides its gang plugin.
    gang = gang_config(GANGS, Variant(KUBE_SCHEDULER, GANG_SCHEDULING, V1BETA1))
    gang_plugins = gang["profiles"][0].get("plugins", {})
    assert gang_plugins.get("multiPoint", {}).get("disabled") == (
        plugins["multiPoint"].get("disabled")
    )


def test_module_replaces_reads_both_forms_and_skips_local_directories() -> None:
    gomod = """module example

replace (
\tk8s.io/api => k8s.io/api v0.34.7 // pinned
\tk8s.io/local => ./staging/local
)

replace k8s.io/externaljwt => k8s.io/externaljwt v0.34.7
"""
    assert module_replaces(gomod) == [
        ("k8s.io/api", "k8s.io/api", "v0.34.7"),
        ("k8s.io/externaljwt", "k8s.io/externaljwt", "v0.34.7"),
    ]
