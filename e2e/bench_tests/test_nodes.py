"""Benchmark nodes are registered Ready, so kwok never replays its initialize stage on them."""

from __future__ import annotations

from e2e.bench.workload import NodeTemplate
from e2e.cluster.nodes import kwok_node_manifest


def _ready(node: dict[str, object]) -> list[str]:
    status = node["status"]
    assert isinstance(status, dict)
    return [c["status"] for c in status.get("conditions", []) if c["type"] == "Ready"]


def test_bench_nodes_are_registered_running_and_ready() -> None:
    template = NodeTemplate.parse({"capacity": {"cpu": "4", "memory": "32Gi", "pods": 110}})
    node = template.manifest("bench-abc123-0", 0, {"bench": "abc123"})
    assert _ready(node) == ["True"]
    assert node["status"]["phase"] == "Running"
    assert node["status"]["capacity"]["cpu"] == "4"


def test_other_kwok_nodes_are_left_for_kwok_to_initialize() -> None:
    node = kwok_node_manifest("kwok-node-0")
    assert _ready(node) == []
    assert "phase" not in node["status"]
