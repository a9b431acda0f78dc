"""RestClient against a local HTTP server: headers, errors, retries, auth refresh."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping

import pytest

from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.client.config import USER_AGENT, ClientConfig, StaticAuth
from scheduler.client.ratelimit import TokenBucket
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient
from scheduler.clock import FakeClock
from tests.client.fake_apiserver import FakeApiServer, Request, Response, status_body


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    srv = FakeApiServer().start()
    yield srv
    srv.stop()


def client(url: str, **kwargs: object) -> tuple[RestClient, list[float]]:
    slept: list[float] = []
    cfg = ClientConfig(server=url, auth=StaticAuth({"Authorization": "Bearer t0k"}), qps=-1)
    return RestClient(cfg, sleep=slept.append, **kwargs), slept  # type: ignore[arg-type]


def test_json_round_trip_and_headers(server: FakeApiServer) -> None:
    server.handler = lambda r: Response(201, {"echo": r.body.decode()})
    rest, _ = client(server.url)
    result = rest.patch("/api/v1/namespaces/ns/pods/p/status", {"status": {"a": 1}})
    assert result == {"echo": '{"status":{"a":1}}'}
    (req,) = server.requests
    assert req.method == "PATCH"
    assert req.headers["User-Agent"] == USER_AGENT
    assert req.headers["Authorization"] == "Bearer t0k"
    assert req.headers["Content-Type"] == STRATEGIC_MERGE_PATCH
    assert req.headers["Accept"] == "application/json"


def test_query_parameters_are_encoded(server: FakeApiServer) -> None:
    server.handler = lambda r: Response(200, {})
    rest, _ = client(server.url)
    rest.get(
        "/api/v1/pods",
        {"fieldSelector": "status.phase!=Failed", "sendInitialEvents": False, "limit": 5},
    )
    assert server.requests[0].query == {
        "fieldSelector": "status.phase!=Failed",
        "sendInitialEvents": "false",
        "limit": "5",
    }


def test_server_url_path_prefix_is_kept(server: FakeApiServer) -> None:
    server.handler = lambda r: Response(200, {})
    rest, _ = client(server.url + "/k8s/clusters/c-1/")
    rest.get("/api/v1/nodes")
    assert server.requests[0].path == "/k8s/clusters/c-1/api/v1/nodes"


def test_error_status_becomes_api_error(server: FakeApiServer) -> None:
    server.handler = lambda r: Response(404, status_body(404, "NotFound", 'pods "p" not found'))
    rest, _ = client(server.url)
    with pytest.raises(ApiError) as info:
        rest.get("/api/v1/namespaces/ns/pods/p")
    assert info.value.not_found
    assert info.value.message == 'pods "p" not found'
    assert len(server.requests) == 1


def test_retry_after_is_honoured_for_any_verb(server: FakeApiServer) -> None:
    answers = [
        Response(429, status_body(429, "TooManyRequests"), {"Retry-After": "2"}),
        Response(503, status_body(503, "ServiceUnavailable"), {"Retry-After": "1"}),
        Response(201, {}),
    ]
    server.handler = lambda r: answers.pop(0)
    rest, slept = client(server.url)
    rest.post("/api/v1/namespaces/ns/pods/p/binding", {"target": {"name": "n"}})
    assert len(server.requests) == 3
    assert slept == [2.0, 1.0]


def test_5xx_without_retry_after_is_not_retried(server: FakeApiServer) -> None:
    server.handler = lambda r: Response(500, status_body(500, "InternalError"))
    rest, _ = client(server.url)
    with pytest.raises(ApiError) as info:
        rest.post("/api/v1/namespaces/ns/pods/p/binding", {})
    assert info.value.internal_error
    assert len(server.requests) == 1


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def test_refused_connections_are_retried_with_backoff_then_raised() -> None:
    rest, slept = client(f"http://127.0.0.1:{_closed_port()}", max_retries=3)
    with pytest.raises(ApiConnectionError) as info:
        rest.post("/api/v1/namespaces/ns/pods/p/binding", {})
    assert info.value.refused
    assert not info.value.request_sent
    # The request never left, so even a POST is retried.
    assert len(slept) == 3
    assert slept[0] < slept[-1]


def test_a_reset_after_sending_is_retried_only_for_idempotent_verbs() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    rest, slept = client(url, max_retries=2)

    def reset_everything() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.close()

    threading.Thread(target=reset_everything, daemon=True).start()
    try:
        with pytest.raises(ApiConnectionError) as info:
            rest.post("/api/v1/namespaces/ns/pods/p/binding", {})
        assert info.value.request_sent
        assert slept == []
        with pytest.raises(ApiConnectionError):
            rest.get("/api/v1/namespaces/ns/pods/p")
        assert len(slept) == 2
    finally:
        listener.close()


def test_within_bounds_the_whole_call_retries_included() -> None:
    """A server that takes requests and never answers: each attempt would wait the 30 s read
    timeout and a GET is retried, but a call given `within` ends when that is spent."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept_and_stay_silent() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept_and_stay_silent, daemon=True).start()
    rest, slept = client(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=30.0)
    began = time.monotonic()
    try:
        with pytest.raises(ApiConnectionError, match=r"no response within 0\.3s"):
            rest.get("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", within=0.3)
    finally:
        listener.close()
        for conn in held:
            conn.close()
    assert time.monotonic() - began < 30.0  # not one whole read timeout
    assert all(delay <= 0.3 for delay in slept)


