"""The benchmark harness works end to end at the small size (figures are reported, not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e.bench.__main__ import load_workloads, run_workloads, table
from e2e.cluster import ControlPlane

SUPPORTED = [n for n, w in load_workloads()["workloads"].items() if not w.get("unsupported")]


def test_every_supported_workload_binds_every_measured_pod_with_both_schedulers(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    records = run_workloads(
        SUPPORTED,
        "small",
        ["kube-scheduler", "kube-pysched"],
        control_plane=local_control_plane,
        results_dir=tmp_path,
        deadline=120,
    )
    assert len(records) == 2 * len(SUPPORTED)
    for record in records:
        figures = record["figures"]
        assert figures["unscheduled_pods"] == 0, record
        assert figures["bound_pods"] == figures["measured_pods"] == 60
        assert figures["peak_rss_mib"] > 0 and figures["cpu_seconds"] >= 0
        assert json.loads(Path(record["json"]).read_text())["figures"] == figures
    rendered = table(records)
    for name in SUPPORTED:
        assert f"{name}" in rendered
    assert rendered.count("ratio py/ks") == len(SUPPORTED)


def test_unsupported_workloads_are_reported_not_failed(
    local_control_plane: ControlPlane, tmp_path: Path
) -> None:
    records = run_workloads(
        ["PreemptionBasic"],
        "small",
        ["kube-pysched"],
        control_plane=local_control_plane,
        results_dir=tmp_path,
    )
    assert records[0]["skipped"].startswith("not supported yet")


@pytest.mark.parametrize("name", SUPPORTED)
def test_workload_names_are_scheduler_perf_names(name: str) -> None:
    assert name in {"SchedulingBasic", "SchedulingNodeAffinity", "Unschedulable", "MixedChurn"}
