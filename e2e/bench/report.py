"""Run records read back: machine facts, progress lines and the comparison tables.

Works on records as their JSON files hold them, so `python -m e2e.bench.report FILE.json...`
prints the same tables from saved runs as the benchmark printed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from e2e.bench.options import REPO_ROOT
from e2e.bench.schedulers import KUBE_PYSCHED, KUBE_SCHEDULER, SCHEDULERS
from e2e.bench.scraped import WORK_FIGURES
from e2e.cluster import KUBERNETES_VERSION, KWOK_VERSION
from scheduler import __version__ as PYSCHED_VERSION

Record = dict[str, Any]
Columns = Sequence[tuple[str, str]]

# (figure, column title); ratios are kube-pysched / kube-scheduler.
COLUMNS = (
    ("throughput_overall", "pods/s"),
    ("throughput_avg", "avg"),
    ("throughput_p50", "p50"),
    ("throughput_p90", "p90"),
    ("throughput_p99", "p99"),
    ("latency_p50_ms", "lat50 ms"),
    ("latency_p90_ms", "lat90 ms"),
    ("latency_p99_ms", "lat99 ms"),
    ("cpu_seconds", "cpu s"),
    ("cpu_ms_per_pod", "cpu ms/pod"),
    ("peak_rss_mib", "rss MiB"),
    ("unscheduled_pods", "unsched"),
    ("create_rate", "create/s"),
)
# What each scheduler did in the measured window (scraped from its /metrics; e2e.bench.scraped).
WORK_TITLES = ("scheduled", "unschedulable", "error", "preemptions", "victims")
WORK_COLUMNS = tuple(zip(WORK_FIGURES, WORK_TITLES, strict=True))
#: The figures the performance targets are set on, summarised over the rounds of `--repeat`.
REPEAT_COLUMNS = (
    ("throughput_overall", "pods/s"),
    ("latency_p99_ms", "lat99"),
    ("cpu_ms_per_pod", "cpu ms/pod"),
    ("peak_rss_mib", "rss"),
)
# The gang benchmark's columns (e2e/bench/gangs.py): group times are first member created to
# last member bound, over the groups all of whose members were bound.
GANG_COLUMNS = (
    ("throughput_overall", "pods/s"),
    ("group_all_bound_p50_s", "group p50 s"),
    ("group_all_bound_p90_s", "group p90 s"),
    ("group_all_bound_max_s", "group max s"),
    ("groups_all_bound", "groups done"),
    ("cpu_ms_per_pod", "cpu ms/pod"),
    ("cpu_seconds", "cpu s"),
    ("peak_rss_mib", "rss MiB"),
    ("unscheduled_pods", "unsched"),
    ("create_rate", "create/s"),
)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_facts() -> dict[str, Any]:
    """What the figures depend on besides the code: versions, CPU, memory, load."""
    with open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(memory / 2**30, 1),
        "load_average": load_average(),
        "kernel": platform.release(),
        "versions": {
            "kubernetes": KUBERNETES_VERSION,
            "kwok": KWOK_VERSION,
            "kube_pysched": PYSCHED_VERSION,
            "kube_pysched_commit": _git_commit(),
            "python": platform.python_version(),
        },
    }


def _git_commit() -> str:
    """HEAD, with '+dirty' when the tree has uncommitted changes (as before/after figures are)."""

    def git(*args: str) -> str:
        argv = ["git", *args]
        return subprocess.run(
            argv, cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "scheduler")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def not_measured(record: Record) -> str:
    """Why a run has no figures: an unsupported workload, or a run that failed."""
    return str(record.get("skipped") or record.get("failed") or "no figures")


def run_mode(record: Record) -> str:
    """How the measured pods arrived: live (as fast as they can be created), `qps N` (live,
    paced at N/s), backlog or capacity (all created before the scheduler started); "pending"
    added when kwok left the measured pods Pending (--pending-pods)."""
    mode = str(record.get("mode", "live"))
    if mode == "live" and record.get("create_qps") is not None:
        mode = f"qps {record['create_qps']:g}"
    return f"{mode} pending" if record.get("pending_pods") else mode


def mode_cell(record: Record) -> str:
    """run_mode, with the achieved rate of a paced run ("!" when it fell short of the asked)."""
    f = record.get("figures", {})
    if "create_qps_achieved" not in f:
        return run_mode(record)
    short = "" if f.get("create_qps_reached", True) else "!"
    return f"{run_mode(record)}>{f['create_qps_achieved']:g}{short}"


def notes(record: Record) -> list[str]:
    """What a reader of the figures must know about the run: nodes tainted as silent, events
    dropped, a paced creation that fell behind its rate, and capacity mode's pinning."""
    f = record.get("figures", {})
    out: list[str] = []
    if f.get("unready_nodes"):
        out.append(
            f"{f['unready_nodes']} nodes tainted unreachable or not-ready at the end: not "
            "comparable (pods nominated to them preempt again)"
        )
    if f.get("events_dropped"):
        out.append(
            f"{f['events_dropped']} events dropped in the window: not comparable (their writes "
            "were spared the API server)"
        )
    if "create_qps_asked" in f:
        verdict = "reached" if f.get("create_qps_reached") else "NOT REACHED"
        out.append(
            f"creation {verdict}: asked {f['create_qps_asked']:g}/s, achieved "
            f"{f['create_qps_achieved']:g}/s, creates started late by p50 "
            f"{f['create_lag_p50_ms']} / p99 {f['create_lag_p99_ms']} / max "
            f"{f['create_lag_max_ms']} ms"
        )
    pinning = record.get("pinning")
    if pinning:
        held = "held" if pinning.get("held") else "NOT HELD (see the record)"
        out.append(
            f"pinned: control plane and harness on CPU {pinning['control_plane_cpus']}, "
            f"{record['scheduler']} on CPU {pinning['scheduler_cpus']}, {held}; kwok pods "
            f"{str(pinning.get('kwok_pods', '')).split(' ', 1)[0]}"
        )
    return out


