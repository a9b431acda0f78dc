"""In-process garbage collection pauses of a large cluster's cache, GC policy on or off.

    .venv/bin/python -m e2e.bench.gc_loop [--nodes 5000] [--pods 6000] [--rounds 10] [--policy]

Builds a real Cache of `--nodes` nodes and `--pods` assigned pods (parsed from JSON, as the
informers build them), then runs `--rounds` rounds of churn as a live cluster sends it: every
node replaced by an update (status heartbeats), a sixth of the pods deleted and as many created.
Prints the full collections (generation 2) during the churn: how many, the longest, the total,
and the loop's CPU time. With `--policy`, scheduler.gc_pauses' policy runs as in kube-pysched
(the synced heap frozen, then each full collection's survivors; complete collections when the
frozen heap doubles, checked once a round). Run each mode in its own process.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from scheduler.backend.cache import Cache, Snapshot
from scheduler.gc_pauses import GcPolicy
from scheduler.testing import make_node, make_pod


class FullPauses:
    """gc.callbacks hook recording each full collection's duration."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif info["generation"] == 2:
            self.pauses.append(time.perf_counter() - self._started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--policy", action="store_true")
    args = parser.parse_args()

    cache, snapshot = Cache(), Snapshot()
    nodes = {f"n{i:05}": make_node(f"n{i:05}", cpu="32", memory="256Gi") for i in range(args.nodes)}
    for node in nodes.values():
        cache.add_node(node)
    names = list(nodes)
    pods = {}
    for i in range(args.pods):
        pod = make_pod(
            f"p{i:06}", uid=f"u{i}", cpu="100m", memory="100Mi", node_name=names[i % len(names)]
        )
        cache.add_pod(pod)
        pods[pod.uid] = pod
    cache.update_snapshot(snapshot)

    policy = GcPolicy(check_seconds=1e9)  # checked once a round below
    if args.policy:
        policy.install()
        frozen = policy.freeze_synced_heap()
    else:
        gc.collect()
        frozen = 0
    hook = FullPauses()
    gc.callbacks.append(hook)
    next_uid = args.pods
    cpu_start = time.process_time()
    for _ in range(args.rounds):
        for name, old in list(nodes.items()):
            new = make_node(name, cpu="32", memory="256Gi")
            cache.update_node(old, new)
            nodes[name] = new
        for uid in list(pods)[: args.pods // 6]:
            cache.remove_pod(pods.pop(uid))
            node = names[next_uid % len(names)]
            pod = make_pod(
                f"p{next_uid:06}", uid=f"u{next_uid}", cpu="100m", memory="100Mi", node_name=node
            )
            cache.add_pod(pod)
            pods[pod.uid] = pod
            next_uid += 1
        cache.update_snapshot(snapshot)
        if args.policy:
            policy.check()
    cpu = time.process_time() - cpu_start
    gc.callbacks.remove(hook)
    policy.release()
    pauses = hook.pauses
    print(
        f"policy={'on' if args.policy else 'off'} nodes={args.nodes} pods={args.pods} "
        f"rounds={args.rounds} frozen_at_sync={frozen}: full collections {len(pauses)}, "
        f"longest {1000 * max(pauses, default=0.0):.1f} ms, total {1000 * sum(pauses):.1f} ms, "
        f"loop CPU {cpu:.2f} s; each (ms): {' '.join(f'{1000 * p:.1f}' for p in pauses)}"
    )


if __name__ == "__main__":
    main()
