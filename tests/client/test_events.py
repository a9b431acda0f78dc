"""The event recorder: Event shape, series, the bounded buffer, retries."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from scheduler import metrics
from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.api.objects import Pod
from scheduler.client.events import (
    DEFAULT_SENDERS,
    FINISH_CHECK,
    FINISH_TIME,
    EventRecorder,
    ObjectRef,
    event_name,
    micro_time,
    truncate_note,
)
from scheduler.clock import FakeClock


class FakeEventsApi:
    """Records create_event/patch_event; `failures` are raised first, one per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.failures: list[Exception] = []
        self.created: dict[tuple[str, str], dict[str, Any]] = {}
        self.lock = threading.Lock()

    def _maybe_fail(self) -> None:
        with self.lock:
            if self.failures:
                raise self.failures.pop(0)

    def create_event(self, namespace: str, event: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("create", namespace, event))
        self._maybe_fail()
        self.created[(namespace, event["metadata"]["name"])] = event
        return event

    def patch_event(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("patch", f"{namespace}/{name}", patch))
        self._maybe_fail()
        if (namespace, name) not in self.created:
            raise ApiError(404, "NotFound", f'events "{name}" not found')
        return {}


def pod(name: str = "p", rv: str = "7") -> Pod:
    return Pod(uid=f"uid-{name}", namespace="ns", name=name, resource_version=rv)


@pytest.fixture
def api() -> FakeEventsApi:
    return FakeEventsApi()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_700_000_000.25)


@pytest.fixture
def recorder(api: FakeEventsApi, clock: FakeClock) -> Iterator[EventRecorder]:
    # One sender, so writes reach the fake in the order they were decided (with more, an
    # event's create and its series' patch may cross: test_several_writes_are_in_flight...).
    rec = EventRecorder(
        api,  # type: ignore[arg-type]
        reporting_instance="kube-pysched-host1",
        clock=clock,
        retry_interval=0.01,
        senders=1,
    )
    rec.start()
    yield rec
    rec.stop(timeout=5)


def test_an_event_is_posted_with_events_v1_fields(
    recorder: EventRecorder, api: FakeEventsApi
) -> None:
    preemptor = pod("big", "9")
    recorder.eventf(pod(), preemptor, "Normal", "Preempted", "Preempting", "by ns/big on n1")
    assert recorder.flush(5)

    ((verb, namespace, body),) = api.calls
    assert (verb, namespace) == ("create", "ns")
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": body["metadata"]["name"], "namespace": "ns"},
        "eventTime": "2023-11-14T22:13:20.250000Z",
        "reportingController": "kube-pysched",
        "reportingInstance": "kube-pysched-host1",
        "action": "Preempting",
        "reason": "Preempted",
        "regarding": {
            "kind": "Pod",
            "namespace": "ns",
            "name": "p",
            "uid": "uid-p",
            "apiVersion": "v1",
            "resourceVersion": "7",
        },
        "note": "by ns/big on n1",
        "type": "Normal",
        "related": {
            "kind": "Pod",
            "namespace": "ns",
            "name": "big",
            "uid": "uid-big",
            "apiVersion": "v1",
            "resourceVersion": "9",
        },
    }
    assert body["metadata"]["name"] == f"p.{int(1_700_000_000.25 * 1e9):x}"


def test_the_default_reporting_instance_names_the_host(api: FakeEventsApi) -> None:
    import socket

    rec = EventRecorder(api)  # type: ignore[arg-type]
    assert rec.reporting_instance == f"kube-pysched-{socket.gethostname()}"[:128]


def test_isomorphic_events_become_a_series(
    recorder: EventRecorder, api: FakeEventsApi, clock: FakeClock
) -> None:
    for i in range(4):
        recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", f"try {i}")
        clock.step(1)
    assert recorder.flush(5)
    name = api.calls[0][2]["metadata"]["name"]
    assert [c[0] for c in api.calls] == ["create", "patch"]
    assert api.calls[0][2]["note"] == "try 0"
    assert api.calls[1] == (
        "patch",
        f"ns/{name}",
        {"series": {"count": 2, "lastObservedTime": micro_time(1_700_000_001.25)}},
    )

    # A different reason, or a new version of the pod, is a different event.
    recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "try")
    recorder.eventf(pod(rv="8"), None, "Warning", "FailedScheduling", "Scheduling", "try")
    recorder.eventf(pod(), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    assert [c[0] for c in api.calls] == ["create", "patch", "create", "create"]


def test_series_are_finished_with_their_final_count(
    recorder: EventRecorder, api: FakeEventsApi, clock: FakeClock
) -> None:
    for _ in range(5):
        recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "no nodes")
    assert recorder.flush(5)
    clock.step(FINISH_TIME + 1)
    # Any later event wakes the worker, which then does its periodic series work.
    recorder.eventf(pod("other"), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    patches = [c for c in api.calls if c[0] == "patch"]
    assert [p[2]["series"]["count"] for p in patches] == [2, 5]
    # Forgotten: the same event again starts a new Event.
    recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "no nodes")
    assert recorder.flush(5)
    assert api.calls[-1][0] == "create"


