"""The benchmark counts the run's nodes the node lifecycle controller stopped hearing from."""

from __future__ import annotations

from typing import Any

from e2e.bench.objects import unready_node_count
from e2e.bench.report import notes


def _node(name: str, *taints: str) -> dict[str, Any]:
    spec = {"taints": [{"key": key, "effect": "NoSchedule"} for key in taints]} if taints else {}
    return {"metadata": {"name": name}, "spec": spec}


def test_only_the_runs_ready_nodes_tainted_unreachable_or_not_ready_count() -> None:
    nodes = {
        "items": [
            _node("bench-abc123-0"),
            _node("bench-abc123-1", "node.kubernetes.io/unreachable"),
            _node("bench-abc123-2", "node.kubernetes.io/not-ready", "example.com/other"),
            _node("bench-abc123-3", "example.com/other"),
            _node("bench-ffffff-0", "node.kubernetes.io/unreachable"),  # another run's
            _node("kind-control-plane", "node.kubernetes.io/not-ready"),
        ]
    }
    run_nodes = {f"bench-abc123-{i}" for i in range(4)}
    assert unready_node_count(nodes, run_nodes) == 2
    assert unready_node_count({"items": []}, run_nodes) == 0
    # A churn node just created (not among the nodes Ready before the run) is not counted.
    churn = {"items": [_node("bench-abc123-4", "node.kubernetes.io/not-ready")]}
    assert unready_node_count(churn, run_nodes) == 0


def test_a_run_with_silent_nodes_says_so_under_the_table() -> None:
    assert notes({"figures": {"unready_nodes": 0}}) == []
    (note,) = notes({"figures": {"unready_nodes": 12}})
    assert note.startswith("12 nodes tainted unreachable") and "not comparable" in note
