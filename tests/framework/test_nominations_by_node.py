"""The nominated pods that count against a pod, for every node at once, equal the per-node rule
(priority >= the pod's, not the pod itself), in both of the index's paths, by node name and by
row of a node table's index."""

from __future__ import annotations

import random

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.pod_requests import PodRequestColumns
from scheduler.testing import make_pod
from scheduler.testing.harness import Harness

GPU = "example.com/gpu"


def _summed(columns: PodRequestColumns) -> dict[int, tuple[int, int, int, int, int]]:
    """Per row: pods, cpu, memory, storage and the GPU amount counted there."""
    sums: dict[int, tuple[int, int, int, int, int]] = {}
    gpu = columns.scalar.get(GPU)
    for at, row in enumerate(columns.rows.tolist()):
        pods, cpu, memory, storage, gpus = sums.get(row, (0, 0, 0, 0, 0))
        sums[row] = (
            pods + 1,
            cpu + int(columns.cpu[at]),
            memory + int(columns.memory[at]),
            storage + int(columns.storage[at]),
            gpus + (0 if gpu is None else int(gpu[at])),
        )
    return sums


def test_pods_counting_against_each_pod_equal_the_per_node_rule() -> None:
    rng = random.Random(3)
    h = Harness()
    try:
        pods = [
            make_pod(
                f"p{i}",
                priority=rng.choice([0, 100, 100, 1000]),
                cpu=f"{rng.randrange(1, 9) * 100}m",
                memory=f"{rng.randrange(1, 9)}Mi",
                requests={GPU: str(rng.randrange(3))} if i % 3 == 0 else None,
            )
            for i in range(40)
        ]
        nodes = [f"n{i}" for i in range(8)]
        for pod in pods[:30]:
            h.queue.add_nominated_pod(pod, rng.choice(nodes))
        for asking in [*pods, make_pod("other", priority=100)]:
            state = CycleState()
            by_node = h.fwk.nominated_pods_to_add_by_node(state, asking)
            per_node = {n: h.fwk.nominated_pods_to_add(asking, n) for n in nodes}
            assert by_node == {n: found for n, found in per_node.items() if found}, asking.name
            index = {name: row for row, name in enumerate(reversed(nodes[1:]))}  # n0 unlisted
            by_row = h.fwk.nominated_pods_to_add_by_row(state, asking, index)
            assert by_row == {index[n]: found for n, found in by_node.items() if n in index}
            columns = h.fwk.nominated_requests_to_add_by_row(state, asking, index)
            assert _summed(columns) == _summed(PodRequestColumns.of(by_row)), asking.name
            assert all(p.priority >= asking.priority for found in by_node.values() for p in found)
    finally:
        h.close()