def test_a_series_whose_event_vanished_is_created_again(
    recorder: EventRecorder, api: FakeEventsApi
) -> None:
    recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "x")
    assert recorder.flush(5)
    api.created.clear()  # e.g. the event TTL expired on the server
    recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "x")
    assert recorder.flush(5)
    assert [c[0] for c in api.calls] == ["create", "patch", "create"]
    assert api.calls[-1][2]["series"]["count"] == 2


def test_transport_failures_are_retried_and_rejections_are_not(
    recorder: EventRecorder, api: FakeEventsApi
) -> None:
    api.failures = [
        ApiConnectionError("reset", refused=False, request_sent=True),
        ApiConnectionError("refused", refused=True, request_sent=False),
    ]
    recorder.eventf(pod("a"), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    assert len(api.calls) == 3
    assert recorder.sent == 1

    api.failures = [ApiError(422, "Invalid", "note too long")]
    recorder.eventf(pod("b"), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    assert len(api.calls) == 4
    assert recorder.failed == 1


def test_a_full_buffer_drops_without_blocking(api: FakeEventsApi) -> None:
    rec = EventRecorder(api, buffer_size=3)  # type: ignore[arg-type]  # not started
    before = metrics.events_dropped._value.get()
    for i in range(5):
        rec.eventf(pod(str(i)), None, "Normal", "Scheduled", "Binding", "ok")
    assert rec.dropped == 2
    assert metrics.events_dropped._value.get() == before + 2
    rec.start()
    assert rec.flush(5)
    assert len(api.calls) == 3
    rec.stop()


def test_a_buffered_event_does_not_keep_its_pod_alive(api: FakeEventsApi) -> None:
    """A preemption storm buffers tens of thousands of Events about deleted victims."""
    rec = EventRecorder(api)  # type: ignore[arg-type]  # not started: the event stays buffered
    victim, preemptor = pod("victim"), pod("preemptor")
    before = sys.getrefcount(victim), sys.getrefcount(preemptor)
    rec.eventf(victim, preemptor, "Normal", "Preempted", "Preempting", "by p on n")
    assert (sys.getrefcount(victim), sys.getrefcount(preemptor)) == before
    rec.start()
    assert rec.flush(5)
    assert api.calls[0][2]["regarding"]["name"] == "victim"
    rec.stop()


def test_unknown_event_types_are_refused(recorder: EventRecorder, api: FakeEventsApi) -> None:
    recorder.eventf(pod(), None, "Fatal", "Boom", "Exploding", "x")
    assert recorder.flush(5)
    assert api.calls == []


def test_notes_are_cut_to_1024_bytes() -> None:
    assert truncate_note("short") == "short"
    cut = truncate_note("x" * 2000)
    assert len(cut) == 1024 and cut.endswith(" ...")
    wide = truncate_note("é" * 600)  # 1200 bytes
    assert len(wide.encode()) <= 1024 and wide.endswith(" ...")


def test_event_names_fall_back_to_a_uuid_when_invalid() -> None:
    assert event_name("my-pod", 255) == "my-pod.ff"
    assert len(event_name("Not_Valid", 1)) == 36


def test_object_ref_of_a_node_is_cluster_scoped() -> None:
    from scheduler.api.objects import Node

    ref = ObjectRef.of(Node(name="n1", uid="u1", resource_version="3"))
    assert ref.to_json() == {
        "kind": "Node",
        "name": "n1",
        "uid": "u1",
        "apiVersion": "v1",
        "resourceVersion": "3",
    }


def test_object_ref_of_a_pod_group_names_its_api() -> None:
    """The related object of a group preemption's Preempted events (the PodGroup, as
    kube-scheduler's recorder makes it from its scheme)."""
    from scheduler.api.gang import gang_from_kube_pod_group, parse_kube_pod_group
    from tests.api.kube_pod_groups import kube_pod_group_json

    gang = gang_from_kube_pod_group(parse_kube_pod_group(kube_pod_group_json("g")))
    assert ObjectRef.of(gang).to_json() == {
        "kind": "PodGroup",
        "namespace": "default",
        "name": "g",
        "uid": "uid-g",
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "resourceVersion": "7",
    }


def test_several_writes_are_in_flight_at_once(api: FakeEventsApi) -> None:
    """A slow API server must not make events queue behind a few writes at a time: as many
    creates as the scheduler has bindings in flight (64) meet at a barrier, which a recorder
    with fewer writers would never reach."""
    assert DEFAULT_SENDERS >= 64
    barrier = threading.Barrier(DEFAULT_SENDERS, timeout=10)
    create = api.create_event

    def create_when_all_are_waiting(namespace: str, event: dict[str, Any]) -> dict[str, Any]:
        barrier.wait()
        return create(namespace, event)

    api.create_event = create_when_all_are_waiting  # type: ignore[method-assign]
    rec = EventRecorder(api)  # type: ignore[arg-type]
    rec.start()
    try:
        for i in range(2 * DEFAULT_SENDERS):
            rec.eventf(pod(str(i)), None, "Normal", "Scheduled", "Binding", "ok")
        assert rec.flush(15)
    finally:
        rec.stop()
    assert not barrier.broken
    assert (rec.sent, rec.failed) == (2 * DEFAULT_SENDERS, 0)
    assert len(api.created) == 2 * DEFAULT_SENDERS


def test_an_event_its_series_created_first_is_not_a_failure(
    recorder: EventRecorder, api: FakeEventsApi
) -> None:
    """The create of an event and the patch of its series run side by side; when the patch
    finds no Event and creates one first, the plain create's AlreadyExists is not an error."""
    api.failures = [ApiError(409, "AlreadyExists", 'events "p.1" already exists')]
    recorder.eventf(pod(), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    assert (recorder.sent, recorder.failed) == (0, 0)


def test_a_series_whose_event_appears_between_its_patch_and_create_retries_quietly(
    recorder: EventRecorder, api: FakeEventsApi
) -> None:
    """The series' patch finds no Event (404), the Event lands, the series' create gets
    AlreadyExists: the patch is retried, without an error line (client-go retries it
    silently), and the series is written."""
    recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "no")
    assert recorder.flush(5)
    api.failures = [
        ApiError(404, "NotFound", 'events "p.1" not found'),
        ApiError(409, "AlreadyExists", 'events "p.1" already exists'),
    ]
    with structlog.testing.capture_logs() as logs:
        recorder.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "no")
        assert recorder.flush(5)
    assert [c[0] for c in api.calls] == ["create", "patch", "create", "patch"]
    assert api.calls[-1][2]["series"]["count"] == 2
    assert (recorder.sent, recorder.failed) == (2, 0)
    assert not [r for r in logs if r["log_level"] == "error"], logs


def test_a_recorder_needs_a_sender(api: FakeEventsApi) -> None:
    with pytest.raises(ValueError, match="at least one sender"):
        EventRecorder(api, senders=0)  # type: ignore[arg-type]


def test_a_series_comes_out_whole_when_its_writes_cross(api: FakeEventsApi) -> None:
    """An event and its repeat, written by two senders at once: whichever write lands first,
    one Event is stored, counted twice, and nothing is reported failed."""
    for _ in range(20):
        api = FakeEventsApi()
        rec = EventRecorder(api, retry_interval=0.01)  # type: ignore[arg-type]
        rec.start()
        try:
            rec.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "no")
            rec.eventf(pod(), None, "Warning", "FailedScheduling", "Scheduling", "no")
            assert rec.flush(5)
        finally:
            rec.stop()
        assert rec.failed == 0
        [stored] = api.created.values()
        patched = [c[2]["series"]["count"] for c in api.calls if c[0] == "patch"]
        # Stored as a series by the patch that found no Event, or patched into one (again
        # after a retry if its create had crossed the plain one).
        assert stored.get("series", {}).get("count") == 2 or (patched and set(patched) == {2})