def test_a_fenced_client_sends_no_write_but_still_reads(server: FakeApiServer) -> None:
    server.handler = lambda r: Response(200, {"kind": "Pod"})
    rest, _ = client(server.url)
    rest.fence("this process lost the leader lease")
    for call in (
        lambda: rest.post("/api/v1/namespaces/ns/pods/p/binding", {}),
        lambda: rest.patch("/api/v1/namespaces/ns/pods/p/status", {}),
        lambda: rest.delete("/api/v1/namespaces/ns/pods/p"),
        lambda: rest.put("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", {}),
    ):
        with pytest.raises(ApiConnectionError, match="not sent: this process lost") as info:
            call()
        assert not info.value.request_sent
    assert server.requests == []
    assert rest.get("/api/v1/namespaces/ns/pods/p") == {"kind": "Pod"}
    assert [r.method for r in server.requests] == ["GET"]


class RotatingAuth:
    """Hands out a new token after invalidate(), as an exec plugin would."""

    def __init__(self) -> None:
        self.generation = 0
        self._headers: Mapping[str, str] = {"Authorization": "Bearer old"}

    def __call__(self) -> Mapping[str, str]:
        return self._headers

    def invalidate(self) -> None:
        self.generation += 1
        self._headers = {"Authorization": f"Bearer new{self.generation}"}


def test_401_refreshes_the_token_and_retries_once(server: FakeApiServer) -> None:
    def handler(r: Request) -> Response:
        if r.headers["Authorization"] == "Bearer old":
            return Response(401, status_body(401, "Unauthorized"))
        return Response(200, {"ok": True})

    server.handler = handler
    rest = RestClient(ClientConfig(server=server.url, auth=RotatingAuth(), qps=-1))
    assert rest.get("/api/v1/pods") == {"ok": True}
    assert [r.headers["Authorization"] for r in server.requests] == ["Bearer old", "Bearer new1"]


def test_requests_are_rate_limited(server: FakeApiServer) -> None:
    """Every request takes a token before it is sent; on a fake clock that moves only when the
    limiter sleeps, burst 2 at 5 qps lets two through at once and spaces the rest 1/qps apart."""
    events: list[str] = []

    def handle(request: Request) -> Response:
        events.append("request")
        return Response(200, {})

    clock = FakeClock()

    def sleep(seconds: float) -> None:
        events.append(f"sleep {seconds:.3f}")
        clock.step(seconds)

    server.handler = handle
    limiter = TokenBucket(5, 2, clock=clock, sleep=sleep)
    rest = RestClient(ClientConfig(server=server.url), rate_limiter=limiter)
    for _ in range(4):
        rest.get("/version")
    assert events == ["request", "request", "sleep 0.200", "request", "sleep 0.200", "request"]


@pytest.mark.parametrize(("verbosity", "interval"), [(0, 10.0), (2, 1.0)])
def test_long_throttle_waits_are_logged_as_client_gos_throttled_logger(
    monkeypatch: pytest.MonkeyPatch, verbosity: int, interval: float
) -> None:
    """At most once per interval: once a second at -v 2, once every 10 s below."""
    from scheduler.client import rest

    monkeypatch.setattr(rest, "v_enabled", lambda level: verbosity >= level)
    throttled = rest._ThrottledLog()
    assert throttled.attempt(100.0)
    assert not throttled.attempt(100.0 + interval - 0.01)
    assert throttled.attempt(100.0 + interval)
