"""`python -m e2e.bench`: scheduler_perf-style workloads, kube-scheduler beside kube-pysched.

    python -m e2e.bench --workload SchedulingBasic --size 1000
    python -m e2e.bench --workload all --size small --scheduler kube-pysched --profile

Each workload runs once per scheduler (kube-scheduler first), one scheduler at a time, on one
local control plane with fresh nodes and namespaces. Figures come from a pod watch and /proc.
A table goes to the terminal and one JSON per run to bench-results/ (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from e2e.bench.pinning import CapacityError, capacity_cpus
from e2e.bench.report import REPO_ROOT, machine_facts, one_line, table, write_record
from e2e.bench.runner import Run
from e2e.bench.schedulers import KUBE_PYSCHED, SCHEDULERS, scheduler_config, unsupported_reason
from e2e.bench.workload import Workload, load_workloads, ordered_names
from e2e.cluster import ControlPlane, build

RESULTS_DIR = REPO_ROOT / "bench-results"
DEFAULT_DEADLINE = 900.0


def run_workloads(
    names: list[str],
    size_name: str,
    schedulers: list[str],
    *,
    profile: bool = False,
    deadline: float = DEFAULT_DEADLINE,
    control_plane: ControlPlane | None = None,
    results_dir: Path = RESULTS_DIR,
    command: str = "",
    backlog: bool = False,
    capacity: bool = False,
    create_qps: float | None = None,
) -> list[dict[str, Any]]:
    """Runs every (workload, scheduler) pair in order; one record per pair, also as JSON."""
    workloads = load_workloads()
    results_dir.mkdir(parents=True, exist_ok=True)
    cp = control_plane or ControlPlane(with_scheduler=False).start()
    records: list[dict[str, Any]] = []
    machine = machine_facts()
    leftover: str | None = None
    try:
        for name in names:
            workload = workloads[name]
            for which in schedulers:
                load_before = _load_average()
                if leftover is None:
                    record = _run_one(
                        workload,
                        size_name,
                        which,
                        cp,
                        results_dir,
                        profile,
                        deadline,
                        backlog,
                        capacity=capacity,
                        create_qps=create_qps,
                    )
                    leftover = record.get("cleanup_failed")
                else:
                    # Its scheduler would see the earlier run's pods and nodes: not comparable.
                    record = _not_run(workload, size_name, which, leftover)
                record["machine"] = machine
                # Other users of the machine show here: the figures are only worth comparing
                # when both stayed low (the invocation's start is also in machine).
                record["load_average"] = {"before": load_before, "after": _load_average()}
                record["command"] = command
                record["json"] = str(write_record(record, results_dir))
                records.append(record)
                print(one_line(record), flush=True)
    finally:
        if control_plane is None:
            cp.stop()
    return records


def _run_one(
    workload: Workload,
    size_name: str,
    which: str,
    cp: ControlPlane,
    results_dir: Path,
    profile: bool,
    deadline: float,
    backlog: bool = False,
    *,
    capacity: bool = False,
    create_qps: float | None = None,
) -> dict[str, Any]:
    size = workload.sizes[size_name]
    record: dict[str, Any] = {
        "workload": workload.name,
        "size": size_name,
        "scheduler": which,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nodes": size.nodes,
        "init_pods": size.init_pods,
        "config": scheduler_config(workload),
    }
    reason = unsupported_reason(workload)
    if reason is not None and which == KUBE_PYSCHED:
        record["skipped"] = reason
        return record
    run = Run(
        cp,
        workload,
        size,
        which,
        workdir=results_dir,
        deadline=deadline,
        profile=profile and which == KUBE_PYSCHED,
        backlog=backlog,
        capacity=capacity,
        create_qps=create_qps,
    )
    record["mode"] = run.mode
    if create_qps is not None:
        record["create_qps"] = create_qps
    try:
        record["figures"] = run.execute()
    except Exception as err:  # one broken run must not lose the runs after it
        traceback.print_exc()
        record["failed"] = f"failed: {type(err).__name__}: {err}"
    if run.cleanup_error is not None:
        record["cleanup_failed"] = run.cleanup_error
    record["phases_seconds"] = run.phases
    if "failed" in record:
        return record
    record["run_id"] = run.run_id
    record["scheduler_log"] = str(run.scheduler_log)
    if run.watch_errors:
        record["watch_errors"] = run.watch_errors
    if run.profile_path is not None:
        record["profile"] = str(run.profile_path)
    if run.pinning is not None:
        record["pinning"] = run.pinning
    return record


def _not_run(workload: Workload, size_name: str, which: str, leftover: str) -> dict[str, Any]:
    return {
        "workload": workload.name,
        "size": size_name,
        "scheduler": which,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "failed": f"not run: an earlier run's pods and nodes could not be deleted ({leftover})",
    }


def main(argv: list[str] | None = None) -> int:
    workloads = load_workloads()
    names_all = ordered_names(workloads)
    sizes = sorted({s for w in workloads.values() for s in w.sizes}, key=_size_order)
    parser = argparse.ArgumentParser(prog="python -m e2e.bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--workload", default="all", help=f"comma-separated names or 'all': {', '.join(names_all)}"
    )
    parser.add_argument("--size", default="small", choices=sizes)
    parser.add_argument("--scheduler", default="both", choices=("both", *SCHEDULERS))
    parser.add_argument(
        "--profile", action="store_true", help="sample kube-pysched with py-spy during each run"
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE,
        help="seconds to wait for the measured pods; pods still unbound count as unscheduled",
    )
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="folder for the JSON")
    parser.add_argument(
        "--backlog",
        action="store_true",
        help="create every measured pod before the scheduler starts and measure the drain rate",
    )
    parser.add_argument(
        "--capacity",
        action="store_true",
        help="backlog mode with the control plane and this harness pinned to one CPU, the "
        "scheduler to another, and kwok leaving the pods alone: the scheduler's own drain rate",
    )
    parser.add_argument(
        "--create-qps",
        type=float,
        metavar="N",
        help="create the measured pods at a steady N per second (a monotonic-clock schedule) "
        "instead of as fast as the API server takes them",
    )
    args = parser.parse_args(argv)
    if args.create_qps is not None and args.create_qps <= 0:
        parser.error("--create-qps must be positive")
    if args.create_qps is not None and (args.backlog or args.capacity):
        parser.error("--create-qps paces live runs; it does not combine with --backlog/--capacity")
    if args.capacity:
        try:
            capacity_cpus()
        except CapacityError as err:
            parser.error(str(err))
    names = names_all if args.workload == "all" else args.workload.split(",")
    unknown = [n for n in names if n not in workloads]
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(unknown)}")
    schedulers = list(SCHEDULERS) if args.scheduler == "both" else [args.scheduler]
    # Ctrl-C and SIGTERM (also when started in the background) unwind through the cleanup:
    # the run's objects are deleted and the control plane is stopped.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    build()
    records = run_workloads(
        names,
        args.size,
        schedulers,
        profile=args.profile,
        deadline=args.deadline,
        results_dir=args.results,
        backlog=args.backlog,
        capacity=args.capacity,
        create_qps=args.create_qps,
        command="python -m e2e.bench " + " ".join(sys.argv[1:] if argv is None else argv),
    )
    print()
    print(table(records))
    print(f"\nJSON per run in {args.results}")
    for r in records:
        if "profile" in r:
            print(f"profile of {r['workload']}: {r['profile']}")
    failed = [r for r in records if "failed" in r]
    return 1 if failed else 0


def _load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _size_order(name: str) -> tuple[int, str]:
    return (int(name), name) if name.isdigit() else (-1, name)


if __name__ == "__main__":
    sys.exit(main())
