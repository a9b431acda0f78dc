"""CLI: ``python -m e2e.conformance`` - the sig-scheduling specs with both schedulers, one table.

Exit status 0 when the gate holds: kube-scheduler passes every spec that runs, kube-pysched
every spec except those in e2e/conformance/expected.py (and none of those passes).
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
from e2e.conformance.report import SpecResult, read_report
from e2e.conformance.runner import FOCUS, NODE_COUNT, SEED, SKIP, HalfRun, run_half


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.conformance", description=__doc__)
    parser.add_argument(
        "--scheduler",
        choices=("both", KUBE_SCHEDULER, KUBE_PYSCHED),
        default="both",
        help="which half to run (default: both, kube-scheduler first)",
    )
    parser.add_argument("--seed", type=int, default=SEED, help=f"--ginkgo.seed (default {SEED})")
    parser.add_argument("--focus", default=FOCUS, help="--ginkgo.focus (default: %(default)s)")
    parser.add_argument("--skip", default=SKIP, help="--ginkgo.skip (default: %(default)s)")
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
    if args.table_from is not None:
        return _table_from(args.table_from)

    out_dir = args.out or cache_root() / "conformance" / time.strftime("%Y%m%d-%H%M%S")
    try:
        build()
        binary = build_e2e_test()
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    halves = [KUBE_SCHEDULER, KUBE_PYSCHED] if args.scheduler == "both" else [args.scheduler]
    print(
        f"Kubernetes {KUBERNETES_VERSION} e2e.test, kwok {KWOK_VERSION}, {NODE_COUNT} nodes, "
        f"seed {args.seed}, focus {args.focus}, skip {args.skip}; output in {out_dir}",
        flush=True,
    )
    runs: dict[str, HalfRun] = {}
    for scheduler in halves:
        run = run_half(
            scheduler,
            out_dir / scheduler,
            e2e_test=binary,
            seed=args.seed,
            focus=args.focus,
            skip=args.skip,
        )
        runs[scheduler] = run
        print(
            f"[conformance] {scheduler}: {_summary(run.results)} in {run.seconds / 60:.1f} min "
            f"(e2e.test exit {run.exit_code})",
            flush=True,
        )
    return _report(runs, out_dir, full_selection=args.focus == FOCUS and args.skip == SKIP)


def _table_from(out_dir: Path) -> int:
    runs = {
        scheduler: HalfRun(scheduler, read_report(report), None, 0.0, out_dir / scheduler)
        for scheduler in (KUBE_SCHEDULER, KUBE_PYSCHED)
        if (report := out_dir / scheduler / "report.json").is_file()
    }
    if not runs:
        print(f"no <scheduler>/report.json under {out_dir}", file=sys.stderr)
        return 2
    return _report(runs, out_dir, full_selection=True)


def _summary(results: dict[str, SpecResult]) -> str:
    ran = [r for r in results.values() if r.ran]
    return f"{sum(r.passed for r in ran)}/{len(ran)} passed, {len(results) - len(ran)} skipped"


def _report(runs: dict[str, HalfRun], out_dir: Path, *, full_selection: bool) -> int:
    results = {name: run.results for name, run in runs.items()}
    text = table(results)
    verdict = evaluate(
        results.get(KUBE_PYSCHED), results.get(KUBE_SCHEDULER), full_selection=full_selection
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
    print(f"conformance gate: {'PASSED' if ok else 'FAILED'} (reports and logs in {out_dir})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
