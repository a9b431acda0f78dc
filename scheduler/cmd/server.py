"""The HTTP endpoints: /metrics, /healthz, /livez, /readyz, /configz, /flagz, /statusz,
/debug/pprof/profile and /debug/pysched/explain/{namespace}/{pod} (a pod's latest attempt).

One HealthServer per port: the secure port (HTTPS on 10259, every request authenticated and
authorized by a RequestGuard, as kube-scheduler's) and, for development only, a plain-HTTP port
on loopback without either. The TLS handshake runs on the connection's own thread, so a slow or
broken client never holds the accept loop. Plain HTTP sent to the HTTPS port is answered with
Go's net/http 400 ("Client sent an HTTP request to an HTTPS server.") rather than a reset.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

import structlog
from prometheus_client.exposition import choose_encoder, gzip_accepted

from scheduler import metrics
from scheduler.cmd import profiling, zpages
from scheduler.cmd.auth import RequestGuard
from scheduler.explain.record import ExplainStore

Readiness = Callable[[], list[tuple[str, bool]]]
TEXT = "text/plain; charset=utf-8"
HANDSHAKE_TIMEOUT = 10.0
# kube-scheduler registers its configuration under this name on /configz.
CONFIGZ_NAME = "componentconfig"
PROFILE_PATH = "/debug/pprof/profile"
#: /debug/pysched/explain/{namespace}/{pod}: the pod's latest scheduling attempt, as JSON.
EXPLAIN_PATH = "/debug/pysched/explain/"
# Go's net/http: the first bytes of a plain HTTP request where a TLS record header belongs.
HTTP_METHOD_PREFIXES = (b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO")
PLAIN_HTTP_REPLY = (
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
)

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
        guard = self.server.guard
        if guard is not None:
            peer_cert = None
            if isinstance(self.connection, ssl.SSLSocket):
                peer_cert = self.connection.getpeercert() or None
            refusal = guard.check(
                self.command,
                path,
                self.headers.get("Authorization"),
                peer_cert,
                request_uri=self.path,
            )
            if refusal is not None:
                headers = {"X-Content-Type-Options": "nosniff"}
                self._reply(refusal.code, refusal.body, refusal.content_type, headers)
                return
        verbose = "verbose" in parse_qs(query, keep_blank_values=True)
        if path == "/metrics":
            self._metrics()
        elif path in ("/healthz", "/livez"):
            self._checks(path[1:], self._run_checks(self.server.liveness, "liveness"), verbose)
        elif path == "/readyz":
            self._checks("readyz", self._run_checks(self.server.readiness, "readiness"), verbose)
        elif path == "/configz":
            self._configz()
        elif path == "/flagz":
            self._page(zpages.flagz(self.server.pages.flags, self.headers.get("Accept", "")))
        elif path == "/statusz":
            pages = self.server.pages
            accept = self.headers.get("Accept", "")
            self._page(zpages.statusz(pages.started, self.server.paths(), accept))
        elif path == PROFILE_PATH and self.server.pages.profiling:
            self._profile(query)
        elif path.startswith(EXPLAIN_PATH):
            self._explain(path.removeprefix(EXPLAIN_PATH))
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

    def _explain(self, rest: str) -> None:
        """The pod's latest attempt; 404 with the reason when there is none to show."""
        parts = rest.split("/")
        store = self.server.pages.explain
        if len(parts) != 2 or not all(parts):
            code, message = 404, f"expected {EXPLAIN_PATH}<namespace>/<pod>, got {self.path!r}"
        elif store is None:
            code, message = 404, "recording of scheduling attempts is off (--explain-max-pods=0)"
        else:
            namespace, name = (unquote(p) for p in parts)
            attempt = store.find(namespace, name)
            if attempt is not None:
                self._reply(200, json.dumps(attempt.to_json()).encode(), "application/json")
                return
            code = 404
            message = (
                f"no scheduling attempt of pod {namespace}/{name} is recorded: the pod is not "
                f"this scheduler's, was not attempted since the scheduler started, was "
                f"deleted, or its record was evicted (at most {store.max_pods} pods are kept)"
            )
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "status": "Failure"}
        body.update(message=message, reason="NotFound", code=code)
        self._reply(code, json.dumps(body).encode(), "application/json")

    def _page(self, page: zpages.Page) -> None:
        self._reply(page.code, page.body, page.content_type, dict(page.headers))

    def _profile(self, query: str) -> None:
        result = profiling.cpu_profile(query)
        headers = {"X-Content-Type-Options": "nosniff"}
        if result.filename:
            headers["Content-Disposition"] = f'attachment; filename="{result.filename}"'
        self._reply(result.code, result.body, result.content_type, headers)

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


@dataclass(frozen=True)
class DebugPages:
    """What /flagz, /statusz and the profile path serve: the flags in effect, the process's
    start time, and whether profiling is on (the configuration's enableProfiling)."""

    flags: Mapping[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    profiling: bool = True
    #: The latest scheduling attempts (EXPLAIN_PATH); None: recording is off.
    explain: ExplainStore | None = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        readiness: Readiness,
        liveness: Readiness,
        configz: Callable[[], Any],
        tls: ssl.SSLContext | None,
        guard: RequestGuard | None,
        pages: DebugPages,
    ) -> None:
        # An IPv6 bind address ("::", "::1") needs an IPv6 socket.
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.readiness = readiness
        self.liveness = liveness
        self.configz = configz
        self.tls = tls
        self.guard = guard
        self.pages = pages

    def paths(self) -> list[str]:
        """The paths this server answers (statusz lists them)."""
        served = ["/configz", "/flagz", "/healthz", "/livez", "/metrics", "/readyz", "/statusz"]
        if self.pages.explain is not None:
            served.append(EXPLAIN_PATH)
        return [*served, PROFILE_PATH] if self.pages.profiling else served

    def finish_request(self, request: Any, client_address: Any) -> None:
        """On the connection's thread: the TLS handshake first, when this port is HTTPS."""
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(HANDSHAKE_TIMEOUT)
        if _looks_like_http(request):
            with contextlib.suppress(OSError):
                request.sendall(PLAIN_HTTP_REPLY)
            log.debug("plain HTTP request on the HTTPS port", client=str(client_address[0]))
            return
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as err:
            log.debug("TLS handshake failed", client=str(client_address[0]), error=str(err))
            return
        try:
            conn.settimeout(None)
            super().finish_request(conn, client_address)
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def server_bind(self) -> None:
        """HTTPServer would resolve the bind address's FQDN here, a DNS lookup we do not need."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)


def _looks_like_http(request: socket.socket) -> bool:
    """Peeks at the first five bytes (a TLS record header's length) without consuming them."""
    try:
        head = request.recv(5, socket.MSG_PEEK | socket.MSG_WAITALL)
    except OSError:
        return False
    return head in HTTP_METHOD_PREFIXES


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
        tls: ssl.SSLContext | None = None,
        guard: RequestGuard | None = None,
        pages: DebugPages | None = None,
    ) -> None:
        """`readiness` serves /readyz and `liveness` /healthz and /livez: (check, passed).

        With `tls` the port is HTTPS; with `guard` every request is authenticated and
        authorized first (kube-scheduler's secure port has both).
        """
        self._server = _Server(
            (bind_address, port),
            readiness,
            liveness,
            configz,
            tls,
            guard,
            pages if pages is not None else DebugPages(),
        )
        self.secure = tls is not None
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
