"""CLI: ``python -m e2e.conformance`` - the sig-scheduling specs with both schedulers, one table
per selection (the default sig-scheduling specs, then the Workload API's on a control plane
with GenericWorkload on, then the DRA specs that need no kubelet).

Exit status 0 when every selection's gate holds: kube-scheduler passes every spec that runs,
kube-pysched every spec except those its selection lists in e2e/conformance/expected.py (and
none of those passes).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from e2e.cluster.build import BuildError, build, cache_root
from e2e.cluster.e2etest import build_e2e_test
from e2e.cluster.versions import KUBERNETES_VERSION, KWOK_VERSION
from e2e.conformance.gate import KUBE_PYSCHED, KUBE_SCHEDULER, evaluate, table
from e2e.conformance.report import SpecResult, focused, read_report
from e2e.conformance.runner import (
    NODE_COUNT,
    SEED,
    SELECTIONS,
    HalfRun,
    Selection,
    run_half,
)

BOTH = "both"
#: Every selection (``--selection both`` is accepted for it too).
ALL = "all"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.conformance", description=__doc__)
    parser.add_argument(
        "--scheduler",
        choices=("both", KUBE_SCHEDULER, KUBE_PYSCHED),
        default="both",
        help="which half to run (default: both, kube-scheduler first)",
    )
    parser.add_argument(
        "--selection",
        choices=(ALL, BOTH, *SELECTIONS),
        default=ALL,
        help="which specs (default: all selections, in this order)",
    )
    parser.add_argument("--seed", type=int, default=SEED, help=f"--ginkgo.seed (default {SEED})")
    parser.add_argument(
        "--focus", help="--ginkgo.focus instead of the selection's (needs one --selection)"
    )
    parser.add_argument(
        "--skip", help="--ginkgo.skip instead of the selection's (needs one --selection)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="directory for reports and logs (default: <cache>/conformance/<timestamp>)",
    )
    parser.add_argument(
        "--table-from",
        type=Path,
        metavar="DIR",
        help="run nothing: print the table and the gate of an earlier run's output directory",
    )
    args = parser.parse_args(argv)
    selections = (
        list(SELECTIONS.values()) if args.selection in (ALL, BOTH) else [SELECTIONS[args.selection]]
    )
    if args.table_from is not None:
        return _table_from(args.table_from, selections)
    if (args.focus is not None or args.skip is not None) and len(selections) > 1:
        parser.error("--focus/--skip replace one selection's: add --selection")

    out_dir = args.out or cache_root() / "conformance" / time.strftime("%Y%m%d-%H%M%S")
    try:
        build()
        binary = build_e2e_test()
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    halves = [KUBE_SCHEDULER, KUBE_PYSCHED] if args.scheduler == BOTH else [args.scheduler]
    status = 0
    for selection in selections:
        focus = selection.focus if args.focus is None else args.focus
        skip = selection.skip if args.skip is None else args.skip
        sel_dir = selection.out_dir(out_dir)
        print(
            f"Kubernetes {KUBERNETES_VERSION} e2e.test, kwok {KWOK_VERSION}, {NODE_COUNT} nodes, "
            f"selection {selection.name}, seed {args.seed}, focus {focus}, skip {skip}; "
            f"output in {sel_dir}",
            flush=True,
        )
        runs: dict[str, HalfRun] = {}
        for scheduler in halves:
            run = run_half(
                scheduler,
                sel_dir / scheduler,
                selection=selection,
                e2e_test=binary,
                seed=args.seed,
                focus=focus,
                skip=skip,
            )
            runs[scheduler] = run
            print(
                f"[conformance] {selection.name}, {scheduler}: {_summary(run.results)} in "
                f"{run.seconds / 60:.1f} min (e2e.test exit {run.exit_code})",
                flush=True,
            )
        full = focus == selection.focus and skip == selection.skip
        status = max(status, _report(runs, selection, sel_dir, full_selection=full))
    return status


def _table_from(out_dir: Path, selections: list[Selection]) -> int:
    status = 0
    found = False
    for selection in selections:
        sel_dir = selection.out_dir(out_dir)
        runs = {
            scheduler: HalfRun(
                scheduler,
                focused(read_report(report, selection.report_filter), selection.focus),
                None,
                0.0,
                sel_dir / scheduler,
            )
            for scheduler in (KUBE_SCHEDULER, KUBE_PYSCHED)
            if (report := sel_dir / scheduler / "report.json").is_file()
        }
        if runs:
            found = True
            status = max(status, _report(runs, selection, sel_dir, full_selection=True))
    if not found:
        print(f"no [<selection>/]<scheduler>/report.json under {out_dir}", file=sys.stderr)
        return 2
    return status


def _summary(results: dict[str, SpecResult]) -> str:
    ran = [r for r in results.values() if r.ran]
    return f"{sum(r.passed for r in ran)}/{len(ran)} passed, {len(results) - len(ran)} skipped"


def _report(
    runs: dict[str, HalfRun], selection: Selection, out_dir: Path, *, full_selection: bool
) -> int:
    results = {name: run.results for name, run in runs.items()}
    text = table(results, selection.expected, selection.not_judged)
    verdict = evaluate(
        results.get(KUBE_PYSCHED),
        results.get(KUBE_SCHEDULER),
        selection.expected,
        not_judged=selection.not_judged,
        full_selection=full_selection,
    )
    empty = [name for name, run in runs.items() if not run.results]
    lines = [f"NO RESULTS from {name} (see {runs[name].out_dir}/e2e.log)" for name in empty]
    lines += verdict.messages()
    (out_dir / "table.md").write_text(text + "\n")
    print()
    print(text)
    print()
    for line in lines:
        print(line)
    ok = verdict.ok and not empty
    print(
        f"conformance gate ({selection.name}): {'PASSED' if ok else 'FAILED'} "
        f"(reports and logs in {out_dir})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
