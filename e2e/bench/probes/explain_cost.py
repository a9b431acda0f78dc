"""What recording each pod's latest attempt (scheduler/explain/record.py) costs the scheduling
loop: kube-scheduler's default profile in process (scheduler.testing.harness) over N nodes,
rounds alternating recording off and on, the loop thread's CPU time per pod (a scheduled pod
and an unschedulable one, whose record keeps every node's verdict) and the bytes the records
hold (tracemalloc), then each piece of the recording timed alone (whole cycles on shared
cores vary by more than the recording costs).

    .venv/bin/python -m e2e.bench.probes.explain_cost [--nodes 5000 --pods 200 --rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import timeit
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from scheduler.algorithm import num_feasible_nodes_to_find
from scheduler.config.load import parse_config
from scheduler.explain.record import ExplainStore, FilterVerdicts, ScoreTable
from scheduler.framework.status import Code, Status
from scheduler.framework.status_column import StatusColumn
from scheduler.framework.types import NodeToStatus
from scheduler.logging import configure_logging
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness

PROFILE = "explain-cost"


def _harness(nodes: int, store: ExplainStore | None) -> Harness:
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PROFILE}],
    }
    cfg = parse_config(raw, set(in_tree_registry()))
    h = Harness(cfg.profiles[0].to_spec(), plugins=in_tree_registry(), explain=store)
    for i in range(nodes):
        h.add_node(make_node(f"node-{i:05d}", cpu="64", memory="256Gi", pods=1000))
    return h


def _cpu_per_pod(h: Harness, pods: int, tag: str, cpu: str) -> float:
    """Median loop-thread CPU seconds of one pod's scheduling cycle."""
    samples = []
    for i in range(pods):
        h.add_pod(make_pod(f"{tag}-{i}", cpu=cpu, scheduler_name=PROFILE))
        began = time.thread_time()
        h.schedule_next()
        samples.append(time.thread_time() - began)
    return statistics.median(samples)


def run(nodes: int, pods: int, rounds: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in range(rounds):
        for recording in (False, True) if r % 2 == 0 else (True, False):
            store = ExplainStore(10 * pods) if recording else None
            h = _harness(nodes, store)
            try:
                _cpu_per_pod(h, 20, f"warm{r}", "100m")  # caches, first-cycle work
                mode = "on" if recording else "off"
                fit = _cpu_per_pod(h, pods, f"fit{r}", "100m")
                unfit = _cpu_per_pod(h, pods // 4, f"unfit{r}", "128")
                out.setdefault(f"scheduled/{mode}", []).append(fit)
                out.setdefault(f"unschedulable/{mode}", []).append(unfit)
            finally:
                h.close()
            gc.collect()
    return out


def record_bytes(nodes: int, pods: int) -> tuple[float, float]:
    """Bytes held per record, (a scheduled pod's, an unschedulable pod's): what dropping the
    records frees (node names are the snapshot's, shared, so not counted)."""
    per: list[float] = []
    for tag, cpu in (("fit", "100m"), ("unfit", "128")):
        store = ExplainStore(10 * pods)
        h = _harness(nodes, store)
        try:
            made = [make_pod(f"{tag}-{i}", cpu=cpu, scheduler_name=PROFILE) for i in range(pods)]
            tracemalloc.start()
            for pod in made:
                h.add_pod(pod)
                h.schedule_next()
            gc.collect()
            with_records = tracemalloc.get_traced_memory()[0]
            for pod in made:
                store.forget(pod)
            gc.collect()
            without = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            per.append((with_records - without) / pods)
        finally:
            h.close()
    return per[0], per[1]


def components(nodes: int, scored: int, plugins: int = 8, repeat: int = 2000) -> dict[str, float]:
    """Microseconds of each piece of recording, on shapes of a cycle at `nodes` nodes: the
    loop's (an attempt begun; an unschedulable pod's verdicts of every node, three distinct
    reasons; the raw score copies of `scored` nodes) and the binding worker's (the score
    table of the best nodes). Unlike whole cycles these do not drown in the host's noise."""
    names = [f"node-{i:05d}" for i in range(nodes)]
    index = {name: i for i, name in enumerate(names)}
    reasons = [
        Status(Code.UNSCHEDULABLE, "Insufficient cpu", plugin="NodeResourcesFit"),
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "taint", plugin="TaintToleration"),
        Status(Code.UNSCHEDULABLE, "anti-affinity", plugin="InterPodAffinity"),
    ]
    rng = np.random.default_rng(1)
    column = StatusColumn(list(reasons), rng.integers(0, 3, nodes).astype(np.intp))
    diagnosis = NodeToStatus()
    diagnosis.set_rows(names, index, (np.arange(nodes) + nodes // 3) % nodes, column)
    rows = np.sort(rng.choice(nodes, scored, replace=False)).astype(np.intp)
    raw = {f"Plugin{i}": rng.integers(0, 100, scored) for i in range(plugins)}
    normalized = {name: column.copy() for name, column in raw.items()}
    weights = dict.fromkeys(raw, 1)
    totals = sum(normalized.values(), np.zeros(scored, np.int64))
    store = ExplainStore(1000)
    pods = [make_pod(f"p{i}") for i in range(2000)]
    it = iter(pods * (repeat // 1000 + 1))

    def us(call: Callable[[], object]) -> float:
        return timeit.timeit(call, number=repeat) / repeat * 1e6

    return {
        "begin": us(lambda: store.begin(next(it), PROFILE, 0.0)),
        "verdicts": us(lambda: FilterVerdicts.of(diagnosis, names, index)),
        "raw copies": us(lambda: {k: v.copy() for k, v in raw.items()}),
        "score table": us(lambda: ScoreTable.of(names, rows, raw, normalized, weights, totals)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    configure_logging("json", 0)  # as the scheduler runs by default: no per-pod debug lines
    pieces = components(args.nodes, num_feasible_nodes_to_find(0, args.nodes))
    print("pieces (us): " + ", ".join(f"{k} {v:.1f}" for k, v in pieces.items()))
    results = run(args.nodes, args.pods, args.rounds)
    for kind in ("scheduled", "unschedulable"):
        off = statistics.median(results[f"{kind}/off"])
        on = statistics.median(results[f"{kind}/on"])
        print(
            f"{kind}: off {off * 1e3:.3f} ms, on {on * 1e3:.3f} ms per pod "
            f"({(on - off) / off * 100:+.1f} %); rounds off {results[f'{kind}/off']}, "
            f"on {results[f'{kind}/on']}"
        )
    fit, unfit = record_bytes(args.nodes, min(args.pods, 100))
    print(f"bytes per record: scheduled {fit:.0f}, unschedulable {unfit:.0f}")


if __name__ == "__main__":
    main()
