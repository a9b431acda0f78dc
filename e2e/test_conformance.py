"""CI's half of the conformance gate: Kubernetes' [sig-scheduling] specs with kube-pysched.

kube-pysched runs as ``default-scheduler`` on its own control plane (without kube-scheduler)
and must pass every spec except those listed in e2e/conformance/expected.py; a listed spec
that passes fails the test too, so the list only ever shrinks. ``make conformance`` runs the
kube-scheduler half beside it and prints the comparison table (docs/conformance.md).
e2e.test is built in conftest's ``pytest_collection_finish``, outside this test's timeout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from e2e.cluster.e2etest import e2e_test_path
from e2e.conformance.gate import KUBE_PYSCHED, evaluate, table
from e2e.conformance.runner import run_half

pytestmark = [
    pytest.mark.e2e_test_binary,
    # A run takes 10-12 minutes (one spec waits 5 by design); slower on busy CI cores.
    pytest.mark.timeout(40 * 60),
    pytest.mark.skipif(
        bool(os.environ.get("KUBECONFIG")),
        reason="kube-pysched must be the cluster's default-scheduler: needs a local control "
        "plane without kube-scheduler, not $KUBECONFIG's cluster",
    ),
]


def test_kube_pysched_passes_sig_scheduling(tmp_path: Path) -> None:
    run = run_half(KUBE_PYSCHED, tmp_path / KUBE_PYSCHED, e2e_test=e2e_test_path())
    assert run.results, f"e2e.test reported nothing (exit {run.exit_code}); see {run.out_dir}"
    verdict = evaluate(run.results, None)
    details = "\n".join(verdict.messages())
    assert verdict.ok, f"{details}\n\n{table({KUBE_PYSCHED: run.results})}\nlogs: {run.out_dir}"