def test_a_rejection_for_a_terminating_or_gone_namespace_is_not_an_error(
    recorder: EventRecorder, api: FakeEventsApi
) -> None:
    terminating = ApiError(
        403,
        "Forbidden",
        "unable to create new content in namespace ns because it is being terminated",
        details={"causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace"}]},
    )
    gone = ApiError(404, "NotFound", 'namespaces "ns" not found', details={"kind": "namespaces"})
    invalid = ApiError(422, "Invalid", "note too long")
    api.failures = [terminating, gone, invalid]
    with structlog.testing.capture_logs() as logs:
        for name in "abc":
            recorder.eventf(pod(name), None, "Normal", "Scheduled", "Binding", "ok")
        assert recorder.flush(5)
    rejected = [r for r in logs if r["event"] == "server rejected event (will not retry)"]
    assert [r["log_level"] for r in rejected] == ["debug", "debug", "error"]
    assert recorder.failed == 3


def test_at_stop_unsendable_events_are_dropped_with_one_line(
    api: FakeEventsApi, clock: FakeClock
) -> None:
    rec = EventRecorder(
        api,  # type: ignore[arg-type]
        reporting_instance="kube-pysched-host1",
        clock=clock,
        retry_interval=60.0,  # a retry would not come before the stop is over
        senders=1,
    )
    rec.start()
    refused = ApiConnectionError("refused", refused=True, request_sent=False)
    api.failures = [refused] * 3
    with structlog.testing.capture_logs() as logs:
        rec.eventf(pod("a"), None, "Normal", "Scheduled", "Binding", "ok")
        assert not rec.flush(0.2)  # waiting for its retry
        rec.begin_stop()
        for name in "bc":
            rec.eventf(pod(name), None, "Normal", "Scheduled", "Binding", "ok")
        rec.stop(timeout=5)
        rec.eventf(pod("d"), None, "Normal", "Scheduled", "Binding", "ok")  # after the stop
        assert rec.report_unsent() == 4  # the late one is counted, and not logged again
    events = [r["event"] for r in logs]
    assert events.count("dropping unsent events at shutdown") == 1
    assert events.count("unable to write event (will retry)") == 1  # before the stop began
    dropped = next(r for r in logs if r["event"] == "dropping unsent events at shutdown")
    assert dropped["count"] == 3


