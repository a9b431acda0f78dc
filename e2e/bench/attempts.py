"""`python -m e2e.bench.attempts LOG...`: each scheduler's attempts per pod, from its own log.

Reads the `-v=2` lines both schedulers write (run the bench with `--verbosity 2`; the logs are
in the results folder's `logs/`): kube-scheduler's klog text and kube-pysched's JSON lines.
Per log: the measured pods' failed attempts by reason (node names masked), how long the first
attempts took, how long a preemptor waited from its preemption to its binding, and how many
attempts were retries made while other pods still waited for their first.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

MEASURED_PREFIX = "pod-"  # the bench names its measured pods pod-0, pod-1, ...

FAILED = "failed"
PREEMPTED = "preempted"
BOUND = "bound"

#: the message (lower-cased) at the start of each line of interest -> what it records
_MESSAGES = {
    "unable to schedule pod": FAILED,
    "async preemption finished": PREEMPTED,
    "successfully bound pod to node": BOUND,
}
_KLOG = re.compile(
    r'^[IWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d\.\d+)\s+\d+ \S+\] "((?:[^"\\]|\\.)*)"(.*)$'
)
_KLOG_FIELD = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_NODE = re.compile(r"on node [^\s,]+")


@dataclass(frozen=True)
class Line:
    """One line of interest: seconds (any fixed origin), pod key, kind, and reason if failed."""

    at: float
    pod: str
    kind: str
    reason: str = ""


def _kind(message: str) -> str | None:
    lowered = message.lower()
    return next((k for prefix, k in _MESSAGES.items() if lowered.startswith(prefix)), None)


def parse_line(text: str) -> Line | None:
    """A klog text or JSON log line of interest, or None."""
    if text.startswith("{"):
        try:
            entry = json.loads(text)
        except ValueError:
            return None
        kind = _kind(str(entry.get("event", "")))
        if kind is None or "timestamp" not in entry:
            return None
        at = datetime.fromisoformat(str(entry["timestamp"]).replace("Z", "+00:00")).timestamp()
        return Line(at, str(entry.get("pod", "")), kind, str(entry.get("err", "")))
    match = _KLOG.match(text)
    if match is None:
        return None
    month, day, hour, minute, second, message, rest = match.groups()
    kind = _kind(message)
    if kind is None:
        return None
    fields = {k: v.replace('\\"', '"') for k, v in _KLOG_FIELD.findall(rest)}
    # klog has no year: a month of 31 days is enough to order one run's lines.
    at = (((int(month) * 31 + int(day)) * 24 + int(hour)) * 60 + int(minute)) * 60
    pod = fields.get("pod") or fields.get("preemptor", "")
    return Line(at + float(second), pod, kind, fields.get("err", ""))


def read_log(path: Path) -> list[Line]:
    """Every line of interest in a scheduler's log file."""
    with path.open(encoding="utf-8", errors="replace") as log:
        return [line for text in log if (line := parse_line(text.rstrip("\n")))]


def reason_of(err: str) -> str:
    """The part of a failure message that tells attempts apart: what preemption said (or the
    whole message without one), node names masked."""
    tail = err.rsplit("preemption:", 1)[-1].strip()
    return _NODE.sub("on node <node>", tail).rstrip(".")


@dataclass
class PodAttempts:
    failed: list[float] = field(default_factory=list)
    preempted: float | None = None
    bound: float | None = None


@dataclass
class Summary:
    pods: int
    bound: int
    failed: int
    reasons: Counter[str]
    first_span_s: float | None  # from the first first-attempt to the last
    preempted_to_bound_median_s: float | None
    retries: int  # failed attempts after a pod's first
    retries_during_first_pass: int  # retries made before the last pod's first attempt


def summarize(lines: Iterable[Line], prefix: str = MEASURED_PREFIX) -> Summary:
    """The measured pods' attempts (pods whose name starts with `prefix`)."""
    pods: dict[str, PodAttempts] = {}
    reasons: Counter[str] = Counter()
    for line in lines:
        if not line.pod.rpartition("/")[2].startswith(prefix):
            continue
        pod = pods.setdefault(line.pod, PodAttempts())
        if line.kind == FAILED:
            pod.failed.append(line.at)
            reasons[reason_of(line.reason)] += 1
        elif line.kind == PREEMPTED:
            pod.preempted = line.at
        elif pod.bound is None:
            pod.bound = line.at
    firsts = sorted(
        min([*p.failed, *([p.bound] if p.bound is not None else [])])
        for p in pods.values()
        if p.failed or p.bound is not None
    )
    waits = [
        p.bound - p.preempted
        for p in pods.values()
        if p.bound is not None and p.preempted is not None and p.bound >= p.preempted
    ]
    retries = [at for p in pods.values() for at in sorted(p.failed)[1:]]
    last_first = firsts[-1] if firsts else None
    return Summary(
        pods=len(pods),
        bound=sum(1 for p in pods.values() if p.bound is not None),
        failed=sum(len(p.failed) for p in pods.values()),
        reasons=reasons,
        first_span_s=round(firsts[-1] - firsts[0], 1) if firsts else None,
        preempted_to_bound_median_s=round(statistics.median(waits), 2) if waits else None,
        retries=len(retries),
        retries_during_first_pass=sum(
            1 for at in retries if last_first is not None and at < last_first
        ),
    )


def render(name: str, s: Summary) -> str:
    out = [
        f"## {name}",
        "",
        f"measured pods {s.pods}, bound {s.bound}, failed attempts {s.failed} "
        f"(retries {s.retries}, {s.retries_during_first_pass} of them while pods still "
        f"waited for their first attempt)",
        f"first attempts spanned {s.first_span_s} s; preemption finished -> bound, "
        f"median {s.preempted_to_bound_median_s} s",
        "",
        "| failed attempts | reason |",
        "| ---: | --- |",
    ]
    out += [f"| {n} | {reason} |" for reason, n in s.reasons.most_common()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.bench.attempts", description=__doc__)
    parser.add_argument("logs", nargs="+", type=Path, help="scheduler logs written at -v=2")
    parser.add_argument(
        "--prefix", default=MEASURED_PREFIX, help="pod name prefix of the measured pods"
    )
    args = parser.parse_args(argv)
    status = 0
    for path in args.logs:
        summary = summarize(read_log(path), args.prefix)
        if summary.pods == 0:
            print(f"{path}: no -v=2 attempt lines for pods named {args.prefix}*", file=sys.stderr)
            status = 1
            continue
        print(render(str(path), summary), end="\n\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
