"""The HTTP endpoints: /metrics, /healthz, /livez, /readyz, /configz (plain HTTP).

kube-scheduler serves these over HTTPS on 10259; kube-pysched serves plain HTTP on the same
port number and expects a mesh or network policy to protect it where that matters.
"""

from __future__ import annotations

import gzip
import json
import socket
import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import structlog
from prometheus_client.exposition import choose_encoder, gzip_accepted

from scheduler import metrics

Readiness = Callable[[], list[tuple[str, bool]]]
TEXT = "text/plain; charset=utf-8"
# kube-scheduler registers its configuration under this name on /configz.
CONFIGZ_NAME = "componentconfig"

log = structlog.get_logger(__name__)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    _send_body = True

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would drown the log; access logging is off."""

    def do_HEAD(self) -> None:
        self._dispatch(send_body=False)

    def do_GET(self) -> None:
        self._dispatch(send_body=True)

    def _dispatch(self, *, send_body: bool) -> None:
        self._send_body = send_body
        path, _, query = self.path.partition("?")
        verbose = "verbose" in parse_qs(query, keep_blank_values=True)
        if path == "/metrics":
            self._metrics()
        elif path in ("/healthz", "/livez"):
            self._checks(path[1:], self._run_checks(self.server.liveness, "liveness"), verbose)
        elif path == "/readyz":
            self._checks("readyz", self._run_checks(self.server.readiness, "readiness"), verbose)
        elif path == "/configz":
            self._configz()
        else:
            self._reply(404, b"404 page not found\n", TEXT)

    def _metrics(self) -> None:
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        body = encoder(metrics.REGISTRY)
        headers = {}
        if gzip_accepted(self.headers.get("Accept-Encoding", "")):
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        self._reply(200, body, content_type, headers)

    def _run_checks(self, checks: Readiness, what: str) -> list[tuple[str, bool]]:
        """A checks callable that raises counts as one failed check, not a broken server."""
        try:
            return list(checks())
        except Exception:
            log.exception(f"{what} check raised")
            return [(what, False)]

    def _checks(self, endpoint: str, checks: list[tuple[str, bool]], verbose: bool) -> None:
        """kube-scheduler's healthz format: "ok", or one [+]/[-] line per check."""
        passed = all(ok for _, ok in checks)
        if passed and not verbose:
            self._reply(200, b"ok", TEXT)
            return
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed" for name, ok in checks]
        lines.append(f"{endpoint} check {'passed' if passed else 'failed'}")
        self._reply(200 if passed else 500, ("\n".join(lines) + "\n").encode(), TEXT)

    def _configz(self) -> None:
        try:
            body = json.dumps({CONFIGZ_NAME: self.server.configz()}, indent=2).encode()
        except Exception:
            log.exception("configz failed")
            self._reply(500, b"configz failed\n", TEXT)
            return
        self._reply(200, body, "application/json")

    def _reply(
        self, code: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self._send_body:
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        readiness: Readiness,
        liveness: Readiness,
        configz: Callable[[], Any],
    ) -> None:
        # An IPv6 bind address ("::", "::1") needs an IPv6 socket.
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.readiness = readiness
        self.liveness = liveness
        self.configz = configz

    def server_bind(self) -> None:
        """HTTPServer would resolve the bind address's FQDN here, a DNS lookup we do not need."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)


class HealthServer:
    """Binds at construction (so a taken port fails fast); serves on a thread after start()."""

    def __init__(
        self,
        bind_address: str,
        port: int,
        *,
        readiness: Readiness,
        liveness: Readiness = lambda: [("ping", True)],
        configz: Callable[[], Any] = dict,
    ) -> None:
        """`readiness` serves /readyz and `liveness` /healthz and /livez: (check, passed)."""
        self._server = _Server((bind_address, port), readiness, liveness, configz)
        self.bind_address = bind_address
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="http-server", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stops serving and closes the socket; safe to call twice or without start()."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5.0)
            self._thread = None
        self._server.server_close()
