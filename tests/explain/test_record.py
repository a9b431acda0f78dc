"""The per-pod record of the latest scheduling attempt: what the cycle writes into it, its
compact form, and the store's bounds (latest attempt per pod, LRU, deleted pods dropped)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from scheduler.config.load import parse_config
from scheduler.explain.record import SCORE_NODES, ExplainStore, FilterVerdicts, ScoreTable
from scheduler.framework.status import Code, Status
from scheduler.framework.status_column import StatusColumn
from scheduler.framework.types import NodeToStatus
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness, poll

PROFILE = "explain"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def in_tree(store: ExplainStore) -> Harness:
    """kube-scheduler's default plugins under PROFILE, recording into `store`."""
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PROFILE}],
    }
    cfg = parse_config(raw, set(in_tree_registry()))
    return Harness(cfg.profiles[0].to_spec(), plugins=in_tree_registry(), explain=store)


@pytest.fixture
def store() -> ExplainStore:
    return ExplainStore(max_pods=100)


@pytest.fixture
def h(store: ExplainStore) -> Iterator[Harness]:
    harness = in_tree(store)
    yield harness
    harness.close()


def test_unschedulable_pod_records_each_nodes_reason_and_the_condition_message(
    h: Harness, store: ExplainStore
) -> None:
    for i in range(3):
        h.add_node(make_node(f"small-{i}", cpu="1"))
    for i in range(2):
        h.add_node(make_node(f"tainted-{i}", cpu="8", taints=[TAINT]))
    h.add_node(make_node("cordoned", cpu="8", unschedulable=True))
    pod = make_pod("big", cpu="2", scheduler_name=PROFILE)
    h.add_pod(pod)
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 1)
    condition = h.api.status_patches[0][1]["status"]["conditions"][0]

    attempt = store.find("default", "big")
    assert attempt is not None and attempt.uid == pod.uid
    assert attempt.profile == PROFILE
    assert attempt.outcome == "Unschedulable"
    assert attempt.message == condition["message"]
    assert attempt.num_nodes == 6
    verdicts = attempt.filter
    assert verdicts is not None
    assert verdicts.of_node.dtype == np.uint8  # one byte per node
    by_reason = {
        tuple(verdicts.statuses[i].reasons): n  # type: ignore[union-attr]
        for i, n in verdicts.groups()
    }
    assert by_reason == {
        ("Insufficient cpu",): 3,
        ("node(s) had untolerated taint(s)",): 2,
        ("node(s) were unschedulable",): 1,
    }
    status = verdicts.status_of("tainted-1")
    assert status is not None and status.plugin == "TaintToleration"
    out = attempt.to_json()
    assert out["filter"]["nodes"]["small-0"] == out["filter"]["nodes"]["small-2"]
    groups = out["filter"]["groups"]
    assert [g["nodes"] for g in groups] == [3, 2, 1]
    assert out["filter"]["statuses"][groups[0]["status"]]["plugin"] == "NodeResourcesFit"
    # Preemption ran and could not help: its words are part of the message and recorded.
    assert out["postFilter"]["message"] in attempt.message
    assert "score" not in out


def test_scheduled_pod_records_the_score_table_and_the_bound_node(
    h: Harness, store: ExplainStore
) -> None:
    h.add_node(make_node("a", cpu="4"))
    h.add_node(make_node("b", cpu="16"))
    h.add_node(make_node("full", cpu="1"))
    h.add_pod(make_pod("p", cpu="2", scheduler_name=PROFILE))
    h.schedule_next()
    h.api.wait_for(lambda: "default/p" in h.api.binds)
    attempt = store.find("default", "p")
    assert attempt is not None
    poll(lambda: attempt.outcome == "Scheduled", "the binding to be recorded")
    assert attempt.selected == h.api.binds["default/p"] == "b"
    assert attempt.feasible_nodes == 2
    table = attempt.scores
    assert table is not None
    assert table.scored == 2 and table.nodes[0] == "b" and table.best == 1 and not table.tied
    out = table.to_json()
    best = out["nodes"][0]
    assert "NodeResourcesFit" in best["raw"]
    # Each plugin's weighted score is its normalised score times its weight; they add up.
    for plugin, weight in out["weights"].items():
        assert best["weighted"][plugin] == best["normalized"][plugin] * weight
    assert sum(best["weighted"].values()) == best["total"]
    assert out["nodes"][0]["total"] > out["nodes"][1]["total"]


def test_binding_error_is_recorded(h: Harness, store: ExplainStore) -> None:
    h.add_node(make_node("a", cpu="2"))
    h.api.fail_binds = True
    h.add_pod(make_pod("p", cpu="1", scheduler_name=PROFILE))
    h.schedule_next()
    h.api.wait_for(lambda: len(h.api.status_patches) == 1)
    attempt = store.find("default", "p")
    assert attempt is not None
    assert "apiserver said no" in attempt.binding_error
    assert attempt.outcome == "SchedulerError"
    assert attempt.selected == "a"


def test_without_a_store_nothing_is_recorded() -> None:
    harness = Harness()
    try:
        harness.add_node(make_node("a", cpu="2"))
        harness.add_pod(make_pod("p", cpu="1"))
        harness.schedule_next()
        harness.api.wait_for(lambda: "default/p" in harness.api.binds)
        assert harness.scheduler.schedule_one_pod.steps.s.explain is None
    finally:
        harness.close()


