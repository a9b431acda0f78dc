"""Metrics with logic behind them (in-flight events, scheduled-after-flush, feature-gated
families, REST client sizes and retries) and the V(2) per-pod log lines."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest

from scheduler import metrics
from scheduler.backend.queue.in_flight import InFlightTracker
from scheduler.clock import FakeClock
from scheduler.features import FeatureGates
from scheduler.framework.events import EVENT_NODE_ADD, ClusterEventWithHint, QueueingHint
from scheduler.logging import configure_logging, reset_logging, v_enabled
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness
from tests.backend.queue.helpers import always, make_queue, pop_and_fail
from tests.client.fake_apiserver import FakeApiServer, Response, status_body
from tests.client.test_rest import client


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels or {}) or 0.0


def exposition() -> str:
    return generate_latest(metrics.REGISTRY).decode()


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    yield
    reset_logging()


# --- scheduler_inflight_events -----------------------------------------------------------------


def _inflight(event: str) -> float:
    return sample("scheduler_inflight_events", {"event": event})


def test_inflight_events_count_popped_pods_and_the_events_kept_for_them() -> None:
    popped, node_add = _inflight("PodPopped"), _inflight("NodeAdd")
    tracker = InFlightTracker()
    assert not tracker.add_event_if_any_in_flight(EVENT_NODE_ADD, None, None)  # nobody in flight
    assert _inflight("NodeAdd") == node_add
    a, b = make_pod("a"), make_pod("b")
    tracker.add_pod(a)
    tracker.add_event_if_any_in_flight(EVENT_NODE_ADD, None, None)
    tracker.add_pod(b)
    tracker.add_event_if_any_in_flight(EVENT_NODE_ADD, None, None)
    assert (_inflight("PodPopped"), _inflight("NodeAdd")) == (popped + 2, node_add + 2)
    # a was the oldest: the event recorded before b was popped is no longer anyone's.
    tracker.done(a.uid)
    assert (_inflight("PodPopped"), _inflight("NodeAdd")) == (popped + 1, node_add + 1)
    tracker.done(b.uid)
    assert (_inflight("PodPopped"), _inflight("NodeAdd")) == (popped, node_add)
    tracker.add_pod(a)
    tracker.add_event_if_any_in_flight(EVENT_NODE_ADD, None, None)
    tracker.clear()
    assert (_inflight("PodPopped"), _inflight("NodeAdd")) == (popped, node_add)


# --- scheduler_queue_incoming_entities_total / scheduler_queued_entities -------------------


def _entities(queue: str, event: str) -> tuple[float, float]:
    labels = {"queue": queue, "event": event}
    return (
        sample("scheduler_queue_incoming_pods_total", labels),
        sample("scheduler_queue_incoming_entities_total", {**labels, "type": "pod"}),
    )


def test_incoming_entities_skip_moves_to_the_queue_the_strategy_named() -> None:
    events = {"Fit": [ClusterEventWithHint(EVENT_NODE_ADD, always(QueueingHint.QUEUE))]}
    q = make_queue(FakeClock(), events)
    added = _entities("active", "UnscheduledPodAdd")
    failed = _entities("unschedulable", "ScheduleAttemptFailure")
    q.add(make_pod("a"))
    assert _entities("active", "UnscheduledPodAdd") == (added[0] + 1, added[1] + 1)
    assert sample("scheduler_queued_entities", {"queue": "active", "type": "pod"}) == 1
    pop_and_fail(q, "Fit")
    # The pod went where its strategy (QueueSkip) sent it: one incoming pod, no new entity.
    assert _entities("unschedulable", "ScheduleAttemptFailure") == (failed[0] + 1, failed[1])
    assert sample("scheduler_queued_entities", {"queue": "unschedulable", "type": "pod"}) == 1


# --- scheduler_pod_scheduled_after_flush_total ----------------------------------------------


def test_a_pod_bound_after_the_unschedulable_flush_is_counted_once(h: Harness) -> None:
    name = "scheduler_pod_scheduled_after_flush_total"
    before = sample(name)
    h.add_node(make_node("small", cpu="1"))
    h.add_pod(make_pod("normal", cpu="500m"))
    h.schedule_next()
    h.api.wait_for(lambda: "default/normal" in h.api.binds)
    pod = make_pod("p", cpu="2")
    h.add_pod(pod)
    h.schedule_next()
    assert h.queue.where(pod.uid) == "unschedulable"
    assert sample(name) == before
    # No event for the new node reaches the queue: only the 5-minute flush brings p back.
    h.add_node(make_node("big", cpu="4"))
    h.clock.step(301)
    h.queue.flush_unschedulable_pods_leftover()
    h.schedule_next()
    h.api.wait_for(lambda: "default/p" in h.api.binds)
    h.api.wait_for(lambda: sample(name) == before + 1)


# --- feature-gated families -----------------------------------------------------------------


def test_gated_families_follow_their_feature_gate() -> None:
    try:
        metrics.apply_feature_gates(FeatureGates())
        text = exposition()
        assert "# TYPE scheduler_preemption_goroutines_execution_total counter" in text
        assert "scheduler_async_api_call_execution_total" not in text  # off by default
        # GenericWorkload is off by default; hidden (deprecated) families stay hidden.
        assert "scheduler_preemption_execution_duration_seconds" not in text
        assert "scheduler_preemption_goroutines_duration_seconds" not in text

        metrics.apply_feature_gates(
            FeatureGates({"SchedulerAsyncPreemption": False, "SchedulerAsyncAPICalls": True})
        )
        text = exposition()
        assert "scheduler_preemption_goroutines_execution_total" not in text
        assert "# TYPE scheduler_async_api_call_execution_total counter" in text
        assert "# TYPE scheduler_pending_async_api_calls gauge" in text
    finally:
        metrics.apply_feature_gates(FeatureGates())


def test_workload_preemption_victims_is_kube_schedulers_family_behind_generic_workload() -> None:
    """Name, type, help, buckets (1 .. 1024) and no labels, as kube-scheduler v1.37 registers
    it with GenericWorkload on; off, it is not exported."""
    family = "scheduler_workload_preemption_victims"
    try:
        metrics.apply_feature_gates(FeatureGates())
        assert family not in exposition()
        metrics.apply_feature_gates(FeatureGates({"GenericWorkload": True}))
        text = exposition()
        assert f"# TYPE {family} histogram" in text
        assert (
            f"# HELP {family} [ALPHA] Number of pod preemption victims caused by workload "
            "preemption." in text
        )
        buckets = [
            line.split()[0] for line in text.splitlines() if line.startswith(f"{family}_bucket")
        ]
        bounds = [str(float(2**i)) for i in range(11)] + ["+Inf"]
        assert buckets == [f'{family}_bucket{{le="{b}"}}' for b in bounds]
    finally:
        metrics.apply_feature_gates(FeatureGates())


def test_no_created_series_and_no_unmerged_goroutines_families() -> None:
    text = exposition()
    assert "_created" not in text
    assert "scheduler_goroutines_duration_seconds" not in text
    assert "scheduler_goroutines_execution_total" not in text


# --- rest_client_* sizes and retries --------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


def test_request_and_response_sizes_and_retries(server: FakeApiServer) -> None:
    answers = [
        Response(429, status_body(429, "TooManyRequests"), {"Retry-After": "1"}),
        Response(201, {"ok": True}),
    ]
    server.handler = lambda r: answers.pop(0)
    rest, _ = client(server.url)
    host = rest.host

    def values() -> tuple[float, float, float, float]:
        verb = {"verb": "POST", "host": host}
        return (
            sample("rest_client_request_size_bytes_count", verb),
            sample("rest_client_request_size_bytes_sum", verb),
            sample("rest_client_response_size_bytes_sum", verb),
            sample("rest_client_request_retries_total", {"code": "429", **verb}),
        )

    count, size, response, retries = values()
    rest.post("/api/v1/namespaces/ns/pods/p/binding", {"target": {"name": "n"}})
    body = len(b'{"target":{"name":"n"}}')
    # Two attempts sent the body; the one response returned is measured; one retry.
    assert values() == (count + 2, size + 2 * body, response + len(b'{"ok":true}'), retries + 1)


# --- V(2) per-pod lines -----------------------------------------------------------------------


def _bound_lines(h: Harness, verbosity: int, name: str) -> list[dict[str, str]]:
    out = io.BytesIO()
    configure_logging("json", verbosity, stream=out)
    h.add_pod(make_pod(name, cpu="100m"))
    h.schedule_next()
    h.api.wait_for(lambda: f"default/{name}" in h.api.binds)
    h.scheduler.stop()  # joins the binding threads: their lines are written
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return [line for line in lines if line["event"] == "successfully bound pod to node"]


def test_bound_pod_line_is_written_from_verbosity_2(h: Harness) -> None:
    h.add_node(make_node("n", cpu="4"))
    assert _bound_lines(h, 0, "quiet") == []
    assert not v_enabled(2)


def test_bound_pod_line_at_verbosity_2(h: Harness) -> None:
    h.add_node(make_node("n", cpu="4"))
    (line,) = _bound_lines(h, 2, "loud")
    assert (line["pod"], line["node"], line["level"]) == ("default/loud", "n", "info")
    assert v_enabled(2) and not v_enabled(3)


def test_verbosity_levels_before_and_after_configuration() -> None:
    assert v_enabled(10)  # structlog's defaults write everything
    configure_logging("json", 1, stream=io.BytesIO())
    assert v_enabled(1) and not v_enabled(2)
    reset_logging()
    assert v_enabled(10)
