"""Figures from the scheduler's and the API server's /metrics, read at both ends of the window.

The scheduler's attempts and preemptions say what work its CPU went to; kube-pysched's GC
pauses and dropped events say what /proc cannot. The API server's requests and refusals by kind
say what was asked of the control plane.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from e2e.bench.record import ApiServerFigures, GcFigures, WorkFigures

GC_PAUSE = "kube_pysched_gc_pause_seconds"
EVENTS_DROPPED = "kube_pysched_events_dropped"
ATTEMPTS = "scheduler_schedule_attempts"
PREEMPTION_ATTEMPTS = "scheduler_preemption_attempts"
PREEMPTION_VICTIMS = "scheduler_preemption_victims"
API_REQUESTS = "apiserver_request_total"

#: generation -> (count, sum in seconds, {bucket upper bound: cumulative count})
Pauses = dict[str, tuple[float, float, dict[float, float]]]


def gc_pauses(text: str) -> Pauses:
    """The GC pause histogram's samples by generation."""
    out: Pauses = {}
    for family in text_string_to_metric_families(text):
        if family.name != GC_PAUSE:
            continue
        for sample in family.samples:
            gen = sample.labels.get("generation", "")
            count, total, buckets = out.get(gen, (0.0, 0.0, {}))
            if sample.name.endswith("_count"):
                count = sample.value
            elif sample.name.endswith("_sum"):
                total = sample.value
            elif sample.name.endswith("_bucket"):
                buckets[float(sample.labels["le"])] = sample.value
            out[gen] = (count, total, buckets)
    return out


def gc_figures(before: Pauses, after: Pauses) -> GcFigures:
    """Collections in the window: full ones (generation 2) counted, timed in total and bounded
    above by the histogram's bucket holding the longest; young ones (0 and 1) timed in total."""

    def delta(gen: str) -> tuple[float, float, dict[float, float]]:
        count, total, buckets = after.get(gen, (0.0, 0.0, {}))
        count0, total0, buckets0 = before.get(gen, (0.0, 0.0, {}))
        return (
            count - count0,
            total - total0,
            {le: n - buckets0.get(le, 0.0) for le, n in buckets.items()},
        )

    full, full_seconds, full_buckets = delta("2")
    longest = min((le for le, n in full_buckets.items() if n >= full), default=math.inf)
    young_seconds = delta("0")[1] + delta("1")[1]
    return GcFigures(
        gc_full_collections=int(full),
        gc_full_ms=round(1000 * full_seconds, 1),
        gc_full_max_ms_at_most=(
            None if full == 0 or math.isinf(longest) else round(1000 * longest, 1)
        ),
        gc_young_ms=round(1000 * young_seconds, 1),
    )


def work_counters(text: str) -> dict[str, float]:
    """Attempts by result (all profiles), preemption attempts and victims, and events dropped
    (kube-pysched's recorder), as exposed now."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if family.name == ATTEMPTS and sample.name == f"{ATTEMPTS}_total":
                key = f"attempts_{sample.labels.get('result', '')}"
            elif family.name == PREEMPTION_ATTEMPTS and sample.name.endswith("_total"):
                key = "preemption_attempts"
            elif family.name == PREEMPTION_VICTIMS and sample.name.endswith("_sum"):
                key = "preemption_victims"
            elif family.name == EVENTS_DROPPED and sample.name.endswith("_total"):
                key = "events_dropped"
            else:
                continue
            out[key] = out.get(key, 0.0) + sample.value
    return out


#: Every figure work_figures gives, in the report's column order: a counter with no series
#: yet (no attempt ended that way) counts as zero, since the scrape itself succeeded.
WORK_FIGURES = (
    "attempts_scheduled",
    "attempts_unschedulable",
    "attempts_error",
    "preemption_attempts",
    "preemption_victims",
)


def work_figures(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """The counters' increase over the window, for each of WORK_FIGURES."""
    return {key: round(after.get(key, 0.0) - before.get(key, 0.0)) for key in WORK_FIGURES}


@dataclass(frozen=True)
class Scrape:
    """One reading of a scheduler's /metrics: its work counters, (kube-pysched) GC pauses,
    and the whole text (kept beside the run's log after the window)."""

    work: dict[str, float]
    pauses: Pauses | None
    text: str = ""


