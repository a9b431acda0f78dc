"""Read the outcome of each spec from Ginkgo's JSON report (not from e2e.test's stdout)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Ginkgo's spec states that count as having run and passed.
PASSED = "passed"
SKIPPED = "skipped"


@dataclass(frozen=True)
class SpecResult:
    """One spec's outcome: Ginkgo state, first line of its failure or skip message, run time."""

    name: str
    state: str
    reason: str
    seconds: float

    @property
    def ran(self) -> bool:
        return self.state not in {SKIPPED, "pending"}

    @property
    def passed(self) -> bool:
        return self.state == PASSED


def spec_name(spec: dict[str, Any]) -> str:
    """Container texts and leaf text joined by spaces: the name ``--ginkgo.focus`` matches."""
    parts = [*spec.get("ContainerHierarchyTexts", []), spec.get("LeafNodeText", "")]
    return " ".join(p for p in parts if p)


def first_line(message: str) -> str:
    """The first non-empty line of a failure message, with the second after a bare timeout.

    Gomega's ``Timed out after 80.000s.`` (Eventually) and ``Failed after 1.005s.``
    (Consistently) say nothing by themselves; the line after them does, and when that is a
    bare ``Expected``, the matcher's ``<value> to equal <value>`` lines after it.
    """
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith(("Timed out after", "Failed after")):
        if lines[1] == "Expected":
            return " ".join(lines[:5])
        return f"{lines[0]} {lines[1]}"
    return lines[0] if lines else ""


def read_report(path: Path, must_contain: str = "[sig-scheduling]") -> dict[str, SpecResult]:
    """The ``It`` specs of a ``--ginkgo.json-report`` file whose name contains ``must_contain``.

    Ginkgo lists every spec of the binary (those outside the focus as skipped); only the ones
    of interest are kept.
    """
    results: dict[str, SpecResult] = {}
    for suite in json.loads(path.read_text()):
        for spec in suite.get("SpecReports") or []:
            if spec.get("LeafNodeType") != "It":
                continue
            name = spec_name(spec)
            if must_contain not in name:
                continue
            failure = spec.get("Failure") or {}
            results[name] = SpecResult(
                name=name,
                state=str(spec.get("State", "")),
                reason=first_line(str(failure.get("Message", ""))),
                seconds=int(spec.get("RunTime", 0)) / 1e9,
            )
    return results


def focused(results: Mapping[str, SpecResult], focus: str) -> dict[str, SpecResult]:
    """The specs ``--ginkgo.focus`` picks (skipped ones included).

    Ginkgo reports every other spec as skipped too: kept, they would fill the workload
    selection's table with the sig-scheduling specs it never meant to run. Go's regexp and
    Python's ``re`` agree on the runner's patterns.
    """
    pattern = re.compile(focus)
    return {name: r for name, r in results.items() if pattern.search(name)}
