from prometheus_client import CollectorRegistry, Histogram, generate_latest

from e2e.bench.scraped import gc_figures, gc_pauses
from scheduler.metrics import exponential_buckets


def _histogram() -> tuple[CollectorRegistry, Histogram]:
    registry = CollectorRegistry()
    hist = Histogram(
        "kube_pysched_gc_pause_seconds",
        "pauses",
        ["generation"],
        buckets=exponential_buckets(0.0001, 2, 16),
        registry=registry,
    )
    return registry, hist


def test_the_window_counts_only_the_collections_between_the_scrapes() -> None:
    registry, hist = _histogram()
    hist.labels("2").observe(0.5)  # before the window
    hist.labels("0").observe(0.001)
    before = gc_pauses(generate_latest(registry).decode())
    hist.labels("2").observe(0.030)
    hist.labels("2").observe(0.010)
    hist.labels("0").observe(0.002)
    hist.labels("1").observe(0.003)
    after = gc_pauses(generate_latest(registry).decode())
    assert gc_figures(before, after) == {
        "gc_full_collections": 2,
        "gc_full_ms": 40.0,
        "gc_full_max_ms_at_most": 51.2,  # the 30 ms pause's bucket: 0.1 ms * 2**9
        "gc_young_ms": 5.0,
    }


def test_no_full_collection_has_no_longest() -> None:
    registry, hist = _histogram()
    hist.labels("0").observe(0.001)
    text = gc_pauses(generate_latest(registry).decode())
    figures = gc_figures(text, text)
    assert (figures["gc_full_collections"], figures["gc_full_max_ms_at_most"]) == (0, None)
