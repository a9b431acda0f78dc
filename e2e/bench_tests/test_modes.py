"""The benchmark's modes: fixed-rate creation, capacity CPUs, pending pods (e2e/bench)."""

from __future__ import annotations

import os

import pytest

import e2e.bench.__main__ as bench
from e2e.bench.measure import PodTimes, summarize
from e2e.bench.pacing import Pacing, achieved_rate, create_paced, creation_offsets
from e2e.bench.pinning import CapacityError, capacity_cpus, format_cpus, thread_cpus
from e2e.bench.report import mode_cell, notes, one_line, run_mode
from e2e.bench.runner import owner_refusal
from e2e.bench.workload import PodTemplate, load_workloads, replica_set_manifest
from e2e.cluster.kwok import DISREGARD_LABEL_KEY, DISREGARD_LABEL_VALUE


def test_pods_are_due_at_i_over_the_rate() -> None:
    assert creation_offsets(50, 4) == [0.0, 0.02, 0.04, 0.06]
    assert creation_offsets(0.5, 3) == [0.0, 2.0, 4.0]
    assert creation_offsets(100, 0) == []
    offsets = creation_offsets(50, 1000)
    assert offsets[-1] == pytest.approx(19.98)  # 1000 pods at 50/s span 19.98 s
    with pytest.raises(ValueError, match="positive"):
        creation_offsets(0, 10)


def test_the_achieved_rate_is_creations_over_the_span_of_their_completions() -> None:
    assert achieved_rate([0.0, 0.02, 0.04, 0.06]) == pytest.approx(50)
    assert achieved_rate([0.5, 0.1, 0.3]) == pytest.approx(5)  # order does not matter
    assert achieved_rate([1.0]) == 0.0 and achieved_rate([]) == 0.0


