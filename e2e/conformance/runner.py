"""Run Kubernetes' e2e.test against one fresh local control plane with one default scheduler.

Each half gets its own control plane (so nothing of one run leaks into the other), 4
kubelet-like kwok nodes in two zones (the Multi-AZ specs need two), their per-node system
pods, and either kube-scheduler or kube-pysched as ``default-scheduler``. kwok removes a
deleted pod at once, as a kubelet does for the specs' pause and agnhost containers (they exit
on SIGTERM): with the harness' default (pods stay for their grace period) the pods of one spec
would still load the nodes during the next. Results are read
from Ginkgo's JSON report; everything (e2e.test output, scheduler and control-plane logs) is
kept in the run's directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from e2e.cluster import ControlPlane, create_kwok_nodes
from e2e.cluster.controlplane import feature_gate_flags
from e2e.cluster.e2etest import build_e2e_test
from e2e.cluster.nodes import core_v1, wait_node_agents_running
from e2e.cluster.processes import ManagedProcess
from e2e.conformance.expected import (
    EXPECTED_DRA_FAILURES,
    EXPECTED_FAILURES,
    EXPECTED_WORKLOAD_FAILURES,
    NOT_JUDGED,
)
from e2e.conformance.gate import KUBE_PYSCHED, KUBE_SCHEDULER
from e2e.conformance.report import SpecResult, focused, read_report
from e2e.pysched import Pysched, default_config

NODE_COUNT = 4
ZONE_LABEL = "topology.kubernetes.io/zone"
ZONES = ("zone-a", "zone-b")
FOCUS = r"\[sig-scheduling\]"
SKIP = r"\[Feature:OffByDefault\]|\[Alpha\]|\[Flaky\]|\[Disruptive\]"
#: Both halves run the specs in the same (Ginkgo-randomised) order.
SEED = 1337
#: A full half takes 10-12 minutes (the hostPort conformance spec waits 5 by design).
RUN_TIMEOUT = 45 * 60.0

#: The three Describes of Kubernetes' Workload API (test/e2e/scheduling/{workload,
#: gang_scheduling,workload_aware_preemption}.go), each labelled [FeatureGate:GenericWorkload]
#: (hence [Beta] [Feature:OffByDefault] on every spec); the trailing label keeps ``Workload``
#: from matching other Describes' prefixes.
WORKLOAD_FOCUS = (
    r"\[sig-scheduling\] (GangScheduling|WorkloadAwarePreemption|Workload) "
    r"\[FeatureGate:GenericWorkload\]"
)
#: Only what no selection runs: the gated, Beta and off-by-default labels are the point here.
WORKLOAD_SKIP = r"\[Flaky\]|\[Disruptive\]"

#: Kubernetes' DRA specs that need no kubelet (test/e2e/dra/dra.go, ``driver.WithKubelet =
#: false``): the test driver publishes ResourceSlices from inside e2e.test and a pod counts
#: as done once it is scheduled with its claims allocated. Every other DRA spec waits for the
#: kubelet plugin's registration or a running container (docs/conformance.md).
DRA_FOCUS = r"\[sig-node\] \[DRA\] control plane "
#: Besides the usual labels: the alpha DRAResourcePoolStatus specs (a status API of
#: kube-apiserver and kube-controller-manager) and three specs that check only the API
#: server (admission of admin access, a ResourceQuota count, per-node authorization).
DRA_SKIP = (
    r"\[Alpha\]|\[Feature:OffByDefault\]|\[Flaky\]|\[Disruptive\]"
    r"|for admin access|count/resourceclaims|must apply per-node permission checks"
)


@dataclass(frozen=True)
class Selection:
    """A set of specs, the control plane they need and the list they are judged against.

    Each selection is its own gate: specs that need an API or gate turned on run on a control
    plane with it on, without changing what the other selection runs on.
    """

    name: str
    focus: str
    skip: str
    #: kube-pysched's known failures (expected.py) and the specs shown but not judged.
    expected: Mapping[str, str]
    not_judged: Mapping[str, str] = field(default_factory=dict)
    #: ``--feature-gates`` of kube-apiserver, kube-controller-manager and both schedulers.
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: kube-apiserver's ``--runtime-config``.
    runtime_config: Mapping[str, str] = field(default_factory=dict)
    #: The report keeps only specs whose name contains this (Ginkgo lists the whole binary).
    report_filter: str = "[sig-scheduling]"
    #: Where its halves' files go below a run's directory ("" keeps the first selection's
    #: ``<run>/<scheduler>`` layout of earlier runs).
    subdir: str = ""

    def out_dir(self, run_dir: Path) -> Path:
        return run_dir / self.subdir if self.subdir else run_dir

    def pysched_args(self) -> list[str]:
        """kube-pysched's flags for the selection's gates (it rejects gates it does not know)."""
        return feature_gate_flags(self.feature_gates)


#: The sig-scheduling specs that run on a default control plane (docs/conformance.md).
SIG_SCHEDULING = Selection(
    "sig-scheduling", FOCUS, SKIP, expected=EXPECTED_FAILURES, not_judged=NOT_JUDGED
)
#: Kubernetes' Workload API specs: PodGroups, gang scheduling, workload-aware preemption.
WORKLOAD = Selection(
    "workload",
    WORKLOAD_FOCUS,
    WORKLOAD_SKIP,
    expected=EXPECTED_WORKLOAD_FAILURES,
    feature_gates={"GenericWorkload": True},
    runtime_config={"scheduling.k8s.io/v1beta1": "true"},
    subdir="workload",
)
#: Kubernetes' kubelet-less DRA specs: default components (resource.k8s.io/v1 and the DRA
#: gates they need are on by default in v1.37), as is kube-pysched's DynamicResources.
DRA = Selection(
    "dra",
    DRA_FOCUS,
    DRA_SKIP,
    expected=EXPECTED_DRA_FAILURES,
    report_filter="[DRA]",
    subdir="dra",
)
SELECTIONS = {s.name: s for s in (SIG_SCHEDULING, WORKLOAD, DRA)}


@dataclass(frozen=True)
class HalfRun:
    """One e2e.test run: its results, exit status, wall time and where its files are."""

    scheduler: str
    results: dict[str, SpecResult]
    exit_code: int | None
    seconds: float
    out_dir: Path


def e2e_args(
    kubeconfig: Path, report: Path, *, seed: int = SEED, focus: str = FOCUS, skip: str = SKIP
) -> list[str]:
    """e2e.test's flags for a cluster without cloud provider, kubelets or add-ons."""
    return [
        "--provider=skeleton",
        f"--kubeconfig={kubeconfig}",
        "--allowed-not-ready-nodes=0",
        "--minStartupPods=0",
        "--e2e-verify-service-account=false",
        "--dump-logs-on-failure=false",
        f"--ginkgo.focus={focus}",
        f"--ginkgo.skip={skip}",
        f"--ginkgo.seed={seed}",
        f"--ginkgo.json-report={report}",
        "--ginkgo.no-color",
    ]