def test_single_events_kept_are_bounded_oldest_forgotten_first(
    api: FakeEventsApi, clock: FakeClock
) -> None:
    rec = EventRecorder(api, clock=clock, senders=1, max_single_events=3)  # type: ignore[arg-type]
    rec.start()
    try:
        # A series does not count against the bound: only time ends it.
        for _ in range(2):
            rec.eventf(pod("s"), None, "Warning", "FailedScheduling", "Scheduling", "no")
        for i in range(5):
            rec.eventf(pod(f"b{i}"), None, "Normal", "Scheduled", "Binding", "ok")
        assert rec.flush(5)
        assert rec.cached == (3, 1)  # b2, b3, b4 and the series
        # b0 was forgotten: its repeat is a new Event; b4's repeat makes it a series.
        rec.eventf(pod("b0"), None, "Normal", "Scheduled", "Binding", "ok")
        rec.eventf(pod("b4"), None, "Normal", "Scheduled", "Binding", "ok")
        rec.eventf(pod("s"), None, "Warning", "FailedScheduling", "Scheduling", "no")
        assert rec.flush(5)
        (verb, _, body), (last_verb, target, patch) = api.calls[-2:]
        assert (verb, body["regarding"]["name"]) == ("create", "b0")
        assert (last_verb, target.split(".")[0], patch["series"]["count"]) == ("patch", "ns/b4", 2)
        assert rec.cached == (2, 2)  # b3, b0; the series of s and b4
    finally:
        rec.stop(timeout=5)


def test_events_are_forgotten_at_the_first_check_after_finish_time(
    recorder: EventRecorder, api: FakeEventsApi, clock: FakeClock
) -> None:
    recorder.eventf(pod("once"), None, "Normal", "Scheduled", "Binding", "ok")
    for _ in range(3):
        recorder.eventf(pod("thrice"), None, "Warning", "FailedScheduling", "Scheduling", "no")
    clock.step(100)
    recorder.eventf(pod("late"), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    assert recorder.cached == (2, 1)
    # FINISH_TIME after the first three: those are finished, the series written a last time.
    clock.step(FINISH_TIME - 100 + 1)
    recorder.eventf(pod("wake"), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    assert api.calls[-1][0] == "patch"
    assert api.calls[-1][2]["series"]["count"] == 3
    assert recorder.cached == (2, 0)  # late, wake
    # Within FINISH_CHECK of late's FINISH_TIME (not one FINISH_TIME later): late is gone.
    clock.step(100 + FINISH_CHECK)
    recorder.eventf(pod("wake2"), None, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.flush(5)
    assert recorder.cached == (2, 0)  # wake, wake2
