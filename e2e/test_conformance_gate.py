"""The conformance gate's rules on made-up results (no cluster needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from e2e.conformance.expected import (
    EXPECTED_DRA_FAILURES,
    EXPECTED_FAILURES,
    EXPECTED_WORKLOAD_FAILURES,
)
from e2e.conformance.gate import KUBE_PYSCHED, KUBE_SCHEDULER, evaluate, table
from e2e.conformance.report import SpecResult, first_line, focused, read_report
from e2e.conformance.runner import DRA, SIG_SCHEDULING, WORKLOAD, Selection

LISTED = "[sig-scheduling] A listed spec"
OTHER = "[sig-scheduling] Another spec"
EXPECTED = {LISTED: "PodTopologySpread: why"}


def _r(name: str, state: str, reason: str = "") -> SpecResult:
    return SpecResult(name, state, reason, 1.0)


def test_listed_failure_is_fine_and_unlisted_failure_is_not() -> None:
    ok = evaluate(
        {LISTED: _r(LISTED, "failed"), OTHER: _r(OTHER, "passed")}, None, EXPECTED, not_judged={}
    )
    assert ok.ok
    bad = evaluate(
        {LISTED: _r(LISTED, "failed"), OTHER: _r(OTHER, "failed")}, None, EXPECTED, not_judged={}
    )
    assert bad.unexpected_failures == [OTHER]
    assert not bad.ok


def test_not_judged_specs_decide_nothing_either_way() -> None:
    results = {LISTED: _r(LISTED, "failed"), OTHER: _r(OTHER, "failed")}
    assert evaluate(results, None, EXPECTED, not_judged={OTHER: "X: why"}).ok
    results[OTHER] = _r(OTHER, "passed")
    assert evaluate(results, None, EXPECTED, not_judged={OTHER: "X: why"}).ok


def test_a_listed_spec_that_passes_asks_to_shrink_the_list() -> None:
    verdict = evaluate({LISTED: _r(LISTED, "passed")}, None, EXPECTED, not_judged={})
    assert verdict.now_passing == [LISTED]
    assert any("shrink" in line for line in verdict.messages())


def test_stale_entries_and_reference_failures_fail_the_gate() -> None:
    verdict = evaluate(
        {OTHER: _r(OTHER, "passed")}, {OTHER: _r(OTHER, "failed")}, EXPECTED, not_judged={}
    )
    assert verdict.listed_not_run == [LISTED]
    assert verdict.reference_failures == [OTHER]
    narrow = evaluate(
        {OTHER: _r(OTHER, "passed")}, None, EXPECTED, not_judged={}, full_selection=False
    )
    assert narrow.ok


def test_report_keeps_only_the_focused_its_and_table_shows_reasons(tmp_path: Path) -> None:
    def spec(texts: list[str], leaf: str, state: str, message: str = "") -> dict[str, object]:
        return {
            "ContainerHierarchyTexts": texts,
            "LeafNodeText": leaf,
            "LeafNodeType": "It",
            "State": state,
            "RunTime": 2_000_000_000,
            "Failure": {"Message": message} if message else None,
        }

    path = tmp_path / "report.json"
    specs = [
        spec(["[sig-scheduling] A"], "listed spec", "failed", "\none victim\nmore"),
        spec(["[sig-scheduling] Another"], "spec", "passed"),
        spec(["[sig-apps] X"], "y", "skipped"),
        {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed"},
    ]
    path.write_text(json.dumps([{"SpecReports": specs}]))
    results = read_report(path)
    assert sorted(results) == [LISTED, OTHER]
    assert results[LISTED].reason == "one victim"
    assert first_line("Timed out after 80.000s.\nexpected at most 3 pods\n  - x") == (
        "Timed out after 80.000s. expected at most 3 pods"
    )
    consistently = (
        "Failed after 1.005s.\nExpected\n    <v1.PodPhase>: Running\nto equal\n"
        "    <v1.PodPhase>: Pending"
    )
    assert first_line(consistently) == (
        "Failed after 1.005s. Expected <v1.PodPhase>: Running to equal <v1.PodPhase>: Pending"
    )
    text = table({KUBE_SCHEDULER: results, KUBE_PYSCHED: results}, EXPECTED, {})
    assert "expected: kube-pysched: one victim" in text
    assert "| **passed / ran** | 1/2 | 1/2 |  |" in text


#: The Workload API specs of v1.37.2 as e2e.test names them (framework.WithFeatureGate adds
#: [FeatureGate:GenericWorkload] to the Describe and [Beta] [Feature:OffByDefault] to the leaf).
_GATE = "[FeatureGate:GenericWorkload]"
_BETA = "[Beta] [Feature:OffByDefault]"
WORKLOAD_SPECS = [
    f"[sig-scheduling] GangScheduling {_GATE} should schedule pods only when quorum is reached "
    f"{_BETA}",
    f"[sig-scheduling] GangScheduling {_GATE} should schedule pods with basic scheduling policy "
    f"{_BETA}",
    f"[sig-scheduling] Workload {_GATE} CRUD Tests PodGroup API availability {_BETA}",
    f"[sig-scheduling] Workload {_GATE} CRUD Tests Workload API availability {_BETA}",
    *(
        f"[sig-scheduling] WorkloadAwarePreemption {_GATE} workload-aware preemption {leaf} {_BETA}"
        for leaf in (
            "should preempt entire group with All disruption mode by a pod group",
            "should preempt partial group with Single disruption mode by a pod group",
            "should preempt partial group with Single disruption mode by an individual pod",
        )
    ),
]
#: Specs of the first selection and near misses the workload focus must not take.
OTHER_SPECS = [
    "[sig-scheduling] SchedulerPreemption validates basic preemption works [Conformance] [Serial]",
    "[sig-scheduling] SchedulerPreemption validates various priority Pods preempt expectedly "
    "with the async preemption [Feature:SchedulerAsyncPreemption] "
    "[FeatureGate:SchedulerAsyncPreemption] [Beta] [Serial]",
    "[sig-scheduling] LimitRange should list, patch and delete a LimitRange by collection "
    "[Conformance]",
    f"[sig-apps] Job {_GATE} should create a Workload for a Job {_BETA}",
    f"[sig-scheduling] WorkloadSomethingElse {_GATE} x {_BETA}",
]


def _selects(selection: Selection, name: str) -> bool:
    """Ginkgo's rule: focus found anywhere in the name and skip nowhere (Go regexp, which
    agrees with Python's re on these patterns)."""
    return bool(re.search(selection.focus, name)) and not re.search(selection.skip, name)