def test_store_keeps_the_latest_attempt_and_evicts_the_least_recently_attempted() -> None:
    store = ExplainStore(max_pods=2)
    a, b, c = (make_pod(n) for n in "abc")
    first_a = store.begin(a, PROFILE, 1.0)
    second_a = store.begin(a, PROFILE, 2.0)
    assert store.find("default", "a") is second_a is not first_a
    store.begin(b, PROFILE, 3.0)
    store.begin(a, PROFILE, 4.0)  # a is now the most recent: b goes first
    store.begin(c, PROFILE, 5.0)
    assert len(store) == 2
    assert store.find("default", "b") is None
    assert store.find("default", "a") is not None and store.find("default", "c") is not None


def test_deleted_and_recreated_pods_do_not_keep_old_records() -> None:
    store = ExplainStore(max_pods=10)
    old = make_pod("p", uid="old")
    store.begin(old, PROFILE, 1.0)
    new = make_pod("p", uid="new")
    store.begin(new, PROFILE, 2.0)
    assert len(store) == 1 and store.current("old") is None
    store.forget(old)  # the old pod's delete event arrives late: the new record stays
    assert store.find("default", "p") is store.current("new") is not None
    store.forget(new)
    assert store.find("default", "p") is None and len(store) == 0


def test_store_needs_room_for_one_pod() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ExplainStore(max_pods=0)


def test_verdicts_share_the_names_and_keep_each_status_once() -> None:
    names = [f"n{i}" for i in range(1000)]
    index = {name: i for i, name in enumerate(names)}
    cpu = Status(Code.UNSCHEDULABLE, "Insufficient cpu", plugin="NodeResourcesFit")
    taint = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "taint", plugin="TaintToleration")
    per_row: list[Status | None] = [cpu if i % 4 else taint for i in range(1000)]
    order = (np.arange(1000) + 300) % 1000  # round-robin order from row 300
    column = StatusColumn.of([per_row[r] for r in order.tolist()])
    node_to_status = NodeToStatus()
    node_to_status.set_rows(names, index, order, column)
    verdicts = FilterVerdicts.of(node_to_status, names, index)
    assert verdicts.names is names
    assert verdicts.nbytes() == 1000
    assert [n for _, n in verdicts.groups()] == [750, 250]
    assert verdicts.status_of("n4") is taint and verdicts.status_of("n5") is cpu
    # From the per-name map (after a reader asked by name) the result is the same.
    node_to_status.items()
    again = FilterVerdicts.of(node_to_status, names, index)
    assert again.groups() == verdicts.groups()
    assert again.status_of("n8") is taint


def test_nodes_outside_a_prefilter_narrowing_get_the_absent_status() -> None:
    names = ["a", "b", "c"]
    index = {name: i for i, name in enumerate(names)}
    node_to_status = NodeToStatus()
    node_to_status.absent_status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "not listed")
    node_to_status.set("b", Status(Code.UNSCHEDULABLE, "Insufficient cpu"))
    verdicts = FilterVerdicts.of(node_to_status, names, index)
    assert verdicts.groups() == [(0, 2), (1, 1)]
    assert verdicts.status_of("a") is node_to_status.absent_status


def test_score_table_keeps_the_best_nodes_and_names_ties() -> None:
    n = 100
    names = [f"n{i}" for i in range(n)]
    rows = np.arange(n, dtype=np.intp)
    raw = {"A": np.arange(n, dtype=np.int64), "B": np.zeros(n, np.int64)}
    normalized = {"A": np.arange(n, dtype=np.int64) % 50, "B": np.zeros(n, np.int64)}
    totals = normalized["A"] * 2
    table = ScoreTable.of(names, rows, raw, normalized, {"A": 2, "B": 1}, totals)
    assert len(table.nodes) == SCORE_NODES and table.scored == n
    assert table.best == 2 and sorted(table.tied) == ["n49", "n99"]
    assert set(table.nodes[:2]) == {"n49", "n99"}
    assert list(table.totals) == sorted(table.totals, reverse=True)
    first = table.to_json()["nodes"][0]
    assert first["weighted"] == {"A": 98, "B": 0} and first["total"] == 98


def test_preemption_records_the_nominated_node_and_its_victims(
    h: Harness, store: ExplainStore
) -> None:
    h.add_node(make_node("a", cpu="2"))
    h.add_node(make_node("b", cpu="1"))
    h.add_assigned_pod(make_pod("low", cpu="2", priority=1, node_name="a"))
    h.add_pod(make_pod("high", cpu="2", priority=100, scheduler_name=PROFILE))
    h.schedule_next()
    h.api.wait_for(lambda: "default/low" in h.api.deletes)
    attempt = store.find("default", "high")
    assert attempt is not None
    assert attempt.outcome == "Unschedulable"
    assert attempt.nominated_node == "a"
    assert attempt.victims == ["default/low"]
    post = attempt.to_json()["postFilter"]
    assert post["victims"] == ["default/low"] and post["nominatedNode"] == "a"
    assert post["message"] in attempt.message


def test_the_attempt_after_a_preemption_keeps_its_story() -> None:
    store = ExplainStore(max_pods=10)
    pod = make_pod("high")
    first = store.begin(pod, PROFILE, 1.0)
    first.nominated_node, first.victims = "a", ["default/low"]
    second = store.begin(pod, PROFILE, 2.0)
    assert second.earlier_preemption == {
        "time": 1.0,
        "message": "",
        "nominatedNode": "a",
        "victims": ["default/low"],
    }
    third = store.begin(pod, PROFILE, 3.0)  # kept until an attempt preempts again
    assert third.earlier_preemption == second.earlier_preemption
    assert store.begin(make_pod("high", uid="other"), PROFILE, 4.0).earlier_preemption is None
