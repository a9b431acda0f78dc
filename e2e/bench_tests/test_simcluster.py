"""The large-cluster generator for the simulator's speed figure, at a small size: the files
load as a snapshot and a what-if, pods sit on nodes with room for them, and a simulation
places every added pod."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.bench.simcluster import Sizes, generate, main, write
from scheduler.api.parse import parse_node, parse_pod
from scheduler.logging import reset_logging
from scheduler.simulate.cli import simulate_main
from scheduler.simulate.cluster import read_objects

SMALL = Sizes(nodes=40, pods=300, deployments=12, namespaces=3, add=60)


@pytest.fixture(autouse=True)
def restore_structlog() -> Iterator[None]:
    yield
    reset_logging()


def test_the_cluster_is_bound_within_capacity_and_seeded() -> None:
    made = generate(SMALL, seed=3)
    counts = made.counts()
    assert counts["Node"] == 40 and counts["Pod"] == 300 and counts["ReplicaSet"] == 12
    nodes = {n.name: n for n in map(parse_node, (o for o in made.objects if o["kind"] == "Node"))}
    assert len({n.labels["topology.kubernetes.io/zone"] for n in nodes.values()}) == 3
    used: dict[str, tuple[int, int]] = {}
    for raw in (o for o in made.objects if o["kind"] == "Pod"):
        pod = parse_pod(raw)
        assert pod.node_name in nodes and pod.owner_references
        cpu, mem = used.get(pod.node_name, (0, 0))
        used[pod.node_name] = (cpu + pod.requests.milli_cpu, mem + pod.requests.memory)
    for name, (cpu, mem) in used.items():
        assert cpu <= nodes[name].allocatable.milli_cpu
        assert mem <= nodes[name].allocatable.memory
    assert sum(d["spec"]["replicas"] for d in made.add) == 60
    assert generate(SMALL, seed=3).objects == made.objects


def test_the_files_simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, add = write(generate(SMALL), tmp_path)
    assert read_objects([cluster]).counts()["Pod"] == 300
    assert simulate_main(["--snapshot", str(cluster), "--add", str(add), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["configs"][0]
    assert len(report["placed"]) == 60 and not report["pending"]


def test_the_command_refuses_sizes_it_cannot_make(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["-o", str(tmp_path), "--nodes", "5"])
    assert main(["-o", str(tmp_path), "--nodes", "10", "--pods", "20000"]) == 1
