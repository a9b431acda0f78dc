"""The gate: which outcomes are acceptable, and the table that shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from e2e.conformance.expected import EXPECTED_FAILURES, NOT_JUDGED
from e2e.conformance.report import SpecResult

KUBE_SCHEDULER = "kube-scheduler"
KUBE_PYSCHED = "kube-pysched"


@dataclass
class Verdict:
    """What the runs say about the gate; ``ok`` when nothing unexpected happened."""

    #: kube-pysched failed a spec that is not in EXPECTED_FAILURES.
    unexpected_failures: list[str] = field(default_factory=list)
    #: A listed spec passed: shrink EXPECTED_FAILURES.
    now_passing: list[str] = field(default_factory=list)
    #: A listed spec did not run at all (renamed upstream, or skipped): the entry is stale.
    listed_not_run: list[str] = field(default_factory=list)
    #: kube-scheduler failed a spec: the harness (nodes, flags), not kube-pysched, is at fault.
    reference_failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.unexpected_failures
            or self.now_passing
            or self.listed_not_run
            or self.reference_failures
        )

    def messages(self) -> list[str]:
        """One loud line per problem, for the terminal and for pytest."""
        lines = [f"UNEXPECTED FAILURE (kube-pysched): {n}" for n in self.unexpected_failures]
        lines += [
            f"NOW PASSING - shrink e2e/conformance/expected.py: {n}" for n in self.now_passing
        ]
        lines += [
            f"LISTED BUT DID NOT RUN - stale entry in expected.py: {n}"
            for n in (self.listed_not_run)
        ]
        lines += [
            f"KUBE-SCHEDULER FAILED (harness problem?): {n}" for n in (self.reference_failures)
        ]
        return lines


def evaluate(
    pysched: Mapping[str, SpecResult] | None,
    kube_scheduler: Mapping[str, SpecResult] | None,
    expected: Mapping[str, str] = EXPECTED_FAILURES,
    *,
    not_judged: Mapping[str, str] = NOT_JUDGED,
    full_selection: bool = True,
) -> Verdict:
    """Judge the runs that were made (either may be None when only one half ran).

    ``full_selection=False`` (a narrower --focus/--skip) does not call listed specs that
    were not selected stale.
    """
    verdict = Verdict()
    if kube_scheduler is not None:
        verdict.reference_failures = sorted(
            n for n, r in kube_scheduler.items() if r.ran and not r.passed
        )
    if pysched is not None:
        for name, result in sorted(pysched.items()):
            if not result.ran or name in not_judged:
                continue
            if name in expected and result.passed:
                verdict.now_passing.append(name)
            elif name not in expected and not result.passed:
                verdict.unexpected_failures.append(name)
        if full_selection:
            verdict.listed_not_run = sorted(
                n for n in (*expected, *not_judged) if n not in pysched or not pysched[n].ran
            )
    return verdict


def table(
    runs: Mapping[str, Mapping[str, SpecResult]],
    expected: Mapping[str, str] = EXPECTED_FAILURES,
    not_judged: Mapping[str, str] = NOT_JUDGED,
) -> str:
    """A Markdown table: spec, one column per scheduler run, reason.

    The reason is the first line of the failure (kube-pysched's first), the skip message for
    specs skipped at run time, and the missing plugin for listed specs.
    """
    columns = [s for s in (KUBE_SCHEDULER, KUBE_PYSCHED) if s in runs]
    names = sorted({n for results in runs.values() for n in results})
    header = ["spec", *columns, "reason"]
    rows = [header, ["---"] * len(header)]
    for name in names:
        cells = [_cell(runs[c].get(name)) for c in columns]
        reason = _reason(name, runs, columns, expected)
        if name in not_judged and KUBE_PYSCHED in runs:
            plugin = not_judged[name].split(":", 1)[0]
            reason = f"not judged for kube-pysched (waits for {plugin})" + (
                f"; {reason}" if reason else ""
            )
        rows.append([_escape(name), *cells, _escape(reason)])
    totals = ["**passed / ran**"]
    for c in columns:
        ran = [r for r in runs[c].values() if r.ran]
        totals.append(f"{sum(r.passed for r in ran)}/{len(ran)}")
    rows.append([*totals, ""])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def _cell(result: SpecResult | None) -> str:
    if result is None:
        return "-"
    if result.passed:
        return f"passed ({result.seconds:.0f}s)"
    return result.state


def _reason(
    name: str,
    runs: Mapping[str, Mapping[str, SpecResult]],
    columns: list[str],
    expected: Mapping[str, str],
) -> str:
    for column in reversed(columns):
        result = runs[column].get(name)
        if result is not None and result.ran and not result.passed:
            prefix = "expected: " if column == KUBE_PYSCHED and name in expected else ""
            return f"{prefix}{column}: {result.reason}"
    for column in columns:
        result = runs[column].get(name)
        if result is not None and not result.ran:
            return result.reason or "not selected (--ginkgo.skip)"
    if name in expected:
        return f"listed as expected to fail ({expected[name].split(':', 1)[0]})"
    return ""


def _escape(text: str) -> str:
    return text.replace("|", "\\|")