def one_line(record: Record) -> str:
    """Progress line printed as each run ends (a gang run's with its groups' times)."""
    who = record.get("variant", record["scheduler"])
    head = f"{record['workload']:<26} {record['size']:>5} {who:<15}"
    if "figures" not in record:
        return f"{head} {not_measured(record)}"
    f = record["figures"]
    deleted = f.get("deleted_before_bound_pods", 0)
    groups = ""
    if "groups" in f:
        groups = (
            f"groups all bound {f['groups_all_bound']}/{f['groups']} in p50 "
            f"{f['group_all_bound_p50_s']} / p90 {f['group_all_bound_p90_s']} / max "
            f"{f['group_all_bound_max_s']} s  "
        )
    failed = record.get("cleanup_failed")
    return (
        f"{head} {run_mode(record):<9} {f['throughput_overall']:>7} pods/s  "
        f"latency p99 {f['latency_p99_ms']} ms  {groups}"
        f"cpu {f['cpu_seconds']} s ({f.get('cpu_ms_per_pod', '-')} ms/pod)  "
        f"rss {f['peak_rss_mib']} MiB  "
        f"unscheduled {f['unscheduled_pods']}  created at {f['create_rate']}/s"
        + (f"  deleted before bound {deleted}" if deleted else "")
        + (f"  CLEANUP FAILED: {failed}" if failed else "")
        + "".join(f"\n    {note}" for note in notes(record))
    )


def _cells(record: Record, columns: Columns) -> list[str]:
    return [str(record["figures"].get(key, "-")) for key, _ in columns]


def ratio(pysched: float, kube_scheduler: float) -> str:
    if kube_scheduler == 0:
        return "-" if pysched == 0 else "inf"
    return f"{pysched / kube_scheduler:.2f}"


def workload_label(record: Record) -> str:
    """The workload's name, with the round (`#2`) of a `--repeat` run."""
    if "repeat" in record:
        return f"{record['workload']} #{record['repeat']}"
    return str(record["workload"])


def _group(records: Sequence[Record]) -> dict[tuple[str, str, str], dict[str, Record]]:
    """Records by (workload and round, size, mode), then by scheduler: rows that compare."""
    groups: dict[tuple[str, str, str], dict[str, Record]] = {}
    for record in records:
        key = (workload_label(record), record["size"], run_mode(record))
        groups.setdefault(key, {})[record["scheduler"]] = record
    return groups


