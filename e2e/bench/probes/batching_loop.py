"""In-process cost of opportunistic batching: CPU ms per scheduling cycle, gate on vs off.

    .venv/bin/python -m e2e.bench.probes.batching_loop [--nodes 1000] [--pods 1000] [--runs 3]

The `Harness` of scheduler/testing/harness.py (real cache, queue, framework and loop; fake API) runs
`schedule_one()` for N identical plain pods (100m / 500Mi, or `--cpu`) over nodes of 4 CPU /
32Gi, with
three profiles: the Harness's tiny plugins, the default plugins with `defaultingType: List`
spreading (so pods are signed), and kube-scheduler's default profile (PodTopologySpread's
system default constraints make every pod unsignable: batching only pays the signing and the
flush). Each figure is the best of `--runs` runs, gate off and on alternated; logging at
verbosity 0 into a buffer.
"""

from __future__ import annotations

import argparse
import io
import time
from typing import Any

from scheduler import metrics
from scheduler.config.load import parse_config
from scheduler.features import FeatureGates
from scheduler.framework.profile_spec import ProfileSpec
from scheduler.logging import configure_logging
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness, profile_spec


def _spec(kind: str, name: str) -> tuple[ProfileSpec, bool]:
    if kind == "harness":
        return profile_spec(name), False
    args = [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": name, "pluginConfig": args if kind == "list-spreading" else []}
        ],
    }
    return parse_config(raw, set(in_tree_registry())).profiles[0].to_spec(), True


def run(
    kind: str, batching: bool, num_nodes: int, num_pods: int, tag: str, cpu: str = "100m"
) -> tuple[float, float]:
    """CPU ms per cycle, and the share of pods placed on their hint."""
    name = f"bench-{kind}-{tag}"
    spec, in_tree = _spec(kind, name)
    features = FeatureGates({"OpportunisticBatching": batching})
    h = Harness(spec, plugins=in_tree_registry() if in_tree else None, features=features)
    try:
        for i in range(num_nodes):
            h.add_node(make_node(f"n{i:05}", cpu="4", memory="32Gi"))
        for i in range(num_pods):
            h.add_pod(
                make_pod(f"p{i:05}", cpu=cpu, memory="500Mi", scheduler_name=name, uid=f"u{i}")
            )
        # CPU time of the process (the loop and its binding workers): wall time on a shared
        # machine would measure the neighbours.
        start = time.process_time()
        for _ in range(num_pods):
            h.schedule_next()
        elapsed = time.process_time() - start
        used = metrics.REGISTRY.get_sample_value(
            "scheduler_batch_attempts_total", {"profile": name, "result": "hint_used"}
        )
        return elapsed * 1000 / num_pods, (used or 0.0) / num_pods
    finally:
        h.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--cpu", default="100m", help="each pod's cpu request (3 = one pod per 4-CPU node)"
    )
    parser.add_argument(
        "--profiles", default="harness,list-spreading,default", help="comma-separated"
    )
    opts = parser.parse_args()
    # kube-scheduler's default verbosity, lines to nowhere: the loop, not the log, is measured.
    configure_logging("json", 0, stream=io.BytesIO())
    print(
        "| profile | gate off CPU ms/cycle | gate on CPU ms/cycle | on/off | pods on their hint |"
    )
    print("| --- | --- | --- | --- | --- |")
    for kind in opts.profiles.split(","):
        best: dict[bool, float] = {False: float("inf"), True: float("inf")}
        share = 0.0
        for r in range(opts.runs):
            for batching in (False, True):  # alternated, so load changes hit both
                ms, used = run(
                    kind, batching, opts.nodes, opts.pods, f"{r}{int(batching)}", opts.cpu
                )
                best[batching] = min(best[batching], ms)
                if batching:
                    share = used
        ratio = best[True] / best[False]
        print(
            f"| {kind} | {best[False]:.3f} | {best[True]:.3f} | {ratio:.2f} | {share:.0%} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
