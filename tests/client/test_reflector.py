"""List+watch recovery against a scripted server: pagination, 410s, dropped connections."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.client.backoff import Backoff
from scheduler.client.config import ClientConfig
from scheduler.client.informer import Informer
from scheduler.client.reflector import ListWatchSpec
from scheduler.client.rest import RestClient
from tests.client.fake_apiserver import (
    FakeApiServer,
    Request,
    Response,
    WatchScript,
    event_line,
    obj,
    status_body,
)

PODS = ListWatchSpec("/api/v1/pods", field_selector="status.phase!=Failed")


def rv_of(raw: dict[str, Any]) -> tuple[str, str]:
    return raw["metadata"]["name"], raw["metadata"]["resourceVersion"]


class Events:
    """Handler calls, with a way to wait for a number of them."""

    def __init__(self, informer: Informer[tuple[str, str]]) -> None:
        self.seen: list[tuple[str, ...]] = []
        self._cond = threading.Condition()
        informer.add_event_handler(
            lambda o: self._add(("add", *o)),
            lambda old, new: self._add(("update", *new)),
            lambda o: self._add(("delete", *o)),
        )

    def _add(self, entry: tuple[str, ...]) -> None:
        with self._cond:
            self.seen.append(entry)
            self._cond.notify_all()

    def wait(self, count: int, timeout: float = 10.0) -> list[tuple[str, ...]]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.seen) >= count, timeout), self.seen
            return list(self.seen)


def list_response(items: list[dict[str, Any]], rv: str, cont: str = "") -> Response:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return Response(200, {"kind": "PodList", "metadata": meta, "items": items})


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def make_informer(server: FakeApiServer) -> Iterator[Any]:
    started: list[Informer[tuple[str, str]]] = []

    def make(page_size: int = 500) -> tuple[Informer[tuple[str, str]], Events]:
        rest = RestClient(ClientConfig(server=server.url, qps=-1))
        informer = Informer(
            rest,
            PODS,
            rv_of,
            page_size=page_size,
            backoff=Backoff(0.001, factor=1.0),
        )
        events = Events(informer)
        started.append(informer)
        return informer, events

    yield make
    for informer in started:
        informer.stop(timeout=5)
        assert informer._thread is None or not informer._thread.is_alive()


def test_paginated_list_then_watch_from_the_list_version(
    server: FakeApiServer, make_informer: Any
) -> None:
    def handler(r: Request) -> Response:
        if r.query.get("continue") == "c1":
            return list_response([obj("c", "7")], "9")
        return list_response([obj("a", "5"), obj("b", "6")], "9", cont="c1")

    server.handler = handler
    hold = WatchScript([event_line("ADDED", obj("d", "10"))], end="hold")
    server.watches.put(hold)
    informer, events = make_informer(page_size=2)
    informer.start()

    assert informer.wait_for_sync(10)
    assert events.wait(4) == [
        ("add", "a", "5"),
        ("add", "b", "6"),
        ("add", "c", "7"),
        ("add", "d", "10"),
    ]
    first, second = server.list_requests()
    # The first list is a consistent read (no resourceVersion): only that one is paginated
    # by the API server; "0" would be served whole from the watch cache.
    assert first.query == {"fieldSelector": "status.phase!=Failed", "limit": "2"}
    # resourceVersion must not accompany a continue token.
    assert second.query == {"fieldSelector": "status.phase!=Failed", "limit": "2", "continue": "c1"}
    (watch,) = server.watch_requests()
    assert watch.query["resourceVersion"] == "9"
    assert watch.query["allowWatchBookmarks"] == "true"
    assert watch.query["fieldSelector"] == "status.phase!=Failed"
    assert 300 <= int(watch.query["timeoutSeconds"]) < 600


def test_bookmarks_move_the_resume_point_and_a_closed_watch_is_reopened(
    server: FakeApiServer, make_informer: Any
) -> None:
    server.handler = lambda r: list_response([obj("a", "5")], "5")
    server.watches.put(
        WatchScript(
            [
                event_line("MODIFIED", obj("a", "6")),
                event_line("BOOKMARK", {"metadata": {"resourceVersion": "20"}}),
            ]
        )
    )
    server.watches.put(WatchScript([event_line("DELETED", obj("a", "21"))], end="hold"))
    informer, events = make_informer()
    informer.start()

    assert events.wait(3) == [("add", "a", "5"), ("update", "a", "6"), ("delete", "a", "21")]
    assert [w.query["resourceVersion"] for w in server.watch_requests()] == ["5", "20"]
    assert len(server.list_requests()) == 1


def test_a_connection_dropped_mid_line_resumes_without_loss_or_duplicates(
    server: FakeApiServer, make_informer: Any
) -> None:
    server.handler = lambda r: list_response([], "1")
    first = event_line("ADDED", obj("a", "2"))
    second = event_line("ADDED", obj("b", "3"))
    server.watches.put(WatchScript([first + second[:15]], end="drop"))
    # The server replays from the resume point; "a" again must not be delivered twice.
    server.watches.put(
        WatchScript([first, second, event_line("MODIFIED", obj("b", "4"))], end="hold")
    )
    informer, events = make_informer()
    informer.start()

    assert events.wait(3) == [("add", "a", "2"), ("add", "b", "3"), ("update", "b", "4")]
    assert [w.query["resourceVersion"] for w in server.watch_requests()] == ["1", "2"]
    assert len(server.list_requests()) == 1
    assert informer.get("ns/b") == ("b", "4")


def test_410_in_the_stream_relists_and_delivers_the_difference(
    server: FakeApiServer, make_informer: Any
) -> None:
    lists = [
        list_response([obj("a", "1"), obj("b", "1"), obj("c", "1")], "1"),
        list_response([obj("a", "2"), obj("b", "50"), obj("d", "51")], "60"),
    ]
    server.handler = lambda r: lists.pop(0)
    server.watches.put(
        WatchScript(
            [
                event_line("MODIFIED", obj("a", "2")),
                event_line("ERROR", status_body(410, "Expired", "too old resource version")),
            ],
            end="hold",
        )
    )
    server.watches.put(WatchScript([], end="hold"))
    informer, events = make_informer()
    informer.start()

    seen = events.wait(7)
    assert seen[:4] == [
        ("add", "a", "1"),
        ("add", "b", "1"),
        ("add", "c", "1"),
        ("update", "a", "2"),
    ]
    # After the relist: a is unchanged (no event), b changed, d is new, c disappeared.
    assert seen[4:] == [("update", "b", "50"), ("add", "d", "51"), ("delete", "c", "1")]
    relist = server.list_requests()[1]
    assert relist.query["resourceVersion"] == "2"
    assert "limit" not in relist.query  # served whole from the watch cache, as client-go
    assert server.wait_for_requests(lambda reqs: len(server.watch_requests()) == 2, 10)
    assert server.watch_requests()[-1].query["resourceVersion"] == "60"


def test_410_when_opening_the_watch_relists(server: FakeApiServer, make_informer: Any) -> None:
    lists = [list_response([obj("a", "1")], "1"), list_response([obj("a", "9")], "9")]
    server.handler = lambda r: lists.pop(0)
    server.watches.put(WatchScript(status=410, error_body=status_body(410, "Expired")))
    server.watches.put(WatchScript([], end="hold"))
    informer, events = make_informer()
    informer.start()

    assert events.wait(2) == [("add", "a", "1"), ("update", "a", "9")]
    assert len(server.list_requests()) == 2


def test_an_expired_relist_falls_back_to_the_newest_version(
    server: FakeApiServer, make_informer: Any
) -> None:
    answers = [
        list_response([obj("a", "1")], "1"),
        Response(410, status_body(410, "Expired", "too old resource version")),
        list_response([obj("a", "3")], "3"),
    ]
    server.handler = lambda r: answers.pop(0)
    server.watches.put(WatchScript(status=410, error_body=status_body(410, "Expired")))
    server.watches.put(WatchScript([], end="hold"))
    informer, events = make_informer()
    informer.start()

    assert events.wait(2) == [("add", "a", "1"), ("update", "a", "3")]
    queries = [r.query for r in server.list_requests()]
    assert queries[1]["resourceVersion"] == "1"
    assert "resourceVersion" not in queries[2]  # a consistent read of the newest state
    assert queries[2]["limit"] == "500"


def test_an_expired_continue_token_falls_back_to_one_full_list(
    server: FakeApiServer, make_informer: Any
) -> None:
    def handler(r: Request) -> Response:
        if "continue" in r.query:
            return Response(410, status_body(410, "Expired", "continue token expired"))
        if "limit" in r.query:
            return list_response([obj("a", "1")], "5", cont="c1")
        return list_response([obj("a", "1"), obj("b", "2")], "5")

    server.handler = handler
    server.watches.put(WatchScript([], end="hold"))
    informer, events = make_informer(page_size=1)
    informer.start()

    assert events.wait(2) == [("add", "a", "1"), ("add", "b", "2")]
    full = server.list_requests()[-1]
    assert "limit" not in full.query and "continue" not in full.query
    assert "resourceVersion" not in full.query


def test_a_rejected_watch_backs_off_and_resumes_without_relisting(
    server: FakeApiServer, make_informer: Any
) -> None:
    server.handler = lambda r: list_response([], "4")
    server.watches.put(WatchScript(status=429, error_body=status_body(429, "TooManyRequests")))
    server.watches.put(WatchScript(status=503, error_body=status_body(503, "ServiceUnavailable")))
    server.watches.put(WatchScript([event_line("ADDED", obj("a", "5"))], end="hold"))
    informer, events = make_informer()
    informer.start()

    assert events.wait(1) == [("add", "a", "5")]
    assert [w.query["resourceVersion"] for w in server.watch_requests()] == ["4", "4", "4"]
    assert len(server.list_requests()) == 1


def test_stop_ends_an_open_watch_promptly(server: FakeApiServer, make_informer: Any) -> None:
    server.handler = lambda r: list_response([], "4")
    script = WatchScript([], end="hold")
    server.watches.put(script)
    informer, _ = make_informer()
    informer.start()
    assert script.served.wait(10)
    assert server.wait_for_requests(lambda reqs: any(r.query.get("watch") for r in reqs), 10)

    informer.stop(timeout=5)
    assert informer._thread is not None and not informer._thread.is_alive()
