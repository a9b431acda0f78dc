"""The API dispatcher's ordering per object: one call pending, one running, by relevance."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from scheduler.backend.api_dispatcher import POD_BINDING, POD_STATUS_PATCH, ApiDispatcher


@pytest.fixture
def dispatcher() -> Iterator[ApiDispatcher]:
    d = ApiDispatcher(workers=1)
    yield d
    d.close()


class Log:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def record(self, what: str) -> None:
        self.calls.append(what)

    def blocking(self, what: str) -> None:
        self.started.set()
        assert self.release.wait(10)
        self.calls.append(what)

    def occupy(self, dispatcher: ApiDispatcher) -> None:
        """Keeps the single worker busy on object "other" until `release` is set."""
        self.started.clear()
        self.release.clear()
        dispatcher.submit(POD_STATUS_PATCH, "other", lambda: self.blocking("other"))
        assert self.started.wait(10)


def test_newer_call_of_the_same_type_replaces_the_pending_one(dispatcher: ApiDispatcher) -> None:
    log = Log()
    log.occupy(dispatcher)
    dispatcher.submit(POD_STATUS_PATCH, "p", lambda: log.record("p first"))
    dispatcher.submit(POD_STATUS_PATCH, "p", lambda: log.record("p second"))
    log.release.set()
    assert dispatcher.wait_idle(10)
    assert log.calls == ["other", "p second"]


def test_call_for_an_object_with_a_running_call_waits_for_it() -> None:
    d = ApiDispatcher(workers=2)
    log = Log()
    try:
        d.submit(POD_STATUS_PATCH, "p", lambda: log.blocking("p first"))
        assert log.started.wait(10)
        d.submit(POD_STATUS_PATCH, "p", lambda: log.record("p second"))
        d.submit(POD_STATUS_PATCH, "q", lambda: log.record("q"))
        deadline = time.monotonic() + 10
        while "q" not in log.calls:  # the free worker takes q, never p's second call
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert log.calls == ["q"]
        log.release.set()
        assert d.wait_idle(10)
        assert log.calls == ["q", "p first", "p second"]
    finally:
        log.release.set()
        d.close()


def test_exclusive_drops_a_pending_less_relevant_call(dispatcher: ApiDispatcher) -> None:
    log = Log()
    log.occupy(dispatcher)
    dispatcher.submit(POD_STATUS_PATCH, "p", lambda: log.record("p patch"))
    with dispatcher.exclusive(POD_BINDING, "p"):
        log.record("p bind")
    log.release.set()
    assert dispatcher.wait_idle(10)
    assert log.calls == ["p bind", "other"]


def test_exclusive_waits_for_the_running_call_and_holds_later_ones(
    dispatcher: ApiDispatcher,
) -> None:
    log = Log()
    dispatcher.submit(POD_STATUS_PATCH, "p", lambda: log.blocking("p patch"))
    assert log.started.wait(10)
    inside = threading.Event()
    leave = threading.Event()

    def bind() -> None:
        with dispatcher.exclusive(POD_BINDING, "p"):
            log.record("p bind")
            inside.set()
            assert leave.wait(10)

    binder = threading.Thread(target=bind)
    binder.start()
    try:
        while not dispatcher.is_waiting("p"):
            assert binder.is_alive()
            binder.join(0.005)
        assert log.calls == []
        log.release.set()
        assert inside.wait(10)
        dispatcher.submit(POD_STATUS_PATCH, "p", lambda: log.record("p later patch"))
        assert log.calls == ["p patch", "p bind"]
    finally:
        leave.set()
        log.release.set()
        binder.join(10)
    assert dispatcher.wait_idle(10)
    assert log.calls == ["p patch", "p bind", "p later patch"]


def test_less_relevant_call_than_the_pending_one_is_dropped(dispatcher: ApiDispatcher) -> None:
    log = Log()
    log.occupy(dispatcher)
    dispatcher.submit(POD_BINDING, "p", lambda: log.record("p bind"))
    dispatcher.submit(POD_STATUS_PATCH, "p", lambda: log.record("p patch"))
    log.release.set()
    assert dispatcher.wait_idle(10)
    assert log.calls == ["other", "p bind"]


def test_a_newer_status_patch_keeps_the_pending_ones_nomination(
    dispatcher: ApiDispatcher,
) -> None:
    from scheduler.schedule_one import PodStatusPatch
    from scheduler.testing import FakeApi, make_pod

    log = Log()
    api = FakeApi()
    pod = make_pod("p")
    log.occupy(dispatcher)
    first = {"status": {"conditions": [{"message": "first"}], "nominatedNodeName": "n1"}}
    second = {"status": {"conditions": [{"message": "second"}]}}
    third = {"status": {"conditions": [{"message": "third"}], "nominatedNodeName": None}}
    dispatcher.submit(POD_STATUS_PATCH, pod.uid, PodStatusPatch(api, pod, first))
    dispatcher.submit(POD_STATUS_PATCH, pod.uid, PodStatusPatch(api, pod, second))
    log.release.set()
    assert dispatcher.wait_idle(10)
    assert api.status_patches == [
        (pod.key, {"status": {"conditions": [{"message": "second"}], "nominatedNodeName": "n1"}})
    ]
    # A newer patch that sets (or clears) the nomination itself wins.
    log.occupy(dispatcher)
    dispatcher.submit(POD_STATUS_PATCH, pod.uid, PodStatusPatch(api, pod, first))
    dispatcher.submit(POD_STATUS_PATCH, pod.uid, PodStatusPatch(api, pod, third))
    log.release.set()
    assert dispatcher.wait_idle(10)
    assert api.status_patches[-1] == (pod.key, third)
