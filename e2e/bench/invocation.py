"""One invocation's runs in turn: each on its control plane, recorded, written and printed.

Without a shared control plane each run has one of its own, started for it and stopped after
it: every scheduler meets a fresh API server and etcd, whatever ran before, and no run waits
for the deletion of its objects (at 5000 nodes that took as long as the setup). With one, every
run uses it and deletes its objects for the next; after a cleanup that failed, the runs left
are not run (their scheduler would see the earlier run's pods and nodes: not comparable).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from e2e.bench.options import RunOptions
from e2e.bench.record import RunRecord, to_json
from e2e.bench.report import load_average, machine_facts, one_line
from e2e.bench.runner import Run
from e2e.bench.schedulers import authenticated_user
from e2e.cluster import ControlPlane
from e2e.cluster.controlplane import (
    BENCH_NODE_LEASE_DURATION_SECONDS,
    BENCH_NODE_MONITOR_GRACE_PERIOD,
)

#: A control plane handed to every run, or a factory that starts none yet (one per run).
ControlPlanes = ControlPlane | Callable[[], ControlPlane]
#: Fills a record in by running it (a record already `skipped` is not run).
Execute = Callable[[RunRecord], None]


def bench_control_plane(**options: Any) -> ControlPlane:
    """A control plane for benchmark runs (not started): kwok renews its node Leases once an
    hour (BENCH_NODE_LEASE_DURATION_SECONDS), so the windows carry no renewals, and its node
    lifecycle controller waits two hours before tainting a silent node."""
    return ControlPlane(
        with_scheduler=False,
        node_monitor_grace_period=BENCH_NODE_MONITOR_GRACE_PERIOD,
        node_lease_duration_seconds=BENCH_NODE_LEASE_DURATION_SECONDS,
        **options,
    )


def run_in_turn(runs: Iterable[tuple[RunRecord, Execute]], options: RunOptions) -> list[RunRecord]:
    """Executes each (record, execute) in order, completing, writing and printing (one_line)
    its record; `runs` is read one at a time, so each record's `started` is its own."""
    options.results_dir.mkdir(parents=True, exist_ok=True)
    machine = machine_facts()
    leftover: str | None = None
    records: list[RunRecord] = []
    for record, execute in runs:
        before = load_average()
        if record.skipped is None and leftover is not None:
            record.failed = f"not run: an earlier run's pods and nodes stayed ({leftover})"
        elif record.skipped is None:
            execute(record)
            leftover = record.cleanup_failed
        record.machine = machine
        # Other users of the machine show here: the figures are only worth comparing when
        # both stayed low (the invocation's start is also in machine).
        record.load_average = {"before": before, "after": load_average()}
        record.command = options.command
        record.write(options.results_dir)
        records.append(record)
        print(one_line(to_json(record)), flush=True)
    return records


def run_on_control_plane(
    record: RunRecord,
    control_plane: ControlPlanes,
    make_run: Callable[..., Run],
) -> None:
    """Executes the run `make_run(cp, cleanup=...)` gives and completes `record` (record_run). A
    shared control plane is used as it is, and the run deletes its objects for the next one;
    from a factory the run gets a control plane of its own, started for it and
    stopped after it, with no cleanup. A control plane that does not start is this run's
    failure, not the invocation's."""
    if isinstance(control_plane, ControlPlane):
        record.control_plane = "shared"
        record.node_lease_seconds = control_plane.node_lease_duration_seconds
        record_run(make_run(control_plane, cleanup=True), record)
        return
    record.control_plane = "own"
    try:
        cp = control_plane()
        record.node_lease_seconds = cp.node_lease_duration_seconds
        cp.start()
    except Exception as err:  # one broken run must not lose the runs after it
        record.failed = f"control plane did not start: {type(err).__name__}: {err}"
        return
    try:
        record_run(make_run(cp, cleanup=False), record)
    finally:
        cp.stop()


def record_run(run: Run, record: RunRecord) -> None:
    """Executes `run` and completes its `record`: figures (or why it failed), phases, and where
    its log is."""
    record.mode = run.options.mode
    record.pending_pods = run.options.pending_pods or None
    record.create_qps = run.options.create_qps
    try:
        record.figures = run.execute()
    except Exception as err:  # one broken run must not lose the runs after it
        traceback.print_exc()
        record.failed = f"failed: {type(err).__name__}: {err}"
    record.cleanup_failed = run.cleanup_error
    record.phases_seconds = run.phases
    if record.failed is not None:
        return
    record.run_id = run.run_id
    record.scheduler_log = str(run.scheduler_log)
    # Asked after the window, so the review is not among the measured requests.
    try:
        record.scheduler_user = authenticated_user(run.cp.scheduler_kubeconfig)
    except (ApiException, HTTPError, OSError) as err:
        print(f"warning: could not ask who the scheduler ran as: {err}", file=sys.stderr)
    record.watch_errors = run.watch_errors or None
    record.pinning = run.pinning
