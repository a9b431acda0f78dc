"""The testing kit itself: wrappers agree with the keyword builders, the runner runs the
extension points in the runtime's order and catches batch forms that disagree."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins import node_affinity, node_name, taint_toleration
from scheduler.testing import (
    FakeApi,
    FakeRecorder,
    NodeWrapper,
    PodWrapper,
    build_plugin,
    make_node,
    make_pod,
    make_snapshot,
    node_json,
    pod_json,
    run_plugin,
)


def test_pod_wrapper_builds_what_the_keyword_builder_builds() -> None:
    wrapped = (
        PodWrapper("web", "prod")
        .uid("u1")
        .req({"example.com/gpu": "1"}, cpu="500m", memory="1Gi")
        .label("app", "web")
        .node_selector({"disk": "ssd"})
        .toleration("dedicated", "gpu", "NoSchedule")
        .priority(10)
        .host_port(8080)
        .json()
    )
    keyword = pod_json(
        "web",
        "prod",
        uid="u1",
        requests={"example.com/gpu": "1", "cpu": "500m", "memory": "1Gi"},
        labels={"app": "web"},
        node_selector={"disk": "ssd"},
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ],
        priority=10,
        host_ports=[8080],
    )
    assert wrapped == keyword


def test_node_wrapper_builds_what_the_keyword_builder_builds() -> None:
    wrapped = (
        NodeWrapper("n1")
        .capacity({"example.com/gpu": "2"}, cpu="8", memory="16Gi", pods=30)
        .label("zone", "a")
        .taint("spot", effect="NoExecute")
        .unschedulable()
        .json()
    )
    keyword = node_json(
        "n1",
        cpu="8",
        memory="16Gi",
        pods=30,
        extended={"example.com/gpu": "2"},
        labels={"zone": "a"},
        taints=[{"key": "spot", "value": "", "effect": "NoExecute"}],
        unschedulable=True,
    )
    assert wrapped == keyword


def test_pod_wrapper_node_affinity_terms_are_anded() -> None:
    pod = PodWrapper("p").node_affinity_in("zone", ["a", "b"]).node_affinity_not_in("rack", ["1"])
    snap = make_snapshot(
        [
            NodeWrapper("a1").label("zone", "a").label("rack", "1").obj(),
            NodeWrapper("a2").label("zone", "a").label("rack", "2").obj(),
            NodeWrapper("c2").label("zone", "c").label("rack", "2").obj(),
        ]
    )
    run = run_plugin(build_plugin(node_affinity.SPEC), pod.obj(), snap)
    assert run.feasible == ["a2"]


def test_run_plugin_narrows_by_prefilter_result() -> None:
    snap = make_snapshot([make_node("n1"), make_node("n2")])
    run = run_plugin(build_plugin(node_name.SPEC), PodWrapper("p").node("n2").obj(), snap)
    assert run.pre_filter_result is not None
    assert run.filter_statuses == {"n2": None}
    assert run.feasible == ["n2"]


def test_run_plugin_filters_then_scores_and_normalizes() -> None:
    snap = make_snapshot(
        [
            NodeWrapper("clean").obj(),
            NodeWrapper("noisy").taint("noisy", "yes", "PreferNoSchedule").obj(),
            NodeWrapper("gpu").taint("dedicated", "gpu").obj(),
        ]
    )
    run = run_plugin(build_plugin(taint_toleration.SPEC), PodWrapper("p").obj(), snap)
    assert run.feasible == ["clean", "noisy"]
    assert run.rejections() == {
        "gpu": "node(s) had untolerated taint(s)",
    }
    assert run.raw_scores == {"clean": 0, "noisy": 1}
    assert run.scores == {"clean": 100, "noisy": 0}


class _Disagrees:
    """A filter whose batch form forgets a rule its per-node form has."""

    name = "Disagrees"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if node_info.name == "bad":
            return Status(Code.UNSCHEDULABLE, "bad node")
        return None

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        return np.ones(table.n, np.bool_)


def test_run_plugin_catches_a_batch_form_that_disagrees() -> None:
    snap = make_snapshot([make_node("good"), make_node("bad")])
    with pytest.raises(AssertionError, match="filter_batch says True for node 'bad'"):
        run_plugin(_Disagrees(), make_pod("p"), snap)


def test_fake_api_records_writes_in_order_and_fails_on_request() -> None:
    api = FakeApi()
    pod = make_pod("p")
    api.patch_pod_status(pod, {"conditions": []})
    api.bind(pod, "n1")
    api.delete_pod(pod)
    assert api.writes == [("patch", "default/p"), ("bind", "default/p"), ("delete", "default/p")]
    assert api.binds == {"default/p": "n1"}
    api.fail_with = RuntimeError("down")
    with pytest.raises(RuntimeError, match="down"):
        api.bind(pod, "n2")
    assert api.binds == {"default/p": "n1"}


def test_fake_recorder_keeps_the_short_form_and_every_argument() -> None:
    recorder = FakeRecorder()
    victim, preemptor = make_pod("victim"), make_pod("preemptor")
    recorder.eventf(victim, preemptor, "Normal", "Preempted", "Preempting", "by preemptor")
    assert recorder.events == [("default/victim", "Preempted", "by preemptor")]
    assert recorder.recorded[0].related == "default/preemptor"
    assert recorder.recorded[0].action == "Preempting"