def keep_metrics(after: Scrape | None, log: Path | None) -> Path | None:
    """Writes the scheduler's /metrics at the end of the window beside its log
    (`<log stem>.metrics.txt`), so counters the record does not carry (queue moves, hint
    answers) can be read afterwards; the path, or None when there was nothing to keep."""
    if after is None or not after.text or log is None:
        return None
    path = log.with_name(f"{log.stem}.metrics.txt")
    path.write_text(after.text)
    return path


def scrape(fetch: Callable[[], str] | None, *, pauses: bool) -> Scrape | None:
    """A reading now, or None when the scheduler's /metrics cannot be fetched (recorded as a
    missing figure, never as zero). `pauses`: the scheduler exports the GC family."""
    if fetch is None:
        return None
    try:
        text = fetch()
    except (OSError, RuntimeError) as err:
        print(f"warning: could not scrape the scheduler's /metrics: {err}")
        return None
    return Scrape(work_counters(text), gc_pauses(text) if pauses else None, text)


def scraped_figures(before: Scrape | None, after: Scrape | None) -> WorkFigures | None:
    """The window's figures from two readings (None if either is missing)."""
    if before is None or after is None:
        return None
    if before.pauses is None or after.pauses is None:  # kube-scheduler's: no GC, no drops
        return WorkFigures(**work_figures(before.work, after.work))
    dropped = after.work.get("events_dropped", 0.0) - before.work.get("events_dropped", 0.0)
    gc = gc_figures(before.pauses, after.pauses)
    return WorkFigures(
        **work_figures(before.work, after.work), gc=gc, events_dropped=round(dropped)
    )


def _request_kind(labels: dict[str, str]) -> str:
    """`VERB [group/]resource[/subresource]` of an API server request series (a non-resource
    URL such as /metrics keeps its path, which the API server puts in `subresource`)."""
    group = labels.get("group", "")
    resource = labels.get("resource", "")
    subresource = labels.get("subresource", "")
    if not resource:
        path = subresource or "(non-resource)"
    else:
        path = f"{group}/{resource}" if group else resource
        path += f"/{subresource}" if subresource else ""
    return f"{labels.get('verb', '')} {path}"


def _request_series(text: str) -> list[tuple[dict[str, str], float]]:
    """Each `apiserver_request_total` series so far, (labels, count). The API server's /metrics
    runs to megabytes, so only those lines go to the parser."""
    lines = [line for line in text.splitlines() if line.startswith(API_REQUESTS + "{")]
    families = text_string_to_metric_families("\n".join(lines) + "\n")
    return [(s.labels, s.value) for family in families for s in family.samples]


def api_request_counts(text: str) -> tuple[Counter[str], Counter[str]]:
    """The API server's requests so far: all it served, summed over code, scope, version and
    component, keyed `VERB [group/]resource[/subresource]` (e.g. `POST pods/binding`,
    `PUT coordination.k8s.io/leases`); and those answered other than 2xx, keyed with the code
    added (`POST pods/binding 429`): a client that retries (client-go on 429 and on some 5xx)
    shows among the served as more requests than it made calls, and these say which."""
    served: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    for labels, n in _request_series(text):
        kind = _request_kind(labels)
        served[kind] += n
        code = labels.get("code", "")
        if not code.startswith("2"):
            refused[f"{kind} {code or '?'}"] += n
    return served, refused


def cluster_pod_lists(text: str) -> float:
    """The LISTs of pods across all namespaces the API server has answered so far, whatever the
    answer (kwok does not retry a failed one). kwok makes one per node (`spec.nodeName=<node>`)
    when it first holds the node's Lease; while a run is set up the harness lists namespaced and
    the scheduler is not running yet."""
    wanted = {"verb": "LIST", "group": "", "resource": "pods", "scope": "cluster"}
    series = _request_series(text)
    return sum(n for labels, n in series if all(labels.get(k) == v for k, v in wanted.items()))


def api_request_figures(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """The requests served between two readings, by kind (kinds that did not grow left out)."""
    grown = {key: round(n - before.get(key, 0.0)) for key, n in after.items()}
    return {key: n for key, n in sorted(grown.items()) if n > 0}


def api_server_figures(before: str | None, after: str | None) -> ApiServerFigures | None:
    """What the API server's /metrics say about a window read at its two ends: requests and
    refusals by kind. None (never zeros) when either reading could not be taken."""
    if before is None or after is None:
        return None
    (served0, refused0), (served, refused) = api_request_counts(before), api_request_counts(after)
    return ApiServerFigures(
        api_requests=api_request_figures(served0, served),
        api_refusals=api_request_figures(refused0, refused),
    )
