"""Figures from kube-pysched's own /metrics, scraped before and after the measured window.

kube-pysched only: kube-scheduler has no such families. The GC pause histogram
(kube_pysched_gc_pause_seconds) says how long the interpreter's collections held the process
while the measured pods were scheduled, which /proc's CPU time cannot separate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

GC_PAUSE = "kube_pysched_gc_pause_seconds"

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


def gc_figures(before: Pauses, after: Pauses) -> dict[str, Any]:
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
    return {
        "gc_full_collections": int(full),
        "gc_full_ms": round(1000 * full_seconds, 1),
        "gc_full_max_ms_at_most": (
            None if full == 0 or math.isinf(longest) else round(1000 * longest, 1)
        ),
        "gc_young_ms": round(1000 * young_seconds, 1),
    }


def scrape(fetch: Callable[[], str] | None) -> Pauses | None:
    """The pauses now, or None for a scheduler without the family (kube-scheduler)."""
    return gc_pauses(fetch()) if fetch is not None else None
