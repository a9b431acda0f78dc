"""CLI: ``python -m e2e.dra build|mix|case``.

``build`` builds the DRA oracle into the cache (once); ``mix`` runs generated cases through it
and prints how the answers split (satisfiable / unsatisfiable / error) and which features the
allocations exercised; ``case SEED INDEX`` prints one generated case and upstream's answer as
JSON lines (to reproduce a differing case of the differential test).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

from e2e.cluster.build import BuildError
from e2e.cluster.dra_oracle import ensure_dra_oracle
from e2e.dra.cases import generate_case, generate_cases
from e2e.dra.oracle import Oracle, answer_kind, timed_out

_FEATURES = ("adminAccess", "tolerations", "bindingConditions", "shareID", "consumedCapacity")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.dra", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="build the DRA oracle into the cache (once)")
    p_build.add_argument("--force", action="store_true", help="rebuild even if cached")
    p_mix = sub.add_parser("mix", help="the split of the oracle's answers over generated cases")
    p_mix.add_argument("--cases", type=int, default=500)
    p_mix.add_argument("--seed", type=int, default=1)
    p_case = sub.add_parser("case", help="one generated case and upstream's answer")
    p_case.add_argument("seed", type=int)
    p_case.add_argument("index", type=int)
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            t0 = time.monotonic()
            binary = ensure_dra_oracle(force=args.force)
            print(f"DRA oracle: {binary} ({time.monotonic() - t0:.1f}s)")
            return 0
        if args.command == "mix":
            return _mix(args.cases, args.seed)
        case = generate_case(args.seed, args.index)
        with Oracle() as oracle:
            answer = oracle.allocate(case)
        print(json.dumps(case))
        print(json.dumps(answer))
        return 0
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1


def _mix(count: int, seed: int) -> int:
    t0 = time.monotonic()
    with Oracle() as oracle:
        answers = oracle.allocate_all(generate_cases(seed, count))
    elapsed = time.monotonic() - t0
    kinds = collections.Counter(answer_kind(a) for a in answers)
    split = ", ".join(
        f"{kind} {kinds[kind]} ({100 * kinds[kind] / count:.0f}%)"
        for kind in ("satisfiable", "unsatisfiable", "error")
    )
    late = sum(timed_out(a) for a in answers)
    print(f"{count} cases, seed {seed}: {split} (of which {late} timed out); {elapsed:.2f}s")
    used: collections.Counter[str] = collections.Counter()
    for answer in answers:
        for allocation in answer.get("allocations") or []:
            results = allocation["devices"].get("results", [])
            used["results"] += len(results)
            used["subrequest"] += sum("/" in r["request"] for r in results)
            used.update(f for r in results for f in _FEATURES if r.get(f))
            used["config"] += bool(allocation["devices"].get("config"))
            used["nodeSelector"] += bool(allocation.get("nodeSelector"))
    print("allocated: " + ", ".join(f"{key} {n}" for key, n in used.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
