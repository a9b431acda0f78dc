"""The HTTP endpoints: /metrics, /healthz, /livez, /readyz, /configz (plain HTTP).

kube-scheduler serves these over HTTPS on 10259; kube-pysched serves plain HTTP on the same
port number and expects a mesh or network policy to protect it where that matters.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.exposition import choose_encoder, gzip_accepted

from scheduler import metrics

Readiness = Callable[[], list[tuple[str, bool]]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would drown the log; access logging is off."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._metrics()
        elif path in ("/healthz", "/livez"):
            self._reply(200, b"ok", "text/plain; charset=utf-8")
        elif path == "/readyz":
            self._readyz()
        elif path == "/configz":
            body = json.dumps(self.server.configz(), indent=2).encode()
            self._reply(200, body, "application/json")
        else:
            self._reply(404, b"404 page not found\n", "text/plain; charset=utf-8")

    def _metrics(self) -> None:
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        body = encoder(metrics.REGISTRY)
        headers = {}
        if gzip_accepted(self.headers.get("Accept-Encoding", "")):
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        self._reply(200, body, content_type, headers)

    def _readyz(self) -> None:
        checks = self.server.readiness()
        if all(ok for _, ok in checks):
            self._reply(200, b"ok", "text/plain; charset=utf-8")
            return
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed" for name, ok in checks]
        lines.append("readyz check failed")
        self._reply(500, ("\n".join(lines) + "\n").encode(), "text/plain; charset=utf-8")

    def _reply(
        self, code: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], readiness: Readiness, configz: Callable[[], Any]
    ) -> None:
        super().__init__(address, _Handler)
        self.readiness = readiness
        self.configz = configz


class HealthServer:
    """Binds at construction (so a taken port fails fast); serves on a thread after start()."""

    def __init__(
        self,
        bind_address: str,
        port: int,
        *,
        readiness: Readiness,
        configz: Callable[[], Any] = dict,
    ) -> None:
        self._server = _Server((bind_address, port), readiness, configz)
        self.bind_address = bind_address
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="http-server", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5.0)
        self._server.server_close()
