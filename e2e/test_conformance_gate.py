"""The conformance gate's rules on made-up results (no cluster needed)."""

from __future__ import annotations

import json
from pathlib import Path

from e2e.conformance.gate import KUBE_PYSCHED, KUBE_SCHEDULER, evaluate, table
from e2e.conformance.report import SpecResult, first_line, read_report

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
    text = table({KUBE_SCHEDULER: results, KUBE_PYSCHED: results}, EXPECTED, {})
    assert "expected: kube-pysched: one victim" in text
    assert "| **passed / ran** | 1/2 | 1/2 |  |" in text
