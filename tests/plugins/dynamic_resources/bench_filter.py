"""What DynamicResources' PreFilter and Filter cost per node, in process: 1000 nodes, one slice
per node with 2 devices (1 capacity each, as scheduler_perf's test driver publishes), one device
of every node and the other of every second node allocated, pods each claiming one device
through the kit's class. Filter runs on every node (half fit), as for a pod late in a
benchmark that fills the cluster. Prints CPU time per pod and per node, and the collections
per pod by generation.

    .venv/bin/python -m tests.plugins.dynamic_resources.bench_filter [--profile]
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import sys
import time
from typing import Any

from scheduler.api.dra_slices import parse_resource_slice
from scheduler.framework import CycleState
from tests.plugins.dynamic_resources.builders import device, slice_
from tests.plugins.dynamic_resources.plugin_kit import (
    DRIVER,
    allocation,
    claim,
    handle,
    plugin,
    pod,
)

NODES = 1000
PODS = 20


def main(profile: bool) -> None:
    nodes = tuple(f"n{i}" for i in range(NODES))
    taken = [claim(f"a-{n}", allocation=allocation(n, "gpu-0")) for n in nodes]
    taken += [claim(f"b-{n}", allocation=allocation(n, "gpu-1")) for n in nodes[::2]]
    pending = [claim(f"c{i}") for i in range(2 * PODS + 1)]
    gpus = [device(f"gpu-{i}", capacity={"memory": "1Gi"}) for i in range(2)]
    slices = tuple(parse_resource_slice(slice_(f"{n}-gpus", n, n, DRIVER, *gpus)) for n in nodes)
    h = handle(nodes, claims=(*taken, *pending), slices=slices)
    p = plugin(h)
    infos = h.snap.list()

    def one(i: int) -> None:
        state = CycleState()
        target = pod(f"p{i}", claims={"gpu": f"c{i}"})
        p.pre_filter(state, target, infos)
        fit = sum(p.filter(state, target, info) is None for info in infos)
        assert fit == NODES // 2, fit

    one(0)  # compiles the class selector, gathers every node's pools
    collections = [0, 0, 0]

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections[info["generation"]] += 1

    gc.callbacks.append(count)
    started = time.process_time()
    for i in range(1, PODS + 1):
        one(i)
    spent = (time.process_time() - started) / PODS
    gc.callbacks.remove(count)
    per_pod = [round(c / PODS, 2) for c in collections]
    print(
        f"{spent * 1e3:.1f} ms CPU per pod, {spent / NODES * 1e6:.1f} µs per node; "
        f"collections per pod (generation 0/1/2): {per_pod}"
    )
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(PODS + 1, 2 * PODS + 1):
            one(i)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main("--profile" in sys.argv[1:])
