from pathlib import Path

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from e2e.bench.record import to_json
from e2e.bench.report import (
    WORK_COLUMNS,
    api_request_cells,
    markdown_api_table,
    table,
)
from e2e.bench.scraped import (
    api_request_counts,
    api_request_figures,
    api_server_figures,
    cluster_pod_lists,
    gc_figures,
    gc_pauses,
    keep_metrics,
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
    assert to_json(gc_figures(before, after)) == {
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
    assert (figures.gc_full_collections, figures.gc_full_max_ms_at_most) == (0, None)
    assert to_json(figures)["gc_full_max_ms_at_most"] is None  # written as null


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
    assert scraped_figures(None, None) is None


def test_the_work_table_compares_the_attempts_of_both_schedulers() -> None:
    def run(scheduler: str, unschedulable: int) -> dict[str, object]:
        figures = {"attempts_scheduled": 1000, "attempts_unschedulable": unschedulable}
        return {"workload": "W", "size": "1000", "scheduler": scheduler, "figures": figures}

    older = {"workload": "V", "size": "1000", "scheduler": "kube-pysched", "figures": {}}
    rows = table(
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


API_SERVER_TEXT = """\
# HELP apiserver_request_total Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",\
scope="resource",subresource="binding",verb="POST",version="v1"} %(bindings)d
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",\
scope="resource",subresource="binding",verb="POST",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",\
scope="resource",subresource="status",verb="PATCH",version="v1"} %(status)d
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",\
resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",\
scope="",subresource="/metrics",verb="GET",version=""} %(scrapes)d
# HELP apiserver_request_duration_seconds Response latency
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="POST",le="+Inf"} 99
apiserver_request_duration_seconds_count{verb="POST"} 99
apiserver_request_duration_seconds_sum{verb="POST"} 1
"""


def test_api_requests_are_the_served_requests_increase_by_verb_and_resource() -> None:
    before = api_request_counts(API_SERVER_TEXT % {"bindings": 10, "status": 3, "scrapes": 1})[0]
    after = api_request_counts(API_SERVER_TEXT % {"bindings": 25, "status": 3, "scrapes": 2})[0]
    assert before["POST pods/binding"] == 11  # summed over the response codes
    assert api_request_figures(before, after) == {"GET /metrics": 1, "POST pods/binding": 15}


POD_LISTS_TEXT = """\
# HELP apiserver_request_total Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",\
scope="cluster",subresource="",verb="LIST",version="v1"} %(cluster)d
apiserver_request_total{code="504",component="apiserver",dry_run="",group="",resource="pods",\
scope="cluster",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",\
scope="namespace",subresource="",verb="LIST",version="v1"} 30
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",\
scope="cluster",subresource="",verb="LIST",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="metrics.k8s.io",\
resource="pods",scope="cluster",subresource="",verb="LIST",version="v1beta1"} 50
"""


def test_cluster_pod_lists_count_the_lists_of_pods_in_every_namespace() -> None:
    """kwok's one LIST per node (spec.nodeName=<node>), answered or not (kwok does not retry):
    the harness waits for as many as it created nodes; namespaced lists and other resources are
    someone else's."""
    assert cluster_pod_lists(POD_LISTS_TEXT % {"cluster": 1001}) == 1001 + 7
    assert cluster_pod_lists(API_SERVER_TEXT % {"bindings": 1, "status": 1, "scrapes": 1}) == 0


def test_api_refusals_are_the_non_2xx_requests_by_kind_and_code() -> None:
    conflicts = 'subresource="binding",verb="POST",version="v1"} '
    text = API_SERVER_TEXT % {"bindings": 25, "status": 3, "scrapes": 2}
    before = api_request_counts(text)[1]
    after = api_request_counts(text.replace(conflicts + "1", conflicts + "4"))[1]
    assert before == {"POST pods/binding 409": 1}
    assert api_request_figures(before, after) == {"POST pods/binding 409": 3}


def test_api_server_figures_are_empty_when_a_reading_is_missing() -> None:
    before = API_SERVER_TEXT % {"bindings": 10, "status": 3, "scrapes": 1}
    after = API_SERVER_TEXT % {"bindings": 25, "status": 3, "scrapes": 2}
    figures = to_json(api_server_figures(before, after))
    assert figures["api_requests"] == {"GET /metrics": 1, "POST pods/binding": 15}
    assert figures["api_refusals"] == {}
    assert api_server_figures(None, after) is None
    assert api_server_figures(before, None) is None


def test_the_api_table_adds_the_requests_up_by_kind() -> None:
    requests = {
        "POST pods": 100,
        "POST pods/binding": 100,
        "PATCH pods/status": 30,
        "POST events": 20,
        "PATCH events.k8s.io/events": 5,
        "PUT coordination.k8s.io/leases": 50,
        "DELETE pods": 2,
        "GET pods": 7,
        "LIST nodes": 1,
        "WATCH pods": 3,
    }
    record = {
        "workload": "W",
        "size": "1000",
        "scheduler": "kube-pysched",
        "figures": {"api_requests": requests, "window_seconds": 4.2},
    }
    assert api_request_cells(requests) == [100, 100, 30, 25, 50, 307, 8, 3]
    assert markdown_api_table([record]).splitlines()[-1] == (
        "| W | 1000 | kube-pysched | live | 100 | 100 | 30 | 25 | 50 | 307 | 8 | 3 | 4.2 |"
    )
    assert markdown_api_table([{**record, "figures": {}}]) == ""  # not recorded: no table


def test_events_kube_pysched_dropped_in_the_window_are_counted_and_noted() -> None:
    from prometheus_client import Counter

    from e2e.bench.report import notes

    registry = CollectorRegistry()
    dropped = Counter("kube_pysched_events_dropped", "dropped", registry=registry)
    dropped.inc(3)
    before = scrape(lambda: generate_latest(registry).decode(), pauses=True)
    dropped.inc(40)
    after = scrape(lambda: generate_latest(registry).decode(), pauses=True)
    figures = to_json(scraped_figures(before, after))
    assert figures["events_dropped"] == 40
    (note,) = notes({"figures": figures})
    assert note.startswith("40 events dropped") and "not comparable" in note
    # kube-scheduler exports no such count: no figure rather than a zero.
    plain = scrape(lambda: generate_latest(registry).decode(), pauses=False)
    assert "events_dropped" not in to_json(scraped_figures(plain, plain))
    assert notes({"figures": {"events_dropped": 0}}) == []


def test_the_last_scrape_is_kept_beside_the_scheduler_s_log(tmp_path: Path) -> None:
    text = 'scheduler_schedule_attempts_total{profile="p",result="scheduled"} 3.0\n'
    after = scrape(lambda: text, pauses=False)
    log = tmp_path / "kube-pysched-abc123.log"
    kept = keep_metrics(after, log)
    assert kept == tmp_path / "kube-pysched-abc123.metrics.txt"
    assert kept.read_text() == text
    assert keep_metrics(None, log) is None
    assert keep_metrics(after, None) is None