def test_the_workload_selection_runs_exactly_the_three_describes() -> None:
    assert [n for n in WORKLOAD_SPECS if not _selects(WORKLOAD, n)] == []
    assert [n for n in OTHER_SPECS if _selects(WORKLOAD, n)] == []
    # Disjoint: the first selection still skips every one of them (Feature:OffByDefault).
    assert [n for n in WORKLOAD_SPECS if _selects(SIG_SCHEDULING, n)] == []
    assert all(_selects(SIG_SCHEDULING, n) for n in OTHER_SPECS[:3])
    # Its table keeps only its own specs; the first selection's keeps its skipped gated ones.
    report = {n: _r(n, "skipped") for n in [*WORKLOAD_SPECS, *OTHER_SPECS]}
    assert sorted(focused(report, WORKLOAD.focus)) == sorted(WORKLOAD_SPECS)
    assert set(WORKLOAD_SPECS) <= set(focused(report, SIG_SCHEDULING.focus))


def test_each_list_names_only_specs_of_its_own_selection() -> None:
    """A name pasted into the wrong list would be reported stale only after a full run."""
    assert all(_selects(WORKLOAD, n) for n in EXPECTED_WORKLOAD_FAILURES)
    assert not any(_selects(SIG_SCHEDULING, n) for n in EXPECTED_WORKLOAD_FAILURES)
    assert not any(_selects(WORKLOAD, n) for n in EXPECTED_FAILURES)
    assert set(EXPECTED_WORKLOAD_FAILURES) <= set(WORKLOAD_SPECS)