def _pair(runs: dict[str, Record]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """kube-pysched's and kube-scheduler's figures, when both were measured."""
    ks, py = runs.get(KUBE_SCHEDULER), runs.get(KUBE_PYSCHED)
    if ks and py and "figures" in ks and "figures" in py:
        return py["figures"], ks["figures"]
    return None


def _md_header(
    titles: Sequence[str], lead: str = "workload | size | scheduler | mode"
) -> list[str]:
    aligned = " | ".join("---:" for _ in titles)
    return [
        f"| {lead} | " + " | ".join(titles) + " |",
        f"|{' --- |' * (lead.count('|') + 1)} {aligned} |",
    ]


def _md_cells(r: Record, cells: list[str], columns: Columns) -> str:
    """A row's cells; a run without figures says why in the first, the rest blank."""
    if "figures" in r:
        return " | ".join(cells)
    return f"{cells[0]} | " + " | ".join("" for _ in columns[1:])


def table(records: Sequence[Record], columns: Columns = COLUMNS) -> str:
    """Both schedulers' figures per workload and the kube-pysched / kube-scheduler ratio, as
    a Markdown table (docs/benchmarks.md): `columns` of the figures (WORK_COLUMNS: the
    scheduling attempts, which explain the CPU); a run without figures says why."""
    lines, footnotes = _md_header([title for _, title in columns]), []
    for (workload, size, mode), runs in _group(records).items():
        for who, r in ((which, runs[which]) for which in SCHEDULERS if which in runs):
            cells = _cells(r, columns) if "figures" in r else [not_measured(r)]
            row = (
                f"| {workload} | {size} | {who} | {mode_cell(r)} | {_md_cells(r, cells, columns)} |"
            )
            lines.append(row)
            footnotes += [f"* {workload} {size} {who} {mode}: {n}" for n in notes(r)]
        pair = _pair(runs)
        if pair is not None:
            py, ks = pair
            cells = [ratio(py[k], ks[k]) if k in py and k in ks else "-" for k, _ in columns]
            lines.append(f"| {workload} | {size} | *ratio py/ks* | {mode} | {' | '.join(cells)} |")
    return "\n".join(lines + (["", *footnotes] if footnotes else []))


def repeat_table(records: Sequence[Record]) -> str:
    """Per workload run more than once: each round's kube-pysched / kube-scheduler ratio and
    their median, so one noisy pair does not decide a target (empty if none repeated)."""
    pairs: dict[tuple[str, str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for (_label, size, mode), runs in _group(records).items():
        pair = _pair(runs)
        if pair is not None:
            pairs.setdefault((runs[KUBE_SCHEDULER]["workload"], size, mode), []).append(pair)
    titles = [f"{t} {what}" for _, t in REPEAT_COLUMNS for what in ("ratios", "median")]
    lines = _md_header(["pairs", *titles], "workload | size | mode")
    for (workload, size, mode), found in pairs.items():
        if len(found) < 2:
            continue
        cells = []
        for key, _ in REPEAT_COLUMNS:
            ratios = [py[key] / ks[key] for py, ks in found if key in py and key in ks and ks[key]]
            cells.append(", ".join(f"{x:.2f}" for x in ratios) or "-")
            cells.append(f"{statistics.median(ratios):.2f}" if ratios else "-")
        lines.append(f"| {workload} | {size} | {mode} | {len(found)} | {' | '.join(cells)} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def gang_table(records: Sequence[Record]) -> str:
    """The gang runs as a Markdown table (for docs/benchmarks.md)."""
    titles = [title for _, title in GANG_COLUMNS]
    lines = _md_header(titles, "size | scheduler | plugin (PodGroup API) | mode")
    for r in records:
        head = f"| {r['size']} | {r['scheduler']} | {r['plugin']} ({r['group_api']}) |"
        cells = _cells(r, GANG_COLUMNS) if "figures" in r else [not_measured(r)]
        lines.append(f"{head} {mode_cell(r)} | {_md_cells(r, cells, GANG_COLUMNS)} |")
    return "\n".join(lines)


def _window_table(
    records: Sequence[Record], titles: Sequence[str], cells_of: Callable[[Record], list[Any]]
) -> str:
    """One row per run whose record has cells (`cells_of`: [] when not recorded), then the
    window's length; "" when no run has any."""
    lines = _md_header([*titles, "window s"])
    for r in records:
        cells = cells_of(r)
        if cells:
            who = r.get("variant", r["scheduler"])
            cells.append(r["figures"].get("window_seconds", ""))
            head = f"| {workload_label(r)} | {r['size']} | {who} | {run_mode(r)} |"
            lines.append(f"{head} {' | '.join(str(c) for c in cells)} |")
    return "\n".join(lines) if len(lines) > 2 else ""


CPU_USERS = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager", "bench harness")


def markdown_cpu_table(records: Sequence[Record]) -> str:
    """Who used the machine's CPUs while each run measured (runs that recorded it)."""

    def cells(r: Record) -> list[Any]:
        figures = r.get("figures", {})
        used = figures.get("cpu_seconds_by_process")
        if not used:
            return []
        named = [used.get(r["scheduler"], 0.0), *(used.get(name, 0.0) for name in CPU_USERS)]
        busy = figures["machine_busy_cores"] * figures["window_seconds"]
        return [figures["machine_busy_cores"], *named, round(max(0.0, busy - sum(named)), 2)]

    titles = ["busy cores", "scheduler s", *(f"{n} s" for n in CPU_USERS), "other s"]
    return _window_table(records, titles, cells)


WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"})


def _is_event(path: str) -> bool:
    return path in ("events", "events.k8s.io/events")


#: (column title, which `VERB path` keys of a record's `api_requests` it adds up)
API_COLUMNS: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    ("pods created", lambda verb, path: verb == "POST" and path == "pods"),
    ("bindings", lambda verb, path: verb == "POST" and path == "pods/binding"),
    ("pod status writes", lambda verb, path: verb in WRITE_VERBS and path == "pods/status"),
    ("event writes", lambda verb, path: verb in WRITE_VERBS and _is_event(path)),
    ("lease writes", lambda verb, path: verb in WRITE_VERBS and path.endswith("/leases")),
    ("all writes", lambda verb, _path: verb in WRITE_VERBS),
    ("reads", lambda verb, _path: verb in ("GET", "LIST")),
    ("watches opened", lambda verb, _path: verb == "WATCH"),
)


def api_request_cells(requests: dict[str, int]) -> list[int]:
    """A record's `api_requests` added up into API_COLUMNS."""
    cells = [0] * len(API_COLUMNS)
    for key, n in requests.items():
        verb, _, path = key.partition(" ")
        for i, (_, wanted) in enumerate(API_COLUMNS):
            if wanted(verb, path):
                cells[i] += n
    return cells


def markdown_api_table(records: Sequence[Record]) -> str:
    """What the API server served while each run measured, from every client."""

    def cells(r: Record) -> list[Any]:
        requests = r.get("figures", {}).get("api_requests")
        return [] if requests is None else list(api_request_cells(requests))

    return _window_table(records, [title for title, _ in API_COLUMNS], cells)


def main(argv: Sequence[str]) -> int:
    """`python -m e2e.bench.report FILE.json...`: the tables again from saved runs."""
    parser = argparse.ArgumentParser(
        prog="python -m e2e.bench.report",
        description="Print the comparison tables again from saved run records.",
    )
    parser.add_argument("records", nargs="+", metavar="FILE.json", help="run records")
    args = parser.parse_args(argv)
    records = []
    for path in sorted(args.records):
        try:
            records.append(json.loads(Path(path).read_text()))
        except (OSError, ValueError) as err:
            parser.error(f"{path}: not a readable run record ({err})")
    records.sort(key=lambda r: r.get("started", ""))
    gangs = [r for r in records if "variant" in r]
    plain = [r for r in records if "variant" not in r]
    tables: list[str] = []
    if gangs:
        tables.append(gang_table(gangs))
    if plain:
        tables.append(table(plain))
        if any(k in r.get("figures", {}) for r in plain for k, _ in WORK_COLUMNS):
            tables.append(table(plain, WORK_COLUMNS))
    tables += [
        markdown_cpu_table(gangs + plain),
        markdown_api_table(plain),
        repeat_table(plain),
    ]
    print("\n\n".join(t for t in tables if t))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