class FakeClock:
    """A clock that advances only when the harness waits or a create takes time."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds


def test_creates_start_on_schedule_when_each_create_is_quick() -> None:
    clock = FakeClock()
    created: list[tuple[int, float]] = []

    def create(i: int) -> None:
        created.append((i, clock.now))
        clock.now += 0.001

    pacing = create_paced(create, 5, 10, threads=1, clock=clock, wait=clock.wait)
    assert [i for i, _ in created] == [0, 1, 2, 3, 4]
    assert [round(at - 100.0, 6) for _, at in created] == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert pacing.reached and pacing.achieved == pytest.approx(10)
    figures = pacing.figures()
    assert figures.create_qps_asked == 10 and figures.create_qps_achieved == 10.0
    assert figures.create_qps_reached is True and figures.create_lag_max_ms == 0.0


def test_a_harness_that_cannot_keep_up_is_recorded_as_such() -> None:
    clock = FakeClock()

    def slow(i: int) -> None:
        clock.now += 0.5  # each create takes 5 slots at 10/s, with one worker

    pacing = create_paced(slow, 4, 10, threads=1, clock=clock, wait=clock.wait)
    assert not pacing.reached
    assert pacing.achieved == pytest.approx(2)
    assert [round(lag, 6) for lag in pacing.lags()] == [0.0, 0.4, 0.8, 1.2]
    figures = pacing.figures()
    assert figures.create_qps_reached is False and figures.create_lag_max_ms == 1200.0


def test_a_failed_create_is_raised_and_stops_the_rest() -> None:
    clock = FakeClock()
    seen: list[int] = []

    def create(i: int) -> None:
        seen.append(i)
        if i == 1:
            raise RuntimeError("409")

    with pytest.raises(RuntimeError, match="409"):
        create_paced(create, 5, 100, threads=1, clock=clock, wait=clock.wait)
    assert seen == [0, 1]


def test_real_threads_start_no_create_before_its_time() -> None:
    pacing = create_paced(lambda i: None, 20, 2000, threads=4)
    pairs = zip(pacing.started, pacing.due, strict=True)
    assert len(pacing.done) == 20 and all(s >= d for s, d in pairs)


def test_a_single_pod_has_no_rate_to_miss() -> None:
    assert Pacing(50, [0.0], [0.0], [0.01]).reached


def test_capacity_mode_needs_two_cpus() -> None:
    assert capacity_cpus([0, 1]) == (0, 1)
    assert capacity_cpus([5, 3, 4]) == (3, 4)
    with pytest.raises(CapacityError, match="needs 2 CPUs; this process may use 1 \\(0\\)"):
        capacity_cpus([0])


def test_cpu_lists_are_written_as_the_kernel_does() -> None:
    assert format_cpus([0]) == "0"
    assert format_cpus([3, 0, 1, 2, 5]) == "0-3,5"


def test_thread_cpus_reads_every_thread_of_a_process() -> None:
    counts = thread_cpus(os.getpid())
    assert sum(counts.values()) == len(os.listdir(f"/proc/{os.getpid()}/task"))


def test_the_report_names_the_mode_and_flags_a_rate_not_reached() -> None:
    paced = {
        "workload": "W",
        "size": "1000",
        "scheduler": "kube-pysched",
        "mode": "live",
        "create_qps": 50.0,
        "figures": {
            "create_qps_asked": 50.0,
            "create_qps_achieved": 38.2,
            "create_qps_reached": False,
            "create_lag_p50_ms": 1.0,
            "create_lag_p99_ms": 900.0,
            "create_lag_max_ms": 1200.0,
        },
    }
    assert run_mode(paced) == "qps 50" and mode_cell(paced) == "qps 50>38.2!"
    assert notes(paced)[0].startswith("creation NOT REACHED: asked 50/s, achieved 38.2/s")
    capacity = {
        "scheduler": "kube-scheduler",
        "mode": "capacity",
        "figures": {},
        "pinning": {
            "control_plane_cpus": "0",
            "scheduler_cpus": "1",
            "held": True,
            "kwok_pods": "disregarded (label x=y)",
        },
    }
    assert run_mode(capacity) == "capacity"
    assert notes(capacity) == [
        "pinned: control plane and harness on CPU 0, kube-scheduler on CPU 1, held; "
        "kwok pods disregarded"
    ]
    assert run_mode({"workload": "W"}) == "live"  # records from before the modes


def test_pending_pods_runs_are_their_own_mode_and_never_pair_with_plain_ones() -> None:
    """--pending-pods changes what lands in the window (no kwok status patch per pod), so its
    rows must not be read as the same mode as the default live runs."""
    assert run_mode({"mode": "live", "pending_pods": True}) == "live pending"
    assert run_mode({"mode": "backlog", "pending_pods": True}) == "backlog pending"
    assert run_mode({"mode": "live", "create_qps": 50.0, "pending_pods": True}) == "qps 50 pending"
    assert run_mode({"mode": "live"}) == "live"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pending-pods", "--capacity"], "--capacity already leaves the pods Pending"),
        (["--workload", "SchedulingGangs", "--size", "1000", "--pending-pods"], "once"),
        (
            ["--workload", "SchedulingBasic,PreemptionAsync", "--pending-pods"],
            "--pending-pods: PreemptionAsync preempt; a pod evicted while kwok ignores it",
        ),
        (
            ["--workload", "PreemptionBasic", "--capacity"],
            "--capacity: PreemptionBasic preempt; a pod evicted while kwok ignores it",
        ),
        (
            ["--workload", "SchedulingBasic,MixedChurn", "--size", "5000_10000"],
            "no size 5000_10000 in MixedChurn (sizes small, 1000, 5000)",
        ),
        (
            ["--workload", "all", "--size", "5000_10000"],
            "no size 5000_10000 in SchedulingNodeAffinity (sizes small, 1000, 5000); ",
        ),
    ],
)
def test_pending_pods_is_refused_where_it_means_nothing(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_replica_sets_extra_labels_go_on_its_pods_not_its_selector() -> None:
    template = PodTemplate.parse({"labels": {"app": "a"}, "requests": {"cpu": "100m"}})
    manifest = replica_set_manifest("rs", template, 3, {DISREGARD_LABEL_KEY: DISREGARD_LABEL_VALUE})
    assert manifest["spec"]["selector"] == {"matchLabels": {"app": "a"}}
    assert manifest["spec"]["template"]["metadata"]["labels"] == {
        "app": "a",
        DISREGARD_LABEL_KEY: DISREGARD_LABEL_VALUE,
    }
    plain = replica_set_manifest("rs", template, 3)
    assert plain["spec"]["template"]["metadata"]["labels"] == {"app": "a"}


def test_only_the_running_patches_seen_by_the_last_binding_count_as_in_the_window() -> None:
    """The window ends at the last binding: a pod kwok made Running after that cost the API
    server nothing inside this run's window."""
    times = PodTimes()
    times.record("a", {}, 1.0, deleted=False, phase="Pending")
    times.record("b", {}, 1.1, deleted=False)
    times.record("a", {"nodeName": "n"}, 1.5, deleted=False, phase="Pending")
    times.record("a", {"nodeName": "n"}, 1.7, deleted=False, phase="Running")
    times.record("b", {"nodeName": "n"}, 2.0, deleted=False, phase="Pending")
    times.record("b", {"nodeName": "n"}, 2.4, deleted=False, phase="Running")  # after the end
    times.record("a", {"nodeName": "n"}, 2.6, deleted=False, phase="Running")  # not the first
    assert times.running == {"a": 1.7, "b": 2.4}
    figures = summarize(times, ["a", "b"], start=1.0)
    assert figures.running_in_window_pods == 1
    assert figures.elapsed_seconds == 1.0


