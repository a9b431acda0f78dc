"""`python -m e2e.bench`: scheduler_perf-style workloads, kube-scheduler beside kube-pysched.

    python -m e2e.bench --workload SchedulingBasic --size 1000
    python -m e2e.bench --workload all --size small --scheduler kube-pysched --profile

Each workload runs once per scheduler, one at a time, on one local control plane with fresh
nodes and namespaces. Figures come from a pod watch (not the schedulers' logs) and /proc.
A table goes to the terminal and one JSON per run to bench-results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from e2e.bench.runner import Run, Size
from e2e.cluster import KUBERNETES_VERSION, KWOK_VERSION, ControlPlane, build
from scheduler import __version__

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent.parent / "bench-results"
SCHEDULERS = ("kube-scheduler", "kube-pysched")
COLUMNS = (
    ("throughput_avg", "pods/s avg"),
    ("throughput_p50", "pods/s p50"),
    ("throughput_p90", "pods/s p90"),
    ("throughput_p99", "pods/s p99"),
    ("latency_p50_ms", "lat p50 ms"),
    ("latency_p90_ms", "lat p90 ms"),
    ("latency_p99_ms", "lat p99 ms"),
    ("cpu_seconds", "cpu s"),
    ("peak_rss_mib", "rss MiB"),
    ("unscheduled_pods", "unsched"),
)


def load_workloads() -> dict[str, Any]:
    return yaml.safe_load((HERE / "workloads.yaml").read_text())  # type: ignore[no-any-return]


def machine_facts() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "kubernetes": KUBERNETES_VERSION,
        "kwok": KWOK_VERSION,
        "kube_pysched": __version__,
    }


def run_workloads(
    names: list[str],
    size_name: str,
    schedulers: list[str],
    *,
    profile: bool = False,
    deadline: float = 600.0,
    control_plane: ControlPlane | None = None,
    results_dir: Path = RESULTS,
) -> list[dict[str, Any]]:
    """Runs every (workload, scheduler) pair; returns one record per run (also written as JSON)."""
    spec = load_workloads()
    sizes = spec["sizes"][size_name]
    size = Size(sizes["nodes"], sizes["initPods"], sizes["measuredPods"])
    results_dir.mkdir(parents=True, exist_ok=True)
    own_cp = control_plane is None
    cp = control_plane or ControlPlane(with_scheduler=False).start()
    records: list[dict[str, Any]] = []
    facts = machine_facts()
    try:
        for name in names:
            workload = spec["workloads"][name]
            for which in schedulers:
                record: dict[str, Any] = {
                    "workload": name,
                    "size": size_name,
                    "scheduler": which,
                    "machine": facts,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
                if workload.get("unsupported") and which == "kube-pysched":
                    record["skipped"] = f"not supported yet: {workload['unsupported']}"
                elif workload.get("unsupported"):
                    record["skipped"] = "skipped: no kube-pysched run to compare with"
                else:
                    run = Run(
                        cp,
                        workload,
                        size,
                        spec["nodeTemplate"],
                        spec["podTemplate"],
                        workdir=results_dir,
                        profile=profile and which == "kube-pysched",
                    )
                    record["figures"] = run.execute(which, deadline)
                    if run.profile_path is not None:
                        record["profile"] = str(run.profile_path)
                out = results_dir / f"{name}-{size_name}-{which}-{int(time.time())}.json"
                out.write_text(json.dumps(record, indent=2))
                record["json"] = str(out)
                records.append(record)
                print(_one_line(record), flush=True)
    finally:
        if own_cp:
            cp.stop()
    return records


def _one_line(record: dict[str, Any]) -> str:
    head = f"{record['workload']:<26} {record['size']:>5} {record['scheduler']:<15}"
    if "skipped" in record:
        return f"{head} {record['skipped']}"
    f = record["figures"]
    return (
        f"{head} {f['throughput_avg']:>8} pods/s  p99 latency {f['latency_p99_ms']} ms  "
        f"cpu {f['cpu_seconds']} s  rss {f['peak_rss_mib']} MiB  "
        f"unscheduled {f['unscheduled_pods']:.0f}"
    )


def table(records: list[dict[str, Any]]) -> str:
    """Both schedulers per workload and the kube-pysched / kube-scheduler ratio."""
    lines = []
    header = f"{'workload':<26} {'scheduler':<15} " + " ".join(f"{t:>11}" for _, t in COLUMNS)
    lines.append(header)
    by_workload: dict[str, dict[str, dict[str, Any]]] = {}
    for r in records:
        by_workload.setdefault(r["workload"], {})[r["scheduler"]] = r
    for workload, runs in by_workload.items():
        for which in SCHEDULERS:
            r = runs.get(which)
            if r is None:
                continue
            if "figures" not in r:
                lines.append(f"{workload:<26} {which:<15} {r['skipped']}")
                continue
            vals = " ".join(f"{r['figures'][k]:>11}" for k, _ in COLUMNS)
            lines.append(f"{workload:<26} {which:<15} {vals}")
        ks, py = runs.get("kube-scheduler"), runs.get("kube-pysched")
        if ks and py and "figures" in ks and "figures" in py:
            ratios = []
            for key, _ in COLUMNS:
                a, b = py["figures"][key], ks["figures"][key]
                ratios.append(f"{a / b:>11.2f}" if b else f"{'-':>11}")
            lines.append(f"{workload:<26} {'ratio py/ks':<15} " + " ".join(ratios))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    spec = load_workloads()
    parser = argparse.ArgumentParser(prog="python -m e2e.bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--workload",
        default="all",
        help="comma-separated names, or 'all': " + ", ".join(spec["workloads"]),
    )
    parser.add_argument("--size", default="small", choices=list(spec["sizes"]))
    parser.add_argument("--scheduler", default="both", choices=("both", *SCHEDULERS))
    parser.add_argument("--profile", action="store_true", help="py-spy profile of kube-pysched")
    parser.add_argument("--deadline", type=float, default=900.0, help="seconds to wait per run")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = list(spec["workloads"]) if args.workload == "all" else args.workload.split(",")
    unknown = [n for n in names if n not in spec["workloads"]]
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(unknown)}")
    schedulers = list(SCHEDULERS) if args.scheduler == "both" else [args.scheduler]
    build()
    records = run_workloads(
        names,
        args.size,
        schedulers,
        profile=args.profile,
        deadline=args.deadline,
        results_dir=args.results,
    )
    print()
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