def test_the_workload_selection_turns_the_api_on_for_every_component(tmp_path: Path) -> None:
    assert WORKLOAD.feature_gates == {"GenericWorkload": True}
    assert WORKLOAD.runtime_config == {"scheduling.k8s.io/v1beta1": "true"}
    assert WORKLOAD.pysched_args() == ["--feature-gates=GenericWorkload=true"]
    assert WORKLOAD.out_dir(tmp_path) == tmp_path / "workload"
    # The first selection: default components, earlier runs' directory layout.
    assert SIG_SCHEDULING.pysched_args() == []
    assert not SIG_SCHEDULING.runtime_config
    assert SIG_SCHEDULING.out_dir(tmp_path) == tmp_path


_CP = "[sig-node] [DRA] control plane"
_STATUS = "[FeatureGate:DRAResourceClaimDeviceStatus]"
#: Some of the kubelet-less DRA specs of v1.37.2, as e2e.test names them.
DRA_SPECS = [
    f"{_CP} supports claim and class parameters",
    f"{_CP} with different ResourceSlices keeps pod pending because of CEL runtime errors",
    f"{_CP} with node-local resources uses all resources",
    f"{_CP} truncates the name of a generated resource claim",
    f"{_CP} must be possible for a node ServiceAccount to update the node "
    f"ResourceClaim.Status.Devices once allocated {_STATUS}",
]
#: DRA specs the selection leaves out: kubelet, alpha, API-server only, and the CRUD specs.
DRA_LEFT_OUT = [
    "[sig-node] [DRA] kubelet [Feature:DynamicResourceAllocation] on single node supports "
    "claim and class parameters",
    f"{_CP} [FeatureGate:DRAResourcePoolStatus] should reflect allocated devices after pod is "
    "scheduled [Alpha] [Feature:OffByDefault] [FeatureGate:DynamicResourceAllocation]",
    f"{_CP} validate ResourceClaimTemplate and ResourceClaim for admin access",
    f"{_CP} supports count/resourceclaims.resource.k8s.io ResourceQuota",
    f"{_CP} must apply per-node permission checks",
    "[sig-node] [DRA] CRUD Tests resource.k8s.io/v1 ResourceClaim [Conformance]",
    "[sig-node] [DRA] ResourceSlice Controller creates slices",
]


def test_the_dra_selection_runs_only_the_kubelet_less_scheduling_specs(tmp_path: Path) -> None:
    assert [n for n in DRA_SPECS if not _selects(DRA, n)] == []
    assert [n for n in DRA_LEFT_OUT if _selects(DRA, n)] == []
    assert not any(_selects(DRA, n) for n in [*WORKLOAD_SPECS, *OTHER_SPECS])
    assert not any(_selects(s, n) for s in (SIG_SCHEDULING, WORKLOAD) for n in DRA_SPECS)
    assert all(_selects(DRA, n) for n in EXPECTED_DRA_FAILURES)
    # Default components and kube-pysched's defaults: DynamicResources is in its default profile.
    assert not DRA.feature_gates
    assert not DRA.runtime_config
    assert DRA.pysched_args() == []
    assert DRA.out_dir(tmp_path) == tmp_path / "dra"


def test_the_dra_report_keeps_the_sig_node_specs(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    specs = [
        {
            "LeafNodeType": "It",
            "ContainerHierarchyTexts": [_CP],
            "LeafNodeText": leaf,
            "State": "passed",
            "RunTime": 2e9,
        }
        for leaf in ("supports init containers", "must apply per-node permission checks")
    ]
    report.write_text(json.dumps([{"SpecReports": specs}]))
    assert read_report(report) == {}
    kept = read_report(report, DRA.report_filter)
    assert sorted(kept) == [
        f"{_CP} must apply per-node permission checks",
        f"{_CP} supports init containers",
    ]
