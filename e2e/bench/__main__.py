"""`python -m e2e.bench`: scheduler_perf-style workloads, kube-scheduler beside kube-pysched.

    python -m e2e.bench --workload SchedulingBasic --size 1000
    python -m e2e.bench --workload all --size small --scheduler kube-pysched
    python -m e2e.bench --workload SchedulingBasic,MixedChurn --size 1000 --repeat 3
    python -m e2e.bench --workload SchedulingGangs --size 1000   # the gang benchmark

Each workload runs once per scheduler (kube-scheduler first), each run on a control plane of
its own; `--repeat N` runs every pair N times. A gang workload runs alone (gangs.py). A table
goes to the terminal and one JSON per run to bench-results/ (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Iterator
from functools import partial

from e2e.bench.gangs import run_gang_workload
from e2e.bench.invocation import (
    ControlPlanes,
    Execute,
    bench_control_plane,
    run_in_turn,
    run_on_control_plane,
)
from e2e.bench.options import DEFAULT_OPTIONS, RunOptions
from e2e.bench.pinning import CapacityError, capacity_cpus
from e2e.bench.record import RunRecord, to_json
from e2e.bench.report import gang_table, repeat_table, table
from e2e.bench.runner import Run
from e2e.bench.schedulers import (
    KUBE_PYSCHED,
    SCHEDULER_PLUGINS,
    SCHEDULERS,
    scheduler_config,
    unsupported_reason,
)
from e2e.bench.workload import gang_names, load_workloads, ordered_names
from e2e.cluster import ControlPlane, build
from e2e.cluster.build import ensure_scheduler_plugins

PREEMPTION = "DefaultPreemption"


def run_workloads(
    names: list[str],
    size_name: str,
    schedulers: list[str],
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    control_plane: ControlPlane | None = None,
    new_control_plane: Callable[[], ControlPlane] = bench_control_plane,
) -> list[RunRecord]:
    """Runs every (workload, scheduler) pair in order, `options.repeat` rounds of them (a round
    runs every workload once, so a run cut short still has each workload); one record per
    pair, also as JSON. With more than one round each record names its round (`repeat`).
    Each run has a control plane of its own or uses `control_plane` (invocation.py)."""
    workloads = load_workloads()
    planes: ControlPlanes = control_plane or new_control_plane

    def runs() -> Iterator[tuple[RunRecord, Execute]]:
        for round_no in range(1, options.repeat + 1):
            for name in names:
                workload = workloads[name]
                size, repeated = workload.sizes[size_name], options.repeat > 1
                for which in schedulers:
                    skipped = unsupported_reason(workload) if which == KUBE_PYSCHED else None
                    record = RunRecord(
                        name,
                        size_name,
                        which,
                        nodes=size.nodes,
                        init_pods=size.init_pods,
                        config=scheduler_config(workload),
                        skipped=skipped,
                        repeat=round_no if repeated else None,
                        repeats=options.repeat if repeated else None,
                    )
                    run = partial(Run, workload=workload, size=size, which=which, options=options)
                    yield record, partial(run_on_control_plane, control_plane=planes, make_run=run)

    return run_in_turn(runs(), options)


def main(argv: list[str] | None = None) -> int:
    workloads = load_workloads()
    names_all = ordered_names(workloads)
    gangs = gang_names(workloads)
    size_names = {s for w in workloads.values() for s in w.sizes}  # named first, then by nodes
    sizes = sorted(size_names, key=lambda n: (int(n), n) if n.isdigit() else (-1, n))
    parser = argparse.ArgumentParser(prog="python -m e2e.bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--workload",
        default="all",
        help=f"comma-separated names or 'all': {', '.join(names_all)}; or one gang workload, "
        f"alone: {', '.join(gangs)}",
    )
    parser.add_argument("--size", default="small", choices=sizes)
    parser.add_argument(
        "--scheduler",
        default="both",
        choices=("both", *SCHEDULERS, SCHEDULER_PLUGINS),
        help="'both': every scheduler of the workload (a gang workload's: all three); "
        f"{SCHEDULER_PLUGINS} runs gang workloads only",
    )
    RunOptions.add_flags(parser)
    args = parser.parse_args(argv)
    command = "python -m e2e.bench " + " ".join(sys.argv[1:] if argv is None else argv)
    try:
        options = RunOptions.from_args(args, command)
        if options.capacity:
            capacity_cpus()
    except (ValueError, CapacityError) as err:
        parser.error(str(err))
    names = names_all if args.workload == "all" else args.workload.split(",")
    unknown = [n for n in names if n not in workloads]
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(unknown)}")
    sizeless = [
        f"{n} (sizes {', '.join(workloads[n].sizes)})"
        for n in names
        if args.size not in workloads[n].sizes
    ]
    if sizeless:
        parser.error(f"no size {args.size} in {'; '.join(sizeless)}")
    preempting = [n for n in names if PREEMPTION in workloads[n].requires]
    if (options.pending_pods or options.capacity) and preempting:
        flag = "--pending-pods" if options.pending_pods else "--capacity"
        parser.error(
            f"{flag}: {', '.join(preempting)} preempt; a pod evicted while kwok ignores it "
            "would stay Terminating (kwok plays no pod-delete stage for it)"
        )
    gang = [n for n in names if n in gangs]
    if gang and (
        len(names) > 1 or options.repeat > 1 or options.drains_backlog or options.pending_pods
    ):
        parser.error(
            f"{gang[0]} runs alone, live, once (no --backlog, --capacity, --repeat or "
            "--pending-pods)"
        )
    if not gang and args.scheduler == SCHEDULER_PLUGINS:
        parser.error(f"{SCHEDULER_PLUGINS} runs gang workloads only ({', '.join(gangs)})")
    every = (*SCHEDULERS, SCHEDULER_PLUGINS) if gang else SCHEDULERS
    schedulers = list(every) if args.scheduler == "both" else [args.scheduler]
    # Ctrl-C and SIGTERM (also when started in the background) unwind through the cleanup:
    # the running run's control plane is stopped.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    build()
    if gang:
        if SCHEDULER_PLUGINS in schedulers:
            # Built first (once, cached), so a build failure stops the benchmark before any
            # cluster is started.
            ensure_scheduler_plugins()
        records = run_gang_workload(workloads[gang[0]], args.size, schedulers, options)
        tables = [gang_table([to_json(r) for r in records])]
    else:
        records = run_workloads(names, args.size, schedulers, options)
        saved = [to_json(r) for r in records]
        tables = [table(saved), repeat_table(saved)]
    print("\n" + "\n\n".join(t for t in tables if t))
    print(f"\nJSON per run in {options.results_dir}")
    return 1 if any(r.failed is not None for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
