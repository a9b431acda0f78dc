from pathlib import Path

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from e2e.bench.record import to_json
from e2e.bench.report import (
    WORK_COLUMNS,
    api_request_cells,
    markdown_api_table,
    markdown_go_cpu_table,
    markdown_latency_table,
    markdown_runqueue_table,
    markdown_table,
)
from e2e.bench.scraped import (
    api_refusal_counts,
    api_request_counts,
    api_request_durations,
    api_request_figures,
    api_request_latency_figures,
    api_server_figures,
    cluster_pod_lists,
    gc_figures,
    gc_pauses,
    go_cpu_class_figures,
    go_cpu_classes,
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
    before = api_request_counts(API_SERVER_TEXT % {"bindings": 10, "status": 3, "scrapes": 1})
    after = api_request_counts(API_SERVER_TEXT % {"bindings": 25, "status": 3, "scrapes": 2})
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
    before = api_refusal_counts(text)
    after = api_refusal_counts(text.replace(conflicts + "1", conflicts + "4"))
    assert before == {"POST pods/binding 409": 1}
    assert api_request_figures(before, after) == {"POST pods/binding 409": 3}


def test_api_server_figures_are_empty_when_a_reading_is_missing() -> None:
    before = API_SERVER_TEXT % {"bindings": 10, "status": 3, "scrapes": 1}
    after = API_SERVER_TEXT % {"bindings": 25, "status": 3, "scrapes": 2}
    figures = to_json(api_server_figures(before, after))
    assert figures["api_requests"] == {"GET /metrics": 1, "POST pods/binding": 15}
    assert figures["api_refusals"] == {}
    assert "apiserver_go_cpu_seconds" not in figures  # this text has no Go classes
    assert api_server_figures(None, after) is None
    assert api_server_figures(before, None) is None


GO_CLASSES_TEXT = """\
# HELP go_cpu_classes_gc_mark_idle_cpu_seconds_total Estimated total CPU time spent performing GC
# TYPE go_cpu_classes_gc_mark_idle_cpu_seconds_total counter
go_cpu_classes_gc_mark_idle_cpu_seconds_total %(idle_mark)s
go_cpu_classes_gc_mark_assist_cpu_seconds_total 1.5
go_cpu_classes_user_cpu_seconds_total %(user)s
go_cpu_classes_total_cpu_seconds_total %(total)s
go_cpu_count 2
go_gc_cycles_total_gc_cycles_total 40
"""


def test_go_cpu_classes_are_the_runtime_estimate_by_class_over_the_window() -> None:
    before = go_cpu_classes(GO_CLASSES_TEXT % {"idle_mark": "10", "user": "100.25", "total": "400"})
    after = go_cpu_classes(GO_CLASSES_TEXT % {"idle_mark": "12.5", "user": "110", "total": "440"})
    assert before == {"gc_mark_idle": 10, "gc_mark_assist": 1.5, "user": 100.25, "total": 400}
    assert go_cpu_class_figures(before, after) == {
        "gc_mark_assist": 0.0,
        "gc_mark_idle": 2.5,
        "total": 40.0,
        "user": 9.75,
    }
    assert go_cpu_classes(API_SERVER_TEXT % {"bindings": 1, "status": 1, "scrapes": 1}) == {}
    # A class only one reading has (a runtime that added it) is left out, never taken as 0.
    assert go_cpu_class_figures({}, after) == {}
    record = {
        "workload": "W",
        "size": "1000",
        "scheduler": "kube-scheduler",
        "figures": {"apiserver_go_cpu_seconds": go_cpu_class_figures(before, after)},
    }
    record["figures"]["window_seconds"] = 20.5
    assert markdown_go_cpu_table([record]).splitlines()[-1] == (
        "| W | 1000 | kube-scheduler | live | 9.75 | 0.0 |  | 2.5 |  | 20.5 |"
    )
    assert markdown_go_cpu_table([{**record, "figures": {}}]) == ""  # not recorded: no table


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


def _api_durations() -> tuple[CollectorRegistry, Histogram]:
    """The API server's request duration histogram, with its labels, in a registry of its own."""
    registry = CollectorRegistry()
    hist = Histogram(
        "apiserver_request_duration_seconds",
        "Response latency",
        ["verb", "group", "resource", "subresource", "scope", "component", "version"],
        registry=registry,
    )
    return registry, hist


def test_api_request_latency_is_the_mean_over_the_window_by_kind() -> None:
    registry, hist = _api_durations()
    lease = hist.labels("PUT", "coordination.k8s.io", "leases", "", "resource", "apiserver", "v1")
    namespaced = hist.labels("POST", "", "pods", "binding", "resource", "apiserver", "v1")
    cluster = hist.labels("POST", "", "pods", "binding", "cluster", "apiserver", "v1")
    watch = hist.labels("WATCH", "", "pods", "", "namespace", "apiserver", "v1")
    lease.observe(5.0)  # before the window: left out of its mean
    namespaced.observe(1.0)
    watch.observe(300.0)
    before = api_request_durations(generate_latest(registry).decode())
    for seconds in (0.2, 0.4):
        lease.observe(seconds)
    namespaced.observe(0.01)
    cluster.observe(0.03)  # the same kind in another scope: one mean over both
    watch.observe(600.0)
    after = api_request_durations(generate_latest(registry).decode())
    assert before["PUT coordination.k8s.io/leases"] == (1.0, 5.0)
    assert api_request_latency_figures(before, after) == {
        "POST pods/binding": 20.0,
        "PUT coordination.k8s.io/leases": 300.0,
    }  # a watch's duration is its lifetime: no WATCH kind


def test_the_latency_and_runqueue_tables_show_the_recorded_runs() -> None:
    record = {
        "workload": "W",
        "size": "1000",
        "scheduler": "kube-pysched",
        "figures": {
            "api_request_ms": {"POST pods/binding": 2.5, "PUT coordination.k8s.io/leases": 40.0},
            "api_requests": {"POST pods/binding": 2400, "PUT coordination.k8s.io/leases": 3000},
            "runqueue_wait_seconds_by_process": {"kube-pysched": 3.0, "kwok": 12.5},
            "window_seconds": 60.0,
        },
    }
    assert markdown_latency_table([record]).splitlines()[-1] == (
        "| W | 1000 | kube-pysched | live |  | 2.5 |  |  |  | 40.0 | 2.1 | 60.0 |"
    )  # in flight: (2400 x 2.5 ms + 3000 x 40 ms) / 60 s
    assert markdown_runqueue_table([record]).splitlines()[-1] == (
        "| W | 1000 | kube-pysched | live | 3.0 |  |  | 12.5 |  | 60.0 |"
    )
    assert markdown_latency_table([{**record, "figures": {}}]) == ""
    assert markdown_runqueue_table([{**record, "figures": {}}]) == ""


def test_the_last_scrape_is_kept_beside_the_scheduler_s_log(tmp_path: Path) -> None:
    text = 'scheduler_schedule_attempts_total{profile="p",result="scheduled"} 3.0\n'
    after = scrape(lambda: text, pauses=False)
    log = tmp_path / "kube-pysched-abc123.log"
    kept = keep_metrics(after, log)
    assert kept == tmp_path / "kube-pysched-abc123.metrics.txt"
    assert kept.read_text() == text
    assert keep_metrics(None, log) is None
    assert keep_metrics(after, None) is None
