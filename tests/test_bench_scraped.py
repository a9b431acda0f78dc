from prometheus_client import CollectorRegistry, Histogram, generate_latest

from e2e.bench.report import WORK_COLUMNS, markdown_table
from e2e.bench.scraped import (
    gc_figures,
    gc_pauses,
    scrape,
    scraped_figures,
    work_counters,
    work_figures,
)
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


SCHEDULER_TEXT = """\
# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods.
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="a",result="scheduled"} %(scheduled_a)d
scheduler_schedule_attempts_total{profile="b",result="scheduled"} 2
scheduler_schedule_attempts_total{profile="a",result="unschedulable"} %(unschedulable)d
# HELP scheduler_preemption_attempts_total Total preemption attempts in the cluster till now
# TYPE scheduler_preemption_attempts_total counter
scheduler_preemption_attempts_total %(preemptions)d
# HELP scheduler_preemption_victims Number of selected preemption victims
# TYPE scheduler_preemption_victims histogram
scheduler_preemption_victims_bucket{le="1"} 0
scheduler_preemption_victims_bucket{le="+Inf"} %(preemptions)d
scheduler_preemption_victims_sum %(victims)d
scheduler_preemption_victims_count %(preemptions)d
"""


def test_work_figures_are_the_counters_increase_summed_over_profiles() -> None:
    before = work_counters(
        SCHEDULER_TEXT % {"scheduled_a": 1, "unschedulable": 4, "preemptions": 1, "victims": 4}
    )
    after = work_counters(
        SCHEDULER_TEXT % {"scheduled_a": 11, "unschedulable": 34, "preemptions": 6, "victims": 24}
    )
    assert work_figures(before, after) == {
        "attempts_error": 0,  # no series: no attempt ended in an error
        "attempts_scheduled": 10,
        "attempts_unschedulable": 30,
        "preemption_attempts": 5,
        "preemption_victims": 20,
    }


def test_a_scheduler_whose_metrics_cannot_be_read_has_no_figures() -> None:
    def refused() -> str:
        raise ConnectionRefusedError("connection refused")

    assert scrape(refused, pauses=False) is None
    assert scraped_figures(None, None) == {}


def test_the_work_table_compares_the_attempts_of_both_schedulers() -> None:
    def run(scheduler: str, unschedulable: int) -> dict[str, object]:
        figures = {"attempts_scheduled": 1000, "attempts_unschedulable": unschedulable}
        return {"workload": "W", "size": "1000", "scheduler": scheduler, "figures": figures}

    older = {"workload": "V", "size": "1000", "scheduler": "kube-pysched", "figures": {}}
    rows = markdown_table(
        [run("kube-scheduler", 1000), run("kube-pysched", 3000), older], WORK_COLUMNS
    ).splitlines()
    assert rows[0] == (
        "| workload | size | scheduler | mode | scheduled | unschedulable | error "
        "| preemptions | victims |"
    )
    assert rows[2:] == [
        "| W | 1000 | kube-scheduler | live | 1000 | 1000 | - | - | - |",
        "| W | 1000 | kube-pysched | live | 1000 | 3000 | - | - | - |",
        "| W | 1000 | *ratio py/ks* | live | 1.00 | 3.00 | - | - | - |",
        "| V | 1000 | kube-pysched | live | - | - | - | - | - |",  # recorded before the figures
    ]
