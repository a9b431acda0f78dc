"""A scriptable local HTTP server speaking just enough of the API server's protocol.

Used for what a real API server cannot be made to do on demand: a 410 in the middle of a watch,
a connection dropped halfway through an event line, a Retry-After answer. Each request is
recorded; watch requests are answered by the next queued `WatchScript`, everything else by
`handler`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class WatchScript:
    """What one watch request gets: raw chunks to send, then an ending.

    Items are bytes (sent as one HTTP chunk) or a threading.Event (wait for it before going
    on). `end` is "close" (a proper end of the chunked body), "drop" (the TCP connection is cut)
    or "hold" (keep the stream open until the server shuts down).
    """

    chunks: list[bytes | threading.Event] = field(default_factory=list)
    end: str = "close"
    status: int = 200
    error_body: Any = None
    served: threading.Event = field(default_factory=threading.Event)


def event_line(event_type: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


def obj(name: str, rv: str, namespace: str = "ns", **extra: Any) -> dict[str, Any]:
    """A minimal API object."""
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, **extra}


def status_body(code: int, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message or reason,
    }


class FakeApiServer:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.watches: queue.Queue[WatchScript] = queue.Queue()
        self.handler: Callable[[Request], Response] = lambda r: Response(404)
        self._closing = threading.Event()
        self._request_seen = threading.Condition()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, parts.path, query, dict(self.headers.items()), body)
                with server._request_seen:
                    server.requests.append(request)
                    server._request_seen.notify_all()
                if query.get("watch") == "true":
                    self._watch(server.watches.get(timeout=30))
                    return
                self._respond(server.handler(request))

            def _respond(self, response: Response) -> None:
                data = b"" if response.body is None else orjson.dumps(response.body)
                self.send_response(response.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in response.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _watch(self, script: WatchScript) -> None:
                script.served.set()
                if script.status != 200:
                    self._respond(Response(script.status, script.error_body))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                for item in script.chunks:
                    if isinstance(item, threading.Event):
                        item.wait(30)
                        continue
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(item), item))
                    self.wfile.flush()
                if script.end == "close":
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                elif script.end == "hold":
                    server._closing.wait(30)
                self.close_connection = True

            do_GET = _serve
            do_POST = _serve
            do_PUT = _serve
            do_PATCH = _serve
            do_DELETE = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def wait_for_requests(self, predicate: Callable[[list[Request]], bool], timeout: float) -> bool:
        with self._request_seen:
            return self._request_seen.wait_for(lambda: predicate(self.requests), timeout)

    def watch_requests(self) -> list[Request]:
        return [r for r in self.requests if r.query.get("watch") == "true"]

    def list_requests(self) -> list[Request]:
        return [r for r in self.requests if r.method == "GET" and r.query.get("watch") != "true"]
