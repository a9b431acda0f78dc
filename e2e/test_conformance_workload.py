"""CI's half of the conformance gate's workload selection: Kubernetes' Workload API specs
(GangScheduling, WorkloadAwarePreemption, Workload) with kube-pysched.

Its own control plane with GenericWorkload on (kube-apiserver, kube-controller-manager) and
scheduling.k8s.io/v1beta1 served, kube-pysched started with
``--feature-gates=GenericWorkload=true`` as ``default-scheduler``; it must pass every spec
except those in ``EXPECTED_WORKLOAD_FAILURES`` (e2e/conformance/expected.py), and a listed
spec that passes fails the test, so the list only shrinks. ``make conformance`` runs the
kube-scheduler half beside it (docs/conformance.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.cluster.e2etest import e2e_test_path
from e2e.conformance.gate import KUBE_PYSCHED, evaluate, table
from e2e.conformance.runner import WORKLOAD, run_half

pytestmark = [
    pytest.mark.e2e_test_binary,
    # Each expected failure waits out e2e's 5-minute pod start timeout (docs/conformance.md).
    pytest.mark.timeout(45 * 60),
    pytest.mark.skipif(
        bool(os.environ.get("KUBECONFIG")),
        reason="kube-pysched must be the cluster's default-scheduler, with GenericWorkload on "
        "the API server: needs a local control plane, not $KUBECONFIG's cluster",
    ),
]


def test_kube_pysched_passes_the_workload_api_specs(tmp_path: Path) -> None:
    run = run_half(
        KUBE_PYSCHED, tmp_path / KUBE_PYSCHED, selection=WORKLOAD, e2e_test=e2e_test_path()
    )
    assert run.results, f"e2e.test reported nothing (exit {run.exit_code}); see {run.out_dir}"
    verdict = evaluate(run.results, None, WORKLOAD.expected, not_judged=WORKLOAD.not_judged)
    details = "\n".join(verdict.messages())
    shown = table({KUBE_PYSCHED: run.results}, WORKLOAD.expected, WORKLOAD.not_judged)
    assert verdict.ok, f"{details}\n\n{shown}\nlogs: {run.out_dir}"