def pysched_config() -> dict[str, object]:
    """kube-pysched with its default plugins, answering for ``default-scheduler``."""
    return default_config(profiles=[{"schedulerName": "default-scheduler"}])


def run_half(
    scheduler: str,
    out_dir: Path,
    *,
    selection: Selection = SIG_SCHEDULING,
    e2e_test: Path | None = None,
    seed: int = SEED,
    focus: str | None = None,
    skip: str | None = None,
    timeout: float = RUN_TIMEOUT,
    out: TextIO | None = None,
) -> HalfRun:
    """Start a control plane with ``scheduler`` as default scheduler, run the specs, stop.

    ``focus`` and ``skip`` narrow or widen the selection's own (None: the selection's).
    """
    if scheduler not in (KUBE_SCHEDULER, KUBE_PYSCHED):
        raise ValueError(f"unknown scheduler {scheduler!r}")
    out = out or sys.stderr
    focus = selection.focus if focus is None else focus
    skip = selection.skip if skip is None else skip
    binary = e2e_test or build_e2e_test(out=out)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "report.json"
    report.unlink(missing_ok=True)
    started = time.monotonic()
    cp = ControlPlane(
        workdir=out_dir / "cluster",
        with_scheduler=scheduler == KUBE_SCHEDULER,
        prompt_pod_deletion=True,
        feature_gates=selection.feature_gates,
        runtime_config=selection.runtime_config,
    )
    pysched: Pysched | None = None
    exit_code: int | None = None
    try:
        cp.start()
        if scheduler == KUBE_PYSCHED:
            pysched = Pysched(
                cp.kubeconfig,
                pysched_config(),
                workdir=out_dir,
                name=KUBE_PYSCHED,
                extra_args=selection.pysched_args(),
            )
            pysched.start()
        prepare_nodes(cp.kubeconfig)
        flags = e2e_args(cp.kubeconfig, report, seed=seed, focus=focus, skip=skip)
        argv = [str(binary), *flags]
        print(f"[conformance] {scheduler}: e2e.test running, log {out_dir / 'e2e.log'}", file=out)
        exit_code = _run_e2e(argv, out_dir, timeout)
        if pysched is not None and not pysched.alive():
            print(f"[conformance] kube-pysched exited during the run:\n{pysched.tail()}", file=out)
    finally:
        if pysched is not None:
            pysched.stop()
        cp.stop(remove_workdir=False)
        # Keep logs and kubeconfigs, drop the etcd data.
        shutil.rmtree(out_dir / "cluster" / "etcd", ignore_errors=True)
    results = (
        focused(read_report(report, selection.report_filter), focus) if report.is_file() else {}
    )
    return HalfRun(scheduler, results, exit_code, time.monotonic() - started, out_dir)


def prepare_nodes(kubeconfig: Path) -> None:
    """4 Ready kwok nodes, two per zone, with their per-node system pods Running."""
    api = core_v1(kubeconfig)
    names: list[str] = []
    for zone in ZONES:
        nodes = create_kwok_nodes(
            api, NODE_COUNT // len(ZONES), f"node-{zone}-", labels={ZONE_LABEL: zone}, agents=True
        )
        names += [n.metadata.name for n in nodes]
    wait_node_agents_running(api, names)


def _run_e2e(argv: Sequence[str], out_dir: Path, timeout: float) -> int | None:
    env = dict(os.environ)
    env.pop("KUBECONFIG", None)
    proc = ManagedProcess("e2e.test", argv, out_dir / "e2e.log", env=env, cwd=out_dir).start()
    try:
        code = proc.wait(timeout)
        if code is None:
            print(f"[conformance] e2e.test still running after {timeout:.0f}s; stopped it")
        return code
    finally:
        proc.stop()
