"""The scheduling cycle end to end in process: filter, score, assume, bind, failure handling."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler.algorithm import SchedulingAlgorithm, num_feasible_nodes_to_find
from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.registry import PluginSpec, Registry
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import PROFILE, Harness, profile_spec, registry


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


def test_pod_goes_to_the_node_with_most_free_cpu_and_is_bound(h: Harness) -> None:
    h.add_node(make_node("small", cpu="2"))
    h.add_node(make_node("big", cpu="8"))
    h.add_pod(make_pod("p", cpu="1"))
    h.schedule_next()
    h.api.wait_for(lambda: "default/p" in h.api.binds)
    assert h.api.binds == {"default/p": "big"}
    assert h.cache.pod_count() == 1


def test_assumed_pod_counts_against_the_next_cycle(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="2"))
    for i in range(4):
        h.add_pod(make_pod(f"p{i}", cpu="1", creation_timestamp=f"2026-01-01T00:00:0{i}Z"))
    for _ in range(4):
        h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == 4)
    per_node = sorted(h.api.binds.values())
    assert per_node == ["a", "a", "b", "b"]


def test_unschedulable_pod_gets_condition_event_and_waits(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    h.add_node(make_node("b", cpu="1"))
    pod = make_pod("huge", cpu="3")
    h.add_pod(pod)
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 1)
    key, patch = h.api.status_patches[0]
    assert key == "default/huge"
    condition = patch["status"]["conditions"][0]
    assert condition["type"] == "PodScheduled"
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    message = "0/2 nodes are available: 2 Insufficient cpu."
    assert condition["message"].startswith(message)
    assert h.recorder.events[0][:2] == ("default/huge", "FailedScheduling")
    assert h.recorder.events[0][2].startswith(message)
    assert h.queue.where(pod.uid) == "unschedulable"
    assert h.api.binds == {}


def test_no_nodes_is_reported_as_such(h: Harness) -> None:
    h.add_pod(make_pod("p", cpu="1"))
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 1)
    assert h.recorder.events[0][2] == "no nodes available to schedule pods"


def test_bind_failure_forgets_the_pod_and_requeues_it(h: Harness) -> None:
    h.add_node(make_node("a", cpu="2"))
    pod = make_pod("p", cpu="1")
    h.api.fail_binds = True
    h.add_pod(pod)
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 1)
    assert h.cache.pod_count() == 0
    assert h.recorder.events[-1][1] == "FailedScheduling"
    assert "apiserver said no" in h.recorder.events[-1][2]
    assert h.queue.where(pod.uid) in {"backoff", "unschedulable", "active"}


def test_pod_of_deleted_pod_is_not_requeued(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    pod = make_pod("gone", cpu="4")
    h.add_pod(pod)
    del h.pods[pod.key]
    h.schedule_next()
    assert h.queue.where(pod.uid) is None


def test_higher_priority_pod_is_scheduled_first(h: Harness) -> None:
    h.add_node(make_node("a", cpu="1"))
    h.add_pod(make_pod("low", cpu="1", priority=1))
    h.add_pod(make_pod("high", cpu="1", priority=100))
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.binds) == 1)
    assert h.api.binds == {"default/high": "a"}


def test_round_robin_start_index_advances_without_score_plugins() -> None:
    h = Harness(profile_spec(score=False))
    try:
        for name in "abcd":
            h.add_node(make_node(name, cpu="8"))
        for i in range(4):
            h.add_pod(make_pod(f"p{i}", cpu="1", creation_timestamp=f"2026-01-01T00:00:0{i}Z"))
        for _ in range(4):
            h.schedule_next()
        h.api.wait_for(lambda: len(h.api.binds) == 4)
        # Without scores one feasible node is enough, and each cycle starts after the last.
        assert sorted(h.api.binds.values()) == ["a", "b", "c", "d"]
    finally:
        h.close()


def test_batch_and_per_node_filter_agree_on_diagnosis() -> None:
    h = Harness()
    try:
        for i in range(7):
            h.add_node(make_node(f"n{i}", cpu=str(i + 1)))
        h.cache.update_snapshot(h.snapshot)
        algorithm = SchedulingAlgorithm(h.snapshot)
        pod = make_pod("p", cpu="5")
        feasible, diagnosis = algorithm.find_nodes_that_fit_pod(h.fwk, CycleState(), pod)
        assert sorted(info.name for info in feasible) == ["n4", "n5", "n6"]
        pod = make_pod("q", cpu="50")
        feasible, diagnosis = algorithm.find_nodes_that_fit_pod(h.fwk, CycleState(), pod)
        assert feasible == []
        assert len(diagnosis.node_to_status) == 7
        assert diagnosis.unschedulable_plugins == {"CpuFit"}
    finally:
        h.close()


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [(0, 50, 50), (0, 100, 100), (0, 1000, 420), (0, 5000, 500), (0, 10000, 500), (10, 2000, 200)],
)
def test_adaptive_number_of_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    # kube-scheduler: below 100 nodes all; else max(100, nodes * p / 100) with
    # p = max(50 - nodes/125, 5) when unset. 1000 nodes -> 50 - 8 = 42% -> 420.
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


class ClosablePlugin:
    """A Filter plugin that holds a resource; `broken` makes its close fail."""

    def __init__(self, name: str, closed: list[str], *, broken: bool = False) -> None:
        self.name = name
        self._closed = closed
        self._broken = broken

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None

    def close(self) -> None:
        if self._broken:
            raise RuntimeError("cannot close")
        self._closed.append(self.name)


def test_stopping_the_scheduler_closes_every_plugin_even_after_one_fails() -> None:
    closed: list[str] = []
    plugins = dict(registry())
    plugins["Broken"] = PluginSpec(lambda args, h: ClosablePlugin("Broken", closed, broken=True))
    plugins["Holder"] = PluginSpec(lambda args, h: ClosablePlugin("Holder", closed))
    spec = profile_spec()
    enabled = (*spec.plugin_set("multiPoint").enabled, PluginRef("Broken"), PluginRef("Holder"))
    spec = ProfileSpec(PROFILE, plugins={"multiPoint": PluginSetSpec(enabled=enabled)})
    harness = Harness(spec, plugins=Registry(plugins))

    harness.close()

    assert closed == ["Holder"]


def test_nodes_with_nominated_pods_are_checked_once_per_cycle_with_the_exact_reasons() -> None:
    h = Harness()
    try:
        for i in range(6):
            h.add_node(make_node(f"n{i}", cpu="4" if i < 3 else "1"))
        for i in range(3):  # higher-priority pods nominated to n0..n2 take 3 of their 4 cpus
            nominated = make_pod(f"nom{i}", cpu="3", priority=100)
            h.pods[nominated.key] = nominated
            h.queue.nominator.add_nominated_pod(nominated, f"n{i}")
        h.cache.update_snapshot(h.snapshot)
        algorithm = SchedulingAlgorithm(h.snapshot)
        two_pass = h.fwk.run_filter_plugins_with_nominated_pods
        checked: list[str] = []

        def counting(
            state: CycleState, pod: Pod, info: NodeInfo, nominated: list[Pod] | None = None
        ) -> Status | None:
            checked.append(info.name)
            return two_pass(state, pod, info, nominated)

        h.fwk.run_filter_plugins_with_nominated_pods = counting  # type: ignore[method-assign]
        # Fits n0..n2 alone but not beside their nominated pods; n3..n5 are too small.
        pod = make_pod("p", cpu="2", priority=10)
        feasible, diagnosis = algorithm.find_nodes_that_fit_pod(h.fwk, CycleState(), pod)

        assert feasible == []
        assert sorted(checked) == ["n0", "n1", "n2"]  # once each: the diagnosis reuses them
        expected = {
            info.name: two_pass(CycleState(), pod, info) for info in h.snapshot.node_info_list
        }
        got = {name: diagnosis.node_to_status.get(name) for name in expected}
        assert {n: (s.code, s.message()) for n, s in got.items()} == {
            n: (s.code, s.message()) for n, s in expected.items() if s is not None
        }
        # Too big for any node even alone: nominated nodes are skipped by the filter and
        # checked once, by the diagnosis.
        checked.clear()
        feasible, diagnosis = algorithm.find_nodes_that_fit_pod(
            h.fwk, CycleState(), make_pod("q", cpu="5", priority=10)
        )
        assert feasible == [] and sorted(checked) == ["n0", "n1", "n2"]
        assert len(diagnosis.node_to_status) == 6
        # A pod of higher priority than the nominated ones ignores them and fits n0..n2.
        feasible, _ = algorithm.find_nodes_that_fit_pod(
            h.fwk, CycleState(), make_pod("r", cpu="2", priority=1000)
        )
        assert sorted(info.name for info in feasible) == ["n0", "n1", "n2"]
    finally:
        h.close()