def test_a_workload_with_an_owner_is_refused_only_where_the_harness_must_create_its_pods() -> None:
    workloads = load_workloads()
    owned = workloads["DefaultTopologySpreading"]
    assert owned.owner == "ReplicaSet"
    assert owner_refusal(owned, "live", None) is None
    assert owner_refusal(workloads["SchedulingBasic"], "backlog", 50) is None
    at_rate = owner_refusal(owned, "live", 50)
    assert at_rate is not None and at_rate.startswith(
        "DefaultTopologySpreading: a creation rate (--create-qps 50) needs the harness"
    )
    assert "live" not in at_rate  # live mode itself runs it (kube-controller-manager creates)
    for mode in ("backlog", "capacity"):
        refused = owner_refusal(owned, mode, None)
        assert refused is not None and refused.startswith(f"DefaultTopologySpreading: {mode} mode")
        assert refused.endswith("created by a ReplicaSet")


def test_the_progress_line_adds_a_gang_run_s_group_times() -> None:
    figures = {
        "throughput_overall": 90.0,
        "latency_p99_ms": 12.0,
        "cpu_seconds": 1.5,
        "cpu_ms_per_pod": 1.5,
        "peak_rss_mib": 100.0,
        "unscheduled_pods": 0,
        "create_rate": 100.0,
    }
    plain = {"workload": "W", "size": "small", "scheduler": "kube-pysched", "figures": figures}
    line = one_line(plain)
    assert "90.0 pods/s" in line and "1.5 ms/pod" in line and "groups" not in line
    groups = {"groups": 3, "groups_all_bound": 3, "group_all_bound_p50_s": 0.5}
    groups |= {"group_all_bound_p90_s": 0.7, "group_all_bound_max_s": 0.9}
    gang = {**plain, "variant": "kube-pysched-Coscheduling", "figures": {**figures, **groups}}
    assert "kube-pysched-Coscheduling" in one_line(gang)
    assert "groups all bound 3/3 in p50 0.5 / p90 0.7 / max 0.9 s" in one_line(gang)
